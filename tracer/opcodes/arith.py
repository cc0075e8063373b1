"""Operators: binary, in-place, comparison, identity, containment, unary, subscript and slices.

The opcode only picks the Python operator; ``variables/operators.py`` decides what it means for the
operand kinds (fold constants, add a graph node for tensors, call ``__add__`` of a user object...).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from bytecode import BinaryOp, Compare, Instr

from ..exc import Unsupported
from ..variables import dispatch
from ..variables.base import VariableTracker
from ..variables.constants import ConstantVariable, make_slice
from ..variables.containers import TupleVariable
from .control import bool_operand, truth_operand
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator

BINARY_OPERATORS = {
    BinaryOp.ADD: operator.add,
    BinaryOp.AND: operator.and_,
    BinaryOp.FLOOR_DIVIDE: operator.floordiv,
    BinaryOp.LSHIFT: operator.lshift,
    BinaryOp.MATRIX_MULTIPLY: operator.matmul,
    BinaryOp.MULTIPLY: operator.mul,
    BinaryOp.REMAINDER: operator.mod,
    BinaryOp.OR: operator.or_,
    BinaryOp.POWER: operator.pow,
    BinaryOp.RSHIFT: operator.rshift,
    BinaryOp.SUBTRACT: operator.sub,
    BinaryOp.TRUE_DIVIDE: operator.truediv,
    BinaryOp.XOR: operator.xor,
    BinaryOp.INPLACE_ADD: operator.iadd,
    BinaryOp.INPLACE_AND: operator.iand,
    BinaryOp.INPLACE_FLOOR_DIVIDE: operator.ifloordiv,
    BinaryOp.INPLACE_LSHIFT: operator.ilshift,
    BinaryOp.INPLACE_MATRIX_MULTIPLY: operator.imatmul,
    BinaryOp.INPLACE_MULTIPLY: operator.imul,
    BinaryOp.INPLACE_REMAINDER: operator.imod,
    BinaryOp.INPLACE_OR: operator.ior,
    BinaryOp.INPLACE_POWER: operator.ipow,
    BinaryOp.INPLACE_RSHIFT: operator.irshift,
    BinaryOp.INPLACE_SUBTRACT: operator.isub,
    BinaryOp.INPLACE_TRUE_DIVIDE: operator.itruediv,
    BinaryOp.INPLACE_XOR: operator.ixor,
}
COMPARE_OPERATORS = {
    Compare.LT: operator.lt,
    Compare.LE: operator.le,
    Compare.EQ: operator.eq,
    Compare.NE: operator.ne,
    Compare.GT: operator.gt,
    Compare.GE: operator.ge,
}
UNARY_OPERATORS = {
    "UNARY_NEGATIVE": operator.neg,
    "UNARY_POSITIVE": operator.pos,
    "UNARY_INVERT": operator.invert,
    "UNARY_NOT": operator.not_,
}


@handler("BINARY_OP", pops=2)
def binary_op(tx: Translator, inst: Instr) -> None:
    """(lhs rhs -- result)  https://docs.python.org/3.11/library/dis.html#opcode-BINARY_OP"""
    rhs, lhs = tx.pop(), tx.pop()
    tx.push(dispatch.call_operator(tx, BINARY_OPERATORS[inst.arg], [lhs, rhs]))


@handler("COMPARE_OP", pops=2)
def compare_op(tx: Translator, inst: Instr) -> None:
    """(lhs rhs -- result)  https://docs.python.org/3.11/library/dis.html#opcode-COMPARE_OP"""
    rhs, lhs = tx.pop(), tx.pop()
    op = Compare(inst.arg)
    # NOTE(3.13): the ``*_CAST`` forms (flag 16) also convert the result with ``bool`` (a fused
    # TO_BOOL before a jump).
    result = dispatch.call_operator(tx, COMPARE_OPERATORS[Compare(op & 15)], [lhs, rhs])
    tx.push(bool_operand(tx, result) if op & 16 else result)


