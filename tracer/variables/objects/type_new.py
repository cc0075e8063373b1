"""``T.__new__(cls, ...)`` called directly: the allocation step of making an object, without
``__init__`` (what ``copy``, ``pickle`` and a class's own ``__new__`` calling ``super().__new__``
do).

``object.__new__(cls)`` of a plain Python class makes a blank ``NewObjectVariable`` (its
attributes set afterwards, as pending stores); with extra arguments it raises CPython's TypeError
where CPython does. ``__new__`` of a builtin type called with that exact type (``int.__new__(int,
"7")``, ``list.__new__(list)``) makes what the type's allocation makes: the value for an immutable
type (folded), an empty container for a mutable one (whose ``__init__`` is not run). Other forms
(a subclass of a builtin type, a class with its own allocation) break the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import ConstantVariable
from ..operations import builtin_calls
from .attributes import MISSING, type_lookup
from .new_objects import OBJECT_INIT, NewObjectVariable

if TYPE_CHECKING:
    from ...translator import Translator

_OBJECT_NEW = object.__dict__["__new__"]
_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
#: builtin types whose ``__new__`` makes the whole value from its arguments (``tuple.__new__``
#: is ``class_factories``')
_IMMUTABLE = (int, float, bool, complex, str, bytes, frozenset)
#: builtin containers whose ``__new__`` makes an empty one whatever the arguments
_MUTABLE = (list, dict, set)


@call_rule(*(vars(t)["__new__"] for t in (*_IMMUTABLE, *_MUTABLE)))
def builtin_type_new(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``T.__new__(T, ...)`` of a builtin type: folded on constants (CPython's errors raised in
    the trace), an empty container for ``list``/``dict``/``set``."""
    cls = _class_argument(fn, args)
    if cls is None or cls is not fn.__self__:
        return None  # a subclass (or no class): its instances are not modelled here
    if cls in _MUTABLE:
        return builtin_calls.call_builtin(tx, cls, [], {})
    if not all(a.is_python_constant() for a in [*args[1:], *kwargs.values()]):
        return None
    values = [a.as_python_constant() for a in args[1:]]
    named = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        return ConstantVariable(fn(cls, *values, **named))
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None


@call_rule(_OBJECT_NEW)
def object_new(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``object.__new__(cls, ...)``: a blank object of a plain Python class, made in the trace;
    ``object.__new__(object)`` is left to the caller."""
    cls = _class_argument(fn, args)
    if cls is None:
        return None
    if (args[1:] or kwargs) and (
        type_lookup(cls, "__new__") is not _OBJECT_NEW
        or type_lookup(cls, "__init__") is OBJECT_INIT
    ):
        raise PythonError(_error(cls, len(args) - 1, kwargs))
    if cls is object:
        return None  # a bare ``object()``: not modelled
    why = _not_plain(cls)
    if why is not None:
        raise Unsupported("new_object", f"object.__new__({cls.__name__}): {why}")
    try:
        blank = object.__new__(cls)
    except TypeError as e:  # an abstract class: CPython's own error
        raise PythonError(e) from None
    effects = tx.output.side_effects
    obj = NewObjectVariable(blank, cls_vt=args[0], name=effects.new_name())
    effects.track_new(obj)
    return obj


def _class_argument(fn: Any, args: list[VariableTracker]) -> type | None:
    if not args or not args[0].is_python_constant():
        return None
    cls = args[0].as_python_constant()
    return cls if isinstance(cls, type) else None


def _error(cls: type, count: int, kwargs: dict[str, VariableTracker]) -> TypeError:
    """CPython's error for ``object.__new__(cls, *args)`` with arguments it does not take."""
    try:
        object.__new__(cls, *([None] * count), **dict.fromkeys(kwargs))
    except TypeError as e:
        return e
    raise AssertionError(f"object.__new__({cls.__name__}, ...) raised nothing")


_HEAP_TYPE = 1 << 9  #: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement


def _not_plain(cls: type) -> str | None:
    """Why objects of ``cls`` are not modelled by ``NewObjectVariable`` (None: they are): a
    builtin base's layout, a finalizer, its own attribute lookup."""
    if any(base is not object and not base.__flags__ & _HEAP_TYPE for base in cls.__mro__):
        return "it derives from a builtin type"
    if type_lookup(cls, "__del__") is not MISSING:
        return "it defines __del__ (the finalizer would run when the object dies)"
    if type_lookup(cls, "__getattribute__") is not _OBJECT_GETATTRIBUTE:
        return "it defines __getattribute__"
    return None
