"""Containers: ``TupleVariable``, ``ListVariable``, ``DictVariable``, ``SetVariable``.

Items are VariableTrackers. Tuples are immutable. Lists, dicts and sets are mutated in place during
the trace (they are the value); when such a container came from an input (it has a ``source``) the
mutation is also recorded in ``tx.output.side_effects`` so the rewritten code replays it.

Their iterators are in ``iterators/``.
"""

from __future__ import annotations

import collections
import enum
import inspect
import itertools
import operator
import struct
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import Source
from ...exc import PythonError, Unsupported
from ..base import RUNNING, BoundAttributeVariable, IdentityKey, VariableTracker
from ..constants.constant import ConstantVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


def hash_key(vt: VariableTracker) -> Any:
    """``vt`` as a key of a traced dict or item of a traced set, hashing and comparing as CPython
    hashes and compares the value: a constant (int, str, float, None, a tuple or frozenset of
    constants, an enum member, a dtype, a device, a range) is the key itself; a value whose
    tracker matters (a class, function, module or builtin function, an object with the default
    ``__eq__``/``__hash__``, a tuple holding one) is an ``IdentityKey`` keeping its tracker beside
    the value it compares as; a tensor compares by identity (its graph node). Unhashable builtin
    containers raise CPython's ``TypeError``; objects with their own ``__hash__`` break."""
    if isinstance(vt, TensorVariable):
        return IdentityKey(vt, vt.node)
    if vt.is_python_constant():
        value = vt.as_python_constant()
        try:
            hash(value)
        except TypeError:
            kind = type(value).__name__
            raise PythonError(TypeError(f"unhashable type: '{kind}'")) from None
        if isinstance(vt, ConstantVariable) or not _pure_hash(value):
            return value
        return IdentityKey(vt, value)  # a tuple too: rebuilt as the object it was read from
    if isinstance(vt, TupleVariable):  # a tuple holding an object: by value, item by item
        return IdentityKey(vt, tuple(hash_key(item) for item in vt.items))
    if isinstance(vt, SetVariable) and vt.frozen:
        return IdentityKey(vt, frozenset(vt.items))
    method = _bound_method(vt)
    if method is not None:
        return IdentityKey(vt, method)
    if isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        kind = vt.python_type().__name__
        raise PythonError(TypeError(f"unhashable type: '{kind}'"))
    value = getattr(vt, "value", None)
    if value is not None and identity_hashed(type(value)):
        return IdentityKey(vt, value)
    if value is not None and type(value).__hash__ is None:  # ``__eq__`` without ``__hash__``
        raise PythonError(TypeError(f"unhashable type: '{type(value).__name__}'"))
    if value is not None and python_hashed(type(value)) and RUNNING.tx is not None:
        return UserHashedKey(vt, _traced_hash(RUNNING.tx, vt))
    raise Unsupported("dict_key", f"{vt} as a dict key or set item")


def value_hash(vt: VariableTracker) -> int:
    """``hash(vt)`` where the key model hashes as CPython: an object whose class hashes in
    Python (its ``__hash__`` inlined), or a tuple of such objects and constants."""
    if not _hashed_as_cpython(vt):
        raise Unsupported("builtin", f"hash() on {vt}")
    return hash(hash_key(vt))


def _hashed_as_cpython(vt: VariableTracker) -> bool:
    if vt.is_python_constant():
        return True
    if isinstance(vt, SetVariable) and vt.frozen:  # hashed from its items' hashes
        return all(_hashed_as_cpython(key_vt(item)) for item in vt.items)
    if isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        return vt.python_type().__hash__ is None  # hash_key's TypeError
    if isinstance(vt, TupleVariable):
        return tuple_like(vt.python_type()) and all(map(_hashed_as_cpython, vt.items))
    value = getattr(vt, "value", None)  # unhashable (``__hash__ = None``): hash_key's TypeError
    return value is not None and (python_hashed(type(value)) or type(value).__hash__ is None)


def python_hashed(cls: type) -> bool:
    """Instances of ``cls`` hash with a ``__hash__`` written in Python (a class's own, a
    dataclass's) and compare with a Python ``__eq__`` or by identity."""
    eq = inspect.getattr_static(cls, "__eq__", None)
    return isinstance(inspect.getattr_static(cls, "__hash__", None), types.FunctionType) and (
        isinstance(eq, types.FunctionType) or eq is object.__eq__
    )


