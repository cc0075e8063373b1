"""Containers as CPython has them: ``ListVariable``, ``TupleVariable``, ``DictVariable``,
``SetVariable`` (sets in CPython's table order), their methods (``call_method`` over ``METHODS``),
dict views, the ``collections`` types (``deque``, ``OrderedDict``, ``Counter``, ``defaultdict``),
dict subclasses, namedtuples, lists read lazily from inputs and ``ModelOutput``. ``hash_key`` is
the key model every dict and set uses. Iteration over them is ``iterators.py``'s.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import enum
import functools
import inspect
import itertools
import operator
import re
import struct
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ...guards.sources import (
    AttrSource,
    ComputedItemSource,
    ConstSource,
    DictKeySource,
    FreshSource,
    ItemSource,
    Source,
)
from .. import polyfills
from ..exc import PythonError, Unsupported
from . import dispatch
from .base import (
    MISSING,
    RUNNING,
    WALKED,
    BoundAttributeVariable,
    IdentityKey,
    VariableTracker,
    method_bound,
    type_lookup,
)
from .constants import (
    CONSTANT_TYPES,
    ConstantVariable,
    LazyConstantVariable,
    ObjectIdVariable,
    computed,
)
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# Containers: ``TupleVariable``, ``ListVariable``, ``DictVariable``, ``SetVariable``.
#
# Items are VariableTrackers. Tuples are immutable. Lists, dicts and sets are mutated in place
# during the trace (they are the value); when such a container came from an input (it has a
# ``source``) the mutation is also recorded in ``tx.output.side_effects`` so the rewritten code
# replays it.
#
# Their iterators are in ``iterators/``.


def hash_key(vt: VariableTracker) -> Any:
    """``vt`` as a key of a traced dict or item of a traced set, hashing and comparing as CPython
    hashes and compares the value: a constant (int, str, float, None, a tuple or frozenset of
    constants, an enum member, a dtype, a device, a range) is the key itself; a value whose
    tracker matters (a class, function, module or builtin function, an object with the default
    ``__eq__``/``__hash__``, a tuple holding one) is an ``IdentityKey`` keeping its tracker beside
    the value it compares as (an input kept apart from the other inputs of its type; a partial,
    iterator or generator made in the trace: its ``MadeObject``; a weak reference: the real one,
    compared by its referent); a tensor compares by identity (its graph node). Unhashable builtin
    containers raise CPython's ``TypeError``; objects with their own ``__hash__`` break."""
    if isinstance(vt, TensorVariable):
        if len(vt.objects()) > 1:  # which object it is, known at run time
            raise Unsupported("picked_tensor", f"{vt} as a key: one of several tensors")
        return IdentityKey(vt, vt.node)
    if vt.is_python_constant():
        value = vt.as_python_constant()
        try:
            hash(value)
        except TypeError as e:  # CPython's own message (``'collections.deque'``)
            raise PythonError(e) from None
        if isinstance(vt, ConstantVariable) or not _pure_hash(value):
            return value
        if type(value) is types.FunctionType and vt.source is not None and RUNNING.tx is not None:
            # keyed by identity: a function guarded by what it is made of is guarded as itself
            RUNNING.tx.output.assume_identity(vt.source, value)
        return IdentityKey(vt, value)  # a tuple too: rebuilt as the object it was read from
    if isinstance(vt, TupleVariable):  # a tuple holding an object: by value, item by item
        return IdentityKey(vt, tuple(hash_key(item) for item in vt.items))
    if isinstance(vt, SetVariable) and vt.frozen:
        return IdentityKey(vt, frozenset(vt.items))
    method = _bound_method(vt)
    if method is not None:
        # hashed and compared by its object's identity: kept apart as that object is
        owner = getattr(vt, "self_vt", None) or getattr(vt, "obj", None)
        if owner is not None and owner.source is not None and RUNNING.tx is not None:
            _keep_apart(RUNNING.tx, owner, method.__self__)
        return IdentityKey(vt, method)
    ref = _reference(vt)
    if ref is not None:
        return IdentityKey(vt, ref)
    if method_bound(vt) is not None:
        return IdentityKey(vt, MethodKey(vt))
    if isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        kind = c_name(vt.python_type())
        raise PythonError(TypeError(f"unhashable type: '{kind}'"))
    value = getattr(vt, "value", None)
    if value is not None and identity_hashed(type(value)):
        if vt.source is not None and RUNNING.tx is not None:
            _keep_apart(RUNNING.tx, vt, value)
        return IdentityKey(vt, value)
    if value is not None and type(value).__hash__ is None:  # ``__eq__`` without ``__hash__``
        raise PythonError(TypeError(f"unhashable type: '{c_name(type(value))}'"))
    if value is not None and python_hashed(type(value)) and RUNNING.tx is not None:
        return UserHashedKey(vt, _traced_hash(RUNNING.tx, vt))
    if value is None and identity_hashed(_tracked_type(vt)):  # a partial, an iterator
        return _tracker_identity_key(vt)
    if isinstance(vt, ObjectIdVariable) and _address_unknown(vt.of):
        return IdentityKey(vt, MadeId(vt.of))
    raise Unsupported("dict_key", f"{vt} as a dict key or set item")


def _reference(vt: VariableTracker) -> weakref.ReferenceType | None:
    """``weakref.ref(obj)`` as CPython hashes and compares it, by its referent (the same object
    alive: equal), where that is an object hashed by identity: the real reference, one read from
    the inputs (its identity guarded, so its referent is that object) or, made in the trace,
    ``weakref.ref`` of the referent's object (the one CPython shares between calls made with no
    callback, as ``make_ref`` requires). None for any other value."""
    if _tracked_type(vt) is not weakref.ReferenceType or RUNNING.tx is None:
        return None
    output = RUNNING.tx.output
    referent = getattr(vt, "referent", None)  # made in the trace
    if referent is not None:
        obj = getattr(referent, "value", None)
        if obj is None or not identity_hashed(type(obj)):
            return None
        if referent.source is not None:
            output.assume_identity(referent.source, obj)
        return weakref.ref(obj)
    ref = getattr(vt, "value", None)
    obj = ref() if type(ref) is weakref.ReferenceType else None
    if obj is None or vt.source is None or not identity_hashed(type(obj)):
        return None  # dead: hashed only if it was while alive, compared by identity
    output.assume_identity(vt.source, ref)
    return ref


def _tracked_type(vt: VariableTracker) -> type:
    try:
        return vt.python_type()
    except Unsupported:
        return list  # not known: no key of this rule (a list is unhashable)


class MadeObject:
    """The identity of an object made in the trace that hashes by its address (a partial, an
    iterator, a generator) and whose tracker holds no real object: equal to itself alone. Its
    hash is no address the compiled call will give the object, so a set holding it with other
    items has no known order (``SetVariable.ordered`` breaks)."""

    __slots__ = ("vt",)

    def __init__(self, vt: VariableTracker) -> None:
        self.vt = vt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MadeObject) and other.vt is self.vt

    def __hash__(self) -> int:
        return object.__hash__(self.vt)


class MadeId:
    """``id(obj)`` of an object made in the trace, as a key: CPython's int is the object's
    address, which only the compiled call knows. It equals the id of the same object alone
    (``is_same``: one object may have several trackers), so all hash alike and equality decides
    between them. A number equals it only where the address of a dead object it was the id of is
    given to this one, a coincidence of the allocator that the trace cannot foresee nor compiled
    code repeat: a container holding such a number is not searched for it (``among_numbers``),
    and a set holding it with other items has no known order (``SetVariable.ordered`` breaks)."""

    __slots__ = ("of",)

    def __init__(self, of: VariableTracker) -> None:
        self.of = of

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MadeId) and _same_object(self.of, other.of)

    def __hash__(self) -> int:
        return hash(MadeId)


def _address_unknown(vt: VariableTracker) -> bool:
    """Whether ``vt`` is an object made in the trace (no source, not a constant): its address is
    the compiled call's, unknown to the trace and no other object's while it lives."""
    return vt.source is None and not vt.is_python_constant()


def among_numbers(key: Any, keys: Any) -> Any:
    """``key``, about to be searched for or put among ``keys``: a break where it holds the id of
    an object made in the trace (``MadeId``) and one of ``keys`` equals it or not as that
    object's address is a number there or not, which only the compiled call knows."""
    if not _holds_made_id(key):
        return key
    undecided = next((k for k in keys if _undecided(key, k)), None)
    if undecided is not None:
        raise Unsupported(
            "dict_key",
            f"{key_vt(key)} looked up beside {key_vt(undecided)}",
            "an id equals a number only where the object's address happens to be that number",
        )
    return key


def _holds_made_id(key: Any) -> bool:
    ident = key.ident if isinstance(key, IdentityKey) else key
    if type(ident) is tuple:
        return any(map(_holds_made_id, ident))
    return isinstance(ident, MadeId)


def _undecided(key: Any, other: Any) -> bool:
    """Whether ``key == other`` turns on the address of an object made in the trace: a
    ``MadeId`` against a number, or tuples equal but for such places."""
    ident = key.ident if isinstance(key, IdentityKey) else key
    other = other.ident if isinstance(other, IdentityKey) else other
    if isinstance(ident, MadeId):
        return type(other) in (int, float, complex)
    if type(ident) is not tuple or type(other) is not tuple or len(ident) != len(other):
        return False
    undecided = False
    for part, other_part in zip(ident, other, strict=True):
        if _undecided(part, other_part):
            undecided = True
        elif part != other_part:
            return False
    return undecided


def _tracker_identity_key(vt: VariableTracker) -> IdentityKey:
    """The key of ``vt``, whose class keeps ``object``'s ``__hash__`` and ``__eq__`` (no user
    code) but whose tracker holds no real object: one read from the inputs is the real object
    ``wrap`` took in (kept apart from the others alike, as a plain object is); one made in the
    trace is its tracker's ``MadeObject``."""
    tx = RUNNING.tx
    if vt.source is None:
        return IdentityKey(vt, MadeObject(vt))
    real = wrapped_object(tx, vt) if tx is not None else MISSING
    if real is MISSING:
        raise Unsupported("dict_key", f"{vt} as a dict key: the object it reads is not known")
    _keep_apart(tx, vt, real)
    return IdentityKey(vt, real)


def wrapped_object(tx: Translator, vt: VariableTracker) -> Any:
    """The real object ``builder.wrap`` made ``vt`` of, else ``MISSING``."""
    for value, known in tx.output.wrapped.values():
        if known is vt:
            return value
    return MISSING


def _keep_apart(tx: Translator, vt: VariableTracker, value: Any) -> None:
    """``vt``, read through its source and keyed by the identity of ``value``, stays another
    object than each other input of its type the trace took in: a lookup that missed (or found
    another key) holds only while no later call passes one object in both places. Inputs
    guarded by identity already (a function, an input dict's key) need no such guard; inputs
    taken in since ``vt`` was last keyed are the only ones looked at again."""
    if isinstance(vt.source.root, (ConstSource, FreshSource)):
        return
    output = tx.output
    seen = output.kept_apart.get(vt, 0)
    if seen == len(output.wrapped):
        return
    fixed = _identity_fixed(tx, vt.source, value)
    for other, known in list(output.wrapped.values())[seen:]:
        if type(other) is not type(value) or known is vt or known.source is None:
            continue
        if isinstance(known.source.root, (ConstSource, FreshSource)):
            continue
        if other is value:  # one object, two trackers: the same while both hold it
            output.assume_identity(vt.source, value)
            output.assume_identity(known.source, other)
        elif not (fixed and _identity_fixed(tx, known.source, other)):
            output.assume_distinct(vt.source, known.source)
    output.kept_apart[vt] = len(output.wrapped)


def _identity_fixed(tx: Translator, source: Source, value: Any) -> bool:
    return isinstance(source, DictKeySource) or tx.output.identity_assumed(source, value)


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
    """``hash(vt)`` by inlining its class's ``__hash__`` (the attributes it reads are guarded).
    A ``__hash__`` that changes state (counts its calls, logs) is not modelled: CPython hashes
    a key once, when it is put in, and a lookup hashes only the key looked up, which the key
    model cannot tell apart from the keys of an input dict it hashes to stand for them."""
    effects = tx.output.side_effects
    before = effects.snapshot()
    result = vt.call_method(tx, "__hash__", [], {})
    if effects.changed_since(before):
        effects.restore(before)
        raise Unsupported("dict_key", f"the __hash__ of {vt} changes state")
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


def _bound_method(vt: VariableTracker) -> Any:
    """``obj.method`` of a function bound to an object the trace knows, or of a method found on
    the class of an object it holds (``module.parameters``, ``obj.__eq__``): the real bound
    method, which hashes and compares by the object's identity and the function (no user code),
    as a real one given to the trace does."""
    fn, owner = getattr(vt, "fn", None), getattr(vt, "self_vt", None)
    if isinstance(fn, types.FunctionType) and owner is not None:
        if owner.is_python_constant():
            return types.MethodType(fn, owner.as_python_constant())
        value = getattr(owner, "value", None)
        return types.MethodType(fn, value) if value is not None else None
    method = method_bound(vt)
    value = getattr(vt, "obj", None) and getattr(vt.obj, "value", None)
    if method is None or value is None:
        return None
    try:
        return method.__get__(value, type(value))
    except TypeError:  # not an object of the class (a symbolic number's stand-in)
        return None


class MethodKey:
    """What a method found on the class of an object the trace holds as a tracker only (a list,
    a tensor: ``xs.append``, ``t.view``), read in the trace or given to it, hashes and compares
    as: CPython's ``meth_richcompare`` and ``wrapper_richcompare`` find two equal when they bind
    the same method to the same object (``is``). Its hash is the method's (CPython's mixes in the
    object's address, which the trace does not have); ``==`` decides between equal hashes."""

    __slots__ = ("method", "owner")

    def __init__(self, vt: BoundAttributeVariable) -> None:
        self.method, self.owner = method_bound(vt), vt.obj

    def __hash__(self) -> int:
        return hash(self.method)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MethodKey)
            and other.method is self.method
            and _same_object(self.owner, other.owner)
        )


def _same_object(a: VariableTracker, b: VariableTracker) -> bool:
    """Do two trackers stand for one object (``is``), as the running trace knows them? Keys made
    of objects the trace holds (MadeId, MethodKey) compare so; outside a trace it is unknown."""
    if a is b:
        return True
    if RUNNING.tx is None:
        raise Unsupported("dict_key", f"comparing {a} and {b} outside a trace")
    return dispatch.is_same(RUNNING.tx, a, b)


_BOUND_METHODS = (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType)


