"""Containers: ``TupleVariable``, ``ListVariable``, ``DictVariable``, ``SetVariable``.

Items are VariableTrackers. Tuples are immutable. Lists, dicts and sets are mutated in place during
the trace (they are the value); when such a container came from an input (it has a ``source``) the
mutation is also recorded in ``tx.output.side_effects`` so the rewritten code replays it.

Their iterators are in ``iterators/``.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import Source
from ...exc import PythonError, Unsupported
from ..base import BoundAttributeVariable, IdentityKey, VariableTracker
from ..constants.constant import ConstantVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


def hash_key(vt: VariableTracker) -> Any:
    """``vt`` as a key of a traced dict or item of a traced set: the constant itself, or an
    ``IdentityKey`` for a tensor or an object hashed by identity."""
    if isinstance(vt, TensorVariable):
        return IdentityKey(vt, vt.node)
    if vt.is_python_constant():
        value = vt.as_python_constant()
        try:
            hash(value)
        except TypeError:
            kind = type(value).__name__
            raise PythonError(TypeError(f"unhashable type: '{kind}'")) from None
        return value
    value = getattr(vt, "value", None)
    cls = type(value)
    if value is not None and cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__:
        return IdentityKey(vt, value)
    raise Unsupported("dict_key", f"{vt} as a dict key or set item")


def key_vt(key: Any) -> VariableTracker:
    """The tracker of a traced dict's key (``hash_key`` the other way)."""
    return key.vt if isinstance(key, IdentityKey) else ConstantVariable(key)


def _reconstruct_key(cg: Codegen, key: Any) -> None:
    if isinstance(key, IdentityKey):
        key.vt.reconstruct(cg)
    else:
        cg.load_const(key)


class BaseSequenceVariable(VariableTracker):
    items: list[VariableTracker]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return list(self.items)

    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()(i.as_python_constant() for i in self.items)

    def _reconstruct_items(self, cg: Codegen) -> None:
        for item in self.items:
            item.reconstruct(cg)


@dataclass(eq=False)
class TupleVariable(BaseSequenceVariable):
    items: list[VariableTracker]
    source: Source | None = None
    is_size: bool = False  #: a ``torch.Size`` (from ``t.shape``/``t.size()``)
    cls: type = tuple  #: the tuple type (a namedtuple class, ``torch.return_types.max``...)

    def python_type(self) -> type:
        return torch.Size if self.is_size else self.cls

    def as_python_constant(self) -> Any:
        values = [i.as_python_constant() for i in self.items]
        if self.is_size:
            return torch.Size(values)
        return self.cls(values) if self.cls is tuple else self.cls(*values)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        fields = _field_names(self.cls)
        if name in fields:
            return self.items[list(fields).index(name)]
        if hasattr(self.cls, "_fields") and not hasattr(tuple, name) and name not in _NT_METHODS:
            return dispatch.namedtuple_attribute(tx, self, name)  # methods of the class
        return _constant_method(self, name)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        if self.is_size:
            cg.load_const(torch.Size)
        elif hasattr(self.cls, "_make"):  # a namedtuple takes its fields as separate arguments
            cg.load_const(self.cls._make)
        elif self.cls is not tuple:
            cg.load_const(self.cls)
        self._reconstruct_items(cg)
        cg.build_tuple(len(self.items))
        if self.is_size or self.cls is not tuple:
            cg.call_function(1)
        return None

    def __repr__(self) -> str:
        return f"TupleVariable({self.items!r})"


def _field_names(cls: type) -> list[str]:
    """Field names of a namedtuple or of a torch structseq type (``torch.return_types.max``)."""
    if hasattr(cls, "_fields"):
        return list(cls._fields)
    if hasattr(cls, "n_sequence_fields"):  # structseq: fields are the member descriptors, in order
        members = [
            (v.__doc__ or "", k)
            for k, v in vars(cls).items()
            if type(v).__name__ == "member_descriptor"
        ]
        return [k for _, k in members][: cls.n_sequence_fields]
    return []


#: Methods every namedtuple has, answered by ``_constant_method``.
_NT_METHODS = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