class _HashResult:
    """Gives back ``value`` from ``__hash__``: CPython's ``hash()`` turns it into the hash an
    object whose ``__hash__`` returned it has (an int reduced to the C range, -1 made -2; a
    non-int its TypeError)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return self.value


def _traced_hash(tx: Translator, vt: VariableTracker) -> int:
    """``hash(vt)`` by inlining its class's ``__hash__`` (the attributes it reads are guarded)."""
    result = vt.call_method(tx, "__hash__", [], {})
    if not result.is_python_constant():
        raise Unsupported("dict_key", f"the hash of {vt} is not known at trace time")
    try:
        return hash(_HashResult(result.as_python_constant()))
    except TypeError as error:
        raise PythonError(TypeError(*error.args)) from None


class UserHashedKey(IdentityKey):
    """A key whose class hashes in Python: its hash is its inlined ``__hash__``'s, taken when the
    key is made (a dict keeps an entry's hash, so an object changed after insertion behaves as
    in CPython). Equality is a dict lookup's, the same object first, then ``==`` inlined in the
    translator running now."""

    __slots__ = ()

    def __init__(self, vt: VariableTracker, hash_: int) -> None:
        self.vt, self.ident, self._hash = vt, vt, hash_

    def __eq__(self, other: object) -> bool:
        other_vt = key_vt(other)
        if other_vt is self.vt:
            return True
        tx = RUNNING.tx
        if tx is None:
            raise Unsupported("dict_key", f"comparing {self.vt} outside a trace")
        try:
            if dispatch.is_same(tx, self.vt, other_vt):
                return True
        except Unsupported:
            pass  # identity unknown: ``==`` decides
        return dispatch.truth(tx, dispatch.call_operator(tx, operator.eq, [self.vt, other_vt]))

    def __hash__(self) -> int:
        return self._hash


def _bound_method(vt: VariableTracker) -> types.MethodType | None:
    """``obj.method`` of a function bound to an object the trace knows: the real bound method,
    which hashes and compares by the object's identity and the function (no user code)."""
    fn, owner = getattr(vt, "fn", None), getattr(vt, "self_vt", None)
    if not isinstance(fn, types.FunctionType) or owner is None:
        return None
    if owner.is_python_constant():
        return types.MethodType(fn, owner.as_python_constant())
    value = getattr(owner, "value", None)
    return types.MethodType(fn, value) if value is not None else None


def lookup_key(vt: VariableTracker) -> Any:
    """``vt`` as the key a set lookup (``in``, ``remove``, ``discard``) searches for: a set is
    searched for as the frozenset of its items, as CPython's ``set_contains`` does."""
    if isinstance(vt, SetVariable) and not vt.frozen:
        return hash_key(SetVariable(vt.items, frozen=True))
    return hash_key(vt)


def identity_hashed(cls: type) -> bool:
    """Instances of ``cls`` hash and compare by identity (classes, functions, modules, plain
    objects): ``object``'s ``__hash__`` and ``__eq__``."""
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


def _pure_hash(value: Any) -> bool:
    """``hash(value)`` and ``==`` run no user code: identity, or a builtin type's own."""
    cls = type(value)
    return identity_hashed(cls) or cls.__module__ == "builtins" or tuple_like(cls)


#: real keys the key model compares by value, when all their parts are such keys
_VALUE_KEY_TYPES = (int, float, bool, complex, str, bytes, type(None), range, type(Ellipsis))
_SINGLETON_KEY_TYPES = (torch.dtype, torch.layout, torch.memory_format, torch.device)


def is_key_value(key: Any) -> bool:
    """Whether ``hash_key`` can stand for the real ``key`` of an input dict or set: a constant
    (also inside tuples and frozensets), an enum member, a dtype or device, a tensor, a builtin
    function of a module, or a value hashed by identity."""
    cls = type(key)
    if cls in _VALUE_KEY_TYPES or cls in _SINGLETON_KEY_TYPES or isinstance(key, torch.Tensor):
        return True
    if cls is frozenset or tuple_like(cls):
        return all(is_key_value(k) for k in key)
    if isinstance(key, enum.Enum):
        return cls.__eq__ is object.__eq__ and cls.__hash__ is enum.Enum.__hash__
    if isinstance(key, types.BuiltinFunctionType):
        return key.__self__ is None or isinstance(key.__self__, types.ModuleType)
    if cls is types.MethodType:  # hashed by its object's identity and its function
        return identity_hashed(type(key.__self__)) and isinstance(key.__func__, types.FunctionType)
    if python_hashed(cls):  # its ``__hash__`` is inlined by the translator running
        return RUNNING.tx is not None
    return identity_hashed(cls)