def _hashed_by_address(keys: Any, own_layout: bool) -> Iterator[tuple[VariableTracker, Any]]:
    """The objects whose address gives the hash of one of ``keys`` (hash keys), each with its
    tracker: a plain object's, its bound method's, a tensor's, one in a tuple or frozenset. One
    whose address the trace's set was not laid out by comes as None: one the call makes anew
    (``_made_anew``), a tensor (keyed by its graph node), a method bound to a container
    (``MethodKey``), these two where the set is laid out by its keys' hashes (``own_layout``;
    an input set's iterates as the real one, whose keys ``DICT_KEYS`` guards). One with no
    source that is not made anew is an object the rewritten code holds as a constant (a class,
    a function reached from a guarded one): the same object on every call, left out. The order
    of a set of two items or more follows these hashes: once the trace reads it, the identity
    of those read from the inputs (guarded by type) is guarded, and one with no address known
    breaks."""
    for key in keys:
        if not isinstance(key, IdentityKey) or type(key) is not IdentityKey:
            continue
        ident = key.ident
        if isinstance(ident, (tuple, frozenset)):
            yield from _hashed_by_address(ident, own_layout)
            continue
        vt = key.vt
        if isinstance(ident, (MadeObject, MadeId)):
            yield vt, None
            continue
        if isinstance(vt, TensorVariable) or isinstance(ident, MethodKey):
            if own_layout:
                yield vt, None  # keyed by its node, or by its method alone: laid out by neither
            continue
        if isinstance(ident, _BOUND_METHODS):  # hashed by the address of its object
            vt = getattr(vt, "self_vt", None) or getattr(vt, "obj", None) or vt
        value = getattr(vt, "value", None)
        if value is None and vt is key.vt and type(ident) is _tracked_type(vt):
            value = ident  # a partial, an iterator read from the inputs: the object itself
        if value is None or not identity_hashed(type(value)):
            continue
        if _made_anew(vt):
            yield vt, None
        elif vt.source is not None:
            yield vt, value


def _made_anew(vt: VariableTracker) -> bool:
    """Whether each compiled call makes the object of ``vt`` anew, while the trace holds a
    stand-in for it: an object made in the trace (``cls_vt``, the class it was made from, as
    ``objects.class_vt`` reads it) or a module the prologue builds (``FreshSource``)."""
    if vt.source is not None:
        return isinstance(vt.source.root, FreshSource)
    return getattr(vt, "cls_vt", None) is not None


def _first_made(keys: Any, own_layout: bool) -> VariableTracker | None:
    """The first item of a set of ``keys`` placed by an address only the compiled call knows."""
    if len(keys) < 2:  # no other item to be laid out otherwise
        return None
    return next((vt for vt, v in _hashed_by_address(keys, own_layout) if v is None), None)


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
#: whether the running Python hashes slices (3.12+, as the tuple of their bounds): a fact read
#: from ``slice`` itself, so dicts and sets hold them exactly where CPython lets them
HASHABLE_SLICES = slice.__hash__ is not None


def is_key_value(key: Any) -> bool:
    """Whether ``hash_key`` can stand for the real ``key`` of an input dict or set: a constant
    (also inside tuples and frozensets), an enum member, a dtype or device, a tensor, a builtin
    function of a module, or a value hashed by identity."""
    cls = type(key)
    if cls in _VALUE_KEY_TYPES or cls in _SINGLETON_KEY_TYPES or isinstance(key, torch.Tensor):
        return True
    if cls is frozenset or tuple_like(cls):
        return all(is_key_value(k) for k in key)
    if cls is slice:  # hashable where the running Python hashes it (3.12+): as its bounds' tuple
        return HASHABLE_SLICES and all(map(compared_by_value, _bounds(key)))
    if isinstance(key, enum.Enum):  # ``IntEnum``/``StrEnum``: their value type's, in C
        return _no_user_code(cls, "__eq__") and _no_user_code(cls, "__hash__")
    if isinstance(key, types.BuiltinFunctionType):
        owner = key.__self__
        return owner is None or isinstance(owner, types.ModuleType) or _method_of_tracked(key)
    if cls is types.MethodType:  # hashed by its object's identity and its function
        return identity_hashed(type(key.__self__)) and isinstance(key.__func__, types.FunctionType)
    if python_hashed(cls):  # its ``__hash__`` is inlined by the translator running
        return RUNNING.tx is not None
    return identity_hashed(cls)


def _no_user_code(cls: type, name: str) -> bool:
    """``cls``'s method ``name`` is ``object``'s, ``Enum``'s or a builtin type's (an ``IntEnum``
    member hashes and compares as its ``int``): running it runs no Python code."""
    owner = next(base for base in cls.__mro__ if name in vars(base))
    return owner is enum.Enum or owner.__module__ == "builtins"


#: objects always wrapped as one tracker of their own (a list, a tensor)
_TRACKED_OWNERS = (list, torch.Tensor, torch.nn.Parameter)


def _method_of_tracked(method: types.BuiltinMethodType) -> bool:
    """A C method bound to a list or a tensor (``xs.append``), its type's own under that name:
    the trace reads it as its object's method (``MethodKey``), however either is reached."""
    owner = method.__self__
    return type(owner) in _TRACKED_OWNERS and getattr(owner, method.__name__, None) == method


def _bounds(key: slice) -> tuple[Any, Any, Any]:
    return key.start, key.stop, key.step


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


_ASKED: set[int] = set()  #: containers whose ``is_python_constant`` is running


def _not_cyclic(is_python_constant: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``is_python_constant`` of a container that may hold itself (``xs.append(xs)``): a
    container reached again while its own answer is being worked out is not a constant, so one
    that holds itself is never folded."""

    @functools.wraps(is_python_constant)
    def asked(self: Any) -> bool:
        if id(self) in _ASKED:
            return False
        _ASKED.add(id(self))
        try:
            return is_python_constant(self)
        finally:
            _ASKED.discard(id(self))

    return asked


_BUILDING: set[int] = set()  #: containers the rewritten code is building now


def _build_once(cg: Codegen, vt: VariableTracker, build: Callable[[], Any]) -> None:
    """``cg.build_once`` for a container made in the trace; one that holds itself (``xs.append(
    xs)`` returned or live at a break) would be built inside its own build: not rebuilt (a break
    before the code that needs it)."""
    if id(vt) in _BUILDING:
        raise Unsupported(
            "container_cycle", f"rebuilding a {vt.python_type().__name__} that holds itself"
        )
    _BUILDING.add(id(vt))
    try:
        cg.build_once(vt, build)
    finally:
        _BUILDING.discard(id(vt))


class BuiltOnce:
    """A tracker rebuilt by its ``_build``: an input's value is read through its source; one made
    in the trace is built once however often the code needs it (a local and a method bound to
    it: one object)."""

    source: Any
    _build: Callable[[Codegen], None]

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        _build_once(cg, self, lambda: self._build(cg))  # type: ignore[arg-type]
        return None


class BaseSequenceVariable(VariableTracker):
    items: list[VariableTracker]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return list(self.items)

    @_not_cyclic
    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self) -> Any:
        return self.python_type()(i.as_python_constant() for i in self.items)

    def _reconstruct_items(self, cg: Codegen) -> None:
        for item in self.items:
            item.reconstruct(cg)


@dataclass(eq=False)
class TupleVariable(BuiltOnce, BaseSequenceVariable):
    items: list[VariableTracker]
    source: Source | None = None
    is_size: bool = False  #: a ``torch.Size`` (from ``t.shape``/``t.size()``)
    cls: type = tuple  #: the tuple type (a namedtuple class, ``torch.return_types.max``...)
    #: the real tuple this one is, where it was folded from one (a constant of the code: equal
    #: constants of one code object are one object, so ``t is (1, 'a')`` can be true)
    real: tuple | None = None

    def clone(self, **changes: Any) -> VariableTracker:
        if changes.keys() & {"items", "is_size", "cls"}:
            changes.setdefault("real", None)  # another tuple
        return super().clone(**changes)

    def python_type(self) -> type:
        return torch.Size if self.is_size else self.cls

    def as_python_constant(self) -> Any:
        values = [i.as_python_constant() for i in self.items]
        if self.is_size:
            return torch.Size(values)
        if hasattr(self.cls, "n_sequence_fields"):
            # A C struct sequence (``sys.version_info``, ``torch.return_types.max``): the real one
            # where it was read, as some cannot be made anew (``sys.version_info``) or hold more
            # than their items (``os.stat_result``); else made from one sequence, as CPython's are.
            return self.real if self.real is not None else self.cls(values)
        if hasattr(self.cls, "_fields"):
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
        return _constant_method(tx, self, name)

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
#: Methods of ``tuple`` itself ``call_method`` runs.
_TUPLE_METHODS = frozenset({"count", "index", "__init__", "__getnewargs__"})


def _tuple_method(cls: type, name: str) -> bool:
    """Whether ``name`` is one of those methods and ``cls`` keeps ``tuple``'s (a namedtuple has
    its own ``__getnewargs__``), or one of the ``SPELLED`` methods written in C (``torch.Size``
    has its own ``__repr__``, which ``repr`` calls)."""
    static = inspect.getattr_static(cls, name, None)
    if name in SPELLED:
        return isinstance(static, (types.WrapperDescriptorType, types.MethodDescriptorType))
    return name in _TUPLE_METHODS and static is inspect.getattr_static(tuple, name)


#: descriptors of methods written in C, bound to the object they are read from
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)
_HEAP_TYPE = 1 << 9  #: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement or ``type()``


def _constant_method(tx: Translator, vt: VariableTracker, name: str) -> VariableTracker:
    namedtuple = hasattr(vt.python_type(), "_make")
    if _tuple_method(vt.python_type(), name) or (name in ("_replace", "_asdict") and namedtuple):
        return BoundMethodVariable(vt, name)
    if name == "_fields" and hasattr(vt.python_type(), "_fields"):
        return ConstantVariable(vt.python_type()._fields)
    cls = vt.python_type()
    if not on_instances(cls, name):
        if cls.__flags__ & _HEAP_TYPE:  # a namedtuple class, which may gain it: guarded there
            return dispatch.namedtuple_attribute(tx, vt, name)
        raise PythonError(AttributeError(f"'{c_name(cls)}' object has no attribute '{name}'"))
    static = type_lookup(cls, name)
    owner = next(k for k in cls.__mro__ if name in vars(k))
    if not owner.__flags__ & _HEAP_TYPE:  # found on ``tuple`` or ``object``, which never change
        if isinstance(static, (str, type(None))):  # ``().__doc__``
            return ConstantVariable(static)
        if isinstance(static, types.ClassMethodDescriptorType):  # bound to the class
            return tx.wrap_static(getattr(cls, name))
        if isinstance(static, _C_METHODS):
            return BoundMethodVariable(vt, name)  # its call: ``call_method``
        raise Unsupported("getattr", f"{cls.__name__} has no attribute {name!r}")
    return dispatch.namedtuple_attribute(tx, vt, name)  # the class's own (``_make``), guarded


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
        _build_once(cg, self, lambda: (self._reconstruct_items(cg), cg.build_list(len(self.items))))
        return None

    def __repr__(self) -> str:
        return f"ListVariable({self.items!r})"


#: dict and the ``collections`` dicts ``construct_collection`` makes; other ``cls`` are user
#: subclasses
_DICT_CLASSES = frozenset(
    {dict, collections.OrderedDict, collections.defaultdict, collections.Counter}
)


@dataclass(eq=False)
class DictVariable(BuiltOnce, VariableTracker):
    items: dict[Any, VariableTracker]  #: keys are Python constants (str, int, ...)
    source: Source | None = None
    cls: type = dict
    default_factory: VariableTracker | None = None  #: of a ``collections.defaultdict``
    #: the object itself, for an ``OrderedDict`` or ``Counter`` from outside the call (its
    #: instance attributes read from its ``__dict__``, ``own_attribute``)
    real: Any = None

    def python_type(self) -> type:
        return self.cls

    @_not_cyclic
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
        if on_instances(self.cls, name):
            return BoundMethodVariable(self, name)
        if self.cls is dict:  # no instance dict: CPython's AttributeError
            raise PythonError(AttributeError(f"'dict' object has no attribute '{name}'"))
        stored = tx.output.side_effects.load_attr(self, name)  # one the trace stored
        if stored is not None:
            return stored
        if self.real is not None and type(self.real) is self.cls:
            return self.own_attribute(tx, name)
        raise Unsupported("getattr", f"{self.cls.__name__} has no attribute {name!r}")

    def own_attribute(self, tx: Translator, name: str) -> VariableTracker:
        """``name`` of the instance ``__dict__`` of the object from outside the call (its
        presence or absence guarded); absent, CPython's AttributeError."""
        namespace = AttrSource(self.source, "__dict__")
        if name in vars(self.real):
            tx.output.assume_key_present(namespace, name)
            return tx.wrap(vars(self.real)[name], AttrSource(self.source, name))
        tx.output.assume_key_absent(namespace, name)
        try:  # CPython's own error (its wording differs between versions)
            getattr(self.real, name)
        except AttributeError as error:
            raise PythonError(error) from None
        raise Unsupported("getattr", f"{self.cls.__name__}.{name} found outside its __dict__")

    # An ``OrderedDict`` or ``Counter`` made in the trace has an instance dict: given attributes
    # (``objects.store_attribute``), it is a new object of the side-effect log, made again only
    # where it escapes: blank (``create``), its attributes stored, then its items (``fill``).
    @property
    def name(self) -> str:
        """The local of the rewritten code holding it, once ``create``d."""
        return f"__bg_dict{id(self):x}"

    def create(self, cg: Codegen) -> None:
        cg.load_const(self.cls)
        cg.call_function(0)

    def fill(self, cg: Codegen) -> None:
        cg.load_const(fill_items)
        cg.load_local(self.name)
        cg.load_const(type_lookup(self.cls, "__setitem__"))
        DictVariable(dict(self.items)).reconstruct(cg)
        cg.call_function(3)
        cg.pop_top()

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is None and self.name in cg.new_objects:
            cg.load_local(self.name)
            return None
        return super().reconstruct(cg)

    def lookup(self, tx: Translator, key: VariableTracker) -> tuple[Any, VariableTracker | None]:
        """``key``'s entry: the key CPython's lookup takes it for, and the value there (None where
        the dict has no such key). The one place ``d[k]``, ``d.get(k)`` and ``k in d`` look."""
        k = _key(key, self.items)
        return k, self.items.get(k)

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


def fill_items(obj: dict, setitem: Any, items: dict) -> None:
    """Called by the rewritten code: ``items`` stored in order into ``obj``, a dict made blank,
    by its class's own ``__setitem__`` (an ``OrderedDict``'s keeps its order)."""
    for key, value in items.items():
        setitem(obj, key, value)


