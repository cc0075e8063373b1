"""Objects created during the trace.

``construct(tx, cls_vt, args, kwargs)`` is what calling a class does. A plain Python class (or a
dataclass) becomes a ``NewObjectVariable``: ``__init__`` (and ``__post_init__``) are inlined, the
object's attributes live in ``side_effects`` like writes to existing objects. A namedtuple subclass
whose instances have a ``__dict__`` becomes a ``NamedTupleObjectVariable``. ``nn.Module`` classes
are ``new_modules.py``'s. Enum lookups (``Color(1)``) are folded. New objects that escape
(returned, stored in a global, an attribute or a container that outlives the call, or live at a
graph break) are rebuilt after the graph with their final attributes
(``SideEffects.plan``/``codegen``); the others never exist at run time. Nothing is guarded on their
identity.

Attribute stores, on these and on existing objects, are ``attribute_stores.py``'s.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import types
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torch import nn

from ....guards.sources import AttrSource, Source, TypeSource
from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import ConstantVariable
from ..containers import dict_subclasses
from ..containers.builtin_containers import DictVariable, TupleVariable, key_vt
from ..functions.callables import PartialVariable, UserFunctionVariable
from ..modules import new_modules
from ..operations import builtin_calls
from ..operations.builtin_calls import builtin
from . import weak_references
from .attributes import (
    MISSING,
    bind_class_attribute,
    class_attr_source,
    is_data_descriptor,
    read_descriptor,
    type_lookup,
)
from .container_reprs import container_repr
from .existing_objects import InstanceDictVariable, UserObjectVariable, plain_partial

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

_OBJECT_NEW = object.__dict__["__new__"]
OBJECT_INIT = object.__dict__["__init__"]
_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
#: ``__setattr__``/``__delattr__`` slots that are ``object``'s generic ones (3.11 and 3.12 list
#: SimpleNamespace's in its ``__dict__``, 3.13 does not)
_NAMESPACE_DICT = vars(types.SimpleNamespace)["__dict__"]  #: a member descriptor, not a getset


@dataclass(eq=False)
class NewObjectVariable(UserObjectVariable):
    """An instance of a user class created during the trace.

    ``value`` is a blank instance (``object.__new__(cls)``) used only for its type and identity: it
    is never written to. The object's attributes are pending stores in ``side_effects``; ``cls_vt``
    is the class as the trace reached it (class attributes are guarded through its source). If the
    object escapes, the rewritten code creates it into the local ``name``."""

    value: Any = None
    source: Source | None = None
    cls_vt: VariableTracker | None = None
    name: str = ""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        return load_new_attribute(tx, self, name)

    def class_source(self) -> Source | None:
        return self.cls_vt.source

    def create(self, cg: Codegen) -> None:
        cg.load_const(object.__new__)
        cg.load_const(self.python_type())
        cg.call_function(1)

    def reconstruct(self, cg: Codegen) -> None:
        _load_created(cg, self.name)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.python_type().__name__})"


@dataclass(eq=False)
class NamespaceVariable(NewObjectVariable):
    """A ``types.SimpleNamespace`` created during the trace: its attributes (the constructor's
    arguments first) are pending stores, as any new object's; it is made as ``SimpleNamespace()``
    and given them with ``STORE_ATTR`` (its ``__setattr__`` is the generic one)."""

    raw_replay = False

    def create(self, cg: Codegen) -> None:
        cg.load_const(self.python_type())
        cg.call_function(0)

    def __repr__(self) -> str:
        return "NamespaceVariable()"


@dataclass(eq=False)
class NamedTupleObjectVariable(TupleVariable):
    """An instance of a namedtuple subclass with a ``__dict__``, or of a plain ``tuple`` subclass
    (``class Shape(tuple)``), created during the trace: a tuple (``items``) that also has
    attributes (pending stores in ``side_effects``), its class's methods and an identity."""

    cls_vt: VariableTracker | None = None
    name: str = ""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        fields = getattr(self.cls, "_fields", ())
        if name in fields:
            return self.items[fields.index(name)]
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        if not fields and _defined_by_subclass(self.cls, name):  # the class's own methods
            return namedtuple_attribute(tx, self, name)
        return super().var_getattr(tx, name)

    def create(self, cg: Codegen) -> None:
        made = getattr(self.cls, "_make", None)
        cg.load_const(made if made is not None else self.cls)  # ``cls(iterable)`` otherwise
        self._reconstruct_items(cg)
        cg.build_tuple(len(self.items))
        cg.call_function(1)

    def reconstruct(self, cg: Codegen) -> None:
        _load_created(cg, self.name)

    def __repr__(self) -> str:
        return f"NamedTupleObjectVariable({self.cls.__name__})"