@handler("IS_OP", pops=2)
def is_op(tx: Translator, inst: Instr) -> None:
    """(lhs rhs -- bool)  ``is`` / ``is not`` (arg 1)."""
    rhs, lhs = tx.pop(), tx.pop()
    result = dispatch.is_same(tx, lhs, rhs)
    tx.push(ConstantVariable(result != bool(inst.arg)))


@handler("CONTAINS_OP", pops=2)
def contains_op(tx: Translator, inst: Instr) -> None:
    """(item container -- bool)  ``in`` / ``not in`` (arg 1)."""
    container, item = tx.pop(), tx.pop()
    result = dispatch.contains(tx, container, item)
    tx.push(ConstantVariable(result != bool(inst.arg)))


def _unary_handler(name: str):
    def unary(tx: Translator, inst: Instr) -> None:
        """(value -- result)  UNARY_NEGATIVE / POSITIVE / INVERT / NOT."""
        value = truth_operand(tx.pop()) if inst.name == "UNARY_NOT" else tx.pop()
        tx.push(dispatch.call_operator(tx, UNARY_OPERATORS[inst.name], [value]))

    unary.__name__ = name.lower()
    return unary


for _name in UNARY_OPERATORS:
    handler(_name, pops=1)(_unary_handler(_name))


@handler("BINARY_SUBSCR", pops=2)
def binary_subscr(tx: Translator, inst: Instr) -> None:
    """(container key -- item)"""
    key, obj = tx.pop(), tx.pop()
    tx.push(dispatch.call_operator(tx, operator.getitem, [obj, key]))


@handler("STORE_SUBSCR")
def store_subscr(tx: Translator, inst: Instr) -> None:
    """(value container key --)  container[key] = value"""
    key, obj, value = tx.pop(), tx.pop(), tx.pop()
    dispatch.setitem(tx, obj, key, value)


@handler("DELETE_SUBSCR")
def delete_subscr(tx: Translator, inst: Instr) -> None:
    """(container key --)  del container[key]"""
    key, obj = tx.pop(), tx.pop()
    dispatch.call_operator(tx, operator.delitem, [obj, key])


@handler("BINARY_SLICE", pops=3)
def binary_slice(tx: Translator, inst: Instr) -> None:
    """(container start end -- container[start:end])  3.12"""
    end, start, obj = tx.pop(), tx.pop(), tx.pop()
    tx.push(dispatch.call_operator(tx, operator.getitem, [obj, _slice_vt(start, end)]))


@handler("STORE_SLICE")
def store_slice(tx: Translator, inst: Instr) -> None:
    """(value container start end --)  3.12: container[start:end] = value"""
    end, start, obj, value = tx.pop(), tx.pop(), tx.pop(), tx.pop()
    dispatch.setitem(tx, obj, _slice_vt(start, end), value)


def _slice_vt(start: VariableTracker, end: VariableTracker) -> VariableTracker:
    return make_slice([start, end])


@handler("CALL_INTRINSIC_1")
def call_intrinsic_1(tx: Translator, inst: Instr) -> None:
    """(value -- result)  3.12: UNARY_POSITIVE, LIST_TO_TUPLE, ... by number."""
    kind = getattr(inst.arg, "name", str(inst.arg))
    value = tx.pop()
    if kind == "INTRINSIC_UNARY_POSITIVE":
        tx.push(dispatch.call_operator(tx, operator.pos, [value]))
    elif kind == "INTRINSIC_LIST_TO_TUPLE":
        tx.push(TupleVariable(value.unpack(tx)))
    elif kind == "INTRINSIC_STOPITERATION_ERROR" and not issubclass(
        value.python_type(), StopIteration
    ):
        tx.push(value)  # a generator lets out an exception other than StopIteration unchanged
    else:
        raise Unsupported("opcode", f"CALL_INTRINSIC_1 {kind}")
