"""Every guard kind, declared once as its renderer ``KIND(expr, arg, consts) -> list of Python
boolean expressions`` with ``@guard_kind(order, key=..., identity=..., absorb=..., fixed=...)``
(``guard.py``), which binds the name to a callable ``GuardKind``: ``TYPE_MATCH(source, cls)`` is a
guard, its deduplication key computed here. The one place a kind is defined or named.

``expr`` is the source's expression (``L['x']`` in a variant's printed guards, ``x`` in the
generated dispatcher). Only exact builtin literals (ints, strings, finite floats, bools, None) are
written into code; every other value goes through ``consts``, a table of closure names, so no user
object's repr ever becomes code. Identity guards hold weak references where the object allows it, so
guards never keep user objects alive; the table reports each death so the cache can drop the entries
concerned. Generated checks only use builtin operations (``type``, ``is``, ``len``, ``==`` on exact
builtin literals, tensor attributes), never user-defined
``__eq__``/``__hash__``/``__getattr__``/properties. Exception: sources through objects of the
allowlisted classes with a side-effect-free ``__getattribute__`` (``PURE_GETATTR_CLASSES`` in
``variables/objects.py``, e.g. a ``transformers`` config) read attributes
through that
``__getattribute__``, and ``ATTR_ABSENT`` calls it.
"""

from __future__ import annotations

import functools
import gc
import math
import operator
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import torch

from .epoch import DICT_TYPES, unseen_by_dynamo
from .guard import (
    Absorb,
    Fixed,
    FunctionSpec,
    Guard,
    TensorSpec,
    WeakArg,
    autocast_state,
    default_device_as_set,
    guard_kind,
)

_LITERAL_TYPES = (int, str, bool, type(None))
_DEAD = object()  #: stands for an object that died before its guard was rendered (matches nothing)
#: Read a class's name and module without running a metaclass ``__getattr__``.
_TYPE_NAME, _TYPE_MODULE = type.__dict__["__name__"], type.__dict__["__module__"]


class ConstTable:
    """Closure values of a generated function, deduplicated (types, dtypes and devices by value,
    other objects by identity) and given readable names: ``___int``, ``___torch_float32``,
    ``___device_cpu``.

    ``ref(obj)`` guards identity through a weak reference: the expression evaluates to ``obj`` while
    it lives. When it dies, ``on_death(ref)`` is called (the owning cache drops the entries using
    it). ``collect()`` records which references a caller used, so each entry knows its own."""

    def __init__(self, on_death: Callable[[weakref.ref], None] | None = None) -> None:
        self.values: dict[str, Any] = {}
        self._names: dict[Any, str] = {}
        self._refs: dict[int, tuple[weakref.ref, str]] = {}  #: id(obj) -> (its weakref, name)
        self.on_death = on_death
        self.used: list[weakref.ref] | None = None  #: refs handed out since ``collect`` started
        self._suffixes: dict[str, int] = {}  #: base name -> the next suffix ``_fresh`` tries

    def name(self, value: Any, prefix: str = "c") -> str:
        key = _dedup_key(value)
        if key in self._names:
            return self._names[key]
        name = self._fresh(_readable(value, prefix))
        self.values[name] = value
        self._names[key] = name
        return name

    def ref(self, obj: Any) -> str:
        """An expression evaluating to ``obj`` while it lives (a weakref call; never a strong
        reference unless the object cannot be weakly referenced, like builtin functions and
        dtypes)."""
        known = self._refs.get(id(obj))
        if known is not None and known[0]() is obj:
            ref, name = known
        else:
            try:
                ref = weakref.ref(obj, self._died)
            except TypeError:
                return self.name(obj, "o")
            name = self._fresh(_readable(obj, "o"))
            self.values[name] = ref
            self._refs[id(obj)] = (ref, name)
        if self.used is not None:
            self.used.append(ref)
        return f"{name}()"

    def collect(self) -> list[weakref.ref]:
        """Start recording the weak references ``ref`` hands out; returns the list being filled."""
        self.used = []
        return self.used

    @unseen_by_dynamo  # a death callback: the collector runs it inside torch.compile's code too
    def _died(self, ref: weakref.ref) -> None:
        for key, (known, _) in list(self._refs.items()):
            if known is ref:
                del self._refs[key]  # a new object may reuse the id: it must get its own reference
        if self.on_death is not None:
            self.on_death(ref)

    def _fresh(self, text: str) -> str:
        """``___text``, or ``___text_N`` with the next N not taken (counted per text: a model's
        tree names hundreds of ``___keys``)."""
        base = f"___{text}"
        n = self._suffixes.get(base, 0)
        name = f"{base}_{n}" if n else base
        while name in self.values:
            n += 1
            name = f"{base}_{n}"
        self._suffixes[base] = n + 1
        return name


