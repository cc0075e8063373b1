"""Operators: one declaration per ``operator`` function, and the rules that trace it.

``OPERATORS`` declares each operator once: the method a user object's class defines for it
(``__add__``, inlined when the object is on the left), its reflected form (``__radd__``, asked of
a user object on the right), and for a binary operator its in-place form (``operator.iadd``, an
entry of its own that falls back to the binary operator). ``@operator_rule(op, ...)`` registers a
rule for operators; ``call_operator`` tries an operator's rules in the order this file registers
them, and the first that gives a value answers: a rule gives None where the operands are not its
kind, and raises ``Unsupported`` where they are but the operation cannot be traced. When no rule
answers, the operator breaks the graph.

The opcode handlers (``opcodes/arith.py``) and the ``operator.*`` functions called directly
(``builtin_calls``) both come here. ``bool()``, ``is`` and ``in`` are answered in ``truth.py``.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..constants.slices import SliceVariable, index_for_tensor
from ..constants.symbolic import SymNodeVariable
from ..containers import container_methods, dict_views
from ..containers.builtin_containers import (
    BaseSequenceVariable,
    DictVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
)
from ..containers.model_output import ModelOutputVariable
from ..modules.nn_modules import NNModuleVariable
from ..objects import new_objects
from ..objects.existing_objects import UserObjectVariable
from ..tensors import numpy_arrays
from ..tensors.tensor import TensorVariable
from . import concrete, equality, sorting
from .equality import contains
from .truth import is_same, truth

if TYPE_CHECKING:
    from ...translator import Translator

#: ``rule(tx, op, args)``: the result, or None where the operands are not the rule's kind.
Rule = Callable[..., "VariableTracker | None"]


@dataclass(frozen=True)
class Operator:
    """An ``operator`` function as the tracer knows it."""

    fn: Callable[..., Any]
    #: "binary", "inplace", "comparison", "unary", "subscript", or "call" (only called directly:
    #: ``operator.truth(x)``, ``operator.setitem(d, k, v)``)
    kind: str
    dunder: str | None = None  #: the method inlined on a user object on the left
    reflected: str | None = None  #: the method inlined on a user object on the right
    binary: Callable[..., Any] | None = None  #: an in-place operator's binary form
    rules: list[Rule] = field(default_factory=list, compare=False)


OPERATORS: dict[Callable[..., Any], Operator] = {}


def _declare(fn: Callable[..., Any], kind: str, dunder: str | None = None, **facts: Any) -> None:
    assert fn not in OPERATORS, f"operator.{fn.__name__} declared twice"
    OPERATORS[fn] = Operator(fn, kind, dunder, **facts)


def _binary(fn: Callable[..., Any], dunder: str | None, reflected: str, inplace: Any) -> None:
    _declare(fn, "binary", dunder, reflected=reflected)
    _declare(inplace, "inplace", "__i" + reflected.removeprefix("__r"), binary=fn)  # ``__iadd__``


# NOTE: ``<<``, ``>>``, ``~`` and ``abs()`` inline no method of a user object on the left (a
# graph break; ``<<`` and ``>>`` inline the reflected one), and comparisons no reflected form
# (CPython asks the right operand for the swapped comparison).
# In-place methods (``__iadd__``) are inlined only where a user class defines them in Python.
_binary(operator.add, "__add__", "__radd__", operator.iadd)
_binary(operator.sub, "__sub__", "__rsub__", operator.isub)
_binary(operator.mul, "__mul__", "__rmul__", operator.imul)
_binary(operator.truediv, "__truediv__", "__rtruediv__", operator.itruediv)
_binary(operator.floordiv, "__floordiv__", "__rfloordiv__", operator.ifloordiv)
_binary(operator.mod, "__mod__", "__rmod__", operator.imod)
_binary(operator.pow, "__pow__", "__rpow__", operator.ipow)
_binary(operator.matmul, "__matmul__", "__rmatmul__", operator.imatmul)
_binary(operator.and_, "__and__", "__rand__", operator.iand)
_binary(operator.or_, "__or__", "__ror__", operator.ior)
_binary(operator.xor, "__xor__", "__rxor__", operator.ixor)
_binary(operator.lshift, None, "__rlshift__", operator.ilshift)
_binary(operator.rshift, None, "__rrshift__", operator.irshift)
_declare(operator.lt, "comparison", "__lt__")
_declare(operator.le, "comparison", "__le__")
_declare(operator.gt, "comparison", "__gt__")
_declare(operator.ge, "comparison", "__ge__")
_declare(operator.eq, "comparison", "__eq__")
_declare(operator.ne, "comparison", "__ne__")
_declare(operator.neg, "unary", "__neg__")
_declare(operator.pos, "unary", "__pos__")
_declare(operator.invert, "unary")
_declare(operator.abs, "unary")
_declare(operator.not_, "unary")
_declare(operator.getitem, "subscript", "__getitem__")
_declare(operator.truth, "call")
_declare(operator.contains, "call")
_declare(operator.is_, "call")
_declare(operator.is_not, "call")
_declare(operator.setitem, "call")
_declare(operator.concat, "call")
_declare(operator.iconcat, "call")


def _of(*kinds: str) -> tuple[Callable[..., Any], ...]:
    return tuple(op for op, declared in OPERATORS.items() if declared.kind in kinds)


BINARY, INPLACE, COMPARISONS = _of("binary"), _of("inplace"), _of("comparison")
#: The operators of the operator syntax (``a + b``, ``a += b``, ``a < b``, ``-a``, ``a[k]``).
SYNTAX = _of("binary", "inplace", "comparison", "unary", "subscript")
#: ``not`` has its own rule (its operand's truth value): these operate on the operands' values.
_BY_VALUE = tuple(op for op in SYNTAX if op is not operator.not_)


def operator_rule(*ops: Callable[..., Any]) -> Callable[[Rule], Rule]:
    """Register ``rule`` for each of ``ops`` (declared above), after their rules so far."""

    def register(rule: Rule) -> Rule:
        for op in ops:
            rules = OPERATORS[op].rules
            assert rule not in rules, f"{rule.__name__} registered twice for {op.__name__}"
            rules.append(rule)
        return rule

    return register


def call_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``op(*args)`` for an operator declared in ``OPERATORS``: the first of its rules that
    answers."""
    for rule in OPERATORS[op].rules:
        result = rule(tx, op, args)
        if result is not None:
            return result
    raise Unsupported("operator", f"{op.__name__} on {', '.join(map(repr, args))}")


