"""Every attribute store and deletion: ``obj.name = value`` (``STORE_ATTR``, ``setattr``) and
``del obj.name`` run ``__setattr__``/``__delattr__`` overrides, property setters and descriptors'
``__set__`` as CPython would, and record a plain store or deletion (in ``side_effects``) only
where CPython makes one, or raise CPython's error where it fails; ``vars(obj)``, the live dict
those change; ``object.__setattr__`` and ``object.__init__`` called explicitly.
"""

from __future__ import annotations

import collections
import enum
import types
from typing import TYPE_CHECKING, Any

from torch import nn

from ....guards.sources import AttrSource, Source, TypeSource
from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..constants.constant import CONSTANT_TYPES, ConstantVariable
from ..containers import dict_subclasses
from ..containers.builtin_containers import DictVariable, TupleVariable
from ..functions.callables import NestedFunctionVariable, UserFunctionVariable
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
from .existing_objects import (
    PythonModuleVariable,
    UserObjectVariable,
    store_config_attribute,
    unstored_dict,
)
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
    elif isinstance(obj, TensorVariable) and _plain_tensor_attribute(tx, obj, name):
        tx.output.side_effects.store_attr(obj, name, value)  # into the input tensor's __dict__
    else:
        error = _doomed(tx, obj, name, setattr)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")


def _plain_tensor_attribute(tx: Translator, obj: TensorVariable, name: str) -> bool:
    """``name`` is an attribute an input tensor keeps in its own ``__dict__``: its class
    neither defines it nor sets attributes its own way (guarded)."""
    if obj.source is None or hasattr(obj.cls, name):
        return False
    if type_lookup(obj.cls, "__setattr__") is not _OBJECT_SETATTR:
        return False
    _guard_class_attr(tx, obj, "__setattr__", _OBJECT_SETATTR)
    tx.output.assume_class_lacks(TypeSource(obj.source), (name,))
    return True


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
    """``del obj.name`` (``DELETE_ATTR``, ``delattr``) as CPython runs it, on an object made in the
    trace or one from outside it: a ``__delattr__`` written in Python is inlined, the generic one
    is ``generic_delattr``. CPython's error where the deletion must fail; elsewhere it runs in
    Python (a graph break)."""
    if not _deletable(tx, obj):
        error = _doomed(tx, obj, name, delattr)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("delete_attr", f"del .{name} on {obj}", hint="deleting runs in Python")
    cls = obj.python_type()
    check_class_unchanged(tx, cls, name)
    hook = type_lookup(cls, "__delattr__")
    if hook is _OBJECT_DELATTR or hook in _GENERIC_DELATTR:
        _guard_class_attr(tx, obj, "__delattr__", hook)
        generic_delattr(tx, obj, name)
    elif isinstance(hook, types.FunctionType):  # a frozen dataclass's, say
        fn = class_function(tx, _class_vt(tx, obj), "__delattr__", hook, obj)
        fn.call_function(tx, [ConstantVariable(name)], {})
    else:
        raise Unsupported("delete_attr", f"{cls.__name__}.__delattr__ is not Python code")


def _deletable(tx: Translator, obj: VariableTracker) -> bool:
    """An object whose deletions the trace records: one made in the trace, or an instance of a
    Python class reached from outside the function."""
    if isinstance(obj, NewObjectVariable) and tx.output.side_effects.is_new(obj):
        return True
    return type(obj) is UserObjectVariable and obj.source is not None


