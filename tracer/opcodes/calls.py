"""Calls: PRECALL/CALL/KW_NAMES, CALL_FUNCTION_EX and MAKE_FUNCTION.

3.11 and 3.12 share the convention ``[NULL, callable, *args]`` or ``[callable, self, *args]`` under
the arguments; ``KW_NAMES`` names the last arguments of the next ``CALL``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ..exc import Unsupported
from ..variables.base import NULL
from ..variables.containers import DictVariable, TupleVariable
from ..variables.functions import NestedFunctionVariable
from . import handler

if TYPE_CHECKING:
    from ..translator import Translator


@handler("PRECALL", until=(3, 11))
def precall(tx: Translator, inst: Instr) -> None:
    """(--)  3.11 only; the work happens in CALL."""


@handler("KW_NAMES", until=(3, 12))
def kw_names(tx: Translator, inst: Instr) -> None:
    """(--)  names of the keyword arguments of the next CALL (arg is the tuple itself)."""
    tx.kw_names = tuple(inst.arg)


@handler("CALL")
def call(tx: Translator, inst: Instr) -> None:
    """(NULL|meth fn|self args*n -- result)  https://docs.python.org/3.11/library/dis.html#opcode-CALL"""
    args = tx.popn(inst.arg)
    second, first = tx.pop(), tx.pop()
    fn, args = (second, args) if first is NULL else (first, [second, *args])
    kw_names, tx.kw_names = tx.kw_names, ()
    if kw_names:
        kwargs = dict(zip(kw_names, args[len(args) - len(kw_names) :], strict=True))
        args = args[: len(args) - len(kw_names)]
    else:
        kwargs = {}
    tx.push(tx.call_direct(fn, args, kwargs))


@handler("CALL_FUNCTION_EX")
def call_function_ex(tx: Translator, inst: Instr) -> None:
    """(NULL fn args_tuple [kwargs_dict] -- result)  ``fn(*args, **kwargs)``."""
    kwargs = tx.pop() if inst.arg & 1 else DictVariable({})
    args = tx.pop()
    fn = tx.pop()
    if tx.stack and tx.peek() is NULL:
        tx.pop()
    if not isinstance(kwargs, DictVariable):
        raise Unsupported("call_ex", f"**kwargs must be a dict, got {kwargs}")
    positional = tx.dispatch.iterate(tx, args)
    tx.push(tx.call_direct(fn, positional, dict(kwargs.items)))


@handler("MAKE_FUNCTION")
def make_function(tx: Translator, inst: Instr) -> None:
    """(defaults? kwdefaults? annotations? closure? code -- function)  flags in arg."""
    code = tx.pop().as_python_constant()
    closure = tx.pop() if inst.arg & 0x08 else TupleVariable([])
    if inst.arg & 0x04:
        tx.pop()  # annotations: not needed to run the function
    kwdefaults = tx.pop() if inst.arg & 0x02 else DictVariable({})
    defaults = tx.pop() if inst.arg & 0x01 else TupleVariable([])
    cells = dict(zip(code.co_freevars, closure.items, strict=True))
    tx.push(
        NestedFunctionVariable(
            code, tx.f_globals, tuple(defaults.items), dict(kwdefaults.items), cells
        )
    )