def keys_modelled(container: Any) -> bool:
    """Whether the key model stands for every key of the real dict or set ``container``: each
    is a key value, and each hashing in Python is found where the container keeps it (an object
    changed since it was put in may sit under its old hash, which only CPython knows)."""
    return all(map(is_key_value, container)) and all(
        key in container for key in container if _python_hash_in(key)
    )


def _python_hash_in(key: Any) -> bool:
    if type(key) is frozenset or tuple_like(type(key)):
        return any(map(_python_hash_in, key))
    return python_hashed(type(key))


def tuple_like(cls: type) -> bool:
    """A tuple, ``torch.Size`` or namedtuple class: hashed and compared as its items' tuple."""
    return issubclass(cls, tuple) and cls.__hash__ is tuple.__hash__ and cls.__eq__ is tuple.__eq__


def compared_by_value(key: Any) -> bool:
    """Whether the real ``key`` is a constant of the key model, compared by value (a literal, a
    range, or a tuple or frozenset of such), rather than by identity."""
    cls = type(key)
    if cls is frozenset or tuple_like(cls):
        return all(compared_by_value(k) for k in key)
    return cls in _VALUE_KEY_TYPES


def key_value(key: Any) -> Any:
    """The real value a key of a traced dict or set stands for (a tensor's key: its tracker)."""
    if isinstance(key, IdentityKey):
        return key.vt.as_python_constant()
    return key


def key_vt(key: Any) -> VariableTracker:
    """The tracker of a traced dict's key (``hash_key`` the other way)."""
    return key.vt if isinstance(key, IdentityKey) else ConstantVariable(key)


def _constant_key(key: Any) -> bool:
    return not isinstance(key, IdentityKey) or key.vt.is_python_constant()


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
        if hasattr(self.cls, "_fields") or hasattr(self.cls, "n_sequence_fields"):
            return self.cls(*values)
        return self.cls(values)  # ``tuple``, or a plain subclass: ``cls(iterable)``

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__class__":
            return tx.wrap_static(self.python_type())
        fields = _field_names(self.cls)
        if name in fields:
            return self.items[list(fields).index(name)]
        if (
            self.cls is not tuple
            and not hasattr(self.cls, "n_sequence_fields")  # torch's structseqs
            and inspect.getattr_static(self.cls, name, None)
            is not inspect.getattr_static(tuple, name, None)
            and name not in _NT_METHODS
        ):  # methods of a namedtuple class (its own or overriding tuple's: ``__getnewargs__``),
            # or of a plain tuple subclass
            return dispatch.namedtuple_attribute(tx, self, name)
        return _constant_method(self, name)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        # one object however often the code needs it (a local and a method bound to it)
        cg.build_once(self, lambda: self._build(cg))
        return None

    def _build(self, cg: Codegen) -> None:
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


