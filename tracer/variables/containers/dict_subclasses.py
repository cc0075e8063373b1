"""Instances of user ``dict`` subclasses made in the trace: the ``AttrDict``/``EasyDict`` config
pattern (``class AttrDict(dict): __getattr__ = dict.__getitem__``) and dicts with methods.

Such an instance is a ``DictVariable`` whose ``cls`` is the subclass, when the subclass keeps all of
dict's behaviour (``models``): it overrides none of dict's methods (``__init__``, ``__getitem__``,
``update``...), only adds methods, class attributes and the attribute hooks ``__getattr__`` /
``__setattr__`` (dict's item methods or Python functions). Attribute reads follow CPython's generic
lookup (the class's attributes, then ``__getattr__``); attribute writes go through ``__setattr__``.
An instance ``__dict__`` is not modelled: a write into it (no ``__setattr__`` hook) is a graph
break. At a break or return the object is rebuilt as ``cls({...})``.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..functions.callables import UserFunctionVariable
from ..objects.attributes import MISSING, type_lookup
from .builtin_containers import DictVariable

if TYPE_CHECKING:
    from ...translator import Translator

#: What a subclass may define besides new names: the attribute hooks, and the class's bookkeeping.
_ALLOWED = frozenset(
    {
        "__getattr__",
        "__setattr__",
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__firstlineno__",
        "__static_attributes__",
        "__slots__",
        "__orig_bases__",
        "__parameters__",
    }
)
_DICT_METHODS = {name: value for name, value in vars(dict).items() if callable(value)}


def models(cls: Any) -> bool:
    """Whether a ``DictVariable`` with this ``cls`` behaves as ``cls`` does (see the module)."""
    if not isinstance(cls, type) or not issubclass(cls, dict) or cls is dict:
        return False
    if type(cls).__call__ is not type.__call__:
        return False
    for klass in cls.__mro__:
        if klass is dict:
            return True
        if any(name not in _ALLOWED and hasattr(dict, name) for name in vars(klass)):
            return (
                False  # overrides dict (or is OrderedDict/defaultdict/Counter: their own trackers)
            )
    return False


def construct(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> DictVariable:
    """``cls(*args, **kwargs)``: dict's constructor (a mapping or pairs, and keyword items)."""
    made = dispatch.call_builtin(tx, dict, list(args), dict(kwargs))
    return DictVariable(dict(made.items), cls=cls)


def getattr_(tx: Translator, obj: DictVariable, name: str) -> VariableTracker:
    """``obj.name``: the class's attribute (dict's methods, Python methods and properties, class
    data), else ``__getattr__``, else CPython's AttributeError."""
    cls = obj.cls
    if name == "__class__":
        return tx.wrap_static(cls)
    static = type_lookup(cls, name)
    if static is MISSING:
        hook = type_lookup(cls, "__getattr__")
        if hook is MISSING:
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        return _call_hook(tx, obj, hook, [ConstantVariable(name)])
    if name in _DICT_METHODS and static is _DICT_METHODS[name]:
        return obj.var_getattr(tx, name)  # dict's own method, bound to the dict
    if isinstance(static, types.FunctionType):
        return UserFunctionVariable(static, None, self_vt=obj)
    if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
        return UserFunctionVariable(static.fget, None).call_function(tx, [obj], {})
    if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, None)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, None, self_vt=tx.wrap_static(cls))
    if hasattr(type(static), "__get__"):
        raise Unsupported("descriptor", f"{cls.__name__}.{name} is a descriptor")
    return tx.wrap_static(static)  # class data


def store_attr(tx: Translator, obj: DictVariable, name: str, value: VariableTracker) -> None:
    """``obj.name = value`` through the class's ``__setattr__``."""
    hook = type_lookup(obj.cls, "__setattr__")
    if hook is object.__setattr__:
        raise Unsupported(
            "store_attr",
            f"an instance attribute of a {obj.cls.__name__} (a dict subclass) made in the trace",
        )
    _call_hook(tx, obj, hook, [ConstantVariable(name), value])


def _call_hook(
    tx: Translator, obj: DictVariable, hook: Any, args: list[VariableTracker]
) -> VariableTracker:
    """Call ``__getattr__``/``__setattr__`` of the class: a Python function, or one of dict's
    methods (``__getattr__ = dict.__getitem__``, ``__setattr__ = dict.__setitem__``)."""
    if isinstance(hook, types.FunctionType):
        return UserFunctionVariable(hook, None, self_vt=obj).call_function(tx, args, {})
    name = next((n for n, m in _DICT_METHODS.items() if m is hook), None)
    if name == "__getitem__":
        return dispatch.getitem(tx, obj, args[0])
    if name == "__setitem__":
        dispatch.setitem(tx, obj, args[0], args[1])
        return ConstantVariable(None)
    if name is not None:
        return dispatch.call_container_method(tx, obj, name, args, {})
    raise Unsupported("custom_getattr", f"{obj.cls.__name__}'s attribute hook {hook!r}")


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