def generic_delattr(tx: Translator, obj: VariableTracker, name: str) -> None:
    """``object.__delattr__(obj, name)`` on an object ``_deletable`` allows: the attribute leaves
    the instance (a later read finds the class attribute, or raises), recorded for the replay
    where the object had it before the call (guarded); CPython's ``AttributeError`` where it has
    none by then. A data descriptor's ``__delete__`` runs in Python."""
    cls = obj.python_type()
    static = type_lookup(cls, name)
    if (static is not MISSING and is_data_descriptor(static)) or not has_instance_dict(cls):
        raise Unsupported("delete_attr", f"del .{name}: {cls.__name__}.{name} is a descriptor")
    _guard_class_lacks_descriptor(tx, obj, name, static)
    missing = AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    effects = tx.output.side_effects
    if effects.is_new(obj):
        if not effects.delete_new_attr(obj, name):
            raise PythonError(missing)
        return
    own = object.__getattribute__(obj.value, "__dict__")
    had = name in own
    if had:  # the guard on its value fails where the object lacks it
        tx.wrap(own[name], AttrSource(obj.source, name))
    else:
        tx.output.assume_key_absent(AttrSource(obj.source, "__dict__"), name)
    stored = effects.load_attr(obj, name) is not None
    if not stored and (not had or effects.is_deleted(obj, name)):
        raise PythonError(missing)
    hook = type_lookup(cls, "__delattr__")
    raw = hook is not _OBJECT_DELATTR and hook not in _GENERIC_DELATTR
    effects.delete_attr(obj, name, replay=had, raw=raw)


def _guard_class_lacks_descriptor(
    tx: Translator, obj: VariableTracker, name: str, static: Any
) -> None:
    """The class of ``obj`` (from outside the function) still has no data descriptor ``name``."""
    cls_source = _class_vt(tx, obj).source
    if cls_source is None:
        return
    if static is MISSING:
        tx.output.assume_class_lacks(cls_source, (name,))
    else:
        tx.wrap(static, class_attr_source(cls_source, obj.python_type(), name))


def _doomed(tx: Translator, obj: VariableTracker, name: str, op: Any) -> BaseException | None:
    """CPython's error for ``setattr(obj, name, v)`` or ``delattr(obj, name)`` (``op``) where it
    must fail, whatever the object's state (guarded): an immutable value or C type, a field of a
    namedtuple; for ``delattr``, an attribute that an object of a class with the generic
    ``__delattr__`` (an enum member, a function) lacks. None where it may succeed."""
    args = (name, None) if op is setattr else (name,)
    fixed = fixed_attributes(obj)
    if fixed is not None and _refuses(fixed[0], name, op):
        return concrete.error_of(op, fixed[0], *args)
    try:
        cls = obj.python_type()
    except Unsupported:
        return None
    static = type_lookup(cls, name)
    generic = type_lookup(cls, "__setattr__" if op is setattr else "__delattr__") in (
        _OBJECT_SETATTR,
        _OBJECT_DELATTR,
    )
    if isinstance(obj, TupleVariable) and type(static) is _TUPLE_GETTER and generic:
        if obj.source is not None:
            tx.output.assume_identity(AttrSource(TypeSource(obj.source), name), static)
        stand_in = tuple.__new__(cls, (None,) * len(obj.items))  # a field: read-only in C
        return concrete.error_of(op, stand_in, *args)
    source = obj.source
    if (
        op is delattr
        and generic
        and source is not None
        and not isinstance(obj, PythonModuleVariable)
        and obj.is_python_constant()
        and static is MISSING
        and has_instance_dict(cls)
    ):
        value = obj.as_python_constant()
        if name not in object.__getattribute__(value, "__dict__"):
            _guard_absent(tx, source, name, type_lookup(cls, "__delattr__"))
            return AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    return None


def _guard_absent(tx: Translator, source: Source, name: str, hook: Any) -> None:
    """Neither the object at ``source`` nor its class has ``name``; its class still deletes with
    ``hook``."""
    tx.output.assume_key_absent(AttrSource(source, "__dict__"), name)
    tx.output.assume_class_lacks(TypeSource(source), (name,))
    tx.output.assume_identity(AttrSource(TypeSource(source), "__delattr__"), hook)


#: the type of a namedtuple's field accessors (``collections._tuplegetter``)
_TUPLE_GETTER = type(collections.namedtuple("_Point", "x").x)


def _refuses(value: Any, name: str, op: Any) -> bool:
    """``op(value, name...)`` (``setattr`` or ``delattr``) fails without changing anything, on a
    value ``fixed_attributes`` gave: of an immutable builtin type, a C type, an empty builtin
    container standing for one, or an instance of a C type without an instance dict whose class
    neither defines ``name`` nor sets attributes its own way."""
    if type(value) in (*CONSTANT_TYPES, list, tuple, dict, set) or isinstance(value, type):
        return True
    cls = type(value)
    hook = type_lookup(cls, "__setattr__" if op is setattr else "__delattr__")
    return hook in (_OBJECT_SETATTR, _OBJECT_DELATTR) and type_lookup(cls, name) is MISSING