def on_instances(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have ``name`` from their class: found in its MRO, not in its
    metaclass's (``list.__name__`` is the class's name; ``[].__name__`` raises AttributeError)."""
    return any(name in vars(base) for base in cls.__mro__)


#: Methods every namedtuple has, answered by ``_constant_method``.
_NT_METHODS = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
#: Methods of ``tuple`` itself ``container_methods`` runs.
_TUPLE_METHODS = frozenset({"count", "index", "__init__", "__getnewargs__"})


def _tuple_method(cls: type, name: str) -> bool:
    """Whether ``name`` is one of those methods and ``cls`` keeps ``tuple``'s (a namedtuple has
    its own ``__getnewargs__``)."""
    return name in _TUPLE_METHODS and (
        inspect.getattr_static(cls, name, None) is inspect.getattr_static(tuple, name)
    )


def _constant_method(vt: VariableTracker, name: str) -> VariableTracker:
    namedtuple = hasattr(vt.python_type(), "_make")
    if _tuple_method(vt.python_type(), name) or (name in ("_replace", "_asdict") and namedtuple):
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
        if on_instances(self.python_type(), name):
            return BoundMethodVariable(self, name)
        kind = self.python_type().__name__
        if self.python_type() is list:  # no instance dict: CPython's AttributeError
            raise PythonError(AttributeError(f"'list' object has no attribute '{name}'"))
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
            and all(_constant_key(k) for k in self.items)
            and (factory is None or factory.is_python_constant())
        )

    def as_python_constant(self) -> Any:
        pairs = {key_value(k): v.as_python_constant() for k, v in self.items.items()}
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
        if on_instances(self.cls, name):
            return BoundMethodVariable(self, name)
        if self.cls is dict:  # no instance dict: CPython's AttributeError
            raise PythonError(AttributeError(f"'dict' object has no attribute '{name}'"))
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
    """A set, or a frozenset (``frozen``) holding values the trace keeps trackers of: Python
    constants and ``IdentityKey``s (tensors, classes, functions, objects hashed by identity). A
    frozenset of constants alone is a ``ConstantVariable`` (``make_set``).

    ``items`` is a real set, so iteration, ``pop`` and the methods follow CPython's hash table.
    A set made in the trace is laid out as CPython lays out the same insertions. An input set's
    ``items`` only iterate in the real set's order (``ordered_keys``): its table (size, deleted
    slots) is not the real one, so once the trace adds a new item (``order_known`` false) its
    order is unknown and iterating it breaks."""

    items: set[Any]
    source: Source | None = None
    frozen: bool = False
    own_table: bool = True  #: ``items`` is laid out as the real set (false for an input set)
    order_known: bool = True
    #: an input set's in-place calls, ``(method, arguments)``, replayed on the real set as they
    #: ran (``replay_log``): the same calls lay its table out as CPython's run would
    log: list[tuple[str, list[Any]]] = field(default_factory=list)
    #: a real set of the values (or keys equal to them) laid out as CPython's real one where
    #: ``items`` is not: an input set's own object, while the trace has not changed it; a set
    #: computed from such sets (``computed_set``)
    mirror: set[Any] | frozenset[Any] | None = None
    #: for a set made in the trace, the calls that made it (the rewritten code repeats them to
    #: rebuild it laid out as the trace's), or None where one was not of a kind it repeats
    recipe: SetRecipe | None = None

    def exact(self) -> set[Any] | frozenset[Any] | None:
        """The set as a real one laid out as CPython's, or None: a new set computed from it (a
        copy, a union) is then CPython's, in CPython's order. ``items`` where it is CPython's."""
        return self.items if self.own_table else self.mirror

    def ordered(self) -> set[Any]:
        """``items``, to read in their order: a break where the trace cannot know CPython's."""
        if not self.order_known:
            raise Unsupported(
                "set_order",
                "iterating an input set after the trace added items to it",
                "the order of a set depends on its hash table, which the trace does not see",
            )
        return self.items

    def log_call(self, name: str, args: list[Any]) -> tuple[list[Any], Any]:
        """The real arguments of the in-place method ``name`` about to run on ``items``, and its
        entry of the log, to ``log.append`` once it ran (None on a set made in the trace): an
        iterator argument is read into it as the call reads it."""
        if self.own_table:
            return args, None
        self.mirror = None  # the real set is no longer what the trace's is
        logged: list[Any] = []
        given: list[Any] = []
        for arg in args:
            if name in ("add", "discard", "remove"):
                logged.append(arg)
            elif isinstance(arg, (set, frozenset)):
                logged.append(_SetArgument(type(arg), list(arg), sys.getsizeof(arg)))
            elif isinstance(arg, dict):
                logged.append(_SetArgument(dict, list(arg), 0))
            else:  # items one by one: a tuple of them adds them as CPython adds them
                logged.append(_SetArgument(tuple, [], 0))
                arg = _recording(arg, logged[-1].keys)
            given.append(arg)
        return given, (name, logged)

    def changed(self, name: str, parts: list[tuple[str, Any] | None]) -> None:
        """The trace called the in-place method ``name`` on the set, with arguments ``parts``
        (``recipe_part``): a set made in the trace rebuilds with the call."""
        if self.source is None:
            self.recipe = SetRecipe.method(self.recipe, name, parts)

    def logged(self, entry: Any) -> None:
        if entry is not None:
            self.log.append(entry)

    def save_state(self) -> Any:
        keys = list(self.items)
        state = keys, sys.getsizeof(self.items), list(self.log), self.order_known
        return state, self.mirror, self.recipe

    def restore_state(self, state: Any) -> None:
        (keys, table_bytes, log, known), self.mirror, self.recipe = state
        self.log[:] = log
        if [id(k) for k in self.items] == [id(k) for k in keys]:
            return  # unchanged: its table is kept
        found = ordered_keys(keys, table_bytes, False)
        self.items = found[1] if found is not None else set(keys)
        self.order_known = known and found is not None
        self.own_table = False  # a rebuilt table iterates as the old one, but is not it

    def replay_log(self, cg: Codegen) -> bool:
        """Emit the logged calls on the real set (True), or nothing for a set made in the trace
        or an argument that cannot be rebuilt in its order (False)."""
        if self.own_table or self.source is None:
            return False
        sets = [a for _, args in self.log for a in args if isinstance(a, _SetArgument)]
        if any(a.kind in (set, frozenset) and a.way() is None for a in sets):
            return False
        for name, args in self.log:
            self.source.reconstruct(cg)
            cg.load_attr(name)
            for arg in args:
                arg.reconstruct(cg) if isinstance(arg, _SetArgument) else _reconstruct_key(cg, arg)
            cg.call_function(len(args))
            cg.pop_top()
        return True

    def added_to(self, before: set[Any]) -> None:
        """The trace changed ``items`` in place from the keys ``before``: a new item in an input
        set makes its order unknown."""
        if not self.own_table and not self.items <= before:
            self.order_known = False

    def python_type(self) -> type:
        return frozenset if self.frozen else set

    def in_order(self) -> list[Any]:
        """The keys in CPython's order: as ``items`` iterate, or as the mirror does (its values
        stand for the keys); a break where the trace does not know it."""
        if self.order_known or self.mirror is None:
            return list(self.ordered())
        keys = {k: k for k in self.items}
        return [keys[v] for v in self.mirror]

    def is_python_constant(self) -> bool:
        """Of constants, in a known order (a value iterating otherwise would be folded wrong)."""
        known = self.order_known or self.mirror is not None
        return known and all(_constant_key(v) for v in self.items)

    def as_python_constant(self) -> Any:
        """The set itself: a copy may iterate in another order (a table with deleted entries is
        rebuilt), and folded builtins (``list(s)``, ``str(s)``) must see CPython's order. Folding
        only reads it. Items kept with their trackers (classes, functions) are replaced by their
        values, in the set's order (their hashes are the values' own)."""
        table = self.exact()
        if table is None and self.order_known:
            table = self.items
        if table is not None and not any(isinstance(v, IdentityKey) for v in table):
            return frozenset(table) if self.frozen else table
        values = [key_value(v) for v in self.in_order()]
        found = ordered_keys(values, sys.getsizeof(self.items), self.frozen)
        if found is None:
            raise Unsupported("set_order", "a set of values iterating as the trace's set")
        return found[1]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return [key_vt(v) for v in self.in_order()]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        kind = self.python_type()
        if on_instances(kind, name):
            return BoundMethodVariable(self, name)
        message = f"'{kind.__name__}' object has no attribute '{name}'"
        raise PythonError(AttributeError(message))

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        recipe = self.recipe
        if recipe is not None and recipe.valid():
            cg.build_once(self, lambda: recipe.emit(cg))
            return None

        keys = self.in_order()
        found = ordered_keys(keys, sys.getsizeof(self.items), self.frozen)
        if found is None:
            raise Unsupported("set_order", "rebuilding a set in the order the trace gave it")
        way = found[0]

        def build() -> None:
            if way != 1:  # not as a literal builds it: as the trace's set was built
                cg.load_const(build_set)
                for const in (way, sys.getsizeof(self.items), self.frozen):
                    cg.load_const(const)
            elif self.frozen:
                cg.load_const(frozenset)
            for v in keys:
                _reconstruct_key(cg, v)
            if way != 1:
                cg.build_tuple(len(keys))
                cg.call_function(4)
                return
            cg.build_set(len(keys))
            if self.frozen:
                cg.call_function(1)

        cg.build_once(self, build)
        return None


