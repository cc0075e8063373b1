"""Builtins run for real at trace time on objects the trace knows: ``id``, ``hash``, ``repr``,
``str``, ``ascii`` and ``format`` of a plain object, a class, a function or a module, and of
tuples and lists of them, ``hash`` of frozensets of them (``id`` of anything else:
``object_id``, compared by ``compare_ids``); and an operation no operand implements
(``unsupported_operands``), run on stand-ins for CPython's TypeError (an object of a Python
class, a bound method).

An object read from the inputs (a global, an attribute) is a real object during the trace. A
builtin that reads it only through what ``object`` itself defines (its identity, the default
``__hash__``, ``__repr__``, ``__str__``, ``__format__``) runs no user code, so it is computed
here, on that object, instead of breaking the graph; what it read is guarded: the object's
identity (the result holds its address or is derived from it). Objects made in the trace have
no real counterpart yet and are left to the caller; constants are folded in ``builtin_calls``.
"""

from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any

from ...exc import PythonError
from ..base import ConstantLikeVariable, VariableTracker, walk
from ..constants.constant import ConstantVariable
from ..constants.object_ids import ObjectIdVariable
from ..containers.builtin_containers import (
    BaseSequenceVariable,
    DictVariable,
    SetVariable,
    key_vt,
)
from ..functions.callables import BuiltinVariable, UserFunctionVariable
from ..modules.nn_modules import NNModuleVariable
from ..objects.existing_objects import UserObjectVariable
from .truth import is_same, pin_identity

if TYPE_CHECKING:
    from ...translator import Translator

#: builtin -> the methods of ``object`` it calls (it is computed only where the class keeps them)
_READS: dict[Any, tuple[str, ...]] = {
    id: (),
    hash: ("__hash__",),
    repr: ("__repr__",),
    ascii: ("__repr__",),
    str: ("__str__", "__repr__"),
    format: ("__format__", "__str__", "__repr__"),
}
_MISSING = object()
#: the sequences ``_real`` is reading, innermost last
_READING: list[VariableTracker] = []
_CONTAINERS = (BaseSequenceVariable, DictVariable, SetVariable)