def _load_created(cg: Codegen, name: str) -> None:
    if name not in cg.new_objects:  # the escape analysis (``SideEffects.plan``) missed it
        raise AssertionError(f"object {name} made in the trace is used before it is created")
    cg.load_local(name)


# -- creating objects ------------------------------------------------------------------------------
def construct(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    through_metaclass: bool = True,
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a class that is not a builtin type; ``through_metaclass``
    false: ``type.__call__(cls, ...)``, what a metaclass's own ``__call__`` calls to make the
    instance."""
    cls = cls_vt.as_python_constant()
    meta_call = type_lookup(type(cls), "__call__")
    if (
        through_metaclass
        and isinstance(meta_call, types.FunctionType)
        and not isinstance(cls, enum.EnumMeta)
    ):  # a metaclass's own ``__call__`` (a constructor returning a cached or other object)
        return _metaclass_call(tx, cls_vt, meta_call).call_function(tx, args, kwargs)
    if cls is contextlib.nullcontext:  # a context the tracer knows (``state_contexts.py``)
        return builtin_calls.construct(tx, cls, args, kwargs)
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and has_instance_dict(cls):
        return _construct_namedtuple_object(tx, cls_vt, args, kwargs)
    if issubclass(cls, tuple) and not hasattr(cls, "_fields") and cls is not tuple:
        return _construct_tuple_subclass(tx, cls_vt, args, kwargs)
    if cls is functools.partial or issubclass(cls, tuple):
        return builtin_calls.construct(tx, cls, args, kwargs)
    if plain_partial(cls) and args:  # ``class P(functools.partial)`` adding methods only
        return PartialVariable(args[0], list(args[1:]), dict(kwargs), cls=cls)
    if isinstance(cls, enum.EnumMeta):
        return _enum_member(cls, args, kwargs)
    if issubclass(cls, nn.Module):
        return new_modules.construct_module(tx, cls_vt, args, kwargs)
    if builtin_calls.model_output.is_model_output(cls) or builtin_calls.makes_builtin_like(cls):
        return builtin_calls.construct(tx, cls, args, kwargs)
    if dict_subclasses.models(cls):  # ``class AttrDict(dict)``: a DictVariable of that class
        return dict_subclasses.construct(tx, cls, args, kwargs)
    if cls is types.SimpleNamespace:
        return _construct_namespace(tx, cls_vt, args, kwargs)
    if cls is weakref.ref:
        return weak_references.make_ref(tx, args, kwargs)
    _check_plain_class(cls, through_metaclass)
    try:
        blank = object.__new__(cls)
    except TypeError as e:  # an abstract class
        raise Unsupported("python_error", f"{cls.__name__}(): TypeError: {e}") from None
    effects = tx.output.side_effects
    obj = NewObjectVariable(blank, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    init = type_lookup(cls, "__init__")
    if init is OBJECT_INIT:
        if args or kwargs:
            raise Unsupported("python_error", f"TypeError: {cls.__name__}() takes no arguments")
        return obj
    if not isinstance(init, types.FunctionType):
        raise Unsupported("new_object", f"{cls.__name__}.__init__ is not a Python function")
    result = class_function(tx, cls_vt, "__init__", init, obj).call_function(tx, args, kwargs)
    if not (result.is_python_constant() and result.as_python_constant() is None):
        raise Unsupported("python_error", f"TypeError: {cls.__name__}.__init__ returned a value")
    return obj


@call_rule(vars(type)["__call__"])
def _type_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``type.__call__(cls, ...)`` in a metaclass's own ``__call__``."""
    return construct(tx, args[0], list(args[1:]), kwargs, False) if args else None


def _metaclass_call(tx: Translator, cls_vt: VariableTracker, fn: types.FunctionType):
    """The metaclass's ``__call__`` bound to the class, read (and guarded) through it."""
    source = cls_vt.source
    if source is not None:
        source = getattr(tx.wrap(fn, AttrSource(TypeSource(source), "__call__")), "source", None)
    return UserFunctionVariable(fn, source, self_vt=cls_vt)


def _check_plain_class(cls: type, through_metaclass: bool = True) -> None:
    """Classes whose instances ``NewObjectVariable`` models exactly: made by ``object.__new__``
    through ``type.__call__``, with the generic attribute lookup and no finalizer."""
    why = None
    if issubclass(cls, contextlib._GeneratorContextManagerBase):
        # holds a suspended generator, which cannot be rebuilt at a graph break: left to
        # ``contexts/generator_contexts.py`` (``@contextmanager`` functions used in ``with``)
        why = "a @contextmanager context (not traced as an object)"
    elif through_metaclass and type(cls).__call__ is not type.__call__:
        why = f"its metaclass {type(cls).__name__} defines __call__"
    elif type_lookup(cls, "__new__") is not _OBJECT_NEW:
        why = "it defines __new__ (or derives from a builtin type)"
    elif type_lookup(cls, "__del__") is not MISSING:
        why = "it defines __del__ (the finalizer would run when the object dies)"
    elif type_lookup(cls, "__getattribute__") is not _OBJECT_GETATTRIBUTE:
        why = "it defines __getattribute__"
    if why is not None:
        raise Unsupported(
            "new_object",
            f"creating a {cls.__name__} object: {why}",
            hint="create the object outside the compiled function",
        )


def has_instance_dict(cls: type) -> bool:
    return type_lookup(cls, "__dict__") is not MISSING


def _construct_namedtuple_object(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    cls = cls_vt.as_python_constant()
    base = next(k for k in cls.__mro__ if "_fields" in vars(k))  # made by ``namedtuple()``
    if type_lookup(cls, "__new__") is not vars(base).get("__new__") or (
        type_lookup(cls, "__init__") is not OBJECT_INIT
    ):
        raise Unsupported("new_object", f"{cls.__name__} overrides __new__ or __init__")
    items = builtin_calls.namedtuple_fields(tx, cls, args, kwargs)
    effects = tx.output.side_effects
    obj = NamedTupleObjectVariable(items, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    return obj


def _defined_by_subclass(cls: type, name: str) -> bool:
    owner = next((k for k in cls.__mro__ if name in vars(k)), tuple)
    return owner is not tuple and owner is not object


#: What a plain ``tuple`` subclass must keep of ``tuple`` for its instances to be tuples of their
#: items (made by ``tuple.__new__(cls, iterable)``, read and compared as tuples).
_TUPLE_PROTOCOL = (
    "__new__",
    "__init__",
    "__getattribute__",
    "__iter__",
    "__len__",
    "__getitem__",
    "__contains__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__add__",
    "__mul__",
    "__rmul__",
    "__bool__",
    "__reversed__",
    "index",
    "count",
)


def plain_tuple_subclass(cls: type) -> bool:
    """A ``tuple`` subclass (not a namedtuple) that adds methods or attributes only: its objects
    are tuples of their items, made, read and compared as tuples are."""
    return (
        issubclass(cls, tuple)
        and cls is not tuple
        and not hasattr(cls, "_fields")
        and not _tuple_overrides(cls)
    )


def _tuple_overrides(cls: type) -> list[str]:
    return [n for n in _TUPLE_PROTOCOL if type_lookup(cls, n) is not type_lookup(tuple, n)]


def _construct_tuple_subclass(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``Shape((2, 3))`` for a ``tuple`` subclass that adds methods or attributes only."""
    cls = cls_vt.as_python_constant()
    changed = _tuple_overrides(cls)
    if changed:
        raise Unsupported("new_object", f"{cls.__name__} overrides tuple's {', '.join(changed)}")
    if kwargs or len(args) > 1:
        raise Unsupported("python_error", f"TypeError: bad arguments to {cls.__name__}()")
    items = dispatch.iterate(tx, args[0]) if args else []
    effects = tx.output.side_effects
    obj = NamedTupleObjectVariable(items, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    return obj


def _takes_mapping() -> bool:
    """Does this Python's ``SimpleNamespace`` take a positional mapping (3.13 does)?"""
    try:
        types.SimpleNamespace({})
    except TypeError:
        return False
    return True


_NAMESPACE_TAKES_MAPPING = _takes_mapping()


def _construct_namespace(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``SimpleNamespace(mapping_or_pairs, /, **kwargs)`` with CPython's checks: at most one
    positional argument (none before 3.13), a mapping or pairs with string keys, then ``kwargs``.
    They fill its ``__dict__`` directly (no ``__setattr__`` runs)."""
    if len(args) > (1 if _NAMESPACE_TAKES_MAPPING else 0):
        raise Unsupported("python_error", "TypeError: SimpleNamespace(): too many arguments")
    pairs = _namespace_pairs(tx, args[0]) if args else []
    pairs += [(ConstantVariable(k), v) for k, v in kwargs.items()]
    effects = tx.output.side_effects
    obj = NamespaceVariable(types.SimpleNamespace(), cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    for key, value in pairs:
        if not (key.is_python_constant() and type(key.as_python_constant()) is str):
            raise Unsupported("python_error", "TypeError: keywords must be strings")
        effects.store_attr(obj, key.as_python_constant(), value)
    return obj


def _namespace_pairs(
    tx: Translator, arg: VariableTracker
) -> list[tuple[VariableTracker, VariableTracker]]:
    """The (key, value) pairs of ``SimpleNamespace``'s positional argument."""
    if isinstance(arg, DictVariable):
        return [(key_vt(k), v) for k, v in arg.items.items()]
    pairs = []
    for item in dispatch.iterate(tx, arg):
        pair = dispatch.iterate(tx, item)
        if len(pair) != 2:
            raise Unsupported("python_error", "ValueError: SimpleNamespace() takes pairs")
        pairs.append((pair[0], pair[1]))
    return pairs


def namespace_dict(tx: Translator, vt: VariableTracker) -> VariableTracker | None:
    """The attributes of ``vt`` as a dict tracker if it is a ``SimpleNamespace`` (made in the
    trace or given to it) whose class keeps SimpleNamespace's ``__eq__`` and ``__repr__``, which
    only read them; else None."""
    if not isinstance(vt, UserObjectVariable) or not isinstance(vt.value, types.SimpleNamespace):
        return None
    cls, own = type(vt.value), vars(types.SimpleNamespace)
    if any(type_lookup(cls, m) is not own[m] for m in ("__eq__", "__repr__")):
        return None
    if vt.source is None and not isinstance(vt, NewObjectVariable):
        return None
    attributes = vt.var_getattr(tx, "__dict__")
    return attributes if isinstance(attributes, DictVariable) else None


@builtin(repr)
def repr_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return _text(tx, obj, "__repr__")


@builtin(str)
def str_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return _text(tx, obj, "__str__")


def _text(tx: Translator, obj: VariableTracker, name: str) -> VariableTracker:
    """``repr(obj)`` / ``str(obj)`` of a user object whose class writes the method in Python
    (``__str__``, or ``__repr__`` where ``str`` finds ``object.__str__``): inlined, its result a
    string (else CPython's TypeError); of a builtin container: ``container_reprs``; of a
    ``SimpleNamespace``: ``namespace_repr``; other values break the graph."""
    cls = obj.python_type() if isinstance(obj, UserObjectVariable) else None
    if cls is not None and issubclass(cls, nn.Module):
        cls = None  # a module's text reads its whole tree: left to Python
    if cls is not None and name == "__str__" and type_lookup(cls, name) is object.__str__:
        name = "__repr__"
    if cls is not None and isinstance(type_lookup(cls, name), types.FunctionType):
        result = obj.call_method(tx, name, [], {})
        if not result.is_python_constant():
            raise Unsupported("builtin", f"{name} of {obj!r} gave {result!r}")
        if type(result.as_python_constant()) is not str:
            kind = type(result.as_python_constant()).__name__
            raise PythonError(TypeError(f"{name} returned non-string (type {kind})"))
        return result
    text = container_repr(tx, obj, lambda item: builtin_calls.call_builtin(tx, repr, [item], {}))
    return text if text is not None else namespace_repr(tx, obj)


def namespace_repr(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """``repr(ns)`` (and ``str``, which is ``repr`` for it) of a ``SimpleNamespace`` whose
    attributes are Python constants: CPython's text, ``namespace(a=1)`` (the class name for a
    subclass). Other values break the graph as before."""
    attributes = namespace_dict(tx, obj)
    if attributes is None or not attributes.is_python_constant():
        raise Unsupported("builtin", f"repr() on {obj!r}")
    real = types.SimpleNamespace.__new__(obj.python_type())
    vars(real).update(attributes.as_python_constant())
    return ConstantVariable(repr(real))


def _enum_member(
    cls: enum.EnumMeta, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``Color(1)``: a lookup of an existing member, folded (``_missing_`` hooks are not run)."""
    if kwargs or len(args) != 1 or not args[0].is_python_constant():
        raise Unsupported("new_object", f"{cls.__name__}(...) creating a new enum class")
    if type_lookup(cls, "_missing_") is not enum.Enum.__dict__["_missing_"]:
        raise Unsupported("new_object", f"{cls.__name__} defines _missing_")
    try:
        return ConstantVariable(cls(args[0].as_python_constant()))
    except ValueError as e:
        raise Unsupported("python_error", f"ValueError: {e}") from None


# -- reading attributes of new objects -------------------------------------------------------------
def load_new_attribute(tx: Translator, obj: NewObjectVariable, name: str) -> VariableTracker:
    """``obj.name`` by CPython's generic lookup: data descriptors of the class, then the object's
    own attributes, then other class attributes, then ``__getattr__``."""
    cls = obj.python_type()
    effects = tx.output.side_effects
    check_class_unchanged(tx, cls, name)
    if name == "__class__":
        return obj.cls_vt
    static = type_lookup(cls, name)
    if name == "__dict__" and (
        isinstance(static, types.GetSetDescriptorType) or static is _NAMESPACE_DICT
    ):
        return effects.instance_dict(obj, lambda items: InstanceDictVariable(items, owner=obj))
    source = class_attr_source(obj.cls_vt.source, cls, name) if static is not MISSING else None
    if static is not MISSING and is_data_descriptor(static):
        if isinstance(static, types.MemberDescriptorType):  # a slot
            pending = effects.load_attr(obj, name)
            if pending is None:
                raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
            return pending
        return read_descriptor(tx, obj, obj.cls_vt, static, source)
    pending = effects.load_attr(obj, name)
    if pending is not None:
        return pending
    if static is not MISSING:
        return bind_class_attribute(tx, obj, obj.cls_vt, static, name, source)
    hook = type_lookup(cls, "__getattr__")
    if isinstance(hook, types.FunctionType):
        fn = class_function(tx, obj.cls_vt, "__getattr__", hook, obj)
        return fn.call_function(tx, [ConstantVariable(name)], {})
    if obj.cls_vt.source is not None:  # a class attribute added later would be found instead
        names = (name, "__getattr__")
        tx.output.assume_class_lacks(obj.cls_vt.source, names)
    raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")


def namedtuple_attribute(tx: Translator, tup: TupleVariable, name: str) -> VariableTracker:
    """``tup.name`` for a method, property or class attribute a namedtuple class defines
    (``typing.NamedTuple`` classes with methods, subclasses of ``namedtuple()`` classes)."""
    cls = tup.python_type()
    static = type_lookup(cls, name)
    owner = next((k for k in cls.__mro__ if name in vars(k)), tuple)
    if static is MISSING or owner is tuple or owner is object:
        raise Unsupported("getattr", f"{cls.__name__} has no attribute {name!r}")
    cls_vt = getattr(tup, "cls_vt", None)
    if cls_vt is None:
        cls_vt = tx.wrap(cls, TypeSource(tup.source)) if tup.source else tx.wrap_static(cls)
    source = class_attr_source(cls_vt.source, cls, name)
    if is_data_descriptor(static) and not isinstance(static, property):
        raise Unsupported("descriptor", f"{cls.__name__}.{name} is a {type(static).__name__}")
    if isinstance(static, property):
        return read_descriptor(tx, tup, cls_vt, static, source)
    return bind_class_attribute(tx, tup, cls_vt, static, name, source)


def class_function(
    tx: Translator, cls_vt: VariableTracker, name: str, fn: types.FunctionType, obj: VariableTracker
) -> UserFunctionVariable:
    """``type(obj).name`` (a Python function) bound to ``obj``, guarded through the class."""
    source = cls_vt.source
    if source is None:
        return UserFunctionVariable(fn, None, self_vt=obj)
    cls = cls_vt.as_python_constant()
    method = tx.wrap(fn, class_attr_source(source, cls, name))
    return UserFunctionVariable(fn, method.source, self_vt=obj)


def check_class_unchanged(tx: Translator, cls: type, name: str) -> None:
    """An attribute of a class stored earlier in the trace is not seen by instance lookups
    (they read the real class): refuse instead."""
    if tx.output.side_effects.class_attr_changed(cls, name):
        raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned earlier in the trace")


__all__ = [
    "NamedTupleObjectVariable",
    "NewObjectVariable",
    "construct",
    "namedtuple_attribute",
]


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