@dataclass(frozen=True)
class SetRecipe:
    """How the rewritten code builds a set laid out as one made in the trace: ``fn(*parts)``.
    CPython lays a set out by the calls that made it, and the trace made its set with the same
    calls on keys hashing as the values, so the same calls on the values lay it out the same.
    A part is ``("key", k)``, ``("keys", [k...])`` (a tuple of them), ``("dict", [k...])`` (a
    dict of them), ``("const", v)``, ``("recipe", r)`` (a set built by ``r``) or ``("input",
    s)`` (an input set's tracker: its real object, while the trace has not changed it: ``log``
    empty)."""

    fn: Any
    parts: tuple[tuple[str, Any], ...]

    @classmethod
    def call(cls, fn: Any, args: list[VariableTracker]) -> SetRecipe | None:
        """``fn(*args)``, or None where an argument is not of a kind a recipe repeats."""
        parts = [recipe_part(a) for a in args]
        return None if None in parts else cls(fn, tuple(parts))  # type: ignore[arg-type]

    @classmethod
    def method(
        cls, before: SetRecipe | None, name: str, parts: list[tuple[str, Any] | None]
    ) -> SetRecipe | None:
        """The set ``before`` builds, after its method ``name`` ran on ``parts``."""
        if before is None or None in parts:
            return None
        if name == "add" and before.fn is set and before.parts[0][0] == "keys":
            # ``set(keys)`` adds them one by one: one more added is one more key
            return cls(set, (("keys", [*before.parts[0][1], parts[0][1]]),))  # type: ignore[index]
        return cls(set_after, (("recipe", before), ("const", name), *parts))  # type: ignore[arg-type]

    def valid(self) -> bool:
        return all(
            (kind != "recipe" or part.valid()) and (kind != "input" or not part.log)
            for kind, part in self.parts
        )

    def emit(self, cg: Codegen) -> None:
        if self.fn is set and self.parts[0][0] == "keys":  # a set display adds them in order
            for key in self.parts[0][1]:
                _reconstruct_key(cg, key)
            cg.build_set(len(self.parts[0][1]))
            return
        cg.load_const(self.fn)
        for kind, part in self.parts:
            if kind == "key":
                _reconstruct_key(cg, part)
            elif kind == "const":
                cg.load_const(part)
            elif kind == "recipe":
                part.emit(cg)
            elif kind == "input":
                part.source.reconstruct(cg)
            else:
                if kind == "dict":
                    cg.load_const(dict.fromkeys)
                for key in part:
                    _reconstruct_key(cg, key)
                cg.build_tuple(len(part))
                if kind == "dict":
                    cg.call_function(1)
        cg.call_function(len(self.parts))


