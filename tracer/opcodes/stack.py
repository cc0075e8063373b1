"""Stack shuffling: POP_TOP, PUSH_NULL, COPY, SWAP, NOP-like instructions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ..variables.base import NULL
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


@handler("NOP", "RESUME", "EXTENDED_ARG", "CACHE", frame_only=True)
def nop(tx: Translator, inst: Instr) -> None:
    """(--)  https://docs.python.org/3.11/library/dis.html#opcode-NOP"""


@handler("POP_TOP", frame_only=True)
def pop_top(tx: Translator, inst: Instr) -> None:
    """(value --)"""
    tx.pop()


@handler("PUSH_NULL", frame_only=True)
def push_null(tx: Translator, inst: Instr) -> None:
    """(-- NULL)"""
    tx.push(NULL)


@handler("COPY", frame_only=True)
def copy(tx: Translator, inst: Instr) -> None:
    """(... x -- ... x x_i)  copies the i-th item from the top."""
    tx.push(tx.peek(inst.arg))


@handler("SWAP", frame_only=True)
def swap(tx: Translator, inst: Instr) -> None:
    """(... a ... b -- ... b ... a)  swaps TOS with the i-th item."""
    tx.stack[-1], tx.stack[-inst.arg] = tx.stack[-inst.arg], tx.stack[-1]


@handler("END_FOR")
def end_for(tx: Translator, inst: Instr) -> None:
    """(a b --)  3.12: pops the exhausted iterator and its sentinel; 3.13: (a --)."""
    tx.popn(-inst.stack_effect())