class KeyedReads:
    """The storage of an input dict the trace reads lazily (mixed in before the dict's tracker):
    its values are wrapped, all at once, on the first read of ``items`` (``read_items``, the
    builder's, which guards the keys, ``DICT_KEYS``, where they are not guarded already). Until
    then:

    * with ``read_item`` (a dict keyed by strs and ints alone): a lookup by a str or int constant
      (``d[k]``, ``d.get(k)``, ``k in d``: ``lookup``) reads that one key, its presence guarded
      (``KEY_PRESENT``/``KEY_ABSENT``) and its value wrapped, so a call guards only the keys it
      reads (a registry that grows as models are made, a table of functions of which the call
      uses one);
    * an item the trace reads at a key it holds without its value (``LazyConstantVariable``: a
      loop's key printed at a break) is the item the call finds there at run time
      (``item_at_key``), so the key's value stays unguarded.

    Invariant: while ``read`` is False no guard holds the dict's keys but those looked up, no
    guard a value but theirs, and it is given back through its source (the trace has not changed
    it: every change, and everything that sees the keys, reads ``items`` first)."""

    def _lazy(
        self,
        value: dict,
        read_items: Callable[[], dict],
        read_item: Callable[[Any], VariableTracker | None] | None,
    ) -> None:
        self._value, self._read_items, self._read_item = value, read_items, read_item
        self._items: dict[Any, VariableTracker] | None = None
        self._found: dict[Any, VariableTracker | None] = {}  #: the keys looked up, by ``lookup``

    @property
    def items(self) -> dict[Any, VariableTracker]:  # type: ignore[override]
        if self._items is None:
            items = self._read_items()
            for key, vt in self._found.items():  # the trackers the trace holds already
                if vt is not None:
                    items[key] = vt
            self._items = items
        return self._items

    @items.setter
    def items(self, items: dict[Any, VariableTracker] | None) -> None:
        self._items = items

    @property
    def read(self) -> bool:
        return self._items is not None

    def lookup(self, tx: Translator, key: VariableTracker) -> tuple[Any, VariableTracker | None]:
        """``key``'s entry, reading only that key while the dict is unread (``read_item``)."""
        if self._read_item is not None and not self.read:
            k = _by_key(key)
            if k is not None:
                if k not in self._found:
                    self._found[k] = self._read_item(k)
                return k, self._found[k]
        return super().lookup(tx, key)  # type: ignore[misc]

    def item_at_key(self, tx: Translator, key: VariableTracker) -> VariableTracker | None:
        """``d[k]`` for a key whose value the trace has not read, while nothing of the dict is
        read: the item at that key, read at run time (``L['d'][L['__stack0'][0]]``) and guarded
        as an input, an absent key making its guards raise (a miss). None otherwise (the key
        read: guarded by value; CPython's KeyError raised as before)."""
        if self.read or not isinstance(key, LazyConstantVariable) or key.read:
            return None
        real = key.peek()
        if not dict.__contains__(self._value, real):
            return None
        return tx.wrap(
            dict.__getitem__(self._value, real), ComputedItemSource(self.source, key.source)
        )

    def unread_children(self) -> list[Any]:
        """The trackers of the keys looked up (what ``walk`` visits of an unread dict)."""
        return [vt for vt in self._found.values() if vt is not None]


def _constant_data(value: Any, depth: int = 0) -> bool:
    """A constant, or a builtin list, tuple, set or dict of such, nested (JSON-like data, a table
    of numbers): what an input dict's value must be for folding on the dict to read it whole."""
    cls = type(value)
    if cls in CONSTANT_TYPES:
        return True
    if depth > 4:
        return False
    if cls in (list, tuple, set, frozenset):
        return all(_constant_data(v, depth + 1) for v in value)
    if cls is dict:
        return all(
            type(k) in CONSTANT_TYPES and _constant_data(v, depth + 1) for k, v in value.items()
        )
    return False


def _by_key(vt: VariableTracker) -> Any:
    """The str or int ``vt`` stands for, a key ``KeyedReads.lookup`` reads alone; None for any
    other (a bool, a float, a tuple: looked up among all the keys)."""
    if isinstance(vt, ConstantVariable) and type(vt.value) in (str, int):
        return vt.value
    return None


class LazyDictVariable(KeyedReads, DictVariable):
    """A plain ``dict`` input read lazily (``KeyedReads``)."""

    def __init__(
        self,
        value: dict,
        read_items: Callable[[], dict],
        source: Source,
        read_item: Callable[[Any], VariableTracker | None] | None = None,
    ) -> None:
        self._lazy(value, read_items, read_item)
        self.source, self.cls, self.default_factory = source, dict, None

    def is_python_constant(self) -> bool:
        """Not while a value is a tensor, nor, for one read key by key, while a value is no data
        made of constants (a function, a class: ``_constant_data``): folding an operation on it
        would read every value; the dict's own rules (``d[k]``, ``k in d``) read only the keys
        they look up."""
        if not self.read:
            values = self._value.values()
            if any(isinstance(v, torch.Tensor) for v in values):
                return False
            if self._read_item is not None and not all(map(_constant_data, values)):
                return False
        return super().is_python_constant()

    def clone(self, **changes: Any) -> VariableTracker:
        return DictVariable(**{"items": dict(self.items), "source": self.source, **changes})

    def walk_children(self) -> list[VariableTracker]:
        """What ``base.walk`` visits (without reading the real dict)."""
        return [self.items] if self.read else self.unread_children()

    def __repr__(self) -> str:
        return f"DictVariable({self.items!r})" if self.read else "LazyDictVariable(unread)"


#: the trackers of a plain dict's storage: one made in the trace or read, or an input's unread
PLAIN_DICTS = (DictVariable, LazyDictVariable)


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
        self._addresses_known()
        return self.items

    def _addresses_known(self) -> None:
        """Every read of the set's order passes here (``ordered``, ``in_order``): its order
        follows the addresses of the objects its items hash by, so the identity of each one
        read from the inputs is guarded, and one the call makes anew breaks."""
        tx = RUNNING.tx  # None when the rewritten code rebuilds what the trace read
        if tx is None or len(self.items) < 2:  # another object would lay it out otherwise
            return
        made = _first_made(self.items, self.own_table)
        if made is not None:
            raise Unsupported(
                "set_order",
                f"iterating a set holding {made}, placed by an address the trace does not know",
                "its place in the set follows its address, known only at run time",
            )
        for vt, value in _hashed_by_address(self.items, self.own_table):
            tx.output.assume_identity(vt.source, value)

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
        for name, args in self.log:  # set's own method: never one a subclass defines
            cg.load_const(getattr(set, name))
            self.source.reconstruct(cg)
            for arg in args:
                arg.reconstruct(cg) if isinstance(arg, _SetArgument) else _reconstruct_key(cg, arg)
            cg.call_function(len(args) + 1)
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
        self._addresses_known()
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
            _build_once(cg, self, lambda: recipe.emit(cg))
            return None

        made = _first_made(self.items, self.own_table)
        if made is not None:  # only the calls that made it lay it out as CPython does
            raise Unsupported("set_order", f"rebuilding a set holding {made} in the trace's order")
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

        _build_once(cg, self, build)
        return None


@dataclass(frozen=True)
class SetRecipe:
    """How the rewritten code builds a set laid out as one made in the trace: ``fn(*parts)``.
    CPython lays a set out by the calls that made it, and the trace made its set with the same
    calls on keys hashing as the values, so the same calls on the values lay it out the same.
    A part is ``("key", k)``, ``("keys", [k...])`` (a tuple of them), ``("dict", [k...])`` (a
    dict of them), ``("keys_view", [k...])`` (a dict's keys view of them), ``("items_view",
    [(k, v)...])`` (a dict's items view of those pairs), ``("const", v)``,
    ``("recipe", r)`` (a set built by ``r``), ``("input", s)`` (an input set's tracker: its real
    object, while the trace has not changed it: ``log`` empty) or ``("again", i)``: the set
    part ``i`` of the same call built, given a second time (``s & s``, ``s |= s``: CPython
    treats a set given with itself otherwise, copying it or clearing it, so two equal sets
    would lay another table out)."""

    fn: Any
    parts: tuple[tuple[str, Any], ...]

    @classmethod
    def call(
        cls, fn: Any, args: list[VariableTracker], taken: list[list[Any] | None] | None = None
    ) -> SetRecipe | None:
        """``fn(*args)``, or None where an argument is not of a kind a recipe repeats; ``taken``:
        for each argument, the items the call took from it one by one (``read_iterable``), or
        None."""
        parts = [read_part(a, t) for a, t in zip(args, taken or [None] * len(args), strict=True)]
        if None in parts:
            return None
        return cls(fn, _given_again(parts))  # type: ignore[arg-type]

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
        return cls(set_after, _given_again([("recipe", before), ("const", name), *parts]))  # type: ignore[list-item]

    def valid(self) -> bool:
        return all(
            (kind != "recipe" or part.valid()) and (kind != "input" or not part.log)
            for kind, part in self.parts
        )

    def walk_children(self) -> list[Any]:
        """What ``emit`` reads (``base.walk``): the keys, the sets and recipes it builds from."""
        return [part for kind, part in self.parts if kind != "again"]

    def emit(self, cg: Codegen) -> None:
        if self.fn is set and self.parts[0][0] == "keys":  # a set display adds them in order
            for key in self.parts[0][1]:
                _reconstruct_key(cg, key)
            cg.build_set(len(self.parts[0][1]))
            return
        cg.load_const(self.fn)
        self.emit_parts(cg)
        cg.call_function(len(self.parts))

    def emit_parts(self, cg: Codegen) -> None:
        """Push the arguments of its call."""
        for pushed, (kind, part) in enumerate(self.parts):
            _emit_part(cg, kind, part, pushed)

    def into(self) -> bool:
        """Can ``emit_into`` build the set into a blank set object: does it start from a set
        display, then run in-place methods?"""
        if self.fn is set_after:
            return self.parts[0][1].into()
        return self.fn is set and self.parts[0][0] == "keys"

    def emit_into(self, cg: Codegen, load: Callable[[], None]) -> None:
        """The same calls on the blank set object ``load`` pushes (its table an empty set's,
        so they lay it out as they lay a new set out), leaving it on the stack: the display's
        keys added in order (``set.update`` with a tuple), then each in-place method."""
        if self.fn is set:
            cg.load_const(set.update)
            load()
            _emit_part(cg, "keys", self.parts[0][1])
            cg.call_function(2)
            cg.pop_top()
            load()
            return
        cg.load_const(set_after)
        self.parts[0][1].emit_into(cg, load)
        for pushed, (kind, part) in enumerate(self.parts[1:], 1):
            _emit_part(cg, kind, part, pushed)
        cg.call_function(len(self.parts))


