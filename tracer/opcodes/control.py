"""Control flow: jumps on constants (specialised), loops over known iterators, returns and raises.

Calling a generator function makes a ``GeneratorVariable`` (``run_generator``): its frame runs up to
the next YIELD_VALUE each time an item is needed, as CPython would run it.

A conditional jump on a value that is only known at run time (a tensor, a number computed from
tensor data) cannot be decided here. Where a failed check can rerun the call, the trace assumes a
side and checks it after the graph (``deferred_checks.py``): the side that goes on where the other
only raises (a validation check), else the side this call's values take (``speculation.py``).
Otherwise the jump is ``Unsupported("data_dependent")``, which becomes a graph break.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ...codegen.pyversion import FOR_ITER_EXIT_SKIPS, SEND_KEEPS_RECEIVER
from ..breaks import deferred_checks
from ..exc import ReturnValue, Unsupported
from ..variables import dispatch
from ..variables.base import VariableTracker
from ..variables.constants import ConstantVariable, SymNodeVariable
from ..variables.iterators import GeneratorVariable, IteratorVariable, Yielded, send_into
from ..variables.objects import UserIteratorVariable, python_next
from ..variables.tensors import TensorBoolVariable, TensorTruthVariable, TensorVariable
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", frame_only=True)
def jump_forward(tx: Translator, inst: Instr) -> None:
    """(--)  unconditional jump."""
    tx.jump(inst.arg)


def _jump_handler(name: str, jump_when: bool | None, none_test: bool, pop: str):
    """Conditional jumps: ``jump_when`` is the truth value that jumps; ``none_test`` compares to
    None; ``pop`` is "always" (POP_JUMP_*) or "if_no_jump" (JUMP_IF_*_OR_POP)."""

    def conditional_jump(tx: Translator, inst: Instr) -> None:
        value = truth_operand(tx.peek())
        assumed = None
        if not none_test and _data_dependent(value):
            assumed = deferred_checks.assume(tx, value, inst, jump_when)
        if none_test:
            truth = dispatch.is_none(tx, value)
        elif assumed is not None:
            truth = assumed
        else:
            truth = dispatch.truth(tx, value)
        taken = truth == jump_when
        if pop == "always" or not taken:
            tx.pop()
        if taken:
            tx.jump(inst.arg)

    conditional_jump.__name__ = name.lower()
    return conditional_jump


def _data_dependent(value: VariableTracker) -> bool:
    """Is the truth of ``value`` only known at run time: a tensor, or a number from its data?"""
    return isinstance(value, TensorVariable) or (
        isinstance(value, SymNodeVariable) and value.unbacked
    )


_CONDITIONAL = {
    "POP_JUMP_IF_FALSE": (False, False, "always"),
    "POP_JUMP_IF_TRUE": (True, False, "always"),
    "POP_JUMP_IF_NONE": (True, True, "always"),
    "POP_JUMP_IF_NOT_NONE": (False, True, "always"),
    "JUMP_IF_FALSE_OR_POP": (False, False, "if_no_jump"),
    "JUMP_IF_TRUE_OR_POP": (True, False, "if_no_jump"),
}
for _name, (_when, _none, _pop) in _CONDITIONAL.items():
    # NOTE(3.12): 3.11 spells POP_JUMP_* with FORWARD/BACKWARD; one handler serves all three.
    _names = [_name]
    if _name.startswith("POP_JUMP_IF"):
        _names += [
            _name.replace("POP_JUMP_IF", f"POP_JUMP_{d}_IF") for d in ("FORWARD", "BACKWARD")
        ]
    # JUMP_IF_*_OR_POP pops its operand only where it does not jump: no one count
    _pops = 1 if _pop == "always" else None
    handler(*_names, pops=_pops)(_jump_handler(_name, _when, _none, _pop))


@handler("TO_BOOL", pops=1)
def to_bool(tx: Translator, inst: Instr) -> None:
    """(value -- bool)  3.13, before conditional jumps and ``UNARY_NOT``.
    https://docs.python.org/3.13/library/dis.html#opcode-TO_BOOL"""
    tx.push(bool_operand(tx, tx.pop()))