def evaluate(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``fn(*args)`` computed on the real objects, or None where an argument is not one the
    trace knows (a tensor, a container, an object made in the trace, a class overriding what
    ``fn`` calls)."""
    if fn not in _READS or kwargs:
        return None
    values = [_real(tx, a, fn) for a in args]
    if any(v is _MISSING for v in values):
        return None
    for vt in walk(
        args, descend=lambda vt: isinstance(vt, (BaseSequenceVariable, UserFunctionVariable))
    ):
        pin_identity(tx, vt)
    try:
        result = fn(*values)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None
    return ConstantVariable(result)


def object_id(tx: Translator, vt: VariableTracker) -> VariableTracker:
    """``id(vt)``: the real object's (``evaluate``), else a number known only by what it is the
    id of (``ObjectIdVariable``)."""
    known = evaluate(tx, id, [vt], {})
    return known if known is not None else ObjectIdVariable(vt)


def compare_ids(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``id(a) == id(b)`` (or ``!=``) is ``a is b``. Two constants read from inputs are the same
    object only as long as each input holds that object (an equal one passes a value guard):
    their identity is guarded, unless both were read from the same place."""
    a, b = args
    if not (isinstance(a, ObjectIdVariable) and isinstance(b, ObjectIdVariable)):
        return None
    same = is_same(tx, a.of, b.of)
    if a.of.source != b.of.source:
        for vt in (a.of, b.of):
            if isinstance(vt, ConstantVariable) and vt.source is not None:
                tx.output.assume_identity(vt.source, vt.value)
    return ConstantVariable(same == (op is operator.eq))


def _real(tx: Translator, vt: VariableTracker, fn: Any) -> Any:
    """The real object ``vt`` stands for, where ``fn`` of it is computed here."""
    if isinstance(vt, UserObjectVariable):
        if tx.output.side_effects.is_new(vt):
            return _MISSING  # a stand-in: the object the rewritten code makes is another
        cls = type(vt.value)
        if all(getattr(cls, name) is getattr(object, name) for name in _READS[fn]):
            return vt.value
        return _MISSING
    if isinstance(vt, BaseSequenceVariable) and fn is not id:
        # a tuple or list of known values: its items are read through ``repr`` (``str`` of a
        # tuple is its ``repr``) or ``hash``
        each = hash if fn is hash else repr
        if any(vt is outer for outer in _READING):
            return _MISSING  # a list holding itself: its text is written by the caller
        _READING.append(vt)
        try:
            items = [_real(tx, item, each) for item in vt.items]
        finally:
            _READING.pop()
        if any(item is _MISSING for item in items):
            return _MISSING
        return vt.python_type()(items) if vt.python_type() in (list, tuple) else _MISSING
    if isinstance(vt, SetVariable) and fn is hash and vt.python_type() is frozenset:
        # a frozenset's hash combines its items' hashes, in no order: an equal frozenset's
        items = [key_vt(key) for key in vt.items]
        values = [_real(tx, item, hash) for item in items]
        if any(value is _MISSING for value in values):
            return _MISSING
        for item in items:
            pin_identity(tx, item)
        return frozenset(values)
    if isinstance(vt, UserFunctionVariable) and vt.self_vt is not None and fn is not id:
        # ``obj.method``: a new bound object at each read (no identity to keep); its repr and
        # hash read the object's
        owner = _real(tx, vt.self_vt, hash if fn is hash else repr)
        return _MISSING if owner is _MISSING else types.MethodType(vt.fn, owner)
    if isinstance(vt, ConstantVariable):
        # a constant's identity is not kept (an equal one may come next call): id() breaks
        return vt.value if fn is not id else _MISSING
    if isinstance(vt, (ConstantLikeVariable, BuiltinVariable)) or (
        isinstance(vt, UserFunctionVariable) and vt.is_python_constant()
    ):  # a class, module, function: guarded by identity where it was read
        return vt.as_python_constant()
    return _MISSING


def unsupported_operands(
    fn: Any, args: list[VariableTracker], methods: set[str]
) -> Exception | None:
    """The TypeError CPython raises for ``fn(*args)`` where no operand implements it, or None where
    that is not known: each operand is a builtin value (a container: its builtin type, whose
    methods give NotImplemented for a plain object whatever it holds) or an object of a Python
    class defining none of ``methods`` (those ``fn`` could call), one at least. The error is
    CPython's own, from ``fn`` run on the values with each object replaced by an instance of an
    empty class of the same name and each container by an empty one."""
    stand_ins: dict[type, type] = {}
    values: list[Any] = []
    for vt in args:
        if isinstance(vt, UserObjectVariable) and not isinstance(vt, NNModuleVariable):
            cls = vt.python_type()
            if not _plain_class(cls, methods):
                return None
            values.append(stand_ins.setdefault(cls, type(cls.__name__, (), {}))())
        elif is_bound_method(vt):
            # ``method`` implements no operator but ``==``, ``!=`` and ``hash``, whatever it binds
            values.append(_METHOD_STAND_IN)
        elif vt.is_python_constant() and type(vt.as_python_constant()).__module__ == "builtins":
            values.append(vt.as_python_constant())
        elif isinstance(vt, _CONTAINERS) and vt.python_type().__module__ == "builtins":
            values.append(vt.python_type()())  # its items play no part against a plain object
        else:
            return None
    if not any(map(plain_operand, args)):
        return None
    try:
        fn(*values)
    except TypeError as e:
        return e
    return None


def error_of(fn: Any, *args: Any) -> Exception:
    """The error CPython raises for ``fn(*args)``, which must raise."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        return e
    raise AssertionError(f"{fn.__name__}{args} raised nothing")


def plain_operand(vt: VariableTracker) -> bool:
    """An object whose operators ``unsupported_operands`` knows: of a Python class (which may
    define none), or a bound method (which defines none)."""
    return isinstance(vt, UserObjectVariable) or is_bound_method(vt)


def is_bound_method(vt: VariableTracker) -> bool:
    """``obj.method`` of a Python function."""
    return isinstance(vt, UserFunctionVariable) and vt.self_vt is not None


class _Bound:
    def method(self) -> None:
        """What ``_METHOD_STAND_IN`` binds: only its type, ``method``, takes part in an error."""


_METHOD_STAND_IN = _Bound().method


def _plain_class(cls: type, methods: set[str]) -> bool:
    """A class made of Python classes (and ``object``) none of which defines one of ``methods``."""
    return all(
        base is object
        or (type(base) is type and "__dict__" in vars(base) and not methods & vars(base).keys())
        for base in cls.__mro__
    )
