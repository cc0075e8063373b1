"""CPython's attribute protocol, for the objects bytegraph traces: where ``obj.name`` is found and
what ``obj.name = value`` runs.

``type_lookup`` finds a name on a class's MRO without running metaclass code, ``is_data_descriptor``
says which class attributes take precedence over the instance dict, ``read_descriptor`` and
``write_descriptor`` inline a Python property's ``fget``/``fset`` or a descriptor's ``__get__``/
``__set__``, ``bind_class_attribute`` binds what an instance finds on its class, and
``class_attr_source`` names a class attribute for guards without running it. What
is not modelled raises ``Unsupported``: a write is never recorded as a plain store unless CPython
would make one. The entry points are ``attribute_stores.store_attribute`` (every attribute store)
and the ``var_getattr`` of ``existing_objects.py`` and ``new_objects.py``.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import AttrSource, ItemSource, Source, TypeSource
from ...exc import Unsupported
from ..base import VariableTracker
from ..functions.callables import UserFunctionVariable
from .polyfilled_methods import bind_polyfilled

if TYPE_CHECKING:
    from ...translator import Translator

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


def owner_index(cls: type, name: str) -> int:
    """The position in ``cls.__mro__`` of the class defining ``name`` (which must exist)."""
    for i, klass in enumerate(_MRO.__get__(cls)):
        if name in _CLASS_DICT.__get__(klass):
            return i
    raise KeyError(name)


def is_data_descriptor(value: Any) -> bool:
    """A class attribute whose type defines ``__set__`` or ``__delete__``: it wins over the instance
    dict on reads, and writes go through it."""
    kind = type(value)
    return (
        type_lookup(kind, "__set__") is not MISSING
        or type_lookup(kind, "__delete__") is not MISSING
    )


def class_attr_source(cls_source: Source | None, cls: type, name: str) -> Source | None:
    """Where a guard reads the class attribute ``name`` of ``cls`` (at ``cls_source``) without
    calling its ``__get__``: ``C['K'].__dict__['name']``, or through ``__mro__[i]`` when a base
    class defines it."""
    if cls_source is None:
        return None
    index = owner_index(cls, name)
    owner = cls_source if index == 0 else ItemSource(AttrSource(cls_source, "__mro__"), index)
    return ItemSource(AttrSource(owner, "__dict__"), name)


def python_method(descriptor: Any, name: str) -> types.FunctionType | None:
    """``type(descriptor).name`` when it is a plain Python function (``__get__``, ``__set__``)."""
    method = type_lookup(type(descriptor), name)
    return method if isinstance(method, types.FunctionType) else None


def read_descriptor(
    tx: Translator,
    obj: VariableTracker,
    cls_vt: VariableTracker,
    static: Any,
    source: Source | None,
) -> VariableTracker:
    """``obj.name`` through the class attribute ``static`` (found at ``source``): a property's
    ``fget`` or a Python descriptor's ``__get__(obj, cls)``, inlined."""
    if isinstance(static, property):
        if not isinstance(static.fget, types.FunctionType):
            raise Unsupported("descriptor", "a property whose getter is not a Python function")
        fget = _wrap_part(tx, static.fget, source, "fget")
        return fget.call_function(tx, [obj], {})
    getter = python_method(static, "__get__")
    if getter is None:
        raise Unsupported(
            "descriptor", f"a {type(static).__name__} descriptor bytegraph cannot run"
        )
    return _bound_method(tx, static, getter, "__get__", source).call_function(tx, [obj, cls_vt], {})


def write_descriptor(
    tx: Translator,
    obj: VariableTracker,
    static: Any,
    name: str,
    value: VariableTracker,
    source: Source | None,
) -> bool:
    """``obj.name = value`` where the class attribute ``static`` is a data descriptor: run a
    property's ``fset`` or a Python ``__set__`` (True), or say that the write goes to a slot of the
    instance (False: the caller records a plain store). Anything else raises ``Unsupported``."""
    if isinstance(static, types.MemberDescriptorType):
        return False  # a ``__slots__`` entry: the store lands in the instance, like a dict entry
    if isinstance(static, property):
        if static.fset is None:
            raise Unsupported("python_error", f"AttributeError: property {name!r} has no setter")
        if not isinstance(static.fset, types.FunctionType):
            raise Unsupported("store_attr", f"the setter of property {name!r} is not Python code")
        fset = _wrap_part(tx, static.fset, source, "fset")
        fset.call_function(tx, [obj, value], {})
        return True
    setter = python_method(static, "__set__")
    if setter is None:
        raise Unsupported(
            "store_attr", f"{name!r} is a {type(static).__name__} descriptor bytegraph cannot run"
        )
    _bound_method(tx, static, setter, "__set__", source).call_function(tx, [obj, value], {})
    return True


def _bound_method(
    tx: Translator, descriptor: Any, fn: types.FunctionType, name: str, source: Source | None
) -> UserFunctionVariable:
    """``descriptor.name`` bound, the descriptor and its class's method guarded when sourced."""
    if source is None:
        return UserFunctionVariable(fn, None, self_vt=tx.wrap_static(descriptor))
    method = tx.wrap(fn, AttrSource(TypeSource(source), name))
    return UserFunctionVariable(fn, method.source, self_vt=tx.wrap(descriptor, source))


def bind_class_attribute(
    tx: Translator,
    obj: VariableTracker,
    cls_vt: VariableTracker,
    static: Any,
    name: str,
    source: Source | None,
) -> VariableTracker:
    """``obj.name`` found on the class (no instance attribute shadows it): methods are bound,
    static and class methods unwrapped, Python descriptors' ``__get__`` run, plain values wrapped
    (and guarded through ``source``)."""
    if isinstance(static, types.FunctionType):
        fn = tx.wrap(static, source) if source is not None else UserFunctionVariable(static)
        return UserFunctionVariable(static, fn.source, self_vt=obj)
    if isinstance(static, (staticmethod, classmethod)):
        inner = static.__func__
        inner_source = AttrSource(source, "__func__") if source is not None else None
        fn = tx.wrap(inner, inner_source) if inner_source is not None else tx.wrap_static(inner)
        if isinstance(static, staticmethod):
            return fn
        if not isinstance(fn, UserFunctionVariable):
            raise Unsupported("descriptor", f"classmethod {name!r} is not a Python function")
        return fn.clone(self_vt=cls_vt)
    if python_method(static, "__get__") is not None:
        return read_descriptor(tx, obj, cls_vt, static, source)
    polyfilled = bind_polyfilled(obj, name, static)  # a C method with a polyfill
    if polyfilled is not None:
        return polyfilled
    if hasattr(type(static), "__get__") and not isinstance(static, torch.Tensor):
        raise Unsupported("descriptor", f"{name!r} is a {type(static).__name__}")
    return tx.wrap(static, source) if source is not None else tx.wrap_static(static)


def _wrap_part(tx: Translator, fn: types.FunctionType, source: Source | None, part: str):
    """A property's ``fget``/``fset``, guarded through the property when it has a source."""
    if source is None:
        return UserFunctionVariable(fn)
    return tx.wrap(fn, AttrSource(source, part))