def set_after(table: set[Any], name: str, *args: Any) -> set[Any]:
    """``table`` after ``table.<name>(*args)`` (a ``SetRecipe``'s in-place call)."""
    getattr(table, name)(*args)
    return table


def recipe_part(vt: VariableTracker) -> tuple[str, Any] | None:
    """``vt`` as an argument of a ``SetRecipe``'s call, or None where it is not of a kind a
    recipe repeats: a set made in the trace with a recipe, an input set not changed, the items
    of a tuple or list (an iterable read item by item), a dict's keys, a constant."""
    if isinstance(vt, SetVariable):
        if vt.source is None:
            return None if vt.recipe is None else ("recipe", vt.recipe)
        return ("input", vt) if not vt.log else None
    if isinstance(vt, (TupleVariable, ListVariable)):
        return ("keys", [hash_key(v) for v in vt.items])
    if isinstance(vt, DictVariable):
        return ("dict", list(vt.items))
    if isinstance(vt, ConstantVariable) and isinstance(
        vt.value, (str, bytes, range, tuple, frozenset)
    ):
        return ("const", vt.value)
    return None


@dataclass
class _SetArgument:
    """An iterable an input set's in-place method was given, as the call read it: a set,
    frozenset or dict (read whole, by CPython's fast paths) or other items one by one (``tuple``),
    the keys in the order read, and a set's ``sys.getsizeof``."""

    kind: type
    keys: list[Any]
    table_bytes: int

    def way(self) -> int | None:
        found = ordered_keys(self.keys, self.table_bytes, self.kind is frozenset)
        return None if found is None else found[0]

    def reconstruct(self, cg: Codegen) -> None:
        if self.kind in (set, frozenset):
            cg.load_const(build_set)
            for const in (self.way(), self.table_bytes, self.kind is frozenset):
                cg.load_const(const)
        elif self.kind is dict:
            cg.load_const(dict.fromkeys)
        for key in self.keys:
            _reconstruct_key(cg, key)
        cg.build_tuple(len(self.keys))
        if self.kind is not tuple:
            cg.call_function(4 if self.kind is not dict else 1)