def _dedup_key(value: Any) -> Any:
    """What two closure values are one name by: dtypes and devices by their text; the immutable
    values that each trace makes anew for a guard (a ``FunctionSpec``, a tuple of literals or of
    types, a ``functools.partial`` of them) by what they hold (``_value_dedup``), so that the
    variants of one function write the same check as the same text and the dispatcher tests it
    once; anything else by identity. Values are held strongly, so no id in a key can be reused
    while the table holds it."""
    cls = type(value)
    if cls in (torch.dtype, torch.device):
        return (cls, str(value))
    if cls in (FunctionSpec, tuple, functools.partial):
        key = _value_dedup(value)
        if key is not None:
            return key
    return ("id", id(value))


def _value_dedup(value: Any) -> Any:
    """The key of an immutable ``value`` by what it holds, or None where it holds something else
    (then it is named by identity). Literals keep their exact type and a zero its sign (``1``,
    ``True``, ``1.0`` and ``-0.0`` are four values); types, functions and a ``FunctionSpec``'s
    parts by identity (the value named first holds them)."""
    cls = type(value)
    if cls in _LITERAL_TYPES or cls is float:
        return (cls, value, _zero_signs(value)) if value == value else None  # NaN: no key
    if isinstance(value, type) or cls in (types.FunctionType, types.BuiltinFunctionType):
        return ("id", id(value))
    if cls is FunctionSpec:
        return ("made_of", *value.key)
    if cls is tuple:
        items = tuple(map(_value_dedup, value))
        return None if None in items else (tuple, items)
    if cls is functools.partial and not value.__dict__:
        parts = (value.func, value.args, tuple(value.keywords.items()))
        key = _value_dedup(parts)
        return None if key is None else (functools.partial, key)
    return None


def _readable(value: Any, prefix: str) -> str:
    """A short identifier describing ``value`` (never its repr: only names of types, functions,
    modules and torch enums, read without running user code)."""
    cls = type(value)
    if issubclass(cls, type):
        text = _TYPE_NAME.__get__(value)
    elif cls is torch.dtype:
        text = str(value).replace(".", "_")
    elif cls is torch.device:
        text = f"device_{value.type}" + (f"{value.index}" if value.index is not None else "")
    elif cls in (types.FunctionType, types.BuiltinFunctionType, types.ModuleType):
        text = value.__name__.rpartition(".")[2]
    elif cls is functools.partial:  # a call with its arguments bound: named after the function
        return _readable(value.func, prefix)
    else:
        text = prefix
    if type(text) is not str:  # a module's ``__name__`` may be any object: not a cache key
        return _identifier.__wrapped__(text, prefix)
    return _identifier(text, prefix)


@functools.lru_cache(maxsize=4096)
def _identifier(text: str, prefix: str) -> str:
    """``text`` as an identifier: each other character an underscore, none leading; ``prefix``
    where that is no identifier. Computed once per text: every guard's constant gets a name, and
    the names repeat (the same types, functions and dtypes in every trace)."""
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in text).lstrip("_")
    return text if text.isidentifier() else prefix


def _is_builtin_type(cls: type) -> bool:
    """Types that live as long as the process (builtins, torch's, those of the modules compiled
    into the interpreter: ``_io.TextIOWrapper``): fine to hold strongly, and read without a weak
    reference's call."""
    module = _TYPE_MODULE.__get__(cls)
    return isinstance(module, str) and _lives_forever(module)


def _lives_forever(module: str) -> bool:
    """A module (by name) that is never unloaded: builtins, torch, the interpreter's own."""
    return module.split(".")[0] == "torch" or module in sys.builtin_module_names