def _given_again(parts: list[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    """``parts`` with each set made in the trace that an earlier part already gives (the same
    recipe: the same set object in the trace) as ``("again", i)``, so that the call gets that
    one object twice, as the trace's did."""
    first: dict[int, int] = {}
    given: list[tuple[str, Any]] = []
    for i, (kind, part) in enumerate(parts):
        if kind == "recipe" and id(part) in first:
            given.append(("again", first[id(part)]))
            continue
        if kind == "recipe":
            first[id(part)] = i
        given.append((kind, part))
    return tuple(given)


def _emit_part(cg: Codegen, kind: str, part: Any, pushed: int = 0) -> None:
    """Push one argument of a ``SetRecipe``'s call (its ``parts``), ``pushed`` of them on the
    stack already."""
    if kind == "again":
        cg.copy(pushed - part)
    elif kind == "key":
        _reconstruct_key(cg, part)
    elif kind == "const":
        cg.load_const(part)
    elif kind == "recipe":
        part.emit(cg)
    elif kind == "input":
        part.source.reconstruct(cg)
    elif kind == "keys_view":  # ``dict.keys(dict.fromkeys(keys))``: a view iterating them
        cg.load_const(dict.keys)
        _emit_part(cg, "dict", part)
        cg.call_function(1)
    elif kind == "items_view":  # ``dict.items(dict(((key, value), ...)))``: the same pairs
        cg.load_const(dict.items)
        cg.load_const(dict)
        for pair in part:
            for key in pair:
                _reconstruct_key(cg, key)
            cg.build_tuple(2)
        cg.build_tuple(len(part))
        cg.call_function(1)
        cg.call_function(1)
    else:
        if kind == "dict":
            cg.load_const(dict.fromkeys)
        for key in part:
            _reconstruct_key(cg, key)
        cg.build_tuple(len(part))
        if kind == "dict":
            cg.call_function(1)


def set_after(table: set[Any], name: str, *args: Any) -> set[Any]:
    """``table`` after ``set.<name>(table, *args)`` (a ``SetRecipe``'s in-place call: set's
    own method, never one a subclass defines)."""
    getattr(set, name)(table, *args)
    return table


WALKED.add(SetRecipe)


def recipe_part(vt: VariableTracker) -> tuple[str, Any] | None:
    """``vt`` as an argument of a ``SetRecipe``'s call, or None where it is not of a kind a
    recipe repeats: a set made in the trace with a recipe, an input set not changed, the items
    of a tuple or list (an iterable read item by item), a dict's keys or items, a constant."""
    if isinstance(vt, SetVariable):
        if vt.source is None:
            return None if vt.recipe is None else ("recipe", vt.recipe)
        return ("input", vt) if not vt.log else None
    if isinstance(vt, (TupleVariable, ListVariable)):
        return ("keys", [hash_key(v) for v in vt.items])
    if isinstance(vt, DictVariable):
        return ("dict", list(vt.items))
    if isinstance(vt, DictViewVariable) and vt.kind == "keys":
        return ("keys_view", list(vt.dict_vt.items))
    if isinstance(vt, DictViewVariable) and vt.kind == "items":
        return ("items_view", [(k, hash_key(v)) for k, v in vt.dict_vt.items.items()])
    if isinstance(vt, ConstantVariable) and isinstance(
        vt.value, (str, bytes, range, tuple, frozenset)
    ):
        return ("const", vt.value)
    return None


def read_part(vt: VariableTracker, taken: list[Any] | None) -> tuple[str, Any] | None:
    """``recipe_part(vt)``, else, where the call took its items one by one (``taken``: an
    iterator, a generator, a ``map``, a dict view given to a set method), those items as a tuple
    of them: CPython's set calls read such an iterable item by item, as they read a tuple."""
    part = recipe_part(vt)
    return ("keys", taken) if part is None and taken is not None else part


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


def _result_key(item: Any) -> Any:
    """The key of an item of a set CPython computed from stand-ins: a tuple standing for a set's
    key (``_TupleKey``) is that key; a pair an items view gave, holding a key kept with its
    tracker (a tensor, a number read as a symbol), is the key of that pair's tuple, so the set
    holds the tuple, never the key model's object."""
    if type(item) is _TupleKey:
        return item.key
    if type(item) is tuple and any(isinstance(part, IdentityKey) for part in item):
        return IdentityKey(TupleVariable([key_vt(part) for part in item]), item)
    return item


def computed_set(
    result: set | frozenset,
    operands: list[VariableTracker],
    recipe: SetRecipe | None,
    exact: bool = True,
) -> VariableTracker:
    """The tracker of the set ``result`` CPython computed from ``operands``, the set trackers
    among them as their ``exact`` tables where they have them. Computed from tables laid out as
    CPython's, it is CPython's; its keys are then those of ``operands`` (a value of an input
    set's own object stands for that set's key), and ``result`` its mirror. From a set without
    one (an input set the trace changed), its order is unknown. ``recipe``: the call that
    computed it, to repeat where the rewritten code rebuilds it. ``exact=False``: ``result`` was
    computed from a stand-in laid out otherwise, so its order is not known either."""
    sets = [o for o in operands if isinstance(o, SetVariable)]
    exact = exact and all(s.exact() is not None for s in sets)
    keys_of = {k: k for s in sets if not s.own_table for k in s.items}
    keys = [keys_of.get(v, _result_key(v)) for v in result]
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
    """``xs.append`` and friends before the call; ``call_method`` runs them."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return call_method(tx, self.obj, self.name, args, kwargs)


# The ``collections`` module's containers made during the trace.
#
# ``DequeVariable`` is a ``collections.deque`` (a list tracker with a ``maxlen``); ``defaultdict``,
# ``OrderedDict`` and ``Counter`` are ``DictVariable``s whose ``cls`` says which
# (``construct_collection`` builds them). Their own methods are the tables ``DEQUE_METHODS`` and
# ``DICT_SUBCLASS_METHODS`` that ``call_method`` consults; everything else is a
# dict's or a list's method.

NONE = ConstantVariable(None)


@dataclass(eq=False)
class DequeVariable(ListVariable):
    """A ``collections.deque`` made in the trace; ``items`` in order, at most ``maxlen`` of them."""

    maxlen: int | None = None

    def python_type(self) -> type:
        return collections.deque

    def as_python_constant(self) -> Any:
        return collections.deque((i.as_python_constant() for i in self.items), self.maxlen)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # an input: the object itself (its changes replayed on it)
            return self.source.reconstruct(cg)

        def build() -> None:
            cg.load_const(collections.deque)
            self._reconstruct_items(cg)
            cg.build_list(len(self.items))
            cg.load_const(self.maxlen)
            cg.call_function(2)

        _build_once(cg, self, build)
        return None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "maxlen":  # a data attribute
            return ConstantVariable(self.maxlen)
        return super().var_getattr(tx, name)

    def save_state(self) -> Any:
        return list(self.items), self.maxlen

    def restore_state(self, state: Any) -> None:
        items, self.maxlen = state
        self.items[:] = items

    def trim(self, from_left: bool) -> None:
        """Drop items past ``maxlen`` from the other end, as a bounded deque does."""
        while self.maxlen is not None and len(self.items) > self.maxlen:
            self.items.pop(0 if from_left else -1)

    def __repr__(self) -> str:
        return f"DequeVariable({self.items!r})"


#: The classes ``construct_collection`` makes.
CLASSES = frozenset(
    {collections.deque, collections.defaultdict, collections.OrderedDict, collections.Counter}
)


def construct_collection(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``deque(...)``, ``defaultdict(...)``, ``OrderedDict(...)``, ``Counter(...)``; None for
    other classes."""
    if cls is collections.deque:
        return _deque(tx, *args, **kwargs)
    if cls is collections.defaultdict:
        factory = args[0] if args else NONE
        items = _dict_items(tx, args[1:], kwargs)
        return DictVariable(items, cls=cls, default_factory=factory)
    if cls is collections.OrderedDict:
        return DictVariable(_dict_items(tx, args, kwargs), cls=cls)
    if cls is collections.Counter:
        counter = DictVariable({}, cls=cls)
        _counter_update(tx, counter, *args, **kwargs)
        return counter
    return None


def _deque(
    tx: Translator, iterable: VariableTracker | None = None, maxlen: VariableTracker = NONE
) -> DequeVariable:
    bound = maxlen.as_python_constant()
    items = dispatch.iterate(tx, iterable) if iterable is not None else []
    deque = DequeVariable(list(items), maxlen=bound)
    deque.trim(from_left=True)
    return deque


def _dict_items(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> dict[Any, VariableTracker]:
    made = dispatch.call_builtin(tx, dict, list(args), dict(kwargs))
    return dict(made.items)


# -- deque -----------------------------------------------------------------------------------------
def _append(tx, obj, value):
    obj.items.append(value)
    obj.trim(from_left=True)
    return NONE


def _appendleft(tx, obj, value):
    obj.items.insert(0, value)
    obj.trim(from_left=False)
    return NONE


def _items_for(tx, obj, iterable):
    """What ``extend``/``extendleft`` add, taken one at a time as CPython's deque takes them (a
    ``map`` reading the deque sees it grow); the deque itself is copied first, as CPython does."""
    if iterable is obj:
        return list(obj.items)
    return dispatch.each_item(tx, iterable)


def _extend(tx, obj, iterable):
    for item in _items_for(tx, obj, iterable):
        _append(tx, obj, item)
    return NONE


def _extendleft(tx, obj, iterable):
    for item in _items_for(tx, obj, iterable):
        _appendleft(tx, obj, item)
    return NONE


def _deque_init(tx, obj, iterable=None, maxlen=NONE):
    """``d.__init__(iterable, maxlen)``: the bound set, the deque emptied, then extended."""
    bound = maxlen.as_python_constant()
    if bound is not None and not isinstance(bound, int):
        raise PythonError(TypeError("an integer is required"))
    if bound is not None and bound < 0:
        raise PythonError(ValueError("maxlen must be non-negative"))
    obj.maxlen = bound
    obj.items.clear()  # first: ``d.__init__(d)`` leaves it empty
    return _extend(tx, obj, iterable) if iterable is not None else NONE


def _deque_imul(tx, obj, n):
    """``d *= n``: its items repeated ``n`` times, within its ``maxlen`` (the last ones kept)."""
    if not n.is_python_constant() or type(n.as_python_constant()) not in (int, bool):
        raise Unsupported("call_method", f"deque.__imul__ by {n}")
    items = list(obj.items)
    if n.as_python_constant() <= 0:
        obj.items.clear()
    for _ in range(n.as_python_constant() - 1):
        for item in items:
            _append(tx, obj, item)
    return obj


def _pop(tx, obj, left: bool = False):
    if not obj.items:
        raise PythonError(IndexError("pop from an empty deque"))
    return obj.items.pop(0 if left else -1)


def _rotate(tx, obj, n=ConstantVariable(1)):  # noqa: B008 (an immutable constant)
    steps = _int(n)
    _shadow(obj, lambda real: real.rotate(steps))  # CPython's TypeError for a non-integer
    if obj.items:
        steps %= len(obj.items)
        obj.items[:] = obj.items[-steps:] + obj.items[:-steps]
    return NONE


DEQUE_METHODS = {
    "append": (True, _append),
    "appendleft": (True, _appendleft),
    "extend": (True, _extend),
    "extendleft": (True, _extendleft),
    "pop": (True, lambda tx, obj: _pop(tx, obj)),
    "popleft": (True, lambda tx, obj: _pop(tx, obj, left=True)),
    "rotate": (True, _rotate),
    "__init__": (True, _deque_init),
    "__imul__": (True, _deque_imul),
    "copy": (False, lambda tx, obj: DequeVariable(list(obj.items), maxlen=obj.maxlen)),
}


# -- Counter ---------------------------------------------------------------------------------------
def _counted(vt: VariableTracker | None) -> Any:
    if vt is None:
        return 0
    if not vt.is_python_constant():
        raise Unsupported("data_dependent", f"a Counter holding {vt}")
    return vt.as_python_constant()


def _counter_update(tx, obj, iterable=None, **kwargs):
    """``Counter.update``: counts the items of an iterable one at a time as they come (CPython's
    ``_count_elements``), adds the counts of a mapping; ``None`` is no iterable."""
    if isinstance(iterable, ConstantVariable) and iterable.value is None:
        iterable = None
    if isinstance(iterable, DictVariable):
        pairs = [(k, _counted(v)) for k, v in iterable.items.items()]
    elif iterable is not None:
        pairs = ((_key(item), 1) for item in dispatch.each_item(tx, iterable))
    else:
        pairs = []
    for key, n in itertools.chain(pairs, [(k, _counted(v)) for k, v in kwargs.items()]):
        obj.items[key] = ConstantVariable(_counted(obj.items.get(key)) + n)
    return NONE


@dispatch.rule("contains", SetVariable)
def _set_contains(tx: Translator, container: SetVariable, item: VariableTracker) -> bool:
    """``item in s``: a set lookup (a set searched for as the frozenset of its items)."""
    return among_numbers(lookup_key(item), container.items) in container.items


@dispatch.rule("contains", DictVariable)
def _dict_contains(tx: Translator, container: DictVariable, item: VariableTracker) -> bool:
    """``key in d``: a lookup of the key."""
    return container.lookup(tx, item)[1] is not None


def _key(vt: VariableTracker, keys: Any = ()) -> Any:
    """``vt`` as a dict's key, to search for or put among ``keys`` (``among_numbers``)."""
    return among_numbers(hash_key(vt), keys)


def _most_common(tx, obj, n=NONE):
    """``Counter.most_common(n)``: CPython's own, run on a Counter of the same counts keyed by
    position (its errors too: ``n`` of another type)."""
    keys = list(obj.items)
    shadow = collections.Counter(dict(enumerate(_counted(v) for v in obj.items.values())))
    try:
        ordered = shadow.most_common(n.as_python_constant())
    except (TypeError, ValueError) as e:
        raise PythonError(e) from None
    return ListVariable([TupleVariable([key_vt(keys[i]), ConstantVariable(c)]) for i, c in ordered])


def _counter_getitem(tx, obj, key):
    # ``__missing__`` gives 0, stores nothing
    return obj.items.get(_key(key, obj.items), ConstantVariable(0))


def _counter_delitem(tx, obj, key):
    # a missing key is no KeyError
    obj.items.pop(_key(key, obj.items), None)
    return NONE


DICT_SUBCLASS_METHODS = {
    collections.Counter: {
        "update": (True, _counter_update),
        "most_common": (False, _most_common),
        "total": (False, lambda tx, obj: ConstantVariable(sum(map(_counted, obj.items.values())))),
        "__getitem__": (False, _counter_getitem),
        "__delitem__": (True, _counter_delitem),
    },
}


# Instances of user ``dict`` and ``OrderedDict`` subclasses (``objects.DictObjectVariable``) keep
# their items in ``DictVariable.items``, the dict's own storage: the C methods they inherit act on
# it as CPython's do. Where CPython's C code reads another mapping's storage it reads it directly
# only for a dict whose iteration is dict's own; any other (an ``OrderedDict``, a subclass of
# one) through its ``keys()`` and ``__getitem__`` (``mapping_items``). The C methods of an
# ``OrderedDict`` that store or read items through the object's own ``__setitem__`` /
# ``__getitem__`` / ``__delitem__`` on a subclass (``update``, ``__init__``, ``setdefault``,
# ``pop``...) do so here too (``_update_through_setitem``), or break.


def dict_base(cls: type) -> type:
    """The builtin dict class whose storage and C methods ``cls``'s instances have."""
    return next(k for k in cls.__mro__ if k in _DICT_CLASSES)


def models_method(base: type, name: str) -> bool:
    """Is the Python method ``name`` of the ``collections`` dict ``base`` (``Counter``'s) one
    its table models (``DICT_SUBCLASS_METHODS``)? The trace inlines the others."""
    return name in DICT_SUBCLASS_METHODS.get(base, {})


def is_user_dict(cls: type) -> bool:
    """A user subclass of a dict class (its instances: ``objects.DictObjectVariable``)."""
    return cls not in _DICT_CLASSES


def mapping_items(tx: Translator, mapping: VariableTracker) -> dict[Any, VariableTracker]:
    """What CPython's ``dict_merge`` (``dict(m)``, ``d.update(m)``, ``{**m}``, ``f(**m)``) reads
    from the mapping ``mapping`` (see ``merge_mapping``), as a new dict's items."""
    items: dict[Any, VariableTracker] = {}
    merge_mapping(tx, items, mapping)
    return items


def merge_mapping(
    tx: Translator, items: dict[Any, VariableTracker], mapping: VariableTracker
) -> None:
    """CPython's ``dict_merge`` of ``mapping`` into ``items``: a dict's storage where its class
    iterates as ``dict`` does (its ``__iter__`` is dict's: CPython's test of ``tp_iter``); for any
    other mapping, ``m[k]`` stored for each ``k`` of ``list(m.keys())``, all keys taken first,
    through the class's own methods (Python ones inlined). A ``dict`` another tracker stands for
    (a module's ``__dict__``) is read through its ``keys()`` and ``[k]``: a dict's own, they give
    its storage."""
    kind = mapping.python_type()
    if issubclass(kind, dict) and (
        not is_user_dict(kind) or type_lookup(kind, "__iter__") is dict.__iter__
    ):  # a builtin ``OrderedDict``'s, ``defaultdict``'s reads give its storage too
        if isinstance(mapping, DictVariable):
            items.update(mapping.items)
            return
        if kind is not dict:
            raise Unsupported("dict_merge", f"the storage of a {kind.__name__} object")
    keys = dispatch.getattr_(tx, mapping, "keys").call_function(tx, [], {})
    for key in list(dispatch.each_item(tx, keys)):
        items[_key(key)] = dispatch.getitem(tx, mapping, key)


def is_mapping(value: VariableTracker) -> bool:
    """Whether CPython's ``dict_merge`` takes ``value`` as a mapping: its type has ``keys``."""
    return isinstance(value, DictVariable) or hasattr(value.python_type(), "keys")


def _calls_back(obj: DictVariable) -> bool:
    """Whether ``obj``'s C methods store items through its class's ``__setitem__`` (CPython's
    ``OrderedDict`` on a subclass: ``mutablemapping_update``)."""
    return is_user_dict(obj.cls) and dict_base(obj.cls) is collections.OrderedDict


#: ``OrderedDict`` methods that read or change items through a subclass's item methods
_ORDERED_CALLBACKS = frozenset({"setdefault", "pop", "popitem", "__reduce__", "__reduce_ex__"})


def _item_methods_overridden(cls: type) -> bool:
    return any(
        type_lookup(cls, n) is not type_lookup(collections.OrderedDict, n)
        for n in ("__getitem__", "__setitem__", "__delitem__", "__contains__")
    )


def _update_through_setitem(tx, obj, others, kwargs) -> VariableTracker:
    """``OrderedDict.update(obj, other, **kwargs)`` on a subclass (CPython's
    ``mutablemapping_update``): each item stored by ``obj[key] = value``."""
    if len(others) > 1:
        raise PythonError(TypeError(f"update expected at most 1 argument, got {len(others)}"))
    pairs: list[tuple[VariableTracker, VariableTracker]] = []
    for other in others:
        kind = other.python_type()
        if isinstance(other, DictVariable) and kind is dict:
            pairs += [(key_vt(k), v) for k, v in other.items.items()]
        elif hasattr(kind, "keys"):
            keys = dispatch.getattr_(tx, other, "keys").call_function(tx, [], {})
            pairs += [(k, dispatch.getitem(tx, other, k)) for k in dispatch.iterate(tx, keys)]
        elif hasattr(kind, "items"):
            raise Unsupported("call_method", f"OrderedDict.update from a {kind.__name__}")
        else:
            for pair in dispatch.iterate(tx, other):
                parts = dispatch.iterate(tx, pair)
                if len(parts) != 2:
                    raise Unsupported("python_error", "ValueError: update takes pairs")
                pairs.append((parts[0], parts[1]))
    pairs += [(ConstantVariable(k), v) for k, v in kwargs.items()]
    for key, value in pairs:
        dispatch.setitem(tx, obj, key, value)
    return NONE


# Dict views (``d.keys()``, ``d.values()``, ``d.items()``) and the set algebra shared with sets.
#
# A ``DictViewVariable`` holds the dict tracker itself, never a copy: like CPython's views it sees
# every later insertion and deletion, and it escapes the trace as ``d.keys()`` of the rebuilt dict.
# ``set_operator`` gives ``&``, ``|``, ``-``, ``^`` (and the in-place forms on sets) for sets,
# frozensets and key/item views; ``contains`` answers ``in``. Methods are ``call_method``'s.

_VIEW_TYPES = {kind: type(getattr({}, kind)()) for kind in ("keys", "values", "items")}
#: an ``OrderedDict``'s views have types of their own (``odict_keys``...)
_ORDERED_VIEW_TYPES = {
    kind: type(getattr(collections.OrderedDict(), kind)()) for kind in ("keys", "values", "items")
}


@dataclass(eq=False)
class DictViewVariable(VariableTracker):
    dict_vt: DictVariable
    kind: str  #: "keys", "values" or "items"
    source: Any = None

    def python_type(self) -> type:
        if issubclass(self.dict_vt.python_type(), collections.OrderedDict):
            return _ORDERED_VIEW_TYPES[self.kind]
        return _VIEW_TYPES[self.kind]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        items = self.dict_vt.items
        if self.kind == "keys":
            return [key_vt(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_vt(k), v]) for k, v in items.items()]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "mapping":  # a new read-only proxy of the dict at each read
            return MappingProxyVariable(self.dict_vt)
        if hasattr(self.python_type(), name):
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"{self.python_type().__name__} has no attribute {name!r}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # a view given to the trace (``live_inputs``): that object
            self.source.reconstruct(cg)
            return

        def build() -> None:
            self.dict_vt.reconstruct(cg)
            cg.load_attr(self.kind)
            cg.call_function(0)

        _build_once(cg, self, build)

    def __repr__(self) -> str:
        return f"DictViewVariable({self.kind})"


@dataclass(eq=False)
class MappingProxyVariable(VariableTracker):
    """``cls.__dict__`` of a class from outside the call: CPython's read-only proxy of the class's
    namespace, over ``mapping``, a dict tracker of the items read through the proxy (``source``,
    its keys and values guarded). Reads are the dict's (``get``, ``keys()``, ``[k]``, ``in``,
    ``len``, iteration, ``copy()``); an item assignment raises CPython's TypeError. The class
    takes no attribute store in a trace that read its namespace (``SideEffects.namespaces``),
    so ``mapping`` is the namespace wherever the trace reads it. A dict view's ``mapping`` (no
    source, no owner) is a new proxy over the view's dict, made again over it."""

    mapping: DictVariable
    source: Source | None = None
    #: the class whose namespace this is (``cls.__dict__``, ``vars(cls)``; None for another proxy):
    #: a resume function makes the proxy again as ``vars(owner)`` (``made_in_resume``)
    owner: VariableTracker | None = None

    def python_type(self) -> type:
        return types.MappingProxyType

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return self.mapping.unpack(tx)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in _PROXY_READS:
            return BoundMethodVariable(self.mapping, name)
        if hasattr(types.MappingProxyType, name):
            raise Unsupported("getattr", f"mappingproxy.{name}")
        raise PythonError(AttributeError(f"'mappingproxy' object has no attribute '{name}'"))

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is None and self.owner is None:  # a dict view's: made again over the dict
            cg.load_const(types.MappingProxyType)
            self.mapping.reconstruct(cg)
            cg.call_function(1)
            return
        self.mapping.reconstruct(cg)  # the proxy itself, read again through its source

    def __repr__(self) -> str:
        return "MappingProxyVariable()"


#: what a mappingproxy reads from its mapping: the dict's own methods answer them
_PROXY_READS = frozenset(
    {"get", "keys", "values", "items", "copy", "__getitem__", "__contains__", "__len__"}
)


@dispatch.rule("truth", MappingProxyVariable)
def _proxy_truth(tx: Translator, vt: MappingProxyVariable) -> bool:
    return bool(vt.mapping.items)


@dispatch.rule("contains", MappingProxyVariable)
def _proxy_contains(tx: Translator, vt: MappingProxyVariable, item: VariableTracker) -> bool:
    return dispatch.contains(tx, vt.mapping, item)


@dispatch.rule("getitem", MappingProxyVariable)
def _proxy_getitem(tx: Translator, vt: MappingProxyVariable, key: VariableTracker):
    return dispatch.getitem(tx, vt.mapping, key)


@dispatch.rule("setitem", MappingProxyVariable)
def _proxy_setitem(tx: Translator, vt: MappingProxyVariable, key, value) -> None:
    raise PythonError(TypeError("'mappingproxy' object does not support item assignment"))


def _constant(tx: Translator, vt: VariableTracker) -> Any:
    return hash_key(vt)


def contains(tx: Translator, view: DictViewVariable, item: VariableTracker) -> bool:
    """``item in view``: keys by hash, items by key then value equality, values by equality."""
    items = view.dict_vt.items
    if view.kind == "keys":
        return _constant(tx, item) in items
    if view.kind == "items":
        pair = dispatch.iterate(tx, item)
        if len(pair) != 2:
            return False
        key = _constant(tx, pair[0])
        if key not in items:
            return False
        return _pair_equal(tx, items[key], pair[1])
    return any(_pair_equal(tx, v, item) for v in items.values())


def _pair_equal(tx: Translator, a: VariableTracker, b: VariableTracker) -> bool:
    if a is b:
        return True
    result = dispatch.call_operator(tx, operator.eq, [a, b])
    return dispatch.truth(tx, result)


_SET_OPS = frozenset({operator.and_, operator.or_, operator.sub, operator.xor})
_INPLACE_SET_OPS = {
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.isub: operator.sub,
    operator.ixor: operator.xor,
}
#: the method an in-place operator on a set runs (its log on an input set)
_INPLACE_METHODS = {
    operator.iand: "intersection_update",
    operator.ior: "update",
    operator.isub: "difference_update",
    operator.ixor: "symmetric_difference_update",
}
_COMPARE = frozenset({operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge})


def _values_view(vt: VariableTracker) -> bool:
    return isinstance(vt, DictViewVariable) and vt.kind == "values"


def real_set(vt: SetVariable) -> set | frozenset:
    """The keys of a set tracker as the object CPython's methods run on: the set itself (changed
    in place by the mutating ones), or a frozenset of them (results are then frozensets)."""
    table = vt.exact()
    table = vt.ordered() if table is None else table
    return frozenset(table) if vt.frozen else table


def _real(tx: Translator, vt: VariableTracker, pairs: bool) -> Any:
    """An object CPython applies the same operation to: the set itself, a view of a dict standing
    for the viewed one (its keys; for items and values, its values as keys too), or the constant.
    ``pairs``: an operand is an items view, which finds only tuples, so a set's keys standing
    for tuples are made tuples (``_TupleKey``)."""
    if isinstance(vt, SetVariable):
        real = real_set(vt)
        return _with_tuple_keys(real) if pairs and _tuple_keyed(vt) else real
    if isinstance(vt, DictViewVariable):
        items = vt.dict_vt.items
        if vt.kind == "keys":  # the values are not hashed (they may be lists)
            return dict.fromkeys(items).keys()
        return getattr({k: _constant(tx, v) for k, v in items.items()}, vt.kind)()
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise Unsupported("operator", f"set operation on {vt}")


def _laid_out_as(stand_in: Any, vt: VariableTracker) -> bool:
    """Does ``_real``'s ``stand_in`` for ``vt`` iterate as ``vt``'s own set, from a table of the
    same size (``_with_tuple_keys`` makes a copy, laid out as the set only where CPython could
    copy its table)?"""
    if not isinstance(vt, SetVariable) or not isinstance(stand_in, (set, frozenset)):
        return True
    real = real_set(vt)
    if stand_in is real:
        return True
    return sys.getsizeof(stand_in) == sys.getsizeof(real) and list(stand_in) == list(real)


def _stands_for_tuple(key: Any) -> bool:
    """A set's key standing for a tuple made in the trace (an ``IdentityKey`` of one)?"""
    return isinstance(getattr(key, "ident", None), tuple)


def _tuple_keyed(vt: VariableTracker) -> bool:
    """A set tracker with a key standing for a tuple?"""
    return isinstance(vt, SetVariable) and any(map(_stands_for_tuple, vt.items))


def _with_tuple_keys(real: set | frozenset) -> set | frozenset:
    """A copy of ``real`` (laid out as it, where CPython copies the table) with each key standing
    for a tuple replaced, in its own slot, by that tuple (``_TupleKey``)."""
    made = set(real)
    for key in real:
        if _stands_for_tuple(key):
            made.discard(key)
            made.add(_TupleKey.of(key))
    return made if isinstance(real, set) else frozenset(made)


class _TupleKey(tuple):
    """A set's key standing for a tuple (an ``IdentityKey``) as a tuple: an items view looks up
    only tuples. ``computed_set`` takes the key back."""

    key: IdentityKey

    @staticmethod
    def of(key: Any) -> Any:
        if not _stands_for_tuple(key):
            return key
        made = _TupleKey(key.ident)
        made.key = key
        return made


def _builtin_non_set(vt: VariableTracker) -> bool:
    """A set, a view, or a value of a builtin type that is not set-like: its ``==`` with a set
    gives NotImplemented both ways (a real set held by an object, or a user object whose
    ``__eq__`` may answer, does not qualify)."""
    if isinstance(vt, (SetVariable, DictViewVariable)):
        return True
    try:
        cls = vt.python_type()
    except Unsupported:
        return False
    return cls.__module__ == "builtins" and not issubclass(cls, collections.abc.Set)


def set_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a & b`` and friends where an operand is a set or a dict view; None when it does not apply.
    The operation runs on real objects standing for the operands (so results, their order and
    errors are CPython's); the in-place forms change a set tracker in place (a side effect when it
    is an input) where CPython's do: a set's in-place operators take only a set or frozenset, and
    otherwise (``s |= d.keys()``) assign a new set, as a view's (``view |= x``) do."""
    if len(args) != 2 or not any(isinstance(a, (SetVariable, DictViewVariable)) for a in args):
        return None
    if op not in _SET_OPS and op not in _INPLACE_SET_OPS and op not in _COMPARE:
        return None
    lhs, rhs = args
    if op in (operator.eq, operator.ne) and any(_values_view(a) for a in args):
        return None  # a values view has no ``==`` of its own: identity (two made here differ)
    if op in _COMPARE and not all(
        isinstance(a, (SetVariable, DictViewVariable))
        or (a.is_python_constant() and isinstance(a.as_python_constant(), (set, frozenset)))
        for a in args
    ):
        if op in (operator.eq, operator.ne) and all(_builtin_non_set(a) for a in args):
            return ConstantVariable(op is operator.ne)  # a set never equals a non-set
        return None
    pairs = any(isinstance(a, DictViewVariable) and a.kind == "items" for a in args)
    other = _real(tx, rhs, pairs)
    in_place = (
        op in _INPLACE_SET_OPS
        and isinstance(lhs, SetVariable)
        and not lhs.frozen
        and isinstance(other, (set, frozenset))
    )
    if in_place:
        tx.output.side_effects.before_mutation(lhs)
        before = set(lhs.items)
        given, entry = lhs.log_call(_INPLACE_METHODS[op], [other])
        real = [lhs.items, *given]
    else:
        real = [_real(tx, lhs, pairs), other]
    try:  # changed in place, the set needs no known order; else CPython's ``lhs = lhs | rhs``
        result = op(*real)
    except TypeError as e:
        raise PythonError(e) from None
    if in_place:
        lhs.logged(entry)
        lhs.added_to(before)
        lhs.changed(_INPLACE_METHODS[op], [recipe_part(rhs)])
        tx.output.side_effects.mark_mutated(lhs)
        return lhs
    if isinstance(result, (set, frozenset)):
        recipe = SetRecipe.call(_INPLACE_SET_OPS.get(op, op), [lhs, rhs])
        # computed from a set of ``_TupleKey``s laid out otherwise, CPython's order is not known
        laid_out = all(map(_laid_out_as, real, args))
        return computed_set(result, [lhs, rhs], recipe, exact=laid_out)
    return tx.fold(result)


# ``LazyListVariable``: a list reached from an input whose items are read only when the trace
# needs them.
#
# ``builder.wrap`` guards a list's type at once but its length and items only when the trace first
# reads them (``items``). Until then, ``append`` and ``extend`` are kept as a log and replayed as
# ``src.extend([...])``: a list that a hook or a callee only appends to (a list of recorded losses,
# a log) is not guarded on its length, so the next call, after the list grew, still hits the cache.
# Any other use reads the items, adds the guards ``builder`` would have added, and from then on the
# list is an ordinary ``ListVariable`` (replayed as ``src[:] = [...]``).


class LazyListVariable(ListVariable):
    """Invariant: while ``_items`` is None the trace has read nothing of the real list ``_value``
    (no guard on its length or items) and ``appended`` holds what was appended since the call began;
    once read, ``_items`` is the real items (wrapped through ``ItemSource``) followed by them."""

    def __init__(self, tx: Translator, value: list, source: Source) -> None:
        self._tx, self._value = tx, value
        self._items: list[VariableTracker] | None = None
        self.appended: list[VariableTracker] = []
        self.source = source
        #: what runs once, before the trace first reads or appends to the list (an iterator
        #: reading it from where it stands models it then: ``iterators.ListRestIteratorVariable``)
        self.before_read: Callable[[], None] | None = None

    def _first_use(self) -> None:
        hook, self.before_read = self.before_read, None
        if hook is not None:
            hook()

    @property
    def items(self) -> list[VariableTracker]:  # type: ignore[override]
        if self._items is None:
            self._first_use()  # (which may read the items itself)
        if self._items is None:
            tx, value, source = self._tx, self._value, self.source
            tx.output.assume_len(source, len(value))
            wrapped = [tx.wrap(v, ItemSource(source, i)) for i, v in enumerate(value)]
            self._items = wrapped + self.appended
        return self._items

    @items.setter
    def items(self, items: list[VariableTracker]) -> None:
        self._items = items

    @property
    def read(self) -> bool:
        """Has the trace read the items (so the length and items are guarded)?"""
        return self._items is not None

    def item_at_symbol(self, tx: Translator, index: Any) -> VariableTracker | None:
        """``xs[i]`` for a symbolic ``i`` (an input's number, times and plus constants) while
        nothing of the list is read: the item the call finds at that position, read at run time
        (``ComputedItemSource``) and guarded as an input, so ``i`` stays symbolic and one variant
        serves every position (a loop's counter at a break). None where the list was read or
        grown (its items are then trackers: the index specialises), or the index is another
        expression or out of range (CPython's IndexError is raised as before)."""
        if self._items is not None or self.appended or self.before_read is not None:
            return None
        where = tx.output.shapes.linear_in_input(index)
        if where is None:
            return None
        position = index.node.hint
        if not -len(self._value) <= position < len(self._value):
            return None
        source = ComputedItemSource(self.source, *where)
        return tx.wrap(self._value[position], source)

    def append_unread(self, item: VariableTracker) -> None:
        """``append``/``extend`` begun before any read: only the log grows, unless the items were
        read meanwhile (``xs.extend(map(lambda v: len(xs), ...))`` reads them while it appends)."""
        self._first_use()
        (self.appended if self._items is None else self._items).append(item)

    def clone(self, **changes: Any) -> VariableTracker:
        return ListVariable(**{"items": list(self.items), "source": self.source, **changes})

    def walk_children(self) -> list[VariableTracker]:
        """What ``base.walk`` visits (without reading the real list)."""
        return list(self.items) if self.read else list(self.appended)

    def save_state(self) -> Any:
        return (None if self._items is None else list(self._items), list(self.appended))

    def restore_state(self, state: Any) -> None:
        items, appended = state
        self._items = items
        self.appended[:] = appended

    def replay_log(self, cg: Codegen) -> bool:
        """Emit ``src.extend([appended])`` if the items were never read (True), else nothing."""
        if self.read:
            return False
        self.source.reconstruct(cg)
        cg.load_attr("extend")
        for item in self.appended:
            item.reconstruct(cg)
        cg.build_list(len(self.appended))
        cg.call_function(1)
        cg.pop_top()
        return True

    def __repr__(self) -> str:
        state = f"{len(self._items)} items" if self.read else f"+{len(self.appended)} unread"
        return f"LazyListVariable({state})"


# Methods of lists, dicts, sets and tuples, applied to the tracked items.
#
# A container created during the trace is simply changed; one that came from an input is also marked
# mutated, so the rewritten code writes its final contents back into the real object.

LAST, FALSE = ConstantVariable(-1), ConstantVariable(False)

#: the signature of a ``METHODS`` implementation, which each call's arguments are bound to
_signature = functools.cache(inspect.signature)


@functools.cache
def _positional_arity(impl: Callable[..., Any]) -> tuple[int, float] | None:
    """How many positional arguments (``tx`` and the container included) ``impl`` takes when
    given no keywords, the least and the most; None where a keyword-only parameter needs a
    value. A call within them binds (``Signature.bind`` need not be asked)."""
    least, most = 0, 0.0
    for param in _signature(impl).parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            most = float("inf")
        elif param.kind is param.KEYWORD_ONLY:
            if param.default is param.empty:
                return None
        elif param.kind is not param.VAR_KEYWORD:
            most += 1
            least += param.default is param.empty
    return least, most


def call_method(
    tx: Translator,
    obj: VariableTracker,
    name: str,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    methods = METHODS.get(type(obj)) or next(
        (m for kind, m in METHODS.items() if isinstance(obj, kind)), {}
    )
    if isinstance(obj, DictVariable) and obj.cls is not dict:
        methods = {**methods, **_DICT_SUBCLASS.get(dict_base(obj.cls), {})}
        if _calls_back(obj) and name in _ORDERED_CALLBACKS and _item_methods_overridden(obj.cls):
            raise Unsupported("call_method", f"{obj.cls.__name__}.{name} through its item methods")
    if isinstance(obj, SetVariable) and obj.frozen:
        methods = _FROZENSET
    if isinstance(obj, LazyListVariable) and not obj.read and name in ("append", "extend"):
        tx.output.side_effects.before_mutation(obj)
        for item in args if name == "append" else _extend_items(tx, args[0]):
            obj.append_unread(item)
        tx.output.side_effects.mark_mutated(obj)
        return NONE
    if name not in methods:
        # a C method of the class with a Python equivalent (``t.__reduce_ex__(2)``): run with
        # the container first, as the C method runs with it as ``self``
        static = type_lookup(obj.python_type(), name)
        if isinstance(obj, DictVariable) and isinstance(static, types.FunctionType):
            # a Python method of a ``collections`` dict its table leaves out (``Counter``'s
            # ``subtract``, ``elements``, ``_keep_positive``): inlined, as CPython runs it
            return dispatch.call(tx, tx.wrap_static(static), [obj, *args], kwargs)
        polyfill = polyfills.lookup(static) if isinstance(static, _C_METHODS) else None
        if polyfill is not None:
            return dispatch.call(tx, tx.wrap_static(polyfill), [obj, *args], kwargs)
        values = [obj, *args, *kwargs.values()]
        if (
            isinstance(obj, TupleVariable)
            and isinstance(static, _C_METHODS)
            and all(v.is_python_constant() for v in values)
        ):  # a tuple's own C method on values known at trace time (``t.__len__()``): computed
            return tx.fold_call(static, [obj, *args], kwargs)
        raise Unsupported("call_method", f"{obj.python_type().__name__}.{name}")
    mutates, impl = methods[name]
    arity = None if kwargs else _positional_arity(impl)
    try:
        if arity is None or not arity[0] <= len(args) + 2 <= arity[1]:
            _signature(impl).bind(tx, obj, *args, **kwargs)
    except TypeError as e:
        kind = obj.python_type().__name__
        raise Unsupported("python_error", f"TypeError: {kind}.{name}(): {e}") from None
    if mutates:
        tx.output.side_effects.before_mutation(obj)
    result = impl(tx, obj, *args, **kwargs)
    if mutates:
        tx.output.side_effects.mark_mutated(obj)
    return result


def c_name(cls: type) -> str:
    """The name CPython's messages give ``cls`` (its ``tp_name``): a type written in C outside
    ``builtins`` is named with its module (``torch.dtype``, ``collections.deque``, a heap type
    from 3.12), a class statement's by its ``__name__``. Read from CPython's own message for a
    missing attribute of the class (``type.__getattribute__``: no metaclass hook runs), which
    writes at most 100 characters of it."""
    try:
        type.__getattribute__(cls, "\0")
    except AttributeError as e:
        found = _TP_NAME.match(str(e))
        if found is not None and len(found[1]) < 100:
            return found[1]
    return cls.__name__


_TP_NAME = re.compile(r"type object '(.*)' has no attribute ", re.DOTALL)


def not_iterable(vt: VariableTracker) -> Exception | None:
    """CPython's TypeError for ``iter(vt)`` where ``vt``'s type defines neither ``__iter__`` nor
    ``__getitem__`` (looked up on the type, as ``iter`` does), or None where it may iterate."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return None
    if isinstance(vt, TensorVariable):
        return None
    iter_ = type_lookup(cls, "__iter__")
    if iter_ is None:  # ``__iter__ = None``: not iterable, whatever else the class has
        return TypeError(f"'{c_name(cls)}' object is not iterable")
    if iter_ is not MISSING or type_lookup(cls, "__getitem__") is not MISSING:
        return None
    return TypeError(f"'{c_name(cls)}' object is not iterable")


def _key_error(key) -> Exception:
    """CPython's KeyError for a missing ``key``: the key itself, its tracker where it has one
    (the exception is rebuilt with it: an object, any non-tensor value read from the inputs, or
    a tuple of these and constants), so its text is the key's as the trace makes it; for a key
    holding a tensor (whose text waits for the graph) or another value made in the trace,
    CPython raises it."""
    if isinstance(key, IdentityKey) and not _carried_by_error(key.vt):
        return Unsupported("python_error", "KeyError on an object key")
    return PythonError(KeyError(key))


def _carried_by_error(vt: VariableTracker) -> bool:
    """Can an exception made in the trace carry ``vt`` as an argument, its text known there?"""
    if vt.is_python_constant():
        return True
    if isinstance(vt, TensorVariable):
        return False
    if isinstance(vt, TupleVariable):
        return all(_carried_by_error(item) for item in vt.items)
    return hasattr(vt, "value") or vt.source is not None


def _int(vt: VariableTracker):
    """An index or count argument: a Python constant, or ``index_stand_in``'s stand-in."""
    if vt.is_python_constant():
        return vt.as_python_constant()
    stand_in = dispatch.index_stand_in(vt)
    if stand_in is None:
        raise Unsupported("index", f"{vt} as an index (only constants are traced)")
    return stand_in


@dispatch.rule("index_stand_in")
def index_stand_in(vt: VariableTracker) -> object | None:
    """For a value whose type has no ``__index__`` (an object, a function), an instance of an
    empty class of the same C name: a list or tuple operation run on it and on a stand-in
    sequence (``_shadow``) raises CPython's TypeError. None for other values (tensors have their
    own rule)."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return None
    if any("__index__" in vars(base) for base in cls.__mro__):
        return None
    return type(c_name(cls), (), {})()


def _shadow(obj: ListVariable, action) -> None:
    """Run ``action`` on a stand-in of ``obj`` first (same type and length, items ``None``): an
    index or slice CPython rejects raises CPython's exact error here, before anything changes."""
    n = len(obj.items)
    shadow = obj.python_type()([None] * n, obj.maxlen) if hasattr(obj, "maxlen") else [None] * n
    try:
        action(shadow)
    except (IndexError, ValueError, TypeError) as e:
        raise PythonError(e) from None


# -- list ------------------------------------------------------------------------------------------
def _list_setitem(tx, obj, key, value):
    index = _int(key)
    if isinstance(index, slice):
        if not_iterable(value) is not None:  # CPython's message (it differs across versions)
            _shadow(obj, lambda real: real.__setitem__(index, _NotIterable()))
        values = dispatch.iterate(tx, value)
        _shadow(obj, lambda real: real.__setitem__(index, [None] * len(values)))
        obj.items[index] = values
    else:
        _shadow(obj, lambda real: real.__setitem__(index, None))
        obj.items[index] = value
    return NONE


def _list_delitem(tx, obj, key):
    index = _int(key)
    _shadow(obj, lambda real: real.__delitem__(index))
    del obj.items[index]
    return NONE


def _list_pop(tx, obj, index=LAST):
    at = _int(index)
    _shadow(obj, lambda real: real.pop(at))
    return obj.items.pop(at)


class _NotIterable:
    """What a slice is assigned in place of a value that is not iterable."""


def _list_insert(tx, obj, index, value):
    at = _int(index)
    _shadow(obj, lambda real: real.insert(at, None))
    obj.items.insert(at, value)
    return NONE


def _list_imul(tx, obj, count):
    n = _int(count)
    if not isinstance(n, int):  # CPython's TypeError (the stand-in list is not grown)
        _shadow(obj, lambda real: real.__imul__(n))
    obj.items *= n
    return obj


def _list_remove(tx, obj, value):
    deque = issubclass(obj.python_type(), collections.deque)  # "<repr> is not in deque"
    del obj.items[_find(tx, obj, value, None if deque else "list.remove(x): x not in list")]
    return NONE


def _list_sort(tx, obj, *, key=NONE, reverse=FALSE):
    items = list(obj.items)
    order = dispatch.sort_order(tx, items, key, reverse, "list.sort")
    obj.items[:] = [items[i] for i in order]
    return NONE


def _extend_items(tx, iterable):
    """What ``list.extend`` appends: a list or tuple copied first (``xs.extend(xs)`` doubles),
    any other iterable's items one at a time as they are taken (a ``map`` whose function reads or
    appends to the list sees it grow, as in CPython)."""
    if isinstance(iterable, (ListVariable, TupleVariable)):
        return list(iterable.items)
    return dispatch.each_item(tx, iterable)


def _list_extend(tx, obj, iterable):
    for item in _extend_items(tx, iterable):
        obj.items.append(item)
    return NONE


def _list_init(tx, obj, iterable=None):
    """``xs.__init__(iterable)`` on an existing list: emptied, then extended (``xs.__init__(xs)``
    leaves it empty, as in CPython)."""
    obj.items.clear()
    return NONE if iterable is None else _list_extend(tx, obj, iterable)


def _equal(tx, item: VariableTracker, value: VariableTracker) -> bool:
    """``item is value or item == value``, as list searches compare (a tensor's ``==``: known
    where it gives no tensor, ``'b' == t`` is False; data-dependent where it does)."""
    if item is value:
        return True
    if item.is_python_constant() and value.is_python_constant():
        known = item.as_python_constant()  # identity first: ``[nan].count(nan)``
        return known is value.as_python_constant() or bool(known == value.as_python_constant())
    equal = dispatch.call_operator(tx, operator.eq, [item, value])
    if isinstance(item, TensorVariable) or isinstance(value, TensorVariable):
        if not equal.is_python_constant():
            raise Unsupported("data_dependent", f"comparing {item} with {value} needs their values")
    return dispatch.truth(tx, equal)


def _find(tx, obj, value, message=None):
    """The index of the first item equal to ``value``, else the ValueError of the C method of
    ``obj``'s base: ``tuple.index(x): x not in tuple``, or ``repr(value)`` followed by ``is not
    in list`` (``deque``); a value whose text waits for the graph (a tensor's) breaks."""
    for i, item in enumerate(obj.items):
        if _equal(tx, item, value):
            return i
    if message is None and issubclass(obj.python_type(), tuple):
        message = "tuple.index(x): x not in tuple"
    if message is None:
        kind = "deque" if issubclass(obj.python_type(), collections.deque) else "list"
        text = dispatch.call_builtin(tx, repr, [value], {})
        if not text.is_python_constant():
            raise Unsupported("python_error", f"ValueError: {text} is not in {kind}")
        message = f"{text.as_python_constant()} is not in {kind}"
    raise PythonError(ValueError(message))


def _count(tx, obj, value):
    return ConstantVariable(sum(1 for item in obj.items if _equal(tx, item, value)))


def _format_method(tx, obj, spec):
    """``obj.__format__(spec)``: ``format(obj, spec)`` for a string spec (another is refused
    with the method's own message: left to Python)."""
    if not (spec.is_python_constant() and type(spec.as_python_constant()) is str):
        raise Unsupported("call_method", f"{obj.python_type().__name__}.__format__ of {spec}")
    return dispatch.call_builtin(tx, format, [obj, spec], {})


#: A container's ``__repr__``, ``__str__`` and ``__format__``, its class's C methods, called as
#: methods: what the builtin that calls them (``repr(xs)``) computes.
SPELLED = {
    "__repr__": (False, lambda tx, obj: dispatch.call_builtin(tx, repr, [obj], {})),
    "__str__": (False, lambda tx, obj: dispatch.call_builtin(tx, str, [obj], {})),
    "__format__": (False, _format_method),
}


_LIST = {
    **SPELLED,
    "append": (True, lambda tx, obj, v: (obj.items.append(v), NONE)[1]),
    "extend": (True, _list_extend),
    "insert": (True, _list_insert),
    "pop": (True, _list_pop),
    "remove": (True, _list_remove),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "reverse": (True, lambda tx, obj: (obj.items.reverse(), NONE)[1]),
    "sort": (True, _list_sort),
    "__setitem__": (True, _list_setitem),
    "__delitem__": (True, _list_delitem),
    "copy": (False, lambda tx, obj: ListVariable(list(obj.items))),
    "__init__": (True, _list_init),
    "__imul__": (True, _list_imul),
    "index": (False, lambda tx, obj, v: ConstantVariable(_find(tx, obj, v))),
    "count": (False, _count),
}


def _namedtuple_replace(tx, obj, **changes):
    fields = list(obj.cls._fields)
    if set(changes) - set(fields):
        raise Unsupported("python_error", f"{obj.cls.__name__}._replace() got unexpected fields")
    items = [changes.get(f, item) for f, item in zip(fields, obj.items, strict=True)]
    return TupleVariable(items, cls=obj.cls)


_DEQUE = {**{k: v for k, v in _LIST.items() if k not in ("sort", "__init__")}, **DEQUE_METHODS}


def _getnewargs(tx, obj):
    """``t.__getnewargs__()``: ``(tuple(t),)``, the tuple itself where it is an exact tuple."""
    exact = obj.python_type() is tuple
    return TupleVariable([obj if exact else TupleVariable(list(obj.items))])


def _tuple_sizeof(tx, obj):
    """``t.__sizeof__()`` of an exact tuple: its size depends on its length only."""
    if obj.python_type() is not tuple:
        raise Unsupported("call_method", f"{obj.python_type().__name__}.__sizeof__")
    return ConstantVariable(((None,) * len(obj.items)).__sizeof__())


_TUPLE = {
    **SPELLED,
    "__sizeof__": (False, _tuple_sizeof),
    "__init__": (False, lambda tx, obj, *args, **kwargs: NONE),  # ``object.__init__``
    "__getnewargs__": (False, _getnewargs),
    "index": (False, lambda tx, obj, v: ConstantVariable(_find(tx, obj, v))),
    "count": (False, _count),
    "_replace": (False, _namedtuple_replace),
    "_asdict": (
        False,
        lambda tx, obj: DictVariable(dict(zip(obj.cls._fields, obj.items, strict=True))),
    ),
}


# -- dict ------------------------------------------------------------------------------------------
def _dict_pop(tx, obj, key, default=None):
    """``d.pop(k[, default])``: a change only where the key is there (a ``**kwargs`` dict popped
    of an option the caller did not pass is given back unchanged, nothing replayed)."""
    k, value = obj.lookup(tx, key)
    if value is None:
        if default is None:
            raise _key_error(k)
        return default
    tx.output.side_effects.before_mutation(obj)
    k = _key(key, obj.items)
    value = obj.items.pop(k)
    tx.output.side_effects.mark_mutated(obj)
    return value


def _dict_popitem(tx, obj):
    if not obj.items:
        raise PythonError(KeyError("popitem(): dictionary is empty"))
    key, value = obj.items.popitem()
    return TupleVariable([key_vt(key), value])


def _dict_update(tx, obj, *others, **kwargs):
    """``d.update(mapping_or_pairs, **kwargs)``."""
    if _calls_back(obj):
        return _update_through_setitem(tx, obj, others, kwargs)
    if len(others) > 1:
        raise Unsupported("python_error", "TypeError: update expected at most 1 argument")
    for other in others:
        update_items(tx, obj.items, other)
    obj.items.update(kwargs)
    return NONE


def update_items(tx: Translator, items: dict[Any, VariableTracker], other: VariableTracker) -> None:
    """Store into ``items`` what ``dict(other)`` and ``d.update(other)`` take (CPython's
    ``dict_update_arg``): a dict's items; for any other value whose type has ``keys``, a mapping,
    ``other[k]`` for each ``k`` of ``other.keys()``; else pairs, taken one by one and stored as
    they come (a ``map`` making them sees the pairs stored before)."""
    if is_mapping(other):
        merge_mapping(tx, items, other)
        return
    for index, pair in enumerate(dispatch.each_item(tx, other)):
        parts = dispatch.iterate(tx, pair)
        if len(parts) != 2:
            raise PythonError(
                ValueError(
                    f"dictionary update sequence element #{index} has length {len(parts)}; "
                    "2 is required"
                )
            )
        items[_key(parts[0])] = parts[1]


def _dict_init(tx, obj, *others, **kwargs):
    """``d.__init__(mapping_or_pairs, **kwargs)`` on an existing dict: ``d.update(...)``. On an
    object of a user ``Counter`` class it is ``dict.__init__`` (``Counter.__init__``, in Python,
    is inlined: ``objects.storage_method``)."""
    base = dict_base(obj.cls)
    counter_object = base is collections.Counter and is_user_dict(obj.cls)
    if base not in (dict, collections.OrderedDict) and not counter_object:
        raise Unsupported("call_method", f"{obj.cls.__name__}.__init__")
    return _dict_update(tx, obj, *others, **kwargs)


def dict_or(tx: Translator, op, lhs: DictVariable, rhs: VariableTracker) -> VariableTracker | None:
    """``d | other`` (a new dict of ``d``'s type) and ``d |= other`` (``d.update(other)``); None
    where ``other`` is no dict (``dict.__or__`` gives NotImplemented: the other operand decides)."""
    if op is operator.ior:
        call_method(tx, lhs, "update", [rhs], {})
        return lhs
    if not isinstance(rhs, DictVariable):
        return None
    first = rhs if _reflected_first(lhs.cls, rhs.cls) else lhs  # whose type the union has
    if first is rhs and isinstance(type_lookup(rhs.cls, "__ror__"), types.FunctionType):
        return None  # a class's own ``__ror__`` in Python: not this rule's
    merged = _dict_copy(tx, first)
    merged.items.clear()
    merged.items.update(mapping_items(tx, lhs))
    merged.items.update(mapping_items(tx, rhs))
    return merged


def _reflected_first(left: type, right: type) -> bool:
    """CPython asks ``right.__ror__`` before ``left.__or__``: ``right`` is a proper subclass
    overriding it (``dict | OrderedDict``, ``dict | defaultdict``: a union of the right's type)."""
    return (
        right is not left
        and issubclass(right, left)
        and type_lookup(right, "__ror__") is not type_lookup(left, "__ror__")
    )


def _dict_setdefault(tx, obj, key, default=NONE):
    return obj.items.setdefault(_key(key, obj.items), default)


def _dict_delitem(tx, obj, key):
    k = _key(key, obj.items)
    if k not in obj.items:
        raise _key_error(k)
    del obj.items[k]
    return NONE


def _dict_getitem(tx, obj, key):
    if isinstance(obj, LazyDictVariable):
        item = obj.item_at_key(tx, key)
        if item is not None:
            return item
    k, value = obj.lookup(tx, key)
    if value is not None:
        return value
    missing = type_lookup(obj.cls, "__missing__") if is_user_dict(obj.cls) else None
    if isinstance(missing, types.FunctionType):  # a subclass's own, which ``dict`` calls
        return dispatch.call(tx, tx.wrap_static(missing), [obj, key], {})
    factory = obj.default_factory
    if factory is None or (factory.is_python_constant() and factory.as_python_constant() is None):
        raise _key_error(k)
    value = dispatch.call(tx, factory, [], {})  # ``defaultdict.__missing__``
    tx.output.side_effects.before_mutation(obj)
    obj.items[k] = value
    tx.output.side_effects.mark_mutated(obj)
    return value


def _dict_get(tx, obj, key, default=NONE):
    value = obj.lookup(tx, key)[1]
    return default if value is None else value


def _dict_copy(tx, obj):
    """``d.copy()`` (and ``d | other``'s first step): ``dict``'s gives a plain dict for a
    subclass; ``OrderedDict``'s calls a subclass, which is not traced here."""
    cls = obj.cls
    if is_user_dict(cls):
        if dict_base(cls) is not dict:
            raise Unsupported("call_method", f"{cls.__name__}.copy calls the class")
        cls = dict
    return DictVariable(dict(obj.items), cls=cls, default_factory=obj.default_factory)


def _dict_fromkeys(tx, obj, iterable, value=NONE):
    """``d.fromkeys(keys, value)`` called on a dict: a new dict of its class (a ``defaultdict``
    without a factory), the keys in the iterable's order."""
    if obj.cls not in (dict, collections.OrderedDict, collections.defaultdict):
        raise Unsupported("call_method", f"{obj.cls.__name__}.fromkeys")
    items = {}
    for key in dispatch.each_item(tx, iterable):
        items[_key(key)] = value
    factory = NONE if obj.cls is collections.defaultdict else None
    return DictVariable(items, cls=obj.cls, default_factory=factory)


_DICT = {
    **SPELLED,
    "__setitem__": (
        True,
        lambda tx, obj, k, v: (obj.items.__setitem__(_key(k, obj.items), v), NONE)[1],
    ),
    "__delitem__": (True, _dict_delitem),
    "__getitem__": (False, _dict_getitem),
    "pop": (False, _dict_pop),  # a change only where it pops (``_dict_pop``)
    "popitem": (True, _dict_popitem),
    "update": (True, _dict_update),
    "__init__": (True, _dict_init),
    "setdefault": (True, _dict_setdefault),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "get": (False, _dict_get),
    "keys": (False, lambda tx, obj: DictViewVariable(obj, "keys")),
    "values": (False, lambda tx, obj: DictViewVariable(obj, "values")),
    "items": (False, lambda tx, obj: DictViewVariable(obj, "items")),
    "copy": (False, _dict_copy),
    "fromkeys": (False, _dict_fromkeys),
    "__contains__": (False, lambda tx, obj, k: ConstantVariable(obj.lookup(tx, k)[1] is not None)),
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.items))),
}