def bool_operand(tx: Translator, value: VariableTracker) -> VariableTracker:
    """``bool(value)`` for the jump or ``UNARY_NOT`` that comes next (``TO_BOOL``, ``COMPARE_OP``'s
    cast flag). A tensor's truth needs its data: it becomes a ``TensorTruthVariable``, and the next
    instruction breaks the graph on the tensor, as on 3.11/3.12."""
    if isinstance(value, TensorVariable):
        return TensorTruthVariable(value)
    if isinstance(value, TensorBoolVariable):  # already a bool: its tensor is what jumps test
        return value
    if isinstance(value, SymNodeVariable) and value.unbacked:
        return value  # a number from tensor data: the jump decides (``deferred_checks.assume``)
    return ConstantVariable(dispatch.truth(tx, value))


def truth_operand(value: VariableTracker) -> VariableTracker:
    """What a jump or ``UNARY_NOT`` tests: 3.13's ``bool(tensor)`` stands for the tensor, as does
    a ``bool(tensor)`` called in the trace."""
    if isinstance(value, (TensorTruthVariable, TensorBoolVariable)):
        return value.tensor
    return value


@handler("GET_ITER", pops=1)
def get_iter(tx: Translator, inst: Instr) -> None:
    """(iterable -- iterator)"""
    tx.push(dispatch.get_iter(tx, tx.pop()))


@handler("FOR_ITER")
def for_iter(tx: Translator, inst: Instr) -> None:
    """(iterator -- iterator item) or, exhausted, (iterator --) and jump."""
    iterator = tx.peek()
    if python_next(iterator):  # an iterator written as a class, as a resumed loop receives it
        tx.pop()
        tx.push(iterator := UserIteratorVariable([], obj=iterator))
    if not isinstance(iterator, IteratorVariable):
        raise Unsupported("for_iter", f"iteration over {iterator}")
    item = iterator.next_item(tx)
    if item is not None:
        tx.push(item)
        return
    tx.pop()
    tx.jump(inst.arg)
    # NOTE(3.12): an exhausted FOR_ITER skips the END_FOR at its target (3.13: and a POP_TOP).
    for name in FOR_ITER_EXIT_SKIPS:
        if tx.ip < len(tx.instructions) and tx.instructions[tx.ip].name == name:
            tx.ip += 1


@handler("RETURN_VALUE")
def return_value(tx: Translator, inst: Instr) -> None:
    """(value --)  ends this frame."""
    raise ReturnValue(tx.pop())


@handler("RETURN_CONST")
def return_const(tx: Translator, inst: Instr) -> None:
    """(--)  3.12: return a constant."""
    raise ReturnValue(ConstantVariable(inst.arg))


def run_generator(tx: Translator) -> GeneratorVariable:
    """Calling a generator function: its frame runs lazily, one item per ``next``."""
    return GeneratorVariable([], frame=tx)


@handler("RETURN_GENERATOR")
def return_generator(tx: Translator, inst: Instr) -> None:
    """(-- None)  starts a generator frame; ``run_generator`` already owns it: push a value."""
    tx.push(ConstantVariable(None))


@handler("GET_YIELD_FROM_ITER")
def get_yield_from_iter(tx: Translator, inst: Instr) -> None:
    """(iterable -- iterator)  before ``yield from``: a generator stays itself."""
    tx.push(dispatch.get_iter(tx, tx.pop()))


@handler("SEND")
def send(tx: Translator, inst: Instr) -> None:
    """(receiver value -- receiver item) or, exhausted, (receiver value -- [receiver] result) and
    jump. A value other than None (the outer generator was sent it) goes on into a generator
    made in the trace (``send_into``); what the receiver returns is its result."""
    value, receiver = tx.pop(), tx.peek()
    if not (value.is_python_constant() and value.as_python_constant() is None):
        if not isinstance(receiver, GeneratorVariable):
            raise Unsupported("generator", f"a value sent into {receiver} (`.send(x)`)")
        send_into(receiver, value)
    if not isinstance(receiver, IteratorVariable):
        raise Unsupported("generator", f"`yield from` over {receiver}")
    item = receiver.next_item(tx)
    if item is not None:
        tx.push(item)
        return
    if not SEND_KEEPS_RECEIVER:
        tx.pop()
    tx.push(getattr(receiver, "result", None) or ConstantVariable(None))
    tx.jump(inst.arg)


@handler("END_SEND")
def end_send(tx: Translator, inst: Instr) -> None:
    """(receiver result -- result)  3.12: the end of ``yield from``."""
    result = tx.pop()
    tx.pop()
    tx.push(result)


@handler("YIELD_VALUE")
def yield_value(tx: Translator, inst: Instr) -> None:
    """(value -- sent)  suspends the generator frame with the item; iteration always sends None."""
    value = tx.pop()
    tx.push(ConstantVariable(None))  # what `next()` sends back when the frame resumes
    raise Yielded(value)