def literal(value: Any, consts: ConstTable) -> str:
    """Python source for ``value``: its repr for exact builtin literals, else a closure name."""
    if type(value) in _LITERAL_TYPES:
        return repr(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return consts.name(value)


def _value_key(value: Any) -> tuple:
    """Values compared by ``EQUALS_MATCH`` are equal keys only when they are the same value as
    the trace reads it (``_same_key``): of the same type (``1``, ``True`` and ``1.0`` are not one
    guard), zeros of the same sign, ranges of the same bounds, a tuple's or frozenset's items so
    throughout and in iteration order. A slice does not hash before 3.12: its bounds do."""
    if type(value) in (slice, range):
        return (type(value), (value.start, value.stop, value.step))
    if type(value) in (tuple, frozenset):
        return (type(value), tuple(map(_value_key, value)))
    return (type(value), value, _zero_signs(value))


def _keys_identity(keys: tuple) -> tuple:
    """What tells two ``DICT_KEYS`` guards apart: the keys, those compared by identity (tensors,
    classes, objects) by their ids."""
    return tuple(k if _literal_key(k) else ("id", id(k)) for k in keys)


#: keys written as themselves in a source (``G['d'][1.5]``; a float only where it is finite)
_LITERAL_KEYS = (str, int, bool, float, bytes, type(None))


def _literal_key(key: Any) -> bool:
    return type(key) in _LITERAL_KEYS and (type(key) is not float or math.isfinite(key))


def _spec_key(spec: TensorSpec) -> tuple:
    return (
        spec.dtype,
        str(spec.device),
        spec.sizes,
        spec.strides,
        spec.requires_grad,
        spec.conj,
        spec.neg,
    )


@guard_kind(
    0, key=lambda cls: ("type", id(cls)), identity=True, absorb=Absorb.ALWAYS, fixed=Fixed.IDENTITY
)
def TYPE_MATCH(expr: str, arg: WeakArg, consts: ConstTable) -> list[str]:
    cls = arg()
    if cls is None:
        return [f"{expr} is {consts.name(_DEAD, 'dead')}"]
    if cls is dict:  # a module's member dict may have been swapped for a WatchedDict (epoch.py)
        return [f"type({expr}) in {consts.name(DICT_TYPES, 'dict_types')}"]
    return [f"type({expr}) is {consts.name(cls) if _is_builtin_type(cls) else consts.ref(cls)}"]


@guard_kind(
    1, key=lambda obj: ("id", id(obj)), identity=True, absorb=Absorb.ALWAYS, fixed=Fixed.IDENTITY
)
def ID_MATCH(expr: str, arg: WeakArg, consts: ConstTable) -> list[str]:
    obj = arg()
    if obj is None:  # died between the trace and now: this entry can never match
        return [f"{expr} is {consts.name(_DEAD, 'dead')}"]
    if type(obj) is types.ModuleType and _lives_forever(obj.__name__):
        return [f"{expr} is {consts.name(obj)}"]  # lives as long as the process: no weakref call
    return [f"{expr} is {consts.ref(obj)}"]


@guard_kind(1, key=lambda spec: ("function", *spec.key), absorb=Absorb.ALWAYS, fixed=Fixed.IDENTITY)
def FUNCTION_MATCH(expr: str, spec: FunctionSpec, consts: ConstTable) -> list[str]:
    """``expr`` is the traced function, or one made of the same parts (``alike_function``): a
    function made anew at each call (a lambda passed to a helper) passes as the one traced, whose
    identity the trace did not read."""
    traced = consts.name(spec.ref, "fn")  # (a weak reference with no callback: none dies)
    alike = f"{consts.name(alike_function)}({expr}, {consts.name(spec, 'made_of')})"
    # the type first, a condition read whole: a chain of reads is bound there (``cache``)
    function = consts.name(types.FunctionType)
    return [f"type({expr}) is {function}", f"({expr} is {traced}() or {alike})"]


def alike_function(fn: types.FunctionType, spec: FunctionSpec) -> bool:
    """``fn``, a plain function, has the traced one's globals, no attributes of its own, no
    defaults where it had none, and no meaning of its own (``FunctionSpec.distinct``). Only C
    attributes of a function are read: no user code runs."""
    return (
        fn.__globals__ is spec.globals
        and (fn.__defaults__ is None or not spec.no_defaults)
        and (fn.__kwdefaults__ is None or not spec.no_kwdefaults)
        and not fn.__dict__
        and not spec.distinct(fn)
    )


@guard_kind(
    1,
    key=lambda mapping: ("proxy", id(mapping)),
    identity=True,
    absorb=Absorb.ALWAYS,
    fixed=Fixed.IDENTITY,
)
def PROXY_MATCH(expr: str, arg: WeakArg, consts: ConstTable) -> list[str]:
    """``expr``, a ``types.MappingProxyType`` (a ``TYPE_MATCH`` first), shows the mapping the
    trace read through one: any proxy of it passes (``view.mapping``, ``MappingProxyType(d)``
    make a new one at each call), not only the object traced, whose identity the trace did not
    read. The proxy's one referent is read in C (``gc.get_referents``): no user code runs."""
    mapping = arg()
    if mapping is None:  # died between the trace and now: this entry can never match
        return [f"{expr} is {consts.name(_DEAD, 'dead')}"]
    return [f"{consts.name(proxied_mapping)}({expr}) is {consts.ref(mapping)}"]


def proxied_mapping(proxy: types.MappingProxyType) -> Any:
    """The mapping a ``types.MappingProxyType`` shows, the only object the proxy holds."""
    (mapping,) = gc.get_referents(proxy)
    return mapping


@guard_kind(1, absorb=Absorb.ALWAYS)
def NONE_MATCH(expr: str, arg: None, consts: ConstTable) -> list[str]:
    return [f"{expr} is None"]


@guard_kind(2, key=lambda value: _value_key(value), absorb=Absorb.VALUE)
def EQUALS_MATCH(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    """Only installed after a ``TYPE_MATCH`` to an exact builtin type, so ``==`` is the builtin
    one. Where ``==`` takes values the trace tells apart for each other (``range(0, 3, 2) ==
    range(0, 4, 2)``, ``frozenset({0.0}) == frozenset({-0.0})``, equal frozensets iterating in
    another order), the value must be the same as the trace read it (``_same_key``)."""
    if type(arg) is tuple and all(type(v) in _LITERAL_TYPES for v in arg):
        return _same_literals(expr, arg, consts)  # (in C: the common case, a per-call check)
    if type(arg) in (range, tuple, frozenset):
        return [f"{consts.name(_same_key)}({expr}, {consts.name(arg, 'value')})"]
    if type(arg) is float and math.isnan(arg):
        return [f"{expr} != {expr}"]
    copysign = consts.name(math.copysign)
    parts = (".real", ".imag") if type(arg) is complex else ("",)
    signs = [
        f"{copysign}(1.0, {expr}{part}) == {sign}"
        for part, sign in zip(parts, _zero_signs(arg), strict=False)  # () for other types
        if sign is not None
    ]
    return [f"{expr} == {literal(arg, consts)}", *signs]


def _zero_signs(value: Any) -> tuple:
    """The signs of a float's or complex's zero parts (``None`` for a part not zero): ``-0.0 ==
    0.0``, yet ``1 / x``, ``math.copysign`` and ``str`` tell them apart."""
    if type(value) is float:
        parts: tuple = (value,)
    elif type(value) is complex:
        parts = (value.real, value.imag)
    else:
        return ()
    return tuple(math.copysign(1.0, p) if p == 0 else None for p in parts)


@guard_kind(2, absorb=Absorb.MEMBERS)
def LEN_MATCH(expr: str, arg: int, consts: ConstTable) -> list[str]:
    return [f"len({expr}) == {arg}"]


@guard_kind(2)
def LEN_AT_LEAST(expr: str, arg: int, consts: ConstTable) -> list[str]:
    """The sequence has ``arg`` items or more (a resumed loop took that many of its rest)."""
    return [f"len({expr}) >= {arg}"]


@guard_kind(3, key=lambda keys: _keys_identity(keys), absorb=Absorb.MEMBERS)
def DICT_KEYS(expr: str, arg: tuple, consts: ConstTable) -> list[str]:
    """The keys of a dict, or the items of a set, in iteration order, each the key CPython's
    lookup would take for it (``_same_key``): constants (numbers, strings, bytes, None, ranges)
    of the same type and value; a tuple, frozenset or bound method equal to the one read, its
    parts compared alike (a new ``obj.method``, or a new frozenset of the same objects, is found
    where the old one was); any other key (a tensor, class, function, module, plain object, enum
    member, dtype) the same object, held weakly where it allows."""
    if all(type(k) in _LITERAL_TYPES for k in arg):
        return _same_literals(expr, arg, consts)
    expected = "".join(f"{_expected_key(k, consts)}, " for k in arg)
    return [f"len({expr}) == {len(arg)}", f"{consts.name(same_keys)}({expr}, ({expected}))"]


def _same_literals(expr: str, values: tuple, consts: ConstTable) -> list[str]:
    """What ``expr`` iterates is ``values`` (ints, strings, bools, None), in order: exact types
    first (``True == 1``; a user object's ``==`` would run), then the values, both in C."""
    types_ = tuple(map(type, values))
    return [
        f"tuple(map(type, {expr})) == {consts.name(types_, 'types')}",
        f"tuple({expr}) == {consts.name(values, 'values')}",
    ]


def _expected_key(key: Any, consts: ConstTable) -> str:
    """Source for the key a ``DICT_KEYS`` guard compares ``key`` with: a constant as itself; a
    tuple, frozenset or bound method holding objects made again from its parts at each check,
    so the guard holds only the objects (weakly) and not the container, which the caller may
    make anew at each call; any other object by a weak reference."""
    if _by_value(key):
        return literal(key, consts)
    cls = type(key)
    if cls is tuple:
        return "(" + "".join(f"{_expected_key(k, consts)}, " for k in key) + ")"
    if cls is frozenset:
        parts = "".join(f"{_expected_key(k, consts)}, " for k in key)
        return f"{consts.name(_InOrder)}(({parts}))"
    if cls is types.MethodType:
        func, owner = (_expected_key(k, consts) for k in (key.__func__, key.__self__))
        return f"{consts.name(types.MethodType)}({func}, {owner})"
    return consts.ref(key)


#: constants a ``DICT_KEYS`` guard compares by value (``_by_value``), all with builtin ``==``
_VALUE_TYPES = (int, float, bool, complex, str, bytes, type(None), range, type(Ellipsis))


def _by_value(key: Any) -> bool:
    if type(key) in (tuple, frozenset):
        return all(_by_value(k) for k in key)
    return type(key) in _VALUE_TYPES


def _same_key(key: Any, expected: Any) -> bool:
    """``key`` is ``expected``, or equal to it as CPython compares keys, with the same types
    throughout: the same constant (a zero of the same sign, a range of the same bounds: values
    CPython's lookup takes for each other but ``str`` tells apart); a tuple of such keys; a
    frozenset of them iterating in the same order (the trace may have read it); a bound method
    of the same function to the same object (CPython's ``method_richcompare``: ``__self__`` by
    identity). Only builtin ``==`` runs (never a user ``__eq__`` of a key passed in)."""
    if key is expected:
        return True
    cls = type(expected)
    if cls is frozenset or cls is _InOrder:  # its items one by one: the order the trace iterated
        return type(key) is frozenset and len(key) == len(expected) and _same_items(key, expected)
    if type(key) is not cls:
        return False
    if cls is tuple:
        return len(key) == len(expected) and _same_items(key, expected)
    if cls is types.MethodType:
        return key.__self__ is expected.__self__ and key.__func__ is expected.__func__
    if cls is range:  # equal as sequences is not enough: range(0, 3, 2) == range(0, 4, 2)
        return (key.start, key.stop, key.step) == (expected.start, expected.stop, expected.step)
    return cls in _VALUE_TYPES and key == expected and _zero_signs(key) == _zero_signs(expected)


class _InOrder(tuple):
    """A frozenset key's items in the order it iterates them, as a ``DICT_KEYS`` guard writes the
    key it expects (``_same_key``: an equal frozenset iterating them in that order)."""

    __slots__ = ()


def _same_items(key: tuple | frozenset, expected: tuple | frozenset) -> bool:
    return all(map(_same_key, key, expected))


def same_keys(container: Any, expected: tuple) -> bool:
    """Each key of ``container`` (as many as ``expected`` holds) is its ``expected`` key
    (``_same_key``), in order. Keys that are the very objects (classes, functions, interned
    strings, small ints) pass without a Python call per key."""
    return all(map(operator.is_, container, expected)) or all(map(_same_key, container, expected))


@guard_kind(5)
def KEY_ABSENT(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``arg`` (a str) is not a key of the dict ``expr`` (a global that would shadow a builtin, an
    instance attribute that would shadow a method of the class)."""
    return [f"{arg!r} not in {expr}"]


@guard_kind(5)
def KEY_PRESENT(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``arg`` (a str) is a key of the dict ``expr`` (a global name ``name in globals()`` found)."""
    return [f"{arg!r} in {expr}"]


@guard_kind(5, absorb=Absorb.ALWAYS)
def MEMBER_UNSHADOWED(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``arg`` (a str), a member of the module whose ``__dict__`` is ``expr``, is no key there,
    which would hide it from ``nn.Module.__getattr__``. Moves into the module tree's check: only
    a write into ``__dict__`` itself makes such a key (the replay of a trace's such write moves
    ``EPOCH``)."""
    return [f"{arg!r} not in {expr}"]


@guard_kind(5, key=lambda arg: (id(arg[0]), id(arg[1])))
def REGISTRY_ENTRY(expr: str, arg: tuple[Any, Any], consts: ConstTable) -> list[str]:
    """``expr.get(key) is entry`` for the dict ``expr``, a registry keyed by classes (torch's pytree
    ``SUPPORTED_NODES``): the one entry a trace relied on (None: ``key`` absent), where guarding
    the whole dict would check every key on each call."""
    key, entry = arg
    expected = "None" if entry is None else consts.name(entry, "entry")
    return [f"{expr}.get({consts.name(key)}) is {expected}"]


@guard_kind(5)
def CLASS_ATTR_ABSENT(expr: str, arg: tuple[str, ...], consts: ConstTable) -> list[str]:
    """No class in the MRO of the class ``expr`` defines any of the names ``arg`` (an attribute the
    trace found missing, plus ``__getattr__``, which would supply it)."""
    return [f"{consts.name(no_class_attr)}({expr}, {arg!r})"]


@guard_kind(4)
def ATTR_ABSENT(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``expr`` has no attribute ``arg``. Installed only for objects of the classes that
    ``variables/objects.py`` allowlists as having a side-effect-free
    ``__getattribute__``
    (``PURE_GETATTR_CLASSES``): the check runs that ``__getattribute__``."""
    return [f"not {consts.name(hasattr)}({expr}, {arg!r})"]


_MRO, _CLASS_DICT = type.__dict__["__mro__"], type.__dict__["__dict__"]


def no_class_attr(cls: type, names: tuple[str, ...]) -> bool:
    """Whether no class of ``cls.__mro__`` has any of ``names`` in its ``__dict__`` (read through
    ``type``'s own descriptors: no metaclass code runs)."""
    for klass in _MRO.__get__(cls):  # a loop, not generators: a guard runs it at every call
        namespace = _CLASS_DICT.__get__(klass)
        for name in names:
            if name in namespace:
                return False
    return True


@guard_kind(5, key=lambda other: ("alias", other), absorb=Absorb.ALIAS)
def DUPLICATE_INPUT(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``arg`` is the rendered expression of the other source holding the same object."""
    return [f"{expr} is {arg}"]


@guard_kind(5, key=lambda other: ("distinct", other))
def DISTINCT_INPUT(expr: str, arg: str, consts: ConstTable) -> list[str]:
    """``arg`` is the rendered expression of another source, holding another object."""
    return [f"{expr} is not {arg}"]


@guard_kind(4, key=lambda spec: _spec_key(spec), absorb=Absorb.PARAMETER, fixed=Fixed.NEVER)
def TENSOR_MATCH(expr: str, spec: TensorSpec, consts: ConstTable) -> list[str]:
    """Cheapest checks first; one attribute read per property (``is_cpu`` instead of building a
    ``torch.device``; ``is_contiguous()`` instead of the stride tuple when the two agree)."""
    parts = [
        f"type({expr}) is {consts.name(spec.type)}",
        f"{expr}.dtype is {consts.name(spec.dtype)}",
    ]
    if spec.device.type == "cpu":
        parts.append(f"{expr}.is_cpu")
    else:
        parts.append(f"{expr}.device == {consts.name(spec.device)}")
    parts.append(f"{expr}.requires_grad is {spec.requires_grad}")
    if spec.dtype.is_complex:  # only a complex tensor takes the conjugate bit
        parts.append(f"{expr}.is_conj() is {spec.conj}")
    parts.append(f"{expr}.is_neg() is {spec.neg}")
    parts += _dims_check(f"{expr}.shape", spec.sizes, expr)
    if spec.sizes and _contiguous_only(spec.sizes, spec.strides):
        parts.append(f"{expr}.is_contiguous()")
    elif spec.sizes:
        parts += _dims_check(f"{expr}.stride()", spec.strides, expr)
    return parts


def checked_in_c(spec: TensorSpec) -> bool:
    """Whether ``tensor_checker`` can check a tensor against ``spec``: a plain ``Tensor`` or a
    ``Parameter``, on the CPU or a CUDA device."""
    return spec.type in (torch.Tensor, torch.nn.Parameter) and spec.device.type in ("cpu", "cuda")


def tensor_checker(specs: tuple[TensorSpec, ...]) -> Any:
    """One C call checking tensors against ``specs`` (each ``checked_in_c``) at once,
    ``checker.check(*tensors)``: torch's ``TensorGuards``, which compares each tensor's exact
    type, dispatch keys (so its device type and its conjugate and negative bits), dtype, device
    index, ``requires_grad``, sizes and strides (``None``: any) with those given. That implies
    every part ``TENSOR_MATCH`` renders for the spec, so the dispatcher writes
    ``checker.check(...) or (the parts)``: a tensor the checker turns down whose parts hold (an
    inference tensor, a tensor in another thread-local dispatch state) is judged by the parts,
    as before.

    The keys compared are those under the thread-local dispatch state the checker is made in (the
    call's: inference mode excludes autograd's keys, say), so calls made in the same state pass.
    One checker per tuple of specs and state, so that the variants of a function share the
    condition where their tensors agree."""
    # no mode sees the examples being made: a user's mode would run, a fake mode would make them
    with torch._C.DisableTorchFunction(), torch.utils._python_dispatch._disable_current_modes():
        key = (specs, str(_tls_included()), str(_tls_excluded()))
        checker = _CHECKERS.get(key)
        if checker is None:
            if len(_CHECKERS) >= 4096:
                _CHECKERS.clear()
            checker = _CHECKERS[key] = torch._C._dynamo.guards.TensorGuards(
                *map(_example, specs),
                dynamic_dims_sizes=[list(spec.sizes) for spec in specs],
                dynamic_dims_strides=[list(spec.strides) for spec in specs],
            )
    return checker


_CHECKERS: dict[tuple, Any] = {}
_tls_included = torch._C._dispatch_tls_local_include_set
_tls_excluded = torch._C._dispatch_tls_local_exclude_set


def _example(spec: TensorSpec) -> torch.Tensor:
    """A tensor of no elements with ``spec``'s type, dtype, device, conjugate and negative bits
    (dispatch keys the checker compares) and ``requires_grad``."""
    example = torch.empty(0, dtype=spec.dtype, device=spec.device)
    torch._C._set_conj(example, spec.conj)
    torch._C._set_neg(example, spec.neg)
    if spec.type is torch.nn.Parameter:
        return torch.nn.Parameter(example, requires_grad=spec.requires_grad)
    return example.requires_grad_(spec.requires_grad)


def _contiguous_only(sizes: tuple[int | None, ...], strides: tuple[int | None, ...]) -> bool:
    """True when ``is_contiguous()`` pins the strides exactly: static sizes all > 1 (a size-1 or
    empty dimension leaves its stride free) and row-major strides."""
    if any(s is None or s < 2 for s in sizes) or any(s is None for s in strides):
        return False
    expected, step = [], 1
    for size in reversed(sizes):
        expected.append(step)
        step *= size
    return tuple(reversed(expected)) == tuple(strides)


def _dims_check(what: str, dims: tuple[int | None, ...], expr: str) -> list[str]:
    if all(d is not None for d in dims):
        return [f"{what} == {tuple(dims)!r}"]
    parts = [f"len({what}) == {len(dims)}"] if what.endswith("shape") else []
    return parts + [f"{what}[{i}] == {d}" for i, d in enumerate(dims) if d is not None]


@guard_kind(5)
def GRAD_MODE(expr: str, arg: bool, consts: ConstTable) -> list[str]:
    return [f"{consts.name(torch.is_grad_enabled)}() is {arg}"]


@guard_kind(5, key=str)
def DEFAULT_DTYPE(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    return [f"{consts.name(torch.get_default_dtype)}() is {consts.name(arg)}"]


@guard_kind(5)
def AUTOCAST(expr: str, arg: tuple | None, consts: ConstTable) -> list[str]:
    """``arg`` is None when autocast was off everywhere (one C call), else ``autocast_state()``."""
    if arg is None:
        return [f"{consts.name(torch._C._is_any_autocast_enabled)}() is False"]
    return [f"{consts.name(autocast_state)}() == {consts.name(arg, 'autocast')}"]


@guard_kind(5)
def DETERMINISTIC(expr: str, arg: bool, consts: ConstTable) -> list[str]:
    return [f"{consts.name(torch._C._get_deterministic_algorithms)}() is {arg}"]


#: what each global-state kind ``state_checker`` covers reads now (its guard's ``arg``)
_STATE_NOW: dict[Any, Callable[[], Any]] = {
    GRAD_MODE: torch.is_grad_enabled,
    DEFAULT_DTYPE: torch.get_default_dtype,
    DETERMINISTIC: torch._C._get_deterministic_algorithms,
    AUTOCAST: lambda: autocast_state() if torch._C._is_any_autocast_enabled() else None,
}


@guard_kind(5, key=lambda device: ("device", str(device)))
def DEFAULT_DEVICE(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    """``arg`` is None when no torch function mode was active (one C call: no ``set_default_device``
    and no user mode), else the default device then in force."""
    if arg is None:
        return [f"{consts.name(torch._C._len_torch_function_stack)}() == 0"]
    return [f"{consts.name(default_device_as_set)}() == {consts.name(arg)}"]


def state_checker(guards: list[Guard]) -> Any | None:
    """One C call checking at once the global-state ``guards`` (each ``checked_as_state``),
    ``checker.check()``: torch's ``GlobalStateGuard``, made now, which compares grad mode, the
    default dtype, deterministic algorithms and autocast on every device type (each enabled and
    its dtype, and autocast's cache), with more (the thread count, TF32 and reduced-precision
    flags) as they are now. Where the state now is what each guard checks, the check passing
    implies every guard, so the dispatcher writes ``checker.check() or (the guards' parts)``: a
    call whose other flags differ is judged by the parts, as before. None where the state now is
    not the guards' (no checker can be made for it without setting global state). One checker
    per state while it stays current, so that the variants of a function share the condition."""
    if not all(_STATE_NOW[guard.kind]() == guard.arg for guard in guards):
        return None
    key = tuple((guard.kind.name, guard.arg) for guard in guards)
    checker = _STATE_CHECKERS.get(key)
    if checker is None or not checker.check():  # made when some other flag differed
        if len(_STATE_CHECKERS) >= 256:
            _STATE_CHECKERS.clear()
        checker = _STATE_CHECKERS[key] = torch._C._dynamo.guards.GlobalStateGuard()
    return checker


def checked_as_state(guard: Guard) -> bool:
    """Whether ``state_checker`` can check ``guard``: grad mode, the default dtype, deterministic
    algorithms and autocast."""
    return guard.kind in _STATE_NOW


_STATE_CHECKERS: dict[tuple, Any] = {}


@guard_kind(7, key=lambda arg: (*arg[0], repr(arg[2])))
def GLOBAL_STATE(
    expr: str, arg: tuple[tuple, Callable[[], Any], Any], consts: ConstTable
) -> list[str]:
    """``arg`` is ``(label, getter, value)``: ``getter()`` still returns ``value``; ``label``
    (a tuple) names the state, so that two guards on one state are one. Checked last, after the
    shape expressions: each is a call of a Python getter (an ``lru_cache``'d object's guard
    compares the object part by part), where a shape expression compares ints."""
    _, getter, value = arg
    return [f"{consts.name(getter)}() == {literal(value, consts)}"]


@guard_kind(1, key=lambda tree: ("tree", id(tree)))
def MODULE_TREE(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    """``arg`` checks a module tree (``module_tree.py``: O(1) unless a module
    changed)."""
    return [f"{consts.name(arg, 'tree')}.check({expr})"]


@guard_kind(6, key=lambda shape: ("shape", shape.template, shape.sources))
def SHAPE_EXPR(expr: str, arg: str, consts: ConstTable) -> list[str]:
    return [arg]


def global_state_guards() -> list[Guard]:
    """Guards on torch global state beyond grad mode and the default dtype (which the output graph
    installs): autocast, deterministic algorithms and the default device (``set_default_device`` or
    any torch function mode), as they are now (call it before tracing)."""
    autocast = autocast_state() if torch._C._is_any_autocast_enabled() else None
    device = default_device_as_set() if torch._C._len_torch_function_stack() else None
    return [
        AUTOCAST(None, autocast),
        DETERMINISTIC(None, torch.are_deterministic_algorithms_enabled()),
        DEFAULT_DEVICE(None, device),
    ]
