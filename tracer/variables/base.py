"""``VariableTracker``: the symbolic value the translator keeps on its stack and in its locals.

One subclass per kind of value (constant, tensor, container, function, module, object). The base
contract is small: ``python_type``, ``is_python_constant``/``as_python_constant``, ``var_getattr``,
``call_function``, ``call_method``, ``unpack`` and ``reconstruct(cg)``. What an operation means
(a call, ``bool()``, ``iter()``...) is looked up in ``dispatch.py``'s rule table, not here;
``type_lookup`` reads a class's attributes as CPython does, for every family. ``source`` says
how to load the real value again (None when the value was created during the trace).
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...guards.sources import Source
from ..exc import Unsupported

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


class VariableTracker:
    """Base class. Subclasses are dataclasses; treat instances as immutable (use ``clone``), except
    the explicitly mutable containers, whose mutations are tracked as side effects."""

    source: Source | None = None

    def clone(self, **changes: Any) -> VariableTracker:
        return dataclasses.replace(self, **changes)

    def python_type(self) -> type:
        if self.is_python_constant():
            return type(self.as_python_constant())
        raise Unsupported("python_type", f"type of {self} is unknown")

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self) -> Any:
        raise Unsupported("not_constant", f"{self} is not a Python constant")

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        raise Unsupported("getattr", f"attribute {name!r} of {self}")

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        raise Unsupported("call", f"calling {self}")

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        method = self.var_getattr(tx, name)
        return method.call_function(tx, args, kwargs)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        raise Unsupported("unpack", f"cannot iterate over {self}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        raise Unsupported("reconstruct", f"cannot rebuild {self} as a Python value")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ConstantLikeVariable(VariableTracker):
    """Base of trackers wrapping a Python object fixed for the whole trace (``value``): a constant,
    a module, a class, a torch op. Subclasses are dataclasses declaring ``value``."""

    value: Any

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value


@dataclasses.dataclass(eq=False)
class BoundAttributeVariable(VariableTracker):
    """``obj.name`` read before it is called: a method bound to the value it was read from. The
    subclasses (a container's method, a tensor's, a dict read, one ``obj.call_method`` answers) say
    what calling it does; all are rebuilt as the real bound method, from the source they were given
    through or as ``obj.name``."""

    obj: VariableTracker
    name: str
    source: Source | None = None

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # a bound method given to the trace: that object
            self.source.reconstruct(cg)
            return
        self.obj.reconstruct(cg)
        cg.load_attr(self.name)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """What a method read from its object's class has of its own, as CPython's bound method
        objects give it: ``__self__`` (the object) and the method's ``__name__``,
        ``__qualname__`` and ``__doc__``."""
        method = method_bound(self)
        if method is not None and name == "__self__":
            return self.obj
        if method is not None and name in _METHOD_NAMES:
            return tx.fold(getattr(method, name))
        return super().var_getattr(tx, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.obj!r}.{self.name})"


@dataclasses.dataclass(eq=False, repr=False)
class MethodCallVariable(BoundAttributeVariable):
    """``obj.name`` before the call, for methods ``obj.call_method`` answers itself."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)


#: What a method found on a class is, read through an object: a new bound object at each read.
_METHOD_KINDS = (types.FunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)
#: a bound method's attributes that are its method's
_METHOD_NAMES = ("__name__", "__qualname__", "__doc__")


def method_of_class(vt: VariableTracker) -> Any:
    """The method on its object's class that ``vt``, an ``obj.name`` read in the trace
    (``xs.append``, ``t.add``: a new bound object at each read), binds, or None for anything else
    (one the trace was given, an attribute that is no method)."""
    return method_bound(vt) if vt.source is None else None


def method_bound(vt: VariableTracker) -> Any:
    """The method on its object's class that ``vt``, an ``obj.name`` read in the trace or given
    to it (``M = xs.append`` read as a global), binds, or None for anything else."""
    if not isinstance(vt, BoundAttributeVariable):
        return None
    try:
        cls = vt.obj.python_type()
    except Unsupported:
        return None
    method = type_lookup(cls, vt.name)
    return method if isinstance(method, _METHOD_KINDS) else None


class IdentityKey:
    """A dict key or set item whose tracker is kept beside ``ident``, the value it hashes and
    compares as: a real object (a class, a function, a plain object: by identity, as CPython's
    default ``__hash__``/``__eq__``; a builtin function: by its builtin ones), a tuple of keys,
    or a tensor's graph node (by identity). Its hash is the value's own, so a traced set
    iterates its items in CPython's order; it equals another key, or a plain constant key,
    standing for an equal value."""

    __slots__ = ("_hash", "ident", "vt")

    def __init__(self, vt: VariableTracker, ident: Any) -> None:
        self.vt, self.ident = vt, ident
        self._hash = hash(ident)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdentityKey) and type(other).__eq__ is not IdentityKey.__eq__:
            return NotImplemented  # a key comparing by its own rule (user ``__eq__``) decides
        ident = other.ident if isinstance(other, IdentityKey) else other
        if ident is self.ident:
            return True
        if isinstance(ident, tuple) and isinstance(self.ident, tuple):
            return ident == self.ident  # a namedtuple equals the tuple of its items
        return type(ident) is type(self.ident) and ident == self.ident

    def __repr__(self) -> str:
        return f"IdentityKey({self.vt!r})"