def _recording(items: Any, into: list[Any]) -> Any:
    for item in items:
        into.append(item)
        yield item


def ordered_keys(
    keys: list[Any], table_bytes: int, frozen: bool
) -> tuple[Any, set[Any] | frozenset[Any]] | None:
    """A real set (or frozenset) of ``keys`` (distinct, hashing as the items they stand for)
    iterating in their order, the order of a real one whose ``sys.getsizeof`` is
    ``table_bytes``, with the way it was built (``build_set``); None where none gives it. A
    set's order follows its hash table, which depends on its insertion history: a plain copy
    may iterate otherwise."""
    wanted = [id(k) for k in keys]
    ways = _frozen_ways(len(keys)) if frozen else range(len(_BUILDS))
    for way in ways:
        table = build_set(way, table_bytes, frozen, keys)
        if [id(k) for k in table] == wanted:
            return way, table
    return None


def build_set(way: Any, table_bytes: int, frozen: bool, keys: Any) -> set | frozenset:
    """The set (or frozenset) of ``keys`` built the way ``ordered_keys`` found: the rewritten
    code rebuilds a traced set with it, so that it iterates as the trace's. A frozenset cannot
    lose items, so it is built from its items in some order (``way``: their indices)."""
    if frozen:
        return frozenset([keys[i] for i in way])
    return _BUILDS[way](list(keys), table_bytes)


def _frozen_ways(n: int) -> Any:
    """Orders to put ``n`` items in a frozenset in: as given, reversed, any order of a few."""
    yield tuple(range(n))
    yield tuple(reversed(range(n)))
    if n <= 6:
        yield from itertools.permutations(range(n))


def _copied(keys: list[Any], table_bytes: int) -> set[Any]:
    """As ``set(s)`` or ``s.copy()`` of a set iterating in that order: one table sized first."""
    return set(dict.fromkeys(keys))


def _added(keys: list[Any], table_bytes: int) -> set[Any]:
    """As a literal or ``add`` after ``add``: the table grown as needed."""
    return _add_all(set(), keys)


def _add_all(table: set[Any], keys: list[Any]) -> set[Any]:
    for key in keys:
        table.add(key)
    return table


def _placed(keys: list[Any], table_bytes: int) -> set[Any]:
    """As a set whose items sit where collisions and deletions put them: in a table that large
    (or larger), each item in the first slot of its probe sequence past the previous item's."""
    for scale, reach, grown in itertools.product((1, 2, 4), (1, 4, 16), (True, False)):
        table = _placed_in(keys, _slots(table_bytes) * scale, reach, grown)
        if table is not None and [id(k) for k in table] == [id(k) for k in keys]:
            return table
    return set()