def _move_to_end(tx, obj, key, last=None):
    k = _key(key, obj.items)
    if k not in obj.items:
        raise _key_error(k)
    at_end = True if last is None else dispatch.truth(tx, last)
    value = obj.items.pop(k)
    if at_end:
        obj.items[k] = value
    else:
        rest = dict(obj.items)
        obj.items.clear()
        obj.items[k] = value
        obj.items.update(rest)
    return NONE


def _ordered_popitem(tx, obj, last=None):
    if last is None or dispatch.truth(tx, last):
        return _dict_popitem(tx, obj)
    if not obj.items:
        raise Unsupported("python_error", "KeyError: 'dictionary is empty'")
    key = next(iter(obj.items))
    return TupleVariable([key_vt(key), obj.items.pop(key)])


#: Methods a dict subclass adds or changes.
_DICT_SUBCLASS = {
    collections.OrderedDict: {
        "move_to_end": (True, _move_to_end),
        "popitem": (True, _ordered_popitem),
    },
    **DICT_SUBCLASS_METHODS,
}


# -- dict views ------------------------------------------------------------------------------------
def _view_isdisjoint(tx, obj, other):
    return ConstantVariable(
        not any(contains(tx, obj, item) for item in dispatch.iterate(tx, other))
    )


_VIEW = {
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.dict_vt.items))),
    "__contains__": (False, lambda tx, obj, v: ConstantVariable(contains(tx, obj, v))),
    "isdisjoint": (False, _view_isdisjoint),
}


