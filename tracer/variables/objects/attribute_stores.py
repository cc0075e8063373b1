"""Every attribute store and deletion: ``obj.name = value`` (``STORE_ATTR``, ``setattr``) and
``del obj.name`` run ``__setattr__``/``__delattr__`` overrides, property setters and descriptors'
``__set__`` as CPython would, and record a plain store (in ``side_effects``) only where CPython
makes one; ``object.__setattr__`` and ``object.__init__`` called explicitly.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from torch import nn

from ....guards.sources import AttrSource, TypeSource
from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..constants.constant import CONSTANT_TYPES, ConstantVariable
from ..containers import dict_subclasses
from ..containers.builtin_containers import DictVariable
from ..functions.callables import NestedFunctionVariable
from ..functions.cells import ClosureCellVariable
from ..modules.nn_modules import NNModuleVariable
from ..operations import concrete
from ..operations.builtin_calls import builtin, fixed_attributes
from ..tensors.tensor import TensorVariable
from .attributes import (
    MISSING,
    class_attr_source,
    is_data_descriptor,
    type_lookup,
    write_descriptor,
)
from .classes import ClassVariable
from .existing_objects import UserObjectVariable, store_config_attribute
from .new_objects import (
    OBJECT_INIT,
    NamedTupleObjectVariable,
    NewObjectVariable,
    check_class_unchanged,
    class_function,
    has_instance_dict,
)

if TYPE_CHECKING:
    from ...translator import Translator

_OBJECT_SETATTR = object.__dict__["__setattr__"]
_OBJECT_DELATTR = object.__dict__["__delattr__"]
_GENERIC_SETATTR = tuple(v for v in [vars(types.SimpleNamespace).get("__setattr__")] if v)
_GENERIC_DELATTR = tuple(v for v in [vars(types.SimpleNamespace).get("__delattr__")] if v)


# -- storing attributes ----------------------------------------------------------------------------
def store_attribute(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> None:
    """``obj.name = value``, as CPython would run it."""
    effects = tx.output.side_effects
    if isinstance(obj, NNModuleVariable):
        _store_module_attribute(tx, obj, name, value)
    elif isinstance(obj, ClassVariable) and obj.source is not None:
        _store_class_attribute(tx, obj, name, value)
    elif isinstance(obj, NamedTupleObjectVariable) or (
        isinstance(obj, UserObjectVariable) and (obj.source is not None or effects.is_new(obj))
    ):
        cls = obj.python_type()
        check_class_unchanged(tx, cls, name)
        if store_config_attribute(tx, obj, name, value):
            return
        hook = type_lookup(cls, "__setattr__")
        if hook is _OBJECT_SETATTR or hook in _GENERIC_SETATTR:
            _guard_class_attr(tx, obj, "__setattr__", hook)
            generic_setattr(tx, obj, name, value)
        elif isinstance(hook, types.FunctionType):
            fn = class_function(tx, _class_vt(tx, obj), "__setattr__", hook, obj)
            fn.call_function(tx, [ConstantVariable(name), value], {})
        else:
            raise Unsupported("store_attr", f"{cls.__name__}.__setattr__ is not Python code")
    elif isinstance(obj, DictVariable) and dict_subclasses.models(obj.cls):
        dict_subclasses.store_attr(tx, obj, name, value)
    elif isinstance(obj, NestedFunctionVariable):  # ``functools.update_wrapper``
        obj.store_attr(tx, name, value)
    elif isinstance(obj, ClosureCellVariable) and name == "cell_contents":
        obj.store(tx, value)  # a frame's cell a resume function took (``ResumePoint.cell_args``)
    elif isinstance(obj, TensorVariable) and name == "grad":
        obj.store_grad(tx, value)
    else:
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")


def generic_setattr(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> None:
    """``object.__setattr__(obj, name, value)``: through a data descriptor of the class if there is
    one, else into the instance."""
    cls = obj.python_type()
    cls_vt = _class_vt(tx, obj)
    static = type_lookup(cls, name)
    source = class_attr_source(cls_vt.source, cls, name) if static is not MISSING else None
    if static is not MISSING and is_data_descriptor(static):
        if write_descriptor(tx, obj, static, name, value, source):
            return
        if isinstance(obj, NamedTupleObjectVariable):
            raise Unsupported("python_error", f"AttributeError: can't set attribute {name!r}")
    else:
        if not has_instance_dict(cls):
            raise Unsupported(
                "python_error", f"AttributeError: {cls.__name__} object has no attribute {name!r}"
            )
        if cls_vt.source is not None:  # the class must not gain a data descriptor ``name``
            if static is MISSING:
                tx.output.assume_class_lacks(cls_vt.source, (name,))
            else:
                tx.wrap(static, source)
    effects = tx.output.side_effects
    raw = type_lookup(cls, "__setattr__") is not _OBJECT_SETATTR and not effects.is_new(obj)
    effects.store_attr(obj, name, value, raw=raw)


def _class_vt(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """The class of ``obj`` as a tracker whose source guards it (``type(L['obj'])``)."""
    if getattr(obj, "cls_vt", None) is not None:  # made in the trace
        return obj.cls_vt
    cls = obj.python_type()
    if obj.source is None:
        return tx.wrap_static(cls)
    return tx.wrap(cls, TypeSource(obj.source))


def _guard_class_attr(tx: Translator, obj: VariableTracker, name: str, value: Any) -> None:
    """Guard that the class of ``obj`` still finds ``value`` as ``name`` (a builtin slot)."""
    source = _class_vt(tx, obj).source
    if source is not None:
        attr = AttrSource(source, name)
        tx.output.assume_identity(attr, value)


def _store_module_attribute(
    tx: Translator, obj: NNModuleVariable, name: str, value: VariableTracker
) -> None:
    """``module.name = value``: recorded and replayed with ``STORE_ATTR`` (``nn.Module.__setattr__``
    then files parameters, buffers and submodules); a property of the module class runs its
    setter."""
    cls = obj.python_type()
    if obj.source is None and not tx.output.side_effects.is_new(obj):
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")
    if type_lookup(cls, "__setattr__") is not nn.Module.__setattr__:
        raise Unsupported("store_attr", f"{cls.__name__} overrides nn.Module.__setattr__")
    static = type_lookup(cls, name)
    cls_source = _class_vt(tx, obj).source
    source = class_attr_source(cls_source, cls, name) if static is not MISSING else None
    registered = (
        issubclass(value.python_type(), (nn.Parameter, nn.Module)) if _typed(value) else True
    )
    if static is not MISSING and is_data_descriptor(static) and not registered:
        if write_descriptor(tx, obj, static, name, value, source):
            return
    tx.output.side_effects.store_attr(obj, name, value)


def _typed(vt: VariableTracker) -> bool:
    try:
        vt.python_type()
    except Unsupported:
        return False
    return True


def _store_class_attribute(
    tx: Translator, obj: ClassVariable, name: str, value: VariableTracker
) -> None:
    cls = obj.value
    if type(cls).__setattr__ is not type.__setattr__ or (
        name.startswith("__") and name.endswith("__")
    ):
        raise Unsupported("store_attr", f"class attribute store {cls.__name__}.{name}")
    tx.output.side_effects.store_class_attr(obj, name, value)


# -- deleting attributes ---------------------------------------------------------------------------
def delete_attribute(tx: Translator, obj: VariableTracker, name: str) -> None:
    """``del obj.name`` (``DELETE_ATTR``, ``delattr``) on an object made in the trace whose class
    keeps the generic ``__delattr__``: the attribute leaves the object's pending stores (a later
    read finds the class attribute, or raises), or ``AttributeError`` as CPython raises it.
    Elsewhere the deletion runs in Python (a graph break)."""
    fixed = fixed_attributes(obj)
    if fixed is not None and _immutable(fixed[0]):  # it raises: CPython's error
        raise PythonError(concrete.error_of(delattr, fixed[0], name))
    effects = tx.output.side_effects
    if not (isinstance(obj, NewObjectVariable) and effects.is_new(obj)):
        raise Unsupported("delete_attr", f"del .{name} on {obj}", hint="deleting runs in Python")
    cls = obj.python_type()
    check_class_unchanged(tx, cls, name)
    hook = type_lookup(cls, "__delattr__")
    if hook is not _OBJECT_DELATTR and hook not in _GENERIC_DELATTR:
        raise Unsupported("delete_attr", f"{cls.__name__} defines __delattr__")
    static = type_lookup(cls, name)
    if static is not MISSING and is_data_descriptor(static):  # a property's deleter, a slot
        raise Unsupported("delete_attr", f"del .{name}: {cls.__name__}.{name} is a descriptor")
    if not effects.delete_new_attr(obj, name):
        raise Unsupported("python_error", f"AttributeError: {cls.__name__} has no {name!r}")


def _immutable(value: Any) -> bool:
    """A value no attribute of which can be deleted: of an immutable builtin type, a C type, or
    an empty builtin container standing for one (``fixed_attributes``)."""
    return type(value) in (*CONSTANT_TYPES, list, tuple, dict, set) or isinstance(value, type)


@builtin(delattr)
def delattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    if not (name.is_python_constant() and type(name.as_python_constant()) is str):
        raise Unsupported("python_error", "TypeError: attribute name must be string")
    delete_attribute(tx, obj, name.as_python_constant())
    return ConstantVariable(None)


# -- object's own slots called explicitly ----------------------------------------------------------
@builtin(_OBJECT_SETATTR)
def object_setattr(
    tx: Translator, obj: VariableTracker, name: VariableTracker, value: VariableTracker
) -> VariableTracker:
    """``object.__setattr__(obj, name, value)`` (frozen dataclasses, ``__setattr__`` overrides)."""
    if not (isinstance(obj, (UserObjectVariable, NamedTupleObjectVariable))) or isinstance(
        obj, NNModuleVariable
    ):
        raise Unsupported("store_attr", f"object.__setattr__ on {obj}")
    if obj.source is None and not tx.output.side_effects.is_new(obj):
        raise Unsupported("store_attr", f"object.__setattr__ on {obj}")
    generic_setattr(tx, obj, name.as_python_constant(), value)
    return ConstantVariable(None)


@builtin(OBJECT_INIT)
def object_init(tx: Translator, obj: VariableTracker, *args: VariableTracker) -> VariableTracker:
    """``object.__init__(self)`` / ``super().__init__()`` reaching ``object``: nothing to do."""
    if args:
        raise Unsupported("python_error", "TypeError: object.__init__() takes no arguments")
    return ConstantVariable(None)