# -- the rules, in the order they are tried -------------------------------------------------------
@operator_rule(*_BY_VALUE)
def symbolic_numbers(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """A symbolic number with numbers or tensors: a graph node (the number stays symbolic)."""
    if not any(isinstance(a, SymNodeVariable) for a in args) or not all(
        isinstance(a, (SymNodeVariable, ConstantVariable, TensorVariable)) for a in args
    ):
        return None
    if not isinstance(args[0], TensorVariable):
        # numbers are immutable: ``j += n`` is ``j + n`` (an ``iadd`` node would be generated as
        # ``add += ...``, rebinding the variable every later use of ``add`` reads)
        op = OPERATORS[op].binary or op
        _check_arithmetic_error(op, args)
    return tx.output.call_function(op, tuple(args), {})


_ORDERING = ("__lt__", "__le__", "__gt__", "__ge__")


@operator_rule(
    *BINARY,
    *INPLACE,
    *(op for op in COMPARISONS if op not in (operator.eq, operator.ne)),
    *(op for op in _of("unary") if op is not operator.not_),
)
def unsupported(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """An object whose class implements none of the methods the operator could call (a bound
    method implements none), with builtin values or such objects (``Plain() | 7``, ``Point(1, 2)
    < 3``, ``x |= Plain()``, ``-Plain()``, ``{0} - obj.method``): CPython's TypeError, in the
    trace."""
    if not any(concrete.plain_operand(a) for a in args):
        return None
    declared = OPERATORS[op]
    binary = OPERATORS[declared.binary] if declared.binary else declared
    methods = {declared.dunder, binary.dunder, binary.reflected, "__index__"} - {None}
    if declared.kind == "unary":
        methods.add(f"__{op.__name__}__")  # ``__abs__``, ``__invert__``
    if declared.kind == "comparison":
        methods.update(_ORDERING)
    error = concrete.unsupported_operands(op, args, methods)
    if error is not None:
        raise PythonError(error)
    return None


@operator_rule(*BINARY, *INPLACE, *COMPARISONS)
def refused_by_tensor(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """A tensor with an operand its methods do not take (``[x] < t``, ``obj == t``, ``t | {}``):
    the tensor's method, and its reflected one, give NotImplemented, so CPython asks the other
    operand and, where that declines too, answers ``==`` by identity and raises its TypeError
    otherwise. Computed on stand-ins (``tensor_operands_outcome``)."""
    result = tensor_operands_outcome(op, args)
    if isinstance(result, Exception):
        raise PythonError(result)
    return None if result is _UNKNOWN else ConstantVariable(result)


operator_rule(operator.eq, operator.ne)(concrete.compare_ids)  # ``id(a) == id(b)``: ``a is b``
operator_rule(*BINARY, *INPLACE, *COMPARISONS)(dict_views.set_operator)  # a set or a dict view
operator_rule(*SYNTAX)(numpy_arrays.call_operator)  # a NumPy array


@operator_rule(operator.or_, operator.ior)
def dict_union(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``d | other`` and ``d |= other``."""
    if isinstance(args[0], DictVariable):
        return container_methods.dict_or(tx, op, args[0], args[1])
    return None


@operator_rule(*_BY_VALUE)
def tensors(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """An operator on a tensor: a graph node."""
    if not any(isinstance(a, TensorVariable) for a in args):
        return None
    if op is operator.getitem:
        return getitem_tensor(tx, args[0], args[1])
    return tx.output.call_function(op, tuple(args), {})


@operator_rule(*SYNTAX)
def constants(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """Constant operands: folded (comparisons never mutate: on constant containers too)."""
    if (
        all(a.is_python_constant() for a in args)
        and (op in COMPARISONS or not _mutable(args))
        and not any(is_symbolic(a) for a in args)
    ):
        return tx.fold_call(op, args, {})  # ``(t, t)[0] is t``: the object given back
    return None


@operator_rule(operator.getitem)
def subscript(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return getitem(tx, args[0], args[1])


@operator_rule(*INPLACE)
def in_place(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``a += b``: a list extended or repeated in place, a user object's Python ``__iadd__``
    inlined (it changes the object; unless it gives NotImplemented), anything else
    ``a = a + b``."""
    if isinstance(args[0], ListVariable) and op is operator.iadd:
        return call_container_method(tx, args[0], "extend", [args[1]], {}) and args[0]
    if isinstance(args[0], ListVariable) and op is operator.imul:
        if args[1].is_python_constant():  # CPython's TypeError for a count that is no int
            _fold(tx, operator.imul, [[], args[1].as_python_constant()])
        return call_container_method(tx, args[0], "__imul__", [args[1]], {})
    if _python_method(args[0], OPERATORS[op].dunder):
        result = args[0].call_method(tx, OPERATORS[op].dunder, args[1:], {})
        if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
            return result
    return call_operator(tx, OPERATORS[op].binary, args)


@operator_rule(operator.not_)
def not_(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``not value``: its truth value, inverted (a tensor's would need its data)."""
    if any(isinstance(a, TensorVariable) for a in args):
        raise Unsupported(
            "data_dependent",
            "`not` on a tensor needs its value",
            hint="use torch.logical_not or keep the condition a tensor",
        )
    return ConstantVariable(not truth(tx, args[0]))


@operator_rule(operator.add, operator.mul)
def sequences(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``+`` and ``*`` of a list or tuple; with a user object defining the operator's methods,
    those are asked (``user_methods``: CPython tries them before the sequence's own)."""
    if not any(isinstance(a, BaseSequenceVariable) for a in args):
        return None
    methods = (OPERATORS[op].dunder, OPERATORS[op].reflected)
    if any(
        isinstance(a, UserObjectVariable) and any(_defines(type(a.value), m) for m in methods)
        for a in args
    ):
        return None
    return _sequence_op(tx, op, args)


@operator_rule(*COMPARISONS)
def compare_sequences(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """Two tuples or two lists, compared item by item."""
    if len(args) == 2:
        return sorting.compare_sequences(tx, op, args[0], args[1])
    return None


operator_rule(*COMPARISONS)(equality.compare_sequences)  # items compared identity first
operator_rule(operator.eq, operator.ne)(equality.compare_dicts)
operator_rule(operator.eq, operator.ne)(equality.rich_equality)
operator_rule(operator.eq, operator.ne)(equality.compare_methods)


@operator_rule(operator.eq, operator.ne)
def same_object(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a == b`` of non-constants known to be the same object, or known not to be where neither
    class compares by value (a list, a set, a tensor do: two of them may be equal)."""
    if len(args) != 2 or _comparable(args):
        return None
    by_value = any(_compares_by_value(a) for a in args)
    if (by_value and args[0] is not args[1]) or isinstance(args[0], UserObjectVariable):
        return None
    same = is_same(tx, args[0], args[1])
    return ConstantVariable(same if op is operator.eq else not same)


@operator_rule(operator.eq, operator.ne)
def identity_equality(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    if len(args) == 2 and _identity_equality(args):
        same = is_same(tx, args[0], args[1])
        return ConstantVariable(same if op is operator.eq else not same)
    return None


@operator_rule(operator.eq, operator.ne)
def derived_equality(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    return _derived_equality(tx, op, args[0], args[1]) if len(args) == 2 else None


@operator_rule(operator.eq, operator.ne)
def namespaces(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``types.SimpleNamespace`` objects: equal when their attribute dicts are; with anything
    else CPython's comparison gives NotImplemented both ways, so only identity counts."""
    if len(args) != 2:
        return None
    dicts = [new_objects.namespace_dict(tx, a) for a in args]
    if all(d is not None for d in dicts):
        return call_operator(tx, op, dicts)
    if any(d is not None for d in dicts) and any(
        isinstance(a, ConstantVariable) and type(a.value) in _BUILTIN_VALUES for a in args
    ):
        return ConstantVariable(op is operator.ne)
    return None


@operator_rule(*BINARY, *COMPARISONS, *(op for op in _of("unary") if op is not operator.not_))
def user_methods(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """A user object's ``__add__`` (left operand) or ``__radd__`` (right operand), inlined."""
    return _user_dunder(tx, op, args)


@operator_rule(operator.truth)
def truth_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(truth(tx, *args))


@operator_rule(operator.contains)
def contains_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(contains(tx, *args))


@operator_rule(operator.is_, operator.is_not)
def is_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    return ConstantVariable(is_same(tx, *args) == (op is operator.is_))


operator_rule(operator.concat, operator.iconcat)(constants)  # strings, bytes, tuples of constants


@operator_rule(operator.concat, operator.iconcat)
def concat(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``operator.concat(a, b)`` and ``operator.iconcat(a, b)`` (CPython's ``PySequence_Concat``
    / ``PySequence_InPlaceConcat``: a list's or tuple's own concatenation, which asks ``b``
    nothing): a list extended in place by any iterable, two lists or two tuples joined; with an
    operand that cannot take part, CPython's TypeError."""
    sequences = (ListVariable, TupleVariable)
    if len(args) != 2:
        return None
    seq, other = args
    kind = seq.python_type() if isinstance(seq, sequences) else None
    if op is operator.iconcat and kind is list:
        return call_container_method(tx, seq, "extend", [other], {}) and seq
    if kind in (list, tuple) and isinstance(other, sequences) and other.python_type() is kind:
        return _sequence_op(tx, operator.add, args)
    error = _sequence_error(tx, op, args)
    if error is not None:
        raise PythonError(error)
    return None


@operator_rule(operator.setitem)
def setitem_fn(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    setitem(tx, *args)
    return ConstantVariable(None)


@operator_rule(*(op for op in BINARY if op is not operator.mod))
def builtin_type_error(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """Builtin values no rule above combines (``frozenset({0}) & {'a': 1}``, ``{} | [x]``,
    ``(x,) @ 2``): CPython's TypeError, from the operator run on stand-ins (``_stand_in``: an
    empty container of each container's type, each constant itself). ``%`` is left out: a
    string's formatting fails or not on the items."""
    if not all(
        isinstance(a, (ListVariable, TupleVariable, DictVariable, SetVariable))
        or (a.is_python_constant() and type(a.as_python_constant()).__module__ == "builtins")
        for a in args
    ):
        return None
    values = [_stand_in(a, ()) for a in args]
    if any(v is _UNKNOWN for v in values):
        return None
    try:
        op(*values)
    except TypeError as e:
        raise PythonError(e) from None
    return None


assert all(declared.rules for declared in OPERATORS.values()), "an operator without rules"


# -- helpers of the rules --------------------------------------------------------------------------
_BUILTIN_VALUES = (type(None), bool, int, float, complex, str, bytes)


def _python_method(vt: VariableTracker, name: str) -> bool:
    """A user object (not a module) whose class defines ``name`` in Python."""
    if not isinstance(vt, UserObjectVariable) or isinstance(vt, NNModuleVariable):
        return False
    return isinstance(inspect.getattr_static(type(vt.value), name, None), types.FunctionType)


def _python_eq(vt: VariableTracker) -> bool:
    """A user object whose class defines ``__eq__`` in Python but keeps ``object.__ne__``."""
    if not isinstance(vt, UserObjectVariable):
        return False
    cls = type(vt.value)
    return isinstance(inspect.getattr_static(cls, "__eq__"), types.FunctionType) and (
        cls.__ne__ is object.__ne__
    )


def _derived_equality(
    tx: Translator, op: Any, a: VariableTracker, b: VariableTracker
) -> VariableTracker | None:
    """``a != b`` where ``a``'s class defines only ``__eq__`` (``object.__ne__`` inverts it), and
    ``a == b`` / ``a != b`` where only ``b``'s class defines ``__eq__`` (``a``'s ``object.__eq__``
    gives NotImplemented, so CPython asks ``b``): None where the rules do not apply."""
    if _python_eq(a) and op is operator.ne:
        first, other = a, b
        if _python_eq(b) and type(b.value) is not type(a.value):
            if issubclass(type(b.value), type(a.value)):  # CPython asks the subclass first
                first, other = b, a
        result = first.call_method(tx, "__eq__", [other], {})
    elif _identity_equality([a, a]) and _python_eq(b):
        if is_same(tx, a, b):
            return ConstantVariable(op is operator.eq)
        result = b.call_method(tx, "__eq__", [a], {})
    else:
        return None
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    if op is operator.eq:
        return result
    return ConstantVariable(not truth(tx, result))


def _identity_equality(args: list[VariableTracker]) -> bool:
    """``a == b`` / ``a != b`` that CPython answers with ``a is b``: an object whose class keeps
    ``object.__eq__``/``__ne__`` (a wrapper descriptor: ``MyCls() == None``), compared with such an
    object or a builtin value (whose ``__eq__`` gives NotImplemented for other types)."""

    def plain_object(vt: VariableTracker) -> bool:
        if not isinstance(vt, UserObjectVariable):
            return False
        cls = type(vt.value)
        return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__

    def plain(vt: VariableTracker) -> bool:
        return plain_object(vt) or (
            isinstance(vt, ConstantVariable) and type(vt.value) in _BUILTIN_VALUES
        )

    return any(plain_object(a) for a in args) and all(plain(a) for a in args)


def _compares_by_value(vt: VariableTracker) -> bool:
    """Whether ``vt``'s class has an ``==`` of its own (two distinct objects may be equal)."""
    try:
        vt.python_type()
    except Unsupported:
        return False
    return not equality.identity_compared(vt)


def is_symbolic(vt: VariableTracker) -> bool:
    """Does ``vt`` hold a symbolic value (folding it would specialise it)?"""
    if isinstance(vt, SymNodeVariable):
        return True
    return isinstance(vt, (TupleVariable, ListVariable)) and any(is_symbolic(i) for i in vt.items)


def _comparable(args: list[VariableTracker]) -> bool:
    return all(a.is_python_constant() for a in args)


_DIVISIONS = frozenset({operator.truediv, operator.floordiv, operator.mod})


def _check_arithmetic_error(op: Any, args: list[VariableTracker]) -> None:
    """Symbolic numbers are computed inside the graph, after which the trace's side effects are
    replayed: a ``ZeroDivisionError`` raised there would skip the mutations that, in Python,
    happened before it. So decide at trace time (guarded: ``Ne(s0 - 5, 0)``) whether the operation
    raises, and when it does, run it in Python (a graph break) like the same error on constants."""
    if len(args) != 2 or isinstance(args[1], TensorVariable):
        return
    lhs, rhs = (a.value if isinstance(a, SymNodeVariable) else a.as_python_constant() for a in args)
    if op in _DIVISIONS:
        raises = bool(rhs == 0)
    elif op is operator.pow:
        raises = bool(rhs < 0) and bool(lhs == 0)
    else:
        return
    if raises:
        raise Unsupported("python_error", f"{op.__name__} raises ZeroDivisionError here")


def _mutable(args: list[VariableTracker]) -> bool:
    return any(isinstance(a, (ListVariable, DictVariable, SetVariable)) for a in args)


def _fold(tx: Translator, op: Any, values: list[Any]) -> VariableTracker:
    try:
        result = op(*values)
    except Exception as e:
        raise PythonError(e) from None
    return tx.fold(result)


def _sequence_op(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``+`` and ``*`` of lists and tuples (a namedtuple gives a plain tuple, a Size a Size)."""
    lhs, rhs = args
    if op is operator.mul and isinstance(rhs, BaseSequenceVariable):
        lhs, rhs = rhs, lhs  # 3 * [x]
    if op is operator.add and (
        (isinstance(lhs, ListVariable) and isinstance(rhs, ListVariable))
        or (isinstance(lhs, TupleVariable) and isinstance(rhs, TupleVariable))
    ):
        if _exact_tuple(lhs) and _exact_tuple(rhs) and not (lhs.items and rhs.items):
            return rhs if not lhs.items else lhs  # CPython gives back the other tuple itself
        items = [*lhs.items, *rhs.items]
    elif (
        op is operator.mul
        and rhs.is_python_constant()
        and type(rhs.as_python_constant()) in (int, bool)
    ):
        if _exact_tuple(lhs) and (rhs.as_python_constant() == 1 or not lhs.items):
            return lhs  # CPython gives back the tuple itself
        items = list(lhs.items) * rhs.as_python_constant()
    else:
        error = _sequence_error(tx, op, args)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("operator", f"{op.__name__} on {lhs} and {rhs}")
    if isinstance(lhs, ListVariable):
        return ListVariable(items)
    return TupleVariable(items, is_size=lhs.is_size)


#: The methods that decide whether an operand takes part, beyond the operator's own: ``*`` takes
#: an integer (``__index__``), ``operator.concat`` a sequence (``__getitem__``).
_SEQUENCE_METHODS = {
    operator.add: ("__add__", "__radd__"),
    operator.mul: ("__mul__", "__rmul__", "__index__"),
    operator.concat: ("__add__", "__radd__", "__getitem__"),
    operator.iconcat: ("__add__", "__radd__", "__iadd__", "__getitem__"),
}


def _sequence_error(tx: Translator, op: Any, args: list[VariableTracker]) -> Exception | None:
    """CPython's TypeError for ``+``, ``*`` or ``operator.concat`` of a list or tuple with an
    operand that cannot take part (``[x] + 1``, ``[x] * 1.5``, ``len * (x,)``,
    ``operator.concat(7, [x])``), or None where that is not known. The error depends only on the
    operands' types: CPython's own, from the operator run on stand-ins (``_stand_in``)."""
    values = [_stand_in(vt, _SEQUENCE_METHODS[op]) for vt in args]
    if any(v is _UNKNOWN for v in values):
        return None
    try:
        op(*values)
    except TypeError as e:
        return e
    return None


_UNKNOWN = object()


def _stand_in(vt: VariableTracker, methods: tuple[str, ...]) -> Any:
    """What ``vt`` is for an operation whose outcome depends only on its type: an empty builtin
    container of its type, its value where it is an immutable constant, else an instance of an
    empty class of the same C name where its type defines none of ``methods``; ``_UNKNOWN``
    otherwise (a tensor, a symbolic number, a class defining one of them)."""
    containers = (ListVariable, TupleVariable, DictVariable, SetVariable)
    if isinstance(vt, containers) and vt.python_type() in (list, tuple, dict, set, frozenset):
        return vt.python_type()()
    if vt.is_python_constant() and not _mutable([vt]) and not is_symbolic(vt):
        value = vt.as_python_constant()
        if not any(_python_defined(type(value), m) for m in methods):
            return value  # what the operator calls on it is C code: no user code runs
    try:
        cls = vt.python_type()
    except Unsupported:
        return _UNKNOWN
    if isinstance(vt, (TensorVariable, SymNodeVariable)) or any(_defines(cls, m) for m in methods):
        return _UNKNOWN
    return type(container_methods.c_name(cls), (), {})()


#: What makes torch's argument parsing take an object where a tensor method expects a tensor or a
#: number (or makes the result depend on the tensor's value: ``__index__`` in ``[x] * t``).
_TENSOR_PROTOCOLS = frozenset(
    {
        "__torch_function__",
        "__torch_dispatch__",
        "__index__",
        "__int__",
        "__float__",
        "__complex__",
        "__array__",
        "__array_ufunc__",
        "__array_function__",
    }
)


def _declines(self: Any, other: Any) -> Any:
    return NotImplemented


@functools.cache
def _tensor_stand_in_class(name: str) -> type:
    """A class named as a tensor's whose operator methods all give NotImplemented, as a tensor's
    do for an operand they do not take (it has no ``__divmod__``, as a tensor has none)."""
    names = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
    for declared in OPERATORS.values():
        if declared.kind in ("binary", "inplace"):
            names.update(n for n in (declared.dunder, declared.reflected) if n)
    return type(name, (), {**dict.fromkeys(names, _declines), "__hash__": object.__hash__})


class _Bound:
    def method(self) -> None:
        """What a bound method is replaced by: it implements only ``==``, ``!=`` and ``hash``."""


def _tensor_stand_in(tensor: VariableTracker) -> Any:
    return _tensor_stand_in_class(tensor.python_type().__name__)()


def _plain_tensor(vt: VariableTracker) -> bool:
    return isinstance(vt, TensorVariable) and vt.python_type() in (torch.Tensor, torch.nn.Parameter)


def _refused_stand_in(vt: VariableTracker, methods: set[str], numbers: bool) -> Any:
    """What an operand a tensor's methods do not take stands for in ``tensor_operands_outcome``
    (``_UNKNOWN`` where the tensor may take it, or its own methods could run Python code): a
    builtin value other than a number (a container: an empty one of its type, whose methods give
    NotImplemented for a tensor whatever it holds), an object of Python classes defining none of
    ``methods`` nor a protocol torch reads (an instance of an empty class of its name), a bound
    method. A number too where the tensor has no method for the operator (not ``numbers``)."""
    if isinstance(vt, TensorVariable | SymNodeVariable) or is_symbolic(vt):
        return _UNKNOWN
    if isinstance(vt, UserObjectVariable) and not isinstance(vt, NNModuleVariable):
        cls = vt.python_type()
        names = methods | _TENSOR_PROTOCOLS
        if all(
            base is object or (type(base) is type and not names & vars(base).keys())
            for base in cls.__mro__
        ):
            return type(cls.__name__, (), {})()
        return _UNKNOWN
    if concrete.is_bound_method(vt):
        return _Bound().method
    containers = (ListVariable, TupleVariable, DictVariable, SetVariable)
    if isinstance(vt, containers) and vt.python_type() in (list, tuple, dict, set, frozenset):
        return vt.python_type()()
    if vt.is_python_constant():
        value = vt.as_python_constant()
        cls = type(value)
        if cls.__module__ == "builtins" and not (numbers and cls in (bool, int, float, complex)):
            return value
    return _UNKNOWN


def tensor_operands_outcome(op: Any, args: list[VariableTracker]) -> Any:
    """``op(a, b)`` (a binary operator, a comparison or ``divmod``) of a plain tensor and an operand
    its methods do not take: the outcome CPython gives, the same whatever the tensor holds (the
    TypeError it raises, or ``==``'s identity answer), or ``_UNKNOWN``. Run on stand-ins: the
    tensor an object whose methods all decline; a sequence repeated (``*``, which reads the
    tensor's ``__index__``) and a string formatted with ``%`` (which reads it as a mapping) are
    left out."""
    tensors = sum(map(_plain_tensor, args)) if len(args) == 2 else 0
    if op is divmod and tensors == 2:  # a tensor has neither ``__divmod__`` nor ``__rdivmod__``
        return concrete.error_of(divmod, *(_tensor_stand_in(a) for a in args))
    if tensors != 1:
        return _UNKNOWN
    tensor, other = args if _plain_tensor(args[0]) else args[::-1]
    declared = OPERATORS.get(op)
    binary = OPERATORS[declared.binary] if declared and declared.binary else declared
    if declared is None:
        methods = {f"__{op.__name__}__", f"__r{op.__name__}__"}
    else:
        methods = {declared.dunder, binary.dunder, binary.reflected} - {None}
        if declared.kind == "comparison":
            methods.update(_ORDERING, ("__eq__", "__ne__"))
    value = _refused_stand_in(other, methods, numbers=op is not divmod)
    if value is _UNKNOWN:
        return _UNKNOWN
    if declared is not None and declared.binary and args[0] is other:
        if _defines(type(value), declared.dunder):
            return _UNKNOWN  # ``xs += t`` extends the list by the tensor's items
    base = binary.fn if binary else op
    if (base is operator.mul and isinstance(value, (list, tuple, str, bytes))) or (
        base is operator.mod and isinstance(value, (str, bytes))
    ):
        return _UNKNOWN
    stand_in = _tensor_stand_in(tensor)
    values = [stand_in, value] if args[0] is tensor else [value, stand_in]
    try:
        result = op(*values)
    except TypeError as e:
        return e
    return result if type(result) is bool else _UNKNOWN


def _python_defined(cls: type, name: str) -> bool:
    """Whether ``cls`` finds ``name`` in a class written in Python (not a C type's slot)."""
    found = next((vars(base)[name] for base in cls.__mro__ if name in vars(base)), None)
    return found is not None and not isinstance(found, _C_METHODS)


_C_METHODS = (types.WrapperDescriptorType, types.MethodDescriptorType, types.BuiltinFunctionType)


def _exact_tuple(vt: VariableTracker) -> bool:
    return isinstance(vt, TupleVariable) and vt.python_type() is tuple


def _defines(cls: type, name: str) -> bool:
    """Whether ``cls`` or a base defines ``name``, as CPython looks an operator's method up (not
    ``hasattr(cls, name)``, which also finds the metaclass's: ``type.__or__`` makes unions)."""
    return any(name in vars(base) for base in cls.__mro__)


def _user_dunder(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    name, reflected = OPERATORS[op].dunder, OPERATORS[op].reflected
    if name and isinstance(args[0], UserObjectVariable) and _defines(type(args[0].value), name):
        return args[0].call_method(tx, name, args[1:], {})
    if (
        reflected
        and len(args) == 2
        and isinstance(args[1], UserObjectVariable)
        and _defines(type(args[1].value), reflected)
    ):
        return args[1].call_method(tx, reflected, [args[0]], {})
    return None


def getitem_tensor(
    tx: Translator, tensor: VariableTracker, key: VariableTracker
) -> VariableTracker:
    if not isinstance(tensor, TensorVariable):
        if isinstance(tensor, (TupleVariable, ListVariable)) and key.is_python_constant():
            return getitem(tx, tensor, key)
        if isinstance(tensor, DictVariable) and not isinstance(tensor, ModelOutputVariable):
            return call_container_method(tx, tensor, "__getitem__", [key], {})
        known = _known_index(key)
        if isinstance(tensor, (TupleVariable, ListVariable)) and known is not None:
            return getitem(tx, tensor, ConstantVariable(known))
        user = _user_item_method(tx, "__getitem__", tensor, [key])
        if user is not None:
            return user
        raise Unsupported("index", f"indexing {tensor} with a tensor")
    key = index_for_tensor(tx, tensor, key)
    return tx.output.call_function(operator.getitem, (tensor, key), {})


def _known_index(key: VariableTracker) -> int | None:
    """The value ``operator.index`` gives for an integer 0-dim tensor made in the trace from
    Python numbers (``torch.as_tensor(2)``), which its fake tensor carries (``constant``, kept
    through the ops fake tensors can fold, dropped by the others); None when it is not known."""
    fake = getattr(key, "example", None) if isinstance(key, TensorVariable) else None
    constant = getattr(fake, "constant", None)
    if constant is None or constant.dim() != 0 or constant.is_floating_point():
        return None
    if constant.dtype in (torch.bool, torch.complex64, torch.complex128):
        return None
    return operator.index(constant)


def _index_stand_in(key: VariableTracker) -> object | None:
    """What a key that is not a constant stands for where a list or tuple rejects it whatever it
    holds (``container_methods.index_stand_in``): a slice, the slice of its bounds' stand-ins
    (``slice(obj)``: CPython's "slice indices must be integers..."); None where unknown."""
    if not isinstance(key, SliceVariable):
        return container_methods.index_stand_in(key)
    bounds = []
    for part in key.parts:
        if isinstance(part, ConstantVariable):
            bounds.append(part.value)
        elif (bound := container_methods.index_stand_in(part)) is not None:
            bounds.append(bound)
        else:
            return None
    return slice(*bounds)


def getitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        return getitem_tensor(tx, obj, key)
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        return numpy_arrays.getitem(tx, obj, key)
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        return obj.getitem(tx, key.as_python_constant())
    if isinstance(obj, DictVariable):  # ``__missing__`` of defaultdict and Counter included
        return call_container_method(tx, obj, "__getitem__", [key], {})
    user = _user_item_method(tx, "__getitem__", obj, [key])
    if user is not None:  # any key: a ``UserDict``'s, a ``ChainMap``'s
        return user
    if not key.is_python_constant():
        stand_in = _index_stand_in(key)
        if isinstance(obj, (TupleVariable, ListVariable)) and stand_in is not None:
            shadow = [None] * len(obj.items)  # CPython's TypeError, naming the key's type
            _fold(
                tx,
                operator.getitem,
                [tuple(shadow) if obj.python_type() is tuple else shadow, stand_in],
            )
        raise Unsupported("index", f"{obj}[{key}] with a non-constant key")
    index = key.as_python_constant()
    if isinstance(obj, (TupleVariable, ListVariable)):
        try:
            if isinstance(index, slice):
                return (
                    obj.clone(items=obj.items[index], source=None)
                    if isinstance(obj, ListVariable)
                    else TupleVariable(obj.items[index], is_size=obj.is_size)
                )
            return obj.items[index]
        except (IndexError, TypeError):
            # CPython's message names the sequence's type ("tuple index out of range")
            shadow = [None] * len(obj.items)
            _fold(
                tx,
                operator.getitem,
                [tuple(shadow) if isinstance(obj, TupleVariable) else shadow, index],
            )
            raise
    if isinstance(obj, ModelOutputVariable):
        return obj.getitem(tx, index)
    if isinstance(obj, NNModuleVariable):
        return obj.getitem(tx, index)
    if obj.is_python_constant():
        return _fold(tx, operator.getitem, [obj.as_python_constant(), index])
    user = _user_dunder(tx, operator.getitem, [obj, key])
    if user is not None:
        return user
    raise Unsupported("index", f"indexing {obj}")


def setitem(
    tx: Translator, obj: VariableTracker, key: VariableTracker, value: VariableTracker
) -> None:
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        numpy_arrays.setitem(tx, obj, key, value)
        return
    if isinstance(obj, TensorVariable):
        key = index_for_tensor(tx, obj, key)
        tx.output.call_function(operator.setitem, (obj, key, value), {})
        return
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        obj.setitem(key.as_python_constant(), value)
        return
    if _user_item_method(tx, "__setitem__", obj, [key, value]) is not None:
        return
    call_container_method(tx, obj, "__setitem__", [key, value], {})


def _user_item_method(
    tx: Translator, name: str, obj: VariableTracker, args: list[VariableTracker]
) -> VariableTracker | None:
    """``obj[key]`` / ``obj[key] = value`` inlined where ``obj`` is a user object (not a module)
    whose class defines ``name`` in Python (``UserDict``, ``ChainMap``, a user mapping); None
    otherwise."""
    if isinstance(obj, NNModuleVariable) or not _python_method(obj, name):
        return None
    return obj.call_method(tx, name, args, {})


call_container_method = container_methods.call_method