# -- set -------------------------------------------------------------------------------------------
def _set_method(name: str, mutates: bool):
    """A set method run by CPython on the real set of constants (iterable arguments are read
    into sets of constants first), so results, order and errors are CPython's."""

    def impl(tx, obj, *args):
        keyed = name in ("add", "discard", "remove")
        if keyed:
            keys = [hash_key(a) if name == "add" else lookup_key(a) for a in args]
            real, taken = [among_numbers(k, obj.items) for k in keys], None
        else:
            reads = [read_iterable(tx, a) for a in args]
            real, taken = [r for r, _ in reads], [t for _, t in reads]
        before = set(obj.items) if mutates else None
        real, entry = obj.log_call(name, real) if mutates else (real, None)
        sets = _set_states([obj, *args])
        try:  # changed in place, the set needs no known order
            result = getattr(obj.items if mutates else real_set(obj), name)(*real)
        except KeyError:  # ``remove``: the argument itself (a set searched as a frozenset)
            key = real[0]
            raise _key_error(IdentityKey(args[0], getattr(key, "ident", key))) from None
        except TypeError as e:
            raise PythonError(e) from None
        # an item read one by one runs traced code, which may change a set of the call while it
        # runs (``s.union(map(f, xs))`` with ``f`` discarding from ``s``): its calls no longer
        # make what CPython's call made, and no recipe repeats them
        changed = _changed_since(sets)
        if before is not None:
            obj.logged(entry)
            obj.added_to(before)
            if changed:
                obj.recipe = None
            parts = list(map(read_part, args, taken)) if taken is not None else None
            obj.changed(name, [("key", k) for k in real] if keyed else parts)
        if isinstance(result, (set, frozenset)):
            base = frozenset if obj.frozen else set  # a subclass's own method is not set's
            taken = [None, *(taken or [])]
            recipe = None if changed else SetRecipe.call(getattr(base, name), [obj, *args], taken)
            return computed_set(result, [obj, *args], recipe)
        return ConstantVariable(result)

    return mutates, impl