@builtin(delattr)
def delattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    if not (name.is_python_constant() and type(name.as_python_constant()) is str):
        raise Unsupported("python_error", "TypeError: attribute name must be string")
    delete_attribute(tx, obj, name.as_python_constant())
    return ConstantVariable(None)


# -- the instance dict -----------------------------------------------------------------------------
@builtin(vars)
def vars_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``vars(x)`` is ``x.__dict__``: of an object of a Python class, the live dict (stores and
    deletions update it; writes through it break); of a value that has none (a constant, an
    exact builtin container, a namedtuple, an object with ``__slots__``), CPython's TypeError;
    ``vars()`` lists the frame's names."""
    if len(args) != 1:
        raise Unsupported("vars", "call to vars()", hint="frame introspection")
    obj = args[0]
    fixed = fixed_attributes(obj)
    if fixed is not None and not hasattr(fixed[0], "__dict__"):
        raise PythonError(concrete.error_of(vars, fixed[0]))
    if obj.source is not None and isinstance(obj, (PythonModuleVariable, ClassVariable)):
        return obj.var_getattr(tx, "__dict__")
    if obj.source is not None and isinstance(obj, UserFunctionVariable):
        return unstored_dict(tx, obj, obj.fn, obj.source)  # a bound method's: its function's
    member = obj.as_python_constant() if obj.is_python_constant() else None
    if obj.source is not None and isinstance(member, enum.Enum):
        return unstored_dict(tx, obj, member, obj.source)
    new = isinstance(obj, NewObjectVariable) and tx.output.side_effects.is_new(obj)
    if not (new or type(obj) is UserObjectVariable or isinstance(obj, TupleVariable)):
        raise Unsupported("builtin", f"vars() on {obj}")
    cls = obj.python_type()
    if not _lacks_dict(cls):
        if isinstance(obj, TupleVariable) and not new:
            raise Unsupported("builtin", f"vars() on {obj}")
        return obj.var_getattr(tx, "__dict__")
    cls_source = getattr(obj, "cls_vt", None)
    cls_source = cls_source.source if new else obj.source and TypeSource(obj.source)
    if cls_source is None and issubclass(type(cls), type) and cls.__flags__ & _HEAP_TYPE:
        raise Unsupported("builtin", f"vars() on {obj}: its class is not guarded")
    if cls_source is not None:  # the class gains no ``__dict__`` nor ``__getattr__``
        tx.output.assume_class_lacks(cls_source, ("__dict__", "__getattr__"))
    raise PythonError(concrete.error_of(vars, None))


def _lacks_dict(cls: type) -> bool:
    """Instances of ``cls`` have no ``__dict__``, and the generic attribute lookup."""
    lookup = type_lookup(cls, "__getattribute__")
    return (
        not has_instance_dict(cls)
        and type_lookup(cls, "__getattr__") is MISSING
        and lookup in (_OBJECT_GETATTRIBUTE, type_lookup(tuple, "__getattribute__"))
    )


_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
#: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement (whose attributes can change)
_HEAP_TYPE = 1 << 9


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


@builtin(_OBJECT_DELATTR)
def object_delattr(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    """``object.__delattr__(obj, name)`` (a ``__delattr__`` override deferring to it)."""
    if not _deletable(tx, obj) or type(name.as_python_constant()) is not str:
        raise Unsupported("delete_attr", f"object.__delattr__ on {obj}")
    generic_delattr(tx, obj, name.as_python_constant())
    return ConstantVariable(None)


@builtin(OBJECT_INIT)
def object_init(tx: Translator, obj: VariableTracker, *args: VariableTracker) -> VariableTracker:
    """``object.__init__(self)`` / ``super().__init__()`` reaching ``object``: nothing to do."""
    if args:
        raise Unsupported("python_error", "TypeError: object.__init__() takes no arguments")
    return ConstantVariable(None)