def _placed_in(keys: list[Any], slots: int, reach: int, grown: bool) -> set[Any] | None:
    """Each item's slot chosen in order, the lowest past the previous item's among the first
    ``reach`` such slots of its probe sequence; the free slots the sequence passes before it are
    held by placeholders (with more, that size the table) while the items go in, each after
    the items sitting on its way."""
    targets: dict[int, int] = {}  # slot -> index of the item there
    passed: list[list[int]] = []
    previous = -1
    for index, key in enumerate(keys):
        path: list[int] = []
        found: list[int] = []
        for slot in itertools.islice(_probes(hash(key), slots - 1), _REACH):
            path.append(slot)
            if slot > previous and slot not in targets:
                found.append(slot)
                if len(found) == reach:
                    break
        if not found:
            return None
        slot = min(found)
        targets[slot] = index
        passed.append(path[: path.index(slot)])
        previous = slot
    passed_by = {s for before in passed for s in before}
    held = sorted(passed_by - targets.keys())
    spare = (s for s in range(slots) if s not in targets and s not in passed_by)
    fillers = [_Filler(s) for s in held]
    if grown:  # items added one by one: the fewest that grow the table to its size
        table: set[Any] = set(fillers)
        for slot in spare:
            if _slots(sys.getsizeof(table)) >= slots:
                break
            fillers.append(_Filler(slot))
            table.add(fillers[-1])
    else:  # read from a dict: the table sized at once, for more than slots / 4 of them
        fillers += map(_Filler, itertools.islice(spare, max(0, slots // 4 + 1 - len(held))))
        table = set(dict.fromkeys(fillers))
    table_bytes = sys.getsizeof(table)
    if _slots(table_bytes) != slots:
        return None
    for index in _after_their_way(keys, passed, targets):
        table.add(keys[index])
    if sys.getsizeof(table) != table_bytes:  # grown: laid out anew
        return None
    for filler in fillers:
        table.discard(filler)
    return table


def _after_their_way(keys: list[Any], passed: list[list[int]], targets: dict[int, int]) -> list:
    """The items' indices, each after those sitting in slots its probe sequence passes."""
    order: list[int] = []
    state: dict[int, int] = {}  # 1: being placed, 2: placed

    def place(index: int) -> None:
        state[index] = 1
        for slot in passed[index]:
            other = targets.get(slot)
            if other is not None and state.get(other) != 2:
                if state.get(other) == 1:
                    raise ValueError("cycle")
                place(other)
        state[index] = 2
        order.append(index)

    try:
        for index in range(len(keys)):
            if index not in state:
                place(index)
    except (ValueError, RecursionError):
        return []  # the check of the order fails
    return order


def _slots(table_bytes: int) -> int:
    empty = sys.getsizeof(set())
    return 8 if table_bytes <= empty else (table_bytes - empty) // (2 * _POINTER)


_POINTER = struct.calcsize("P")
_LINEAR_PROBES = 9  #: slots CPython's set probes after each one its hash sequence visits
_PERTURB_SHIFT = 5


_REACH = 64  #: the slots of an item's probe sequence ``_placed_in`` looks at


def _probes(hash_: int, mask: int) -> Any:
    """The slots CPython's set looks at for an item of hash ``hash_``, in order."""
    perturb = hash_ & (2**64 - 1)
    i = hash_ & mask
    while True:
        yield from range(i, i + _LINEAR_PROBES + 1) if i + _LINEAR_PROBES <= mask else (i,)
        perturb >>= _PERTURB_SHIFT
        i = (i * 5 + 1 + perturb) & mask


_BUILDS = (_copied, _added, _placed)


class _Filler:
    """A placeholder item of a table being grown, hashing as the slot it should fill."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def __hash__(self) -> int:
        return self.slot


def make_set(items: set | frozenset) -> VariableTracker:
    """The tracker of a set or frozenset of keys computed in the trace (``hash_key``'s): a
    frozenset of plain constants is a constant; any other keeps its items' trackers."""
    if isinstance(items, frozenset) and not any(isinstance(k, IdentityKey) for k in items):
        return ConstantVariable(items)
    # itself: a copy, even one iterating in its order, may be laid out otherwise (a union with
    # it then iterates otherwise)
    return SetVariable(items, frozen=isinstance(items, frozenset))


def computed_set(
    result: set | frozenset, operands: list[VariableTracker], recipe: SetRecipe | None
) -> VariableTracker:
    """The tracker of the set ``result`` CPython computed from ``operands``, the set trackers
    among them as their ``exact`` tables where they have them. Computed from tables laid out as
    CPython's, it is CPython's; its keys are then those of ``operands`` (a value of an input
    set's own object stands for that set's key), and ``result`` its mirror. From a set without
    one (an input set the trace changed), its order is unknown. ``recipe``: the call that
    computed it, to repeat where the rewritten code rebuilds it."""
    sets = [o for o in operands if isinstance(o, SetVariable)]
    exact = all(s.exact() is not None for s in sets)
    keys_of = {k: k for s in sets if not s.own_table for k in s.items}
    keys = [keys_of.get(v, v) for v in result]
    if exact and not any(
        isinstance(k, IdentityKey) and k is not v for k, v in zip(keys, result, strict=True)
    ):
        made = make_set(result)  # of keys (or constants): laid out as CPython's
        if isinstance(made, SetVariable):
            made.recipe = recipe
        return made
    frozen = isinstance(result, frozenset)
    found = ordered_keys(keys, sys.getsizeof(result), frozen) if exact else None
    items = found[1] if found is not None else set(keys)
    mirror = result if exact else None  # which gives the order where ``items`` cannot
    known = found is not None
    made = SetVariable(items, frozen=frozen, own_table=False, order_known=known, mirror=mirror)
    made.recipe = recipe
    return made


@dataclass(eq=False, repr=False)
class BoundMethodVariable(BoundAttributeVariable):
    """``xs.append`` and friends before the call; ``dispatch.call_container_method`` runs them."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.call_container_method(tx, self.obj, self.name, args, kwargs)


from .. import dispatch  # noqa: E402
