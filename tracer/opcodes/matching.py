"""Structural pattern matching: MATCH_SEQUENCE, MATCH_MAPPING, MATCH_KEYS, MATCH_CLASS, GET_LEN.

A subject is a sequence or a mapping by its type's flags, as in CPython (``Py_TPFLAGS_SEQUENCE``,
``Py_TPFLAGS_MAPPING``: ``list``, ``tuple``, ``range``, ``dict`` and what subclasses or registers
with ``collections.abc.Sequence``/``Mapping``; never ``str``, ``bytes`` or a tensor). Class
patterns and mapping keys run the pure-Python ``polyfills/matching.py``, traced like user code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ..polyfills import matching
from ..variables import dispatch
from ..variables.constants import ConstantVariable
from ..variables.functions import BuiltinVariable, UserFunctionVariable
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator

_SEQUENCE, _MAPPING, _MATCH_SELF = 1 << 5, 1 << 6, 1 << 22


def _has_flag(tx: Translator, flag: int) -> ConstantVariable:
    return ConstantVariable(bool(tx.peek().python_type().__flags__ & flag))


@handler("MATCH_SEQUENCE")
def match_sequence(tx: Translator, inst: Instr) -> None:
    """(subject -- subject is_sequence)  https://docs.python.org/3.11/library/dis.html#opcode-MATCH_SEQUENCE"""
    tx.push(_has_flag(tx, _SEQUENCE))


@handler("MATCH_MAPPING")
def match_mapping(tx: Translator, inst: Instr) -> None:
    """(subject -- subject is_mapping)"""
    tx.push(_has_flag(tx, _MAPPING))


@handler("GET_LEN")
def get_len(tx: Translator, inst: Instr) -> None:
    """(subject -- subject len(subject))"""
    tx.push(dispatch.call(tx, BuiltinVariable(len), [tx.peek()], {}))


@handler("MATCH_KEYS")
def match_keys(tx: Translator, inst: Instr) -> None:
    """(subject keys -- subject keys values_or_None)"""
    subject, keys = tx.peek(2), tx.peek()
    tx.push(UserFunctionVariable(matching.match_keys).call_function(tx, [subject, keys], {}))


@handler("MATCH_CLASS")
def match_class(tx: Translator, inst: Instr) -> None:
    """(subject cls names -- attributes_or_None)  ``inst.arg`` positional sub-patterns."""
    names = tx.pop()
    cls = tx.pop()
    subject = tx.pop()
    value = cls.as_python_constant() if cls.is_python_constant() else None
    match_self = isinstance(value, type) and bool(value.__flags__ & _MATCH_SELF)
    args = [subject, cls, ConstantVariable(inst.arg), names, ConstantVariable(match_self)]
    tx.push(UserFunctionVariable(matching.match_class).call_function(tx, args, {}))