def real_iterable(tx, vt):
    """What a set method is given: the real set or immutable constant, a dict of the keys, or a
    real iterator over the items that takes each from the traced iterable when CPython asks for
    it (CPython's methods take fast paths for sets and dicts that change orders; on other
    iterables some add item by item, some stop early, some read all first: a ``map`` whose
    function reads or changes the set sees what it sees in CPython)."""
    if isinstance(vt, SetVariable):
        return real_set(vt)
    if isinstance(vt, DictVariable):
        return dict.fromkeys(vt.items)
    if isinstance(vt, TupleVariable):
        return tuple(map(_key, vt.items))  # its items' trackers kept (an object read from a global)
    if vt.is_python_constant() and isinstance(
        vt.as_python_constant(), (str, range, tuple, frozenset)
    ):
        return vt.as_python_constant()
    if issubclass(cls := _tracked_type(vt), (set, frozenset)):
        raise Unsupported(  # an object of a set class with its own ``__iter__``, say
            "set_subclass",
            f"a {cls.__name__} object given to a set method",
            "CPython reads the items a set object stores, which the trace does not model here",
        )
    return map(_key, dispatch.each_item(tx, vt))


def _set_states(operands: list[VariableTracker]) -> list[tuple[SetVariable, Any, int]]:
    """Each set tracker among ``operands`` with what says it changed: its recipe (a change makes
    a new one, or drops it) and its log's length (an input set's changes)."""
    return [(vt, vt.recipe, len(vt.log)) for vt in operands if isinstance(vt, SetVariable)]


def _changed_since(states: list[tuple[SetVariable, Any, int]]) -> bool:
    return any(vt.recipe is not recipe or len(vt.log) != n for vt, recipe, n in states)


def read_iterable(tx: Translator, vt: VariableTracker) -> tuple[Any, list[Any] | None]:
    """``real_iterable(tx, vt)``, and where it gives the items one by one, the list they are
    recorded in as the call takes them (for ``SetRecipe.call``), else None."""
    real = real_iterable(tx, vt)
    if type(real) is not map:  # the item-by-item form ``real_iterable`` gives
        return real, None
    taken: list[Any] = []
    return _recording(real, taken), taken


def _set_init(tx, obj, *args):
    """``s.__init__(iterable)`` on an existing set: emptied, then updated (``s.__init__(s)``
    leaves it empty)."""
    if len(args) > 1:
        raise PythonError(TypeError(f"set expected at most 1 argument, got {len(args)}"))
    _SET["clear"][1](tx, obj)
    return _SET["update"][1](tx, obj, *args) if args else NONE


def _set_copy(tx, obj):
    return computed_set(set(real_iterable(tx, obj)), [obj], SetRecipe.call(set, [obj]))


def _frozenset_copy(tx, obj):
    """A frozenset's copy is itself; a subclass's object's is a frozenset of its items."""
    if obj.python_type() is frozenset:
        return obj
    made = frozenset(real_iterable(tx, obj))
    return computed_set(made, [obj], SetRecipe.call(frozenset, [obj]))


def _set_clear(tx, obj):
    obj.logged(obj.log_call("clear", [])[1])
    obj.items.clear()
    obj.changed("clear", [])
    return NONE


def _set_pop(tx, obj):
    if not obj.items:
        raise PythonError(KeyError("pop from an empty set"))
    key = obj.ordered().pop()
    obj.logged(obj.log_call("discard", [key])[1])  # the item the trace took out
    obj.changed("pop", [])
    return key_vt(key)  # the item's own tracker (a class, an object...)


def _set_reduce(tx, obj):
    """``s.__reduce__()``: ``(type(s), (list(s),), None)``, the items in the set's order (a
    subclass's, whose state is its ``__dict__``, is not traced)."""
    cls = obj.python_type()
    if cls not in (set, frozenset):
        raise Unsupported("call_method", f"{cls.__name__}.__reduce__")
    items = ListVariable(list(dispatch.iterate(tx, obj)))
    return TupleVariable([tx.wrap_static(cls), TupleVariable([items]), NONE])


def _set_reduce_ex(tx, obj, protocol):
    """``object.__reduce_ex__``: the protocol taken as CPython takes a C int (its errors from an
    empty set's own method), then the set's ``__reduce__``."""
    if protocol.is_python_constant():
        value = protocol.as_python_constant()
    elif (value := dispatch.index_stand_in(protocol)) is None:
        raise Unsupported("call_method", f"__reduce_ex__ of a set with the protocol {protocol}")
    try:
        obj.python_type()().__reduce_ex__(value)
    except (TypeError, OverflowError) as e:
        raise PythonError(e) from None
    return _set_reduce(tx, obj)