def _constant_method(vt: VariableTracker, name: str) -> VariableTracker:
    namedtuple = hasattr(vt.python_type(), "_make")
    if name in ("count", "index") or (name in ("_replace", "_asdict") and namedtuple):
        return BoundMethodVariable(vt, name)
    if name == "_fields" and hasattr(vt.python_type(), "_fields"):
        return ConstantVariable(vt.python_type()._fields)
    raise Unsupported("getattr", f"{vt.python_type().__name__} has no attribute {name!r}")


@dataclass(eq=False)
class ListVariable(BaseSequenceVariable):
    items: list[VariableTracker]
    source: Source | None = None

    def python_type(self) -> type:
        return list

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if hasattr(self.python_type(), name):
            return BoundMethodVariable(self, name)
        kind = self.python_type().__name__
        raise Unsupported("getattr", f"{kind} has no attribute {name!r}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.build_once(self, lambda: (self._reconstruct_items(cg), cg.build_list(len(self.items))))
        return None

    def __repr__(self) -> str:
        return f"ListVariable({self.items!r})"


#: dict and the ``collections`` dicts ``collection_types`` models; other ``cls`` are user subclasses
_DICT_CLASSES = frozenset(
    {dict, collections.OrderedDict, collections.defaultdict, collections.Counter}
)
_DICT_ATTRIBUTES = frozenset(n for n in vars(dict) if not n.startswith("__"))


@dataclass(eq=False)
class DictVariable(VariableTracker):
    items: dict[Any, VariableTracker]  #: keys are Python constants (str, int, ...)
    source: Source | None = None
    cls: type = dict
    default_factory: VariableTracker | None = None  #: of a ``collections.defaultdict``

    def python_type(self) -> type:
        return self.cls

    def is_python_constant(self) -> bool:
        factory = self.default_factory
        return (
            all(v.is_python_constant() for v in self.items.values())
            and not any(isinstance(k, IdentityKey) for k in self.items)
            and (factory is None or factory.is_python_constant())
        )

    def as_python_constant(self) -> Any:
        pairs = {k: v.as_python_constant() for k, v in self.items.items()}
        if self.default_factory is not None:
            return self.cls(self.default_factory.as_python_constant(), pairs)
        return self.cls(pairs)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return [key_vt(k) for k in self.items]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "default_factory" and self.default_factory is not None:
            return self.default_factory
        if self.cls not in _DICT_CLASSES:
            from . import dict_subclasses  # imports this module

            if dict_subclasses.models(self.cls) and name not in _DICT_ATTRIBUTES:
                return dict_subclasses.getattr_(tx, self, name)
        if hasattr(self.cls, name):
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"{self.cls.__name__} has no attribute {name!r}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.build_once(self, lambda: self._build(cg))
        return None

    def _build(self, cg: Codegen) -> None:
        if self.cls is not dict:
            cg.load_const(self.cls)
            if self.default_factory is not None:  # defaultdict(factory, mapping)
                self.default_factory.reconstruct(cg)
        for key, value in self.items.items():
            _reconstruct_key(cg, key)
            value.reconstruct(cg)
        cg.build_map(len(self.items))
        if self.cls is not dict:
            cg.call_function(1 if self.default_factory is None else 2)

    def __repr__(self) -> str:
        return f"DictVariable({self.items!r})"


@dataclass(eq=False)
class SetVariable(VariableTracker):
    """A set: Python constants and ``IdentityKey``s (tensors, objects hashed by identity)."""

    items: set[Any]
    source: Source | None = None

    def python_type(self) -> type:
        return set

    def is_python_constant(self) -> bool:
        return not any(isinstance(v, IdentityKey) for v in self.items)

    def as_python_constant(self) -> Any:
        """The set itself: a copy may iterate in another order (a table with deleted entries is
        rebuilt), and folded builtins (``list(s)``, ``str(s)``) must see CPython's order. Folding
        only reads it."""
        return self.items

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return [key_vt(v) for v in self.items]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if hasattr(set, name):
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"set has no attribute {name!r}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.build_once(
            self,
            lambda: ([_reconstruct_key(cg, v) for v in self.items], cg.build_set(len(self.items))),
        )
        return None


@dataclass(eq=False, repr=False)
class BoundMethodVariable(BoundAttributeVariable):
    """``xs.append`` and friends before the call; ``dispatch.call_container_method`` runs them."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.call_container_method(tx, self.obj, self.name, args, kwargs)


from .. import dispatch  # noqa: E402