class _Running(threading.local):
    """The translator stepping now, the innermost (``Translator.run`` sets it): a dict or set
    lookup compares keys without a translator at hand, and a key whose class compares in Python
    inlines its ``__eq__`` there."""

    tx: Translator | None = None


RUNNING = _Running()


_CONTAINERS = (list, tuple, dict, set, frozenset)
#: Types of plain objects held in trackers' fields whose ``walk_children()`` hold trackers too
#: (a set's recipe, which the rewritten code runs: the objects it names must be built first).
WALKED: set[type] = set()


def walk(
    values: Any, descend: Callable[[VariableTracker], bool] = lambda vt: True
) -> Iterator[VariableTracker]:
    """Every tracker reachable from ``values`` (trackers, or lists/tuples/dicts of them) through the
    trackers' dataclass fields (``source`` excepted), each once, parents before children. Fields of
    a tracker for which ``descend`` is false are not visited.

    Each container is visited once too: a tracker's field may hold a real Python container of the
    user's (a constant, an object's state), and a container holding itself (``a.append(a)``, a
    namespace dict reachable from its own values) would otherwise be walked forever."""
    seen: set[int] = set()
    held: list[Any] = []
    pending = [values]
    while pending:
        value = pending.pop()
        # the containers of trackers are builtin ones: a subclass is a user's value (a tracker's
        # field), whose own ``__len__`` or ``__iter__`` may do anything
        if type(value) in _CONTAINERS:
            if id(value) in seen:
                continue
            seen.add(id(value))
            held.append(value)  # a temporary (``walk_children``'s) keeps its id while we run
        if type(value) in (list, tuple):
            pending.extend(reversed(value))
        elif type(value) is dict:
            pending.extend(reversed([*value.values(), *value.keys()]))
        elif type(value) in (set, frozenset):
            pending.extend(value)
        elif isinstance(value, IdentityKey):
            pending.append(value.vt)
        elif type(value) in WALKED and id(value) not in seen:
            seen.add(id(value))
            held.append(value)
            pending.extend(reversed(value.walk_children()))
        elif isinstance(value, VariableTracker) and id(value) not in seen:
            seen.add(id(value))
            yield value
            fields = _walked_fields(type(value))
            if fields is not None and descend(value):
                children = (
                    value.walk_children()  # a tracker that reads its fields lazily
                    if fields is _LAZY
                    else [getattr(value, name) for name in fields]
                )
                pending.extend(reversed(children))


#: what ``_walked_fields`` answers for a tracker class that defines ``walk_children``
_LAZY: tuple[str, ...] = ("walk_children",)
#: tracker class -> the names of the fields ``walk`` reads (None: not a dataclass; ``_LAZY``)
_WALKED_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _walked_fields(cls: type) -> tuple[str, ...] | None:
    """The dataclass fields of tracker class ``cls`` but ``source``, ``_LAZY`` where the class
    reads them itself (``walk_children``), None where it is no dataclass: a class's fields are
    fixed when it is made, and ``dataclasses.fields`` is most of a walk's cost."""
    try:
        return _WALKED_FIELDS[cls]
    except KeyError:
        pass
    if not dataclasses.is_dataclass(cls):
        fields = None
    elif hasattr(cls, "walk_children"):
        fields = _LAZY
    else:
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.name != "source")
    _WALKED_FIELDS[cls] = fields
    return fields


class NullVariable(VariableTracker):
    """The NULL of the CALL convention: 3.11 and 3.12 push it below a callable, 3.13 above it."""

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_null()

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()


#: What ``type_lookup`` returns for a name no class of the MRO defines.
MISSING: Any = object()

# ``type``'s own descriptors: reading a class's MRO and namespace never runs metaclass code.
_MRO, _CLASS_DICT = type.__dict__["__mro__"], type.__dict__["__dict__"]


def type_lookup(cls: type, name: str) -> Any:
    """``name`` as ``_PyType_Lookup`` finds it: the first class of ``cls.__mro__`` defining it."""
    for klass in _MRO.__get__(cls):
        namespace = _CLASS_DICT.__get__(klass)
        if name in namespace:
            return namespace[name]
    return MISSING


def proxied(proxy: types.MappingProxyType) -> Any:
    """The mapping a ``types.MappingProxyType`` shows, the only object the proxy holds."""
    (mapping,) = gc.get_referents(proxy)
    return mapping


def class_namespace(cls: type) -> dict:
    """The dict a class's ``__dict__`` proxy shows: the namespace itself, the one object every
    proxy of it (``cls.__dict__``, ``vars(cls)``, one kept elsewhere) stands for."""
    return proxied(_CLASS_DICT.__get__(cls))


def owner_index(cls: type, name: str) -> int:
    """The position in ``cls.__mro__`` of the class defining ``name`` (which must exist)."""
    for i, klass in enumerate(_MRO.__get__(cls)):
        if name in _CLASS_DICT.__get__(klass):
            return i
    raise KeyError(name)