_SET = {
    **{
        name: _set_method(name, mutates=True)
        for name in (
            "add",
            "discard",
            "remove",
            "update",
            "intersection_update",
            "difference_update",
            "symmetric_difference_update",
        )
    },
    **{
        name: _set_method(name, mutates=False)
        for name in (
            "union",
            "intersection",
            "difference",
            "symmetric_difference",
            "issubset",
            "issuperset",
            "isdisjoint",
        )
    },
    "pop": (True, _set_pop),
    "__init__": (True, _set_init),
    "clear": (True, _set_clear),
    "copy": (False, lambda tx, obj: _frozenset_copy(tx, obj) if obj.frozen else _set_copy(tx, obj)),
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.items))),
    "__contains__": (
        False,
        lambda tx, obj, v: ConstantVariable(among_numbers(lookup_key(v), obj.items) in obj.items),
    ),
    "__reduce__": (False, _set_reduce),
    "__reduce_ex__": (False, _set_reduce_ex),
    **SPELLED,
}


#: A frozenset has the set's methods that do not change it (the others are no attributes of it)
#: and ``object.__init__``, which does nothing.
_FROZENSET = {**_SET, "__init__": (False, lambda tx, obj, *args, **kwargs: NONE)}


# ``ModelOutputVariable``: a ``transformers`` ``ModelOutput`` (an ``OrderedDict`` subclass and a
# dataclass whose fields are also readable as attributes) created during the trace, or a
# ``diffusers`` ``BaseOutput`` (``DecoderOutput``, ``AutoencoderKLOutput``...: the same class,
# copied; its ``__post_init__`` differs only for a lone first field, which
# ``construct_model_output`` leaves to Python).
#
# Its real ``__init__``/``__post_init__`` are not inlined (they call ``dataclasses.fields`` and
# write through ``super().__setitem__``); ``construct_model_output`` applies their effect for the
# usual call shape (fields given by keyword or position, the non-``None`` ones become keys in field
# order). Keys and attributes stay in step as in ``ModelOutput``: ``out.name`` is ``out["name"]``,
# or ``None`` for an unset field; ``out[i]``/``out.to_tuple()`` index the values. At a graph break
# or return it is rebuilt as ``cls(field=None, ...)`` followed by one ``out[key] = value`` per key,
# which gives the same keys in the same order. An object of these classes given to the trace (a
# loss function's ``outputs``) is one too, read only: its keys guarded, its values read with
# ``dict.__getitem__`` (no Python method of the class runs in a guard), a field without a key read
# as its attribute.

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


def construct_model_output(
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
    """``items``: the keys present (non-``None`` fields, in insertion order); ``cls``: the class;
    ``real``: the object, for one given to the trace (``builder``: its keys guarded, its values
    read with ``dict.__getitem__``), which is read only."""

    real: Any = None

    def is_python_constant(self) -> bool:
        return False

    def fields(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.cls)]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.items:
            return self.items[name]
        if name in self.fields():
            if self.source is not None:  # given: a field without a key may still be set
                return tx.wrap(getattr(self.real, name), AttrSource(self.source, name))
            return ConstantVariable(None)
        if name == "to_tuple" or name in _DICT_READS:
            return ModelOutputMethodVariable(self, name)
        prop = type_lookup(self.cls, name)
        if isinstance(prop, property) and isinstance(prop.fget, types.FunctionType):
            return dispatch.call(tx, tx.wrap_static(prop.fget), [self], {})  # a subclass's
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

        def build() -> None:  # one object, however often the code needs it
            cg.load_const(rebuild)
            cg.load_const(self.cls)
            DictVariable(self.items).reconstruct(cg)
            cg.call_function(2)

        _build_once(cg, self, build)
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
        return call_method(tx, view, self.name, args, kwargs)


# -- bytearray -------------------------------------------------------------------------------------
@dataclass(eq=False)
class ByteArrayVariable(BuiltOnce, VariableTracker):
    """A ``bytearray`` made in the trace. ``value`` is a real bytearray, the object's contents
    (all known: small ints), changed in place by its methods, which are C code computed here on
    constant arguments (``_BYTEARRAY``); it is rebuilt as ``bytearray(b'...')``, one object however
    often the code needs it. Not a constant: it is mutable, and the object itself matters."""

    value: bytearray
    source: Source | None = None

    def python_type(self) -> type:
        return bytearray

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__class__":
            return tx.wrap_static(bytearray)
        if on_instances(bytearray, name):
            return BoundMethodVariable(self, name)
        raise PythonError(AttributeError(f"'bytearray' object has no attribute '{name}'"))

    def save_state(self) -> bytes:
        return bytes(self.value)

    def restore_state(self, saved: bytes) -> None:
        self.value[:] = saved

    def _build(self, cg: Codegen) -> None:
        cg.load_const(bytearray)
        cg.load_const(bytes(self.value))
        cg.call_function(1)

    def __repr__(self) -> str:
        return f"ByteArrayVariable({bytes(self.value)!r})"


def bytearray_operand(vt: VariableTracker) -> Any:
    """``vt`` as a bytearray's (or a memoryview's) C code reads it, or ``MISSING``: a constant (an
    immutable copy of its value), another bytearray or a memoryview made in the trace (its value
    itself)."""
    if isinstance(vt, (ByteArrayVariable, MemoryViewVariable)):
        return vt.value
    if vt.is_python_constant() and not isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        return vt.as_python_constant()
    return MISSING


def _bytearray_call(name: str):
    def impl(tx, obj, *args, **kwargs):
        values = [bytearray_operand(a) for a in args]
        named = {k: bytearray_operand(v) for k, v in kwargs.items()}
        if any(v is MISSING for v in [*values, *named.values()]):
            raise Unsupported("call_method", f"bytearray.{name} on values not known here")
        try:
            result = getattr(obj.value, name)(*values, **named)
        except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
            raise PythonError(e) from None
        return _bytearray_result(tx, obj, result)

    impl.__name__ = f"_bytearray_{name}"
    return impl


def _bytearray_result(
    tx: Translator,
    obj: VariableTracker | list[VariableTracker],
    result: Any,
    made_by: tuple[Any, tuple[VariableTracker, ...]] | None = None,
) -> VariableTracker:
    """What a bytearray method (or a builtin or operator given bytearrays and memoryviews
    ``obj``) gave: one of those objects itself (``max(a, b)``), new bytearrays (alone or in the
    list or tuple ``split`` and ``partition`` give), a new view of bytes (``m[1:]``, rebuilt as
    ``made_by`` made it), or constants."""
    made = obj if isinstance(obj, list) else [obj]
    for vt in made:
        if result is vt.value:
            return vt
    if type(result) is bytearray:
        return ByteArrayVariable(result)
    if type(result) is memoryview:
        return MemoryViewVariable.made(result, made_by)
    if type(result) in (list, tuple) and any(type(item) is bytearray for item in result):
        items = [_bytearray_result(tx, made, item) for item in result]
        return ListVariable(items) if type(result) is list else TupleVariable(items)
    return tx.fold(result)


#: bytearray's attributes not run here: the attribute protocol, class-level ones, what depends on
#: the real object's allocation (``__alloc__``, ``__sizeof__``) and what lends its buffer out
_BYTEARRAY_UNTRACED = frozenset(
    {
        "__getattribute__",
        "__new__",
        "__init_subclass__",
        "__subclasshook__",
        "__class_getitem__",
        "__buffer__",
        "__release_buffer__",
        "__iter__",
        "__reduce__",
        "__reduce_ex__",
        "__alloc__",
        "__sizeof__",
        "fromhex",
        "__setattr__",
        "__delattr__",
        "__dir__",
        "__format__",
    }
)
#: bytearray's methods, C code computed here on the real bytearray and constant arguments
_BYTEARRAY = {
    name: (not isinstance(member, staticmethod), _bytearray_call(name))
    for name, member in vars(bytearray).items()
    if callable(member) and name not in _BYTEARRAY_UNTRACED
}  # (a static method, ``maketrans``, leaves the bytearray as it is)


def bytearray_operation(
    tx: Translator,
    fn: Callable[..., Any],
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker] | None = None,
) -> VariableTracker | None:
    """``fn(*args, **kwargs)`` (an operator, a pure builtin: ``bytes``, ``len``) with a bytearray
    made in the trace among constants and such bytearrays: C code, run here on the real ones
    (saved first: it may change them in place), or None where an operand is another value."""
    values = [bytearray_operand(a) for a in args]
    named = {k: bytearray_operand(v) for k, v in (kwargs or {}).items()}
    if any(v is MISSING for v in [*values, *named.values()]):
        return None
    made = [a for a in [*args, *(kwargs or {}).values()] if isinstance(a, _BYTES_MADE)]
    for vt in made:
        if isinstance(vt, ByteArrayVariable):
            tx.output.side_effects.before_mutation(vt)
    try:
        result = fn(*values, **named)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None
    return _bytearray_result(tx, made, result, None if kwargs else (fn, tuple(args)))


@dispatch.rule("truth", ByteArrayVariable)
def _bytearray_truth(tx: Translator, vt: ByteArrayVariable) -> bool:
    return bool(vt.value)


@dispatch.rule("contains", ByteArrayVariable)
def _bytearray_contains(tx: Translator, vt: ByteArrayVariable, item: VariableTracker) -> bool:
    found = bytearray_operation(tx, operator.contains, [vt, item])
    if found is None:
        raise Unsupported("contains", f"`in` on {vt} of {item}")
    return found.as_python_constant()


@dispatch.rule("getitem", ByteArrayVariable)
def _bytearray_getitem(tx: Translator, vt: ByteArrayVariable, key: VariableTracker):
    found = bytearray_operation(tx, operator.getitem, [vt, key])
    if found is None:
        raise Unsupported("index", f"indexing {vt} with {key}")
    return found


@dispatch.rule("setitem", ByteArrayVariable)
def _bytearray_setitem(tx: Translator, vt: ByteArrayVariable, key, value) -> None:
    if bytearray_operation(tx, operator.setitem, [vt, key, value]) is None:
        raise Unsupported("index", f"{vt}[{key}] = {value}")


# -- memoryview ------------------------------------------------------------------------------------
@dataclass(eq=False)
class MemoryViewVariable(BuiltOnce, VariableTracker):
    """A ``memoryview`` made in the trace of ``bytes`` (or of such a view: a slice, a cast):
    ``value`` is the real view. What it shows is immutable, so its reads (items, ``len``,
    ``tobytes``, ``tolist``, ``hex``, ``==``, ``hash``, its attributes) are C code computed here,
    and a new view of it is one too. It is rebuilt as it was made (``made_by``), one object
    however often the code needs it. Not traced: its repr (its address), ``release`` and its
    context manager (they change the view). A view of a bytearray is another thing, a live one
    (writes through either show in the other): not made here (``memoryview(ba)`` breaks)."""

    value: memoryview
    #: the function that made it and the trackers it was given (``memoryview(b)``,
    #: ``operator.getitem(m, slice(1, 3))``, ``memoryview.cast(m, "H")``)
    made_by: tuple[Any, tuple[VariableTracker, ...]]
    source: Source | None = None

    @staticmethod
    def made(
        value: memoryview, made_by: tuple[Any, tuple[VariableTracker, ...]] | None
    ) -> MemoryViewVariable:
        """The tracker of a view ``made_by`` made: of bytes only (a bytearray's is live)."""
        if type(value.obj) is not bytes or made_by is None:
            raise Unsupported("memoryview", f"a view of {type(value.obj).__name__} is not modelled")
        return MemoryViewVariable(value, made_by)

    def python_type(self) -> type:
        return memoryview

    def viewed(self) -> VariableTracker:
        """The bytes shown (``m.obj``): what the first view was made of."""
        made = self.made_by[1][0]
        return made.viewed() if isinstance(made, MemoryViewVariable) else made

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__class__":
            return tx.wrap_static(memoryview)
        if name == "obj":
            return self.viewed()
        if name in _MEMORYVIEW_ATTRIBUTES:
            return tx.fold(computed(getattr, [self.value, name], {}))
        if name in _MEMORYVIEW:
            return BoundMethodVariable(self, name)
        if on_instances(memoryview, name):
            raise Unsupported("memoryview", f"memoryview.{name} is not traced")
        raise PythonError(AttributeError(f"'memoryview' object has no attribute '{name}'"))

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return [tx.fold(item) for item in computed(list, [self.value], {})]

    def _build(self, cg: Codegen) -> None:
        fn, args = self.made_by
        cg.load_const(fn)
        for arg in args:
            arg.reconstruct(cg)
        cg.call_function(len(args))

    def __repr__(self) -> str:
        return f"MemoryViewVariable({self.value.tobytes()!r}, {self.value.format!r})"


_BYTES_MADE = (ByteArrayVariable, MemoryViewVariable)
#: a memoryview's attributes: values read of the view
_MEMORYVIEW_ATTRIBUTES = frozenset(
    name for name, member in vars(memoryview).items() if type(member) is types.GetSetDescriptorType
) - {"obj"}


def _memoryview_call(name: str):
    method = getattr(memoryview, name)

    def impl(tx, obj, *args, **kwargs):
        found = bytearray_operation(tx, method, [obj, *args], kwargs)
        if found is None:
            raise Unsupported("call_method", f"memoryview.{name} on values not known here")
        return found

    impl.__name__ = f"_memoryview_{name.strip('_')}"
    return impl


#: memoryview's methods computed here: its reads and what makes a new view (``cast``,
#: ``toreadonly``); writes raise CPython's TypeError (the memory is read-only)
_MEMORYVIEW = {
    name: (False, _memoryview_call(name))
    for name in (
        *("tobytes", "tolist", "hex", "cast", "toreadonly", "count", "index"),
        *("__getitem__", "__setitem__", "__delitem__", "__len__", "__hash__"),
        *("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"),
    )
    if name in vars(memoryview)
}


@dispatch.rule("truth", MemoryViewVariable)
def _memoryview_truth(tx: Translator, vt: MemoryViewVariable) -> bool:
    return computed(bool, [vt.value], {})


dispatch.rule("contains", MemoryViewVariable)(_bytearray_contains)
dispatch.rule("getitem", MemoryViewVariable)(_bytearray_getitem)
dispatch.rule("setitem", MemoryViewVariable)(_bytearray_setitem)


#: The methods of each kind of container: name -> (whether it mutates, implementation). Other
#: families add their kinds (generators: ``iterators.py``).
METHODS: dict[type, dict[str, tuple[bool, Any]]] = {
    ListVariable: _LIST,
    DequeVariable: _DEQUE,
    DictVariable: _DICT,
    SetVariable: _SET,
    TupleVariable: _TUPLE,
    DictViewVariable: _VIEW,
    ByteArrayVariable: _BYTEARRAY,
    MemoryViewVariable: _MEMORYVIEW,
}


def namedtuple_fields(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> list[VariableTracker]:
    fields, defaults = cls._fields, getattr(cls, "_field_defaults", {})
    if len(args) > len(fields) or set(kwargs) - set(fields[len(args) :]):
        raise Unsupported("python_error", f"bad arguments to {cls.__name__}()")
    values = list(args)
    for name in fields[len(args) :]:
        if name in kwargs:
            values.append(kwargs[name])
        elif name in defaults:
            values.append(tx.fold(defaults[name]))
        else:
            raise Unsupported("python_error", f"{cls.__name__}() missing argument {name!r}")
    return values
