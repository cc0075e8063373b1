"""``ModelOutputVariable``: a ``transformers`` ``ModelOutput`` (an ``OrderedDict`` subclass and
a dataclass whose fields are also readable as attributes) created during the trace, or a
``diffusers`` ``BaseOutput`` (``DecoderOutput``, ``AutoencoderKLOutput``...: the same class, copied;
its ``__post_init__`` differs only for a lone first field, which ``construct`` leaves to Python).

Its real ``__init__``/``__post_init__`` are not inlined (they call ``dataclasses.fields`` and write
through ``super().__setitem__``); ``construct`` applies their effect for the usual call shape
(fields given by keyword or position, the non-``None`` ones become keys in field order). Keys and
attributes stay in step as in ``ModelOutput``: ``out.name`` is ``out["name"]``, or ``None`` for an
unset field;
``out[i]``/``out.to_tuple()`` index the values. At a graph break or return it is rebuilt as
``cls(field=None, ...)`` followed by one ``out[key] = value`` per key, which gives the same keys in
the same order.
Objects of these classes that come from inputs stay ``UserObjectVariable``: their attributes are
read (and guarded) as instance attributes; item access and dict methods on them break the graph.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..tensors.tensor import TensorVariable
from .builtin_containers import DictVariable, TupleVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

#: ``(module, qualname)`` of the base classes handled here.
_DIFFUSERS_BASE = ("diffusers.utils.outputs", "BaseOutput")
MODEL_OUTPUT_BASES = frozenset({("transformers.utils.generic", "ModelOutput"), _DIFFUSERS_BASE})

#: Read-only dict methods, answered on the items (``ModelOutput`` forbids the mutating ones).
_DICT_READS = frozenset({"keys", "values", "items", "get", "__contains__", "__len__", "__iter__"})


def is_model_output(cls: type) -> bool:
    return (
        isinstance(cls, type)
        and dataclasses.is_dataclass(cls)
        and issubclass(cls, dict)
        and any((k.__module__, k.__qualname__) in MODEL_OUTPUT_BASES for k in cls.__mro__)
    )


def construct(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> ModelOutputVariable:
    """``cls(*args, **kwargs)`` as ``ModelOutput.__post_init__`` would fill it."""
    fields = [f.name for f in dataclasses.fields(cls)]
    if len(args) > len(fields) or set(kwargs) - set(fields[len(args) :]):
        raise Unsupported("new_object", f"{cls.__name__}() with these arguments")
    values = dict(zip(fields, args, strict=False)) | kwargs
    # a field left out takes its default: traced when that is None (a required one raises)
    if any(f.name not in values and f.default is not None for f in dataclasses.fields(cls)):
        raise Unsupported("new_object", f"{cls.__name__}() without a field it needs")
    present = {k: v for k, v in values.items() if not _is_none(v)}
    first = fields[0] if fields else None
    lone_first = list(present) == [first]
    if lone_first and _read_as_pairs(cls, present[first]):
        raise Unsupported("new_object", f"{cls.__name__}() from a single non-tensor value")
    return ModelOutputVariable({k: present[k] for k in fields if k in present}, cls=cls)


def _read_as_pairs(cls: type, value: VariableTracker) -> bool:
    """Whether ``__post_init__`` may take a lone first field as the object's (key, value) pairs:
    ``ModelOutput`` tries any non-tensor, ``BaseOutput`` a dict only (a diffusers VAE's
    ``AutoencoderKLOutput(latent_dist=posterior)`` holds a distribution object)."""
    if isinstance(value, TensorVariable):
        return False
    if not any((k.__module__, k.__qualname__) == _DIFFUSERS_BASE for k in cls.__mro__):
        return True
    try:
        kind = value.python_type()
    except Unsupported:  # a tracker that cannot tell: assume the worst
        return True
    return issubclass(kind, dict)


def _is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


def rebuild(cls: type, items: dict[str, Any]) -> Any:
    """The real object for a ``ModelOutputVariable`` (called by the rewritten code): every field
    None (no keys; a field may be required), then the keys set in order."""
    out = cls(**{f.name: None for f in dataclasses.fields(cls) if f.init})
    for key, value in items.items():
        out[key] = value
    return out


@dataclass(eq=False)
class ModelOutputVariable(DictVariable):
    """``items``: the keys present (non-``None`` fields, in insertion order); ``cls``: the class."""

    def is_python_constant(self) -> bool:
        return False

    def fields(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.cls)]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.items:
            return self.items[name]
        if name in self.fields():
            return ConstantVariable(None)
        if name == "to_tuple" or name in _DICT_READS:
            return ModelOutputMethodVariable(self, name)
        raise Unsupported(
            "getattr", f"{self.cls.__name__}.{name} (only fields and dict reads are traced)"
        )

    def getitem(self, tx: Translator, key: Any) -> VariableTracker:
        """``out["name"]`` reads a key; ``out[0]``/``out[1:]`` index ``to_tuple()``."""
        if isinstance(key, str):
            if key not in self.items:
                raise Unsupported("python_error", f"KeyError: {key!r}")
            return self.items[key]
        values = list(self.items.values())
        if isinstance(key, slice):
            return TupleVariable(values[key])
        if type(key) is int and -len(values) <= key < len(values):
            return values[key]
        raise Unsupported("python_error", f"{self.cls.__name__}[{key!r}]")

    def setitem(self, key: Any, value: VariableTracker) -> None:
        """``out[key] = value`` sets the key and the attribute (``ModelOutput.__setitem__``)."""
        if not isinstance(key, str) or self.source is not None:
            raise Unsupported("setitem", f"{self.cls.__name__}[{key!r}] = ...")
        self.items[key] = value

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(rebuild)
        cg.load_const(self.cls)
        DictVariable(self.items).reconstruct(cg)
        cg.call_function(2)
        return None

    def __repr__(self) -> str:
        return f"ModelOutputVariable({self.cls.__name__}, {list(self.items)})"


@dataclass(eq=False)
class ModelOutputMethodVariable(VariableTracker):
    """``out.to_tuple`` or a read-only dict method of a ``ModelOutputVariable`` before the call."""

    obj: ModelOutputVariable
    name: str
    source: Any = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.name == "to_tuple" and not args and not kwargs:
            return TupleVariable(list(self.obj.items.values()))
        view = DictVariable(self.obj.items)  # shares the items: a plain dict's reads
        if self.name == "__len__":
            return ConstantVariable(len(view.items))
        if self.name == "__iter__":
            return dispatch.get_iter(tx, view)
        return dispatch.call_container_method(tx, view, self.name, args, kwargs)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
