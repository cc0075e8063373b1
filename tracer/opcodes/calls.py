"""Calls: PRECALL/CALL/KW_NAMES/CALL_KW, CALL_FUNCTION_EX, MAKE_FUNCTION/SET_FUNCTION_ATTRIBUTE.

Under the arguments lie two slots: ``[NULL, callable]`` or ``[callable, self]`` on 3.11 and 3.12,
``[callable, NULL|self]`` on 3.13 (``pop_callable`` reads both, ``push_callable`` pushes a loaded
callable with its NULL). Keyword names come from ``KW_NAMES`` (3.11/3.12) or, for ``CALL_KW``
(3.13), from a tuple on the stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ...codegen.pyversion import MAKE_FUNCTION_TAKES_FLAGS, NULL_ABOVE_CALLABLE
from ..exc import PythonError, Unsupported
from ..variables import dispatch
from ..variables.base import NULL, VariableTracker
from ..variables.containers import DictVariable, mapping_items
from ..variables.functions import NestedFunctionVariable
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


def push_callable(tx: Translator, fn: VariableTracker) -> None:
    """Push ``fn`` with the CALL convention's NULL (``LOAD_GLOBAL``/``LOAD_ATTR`` pushing NULL)."""
    # NOTE(3.13): the NULL goes above the callable; 3.11/3.12 push it first.
    if not NULL_ABOVE_CALLABLE:
        tx.push(NULL)
    tx.push(fn)
    if NULL_ABOVE_CALLABLE:
        tx.push(NULL)


def pop_callable(tx: Translator) -> tuple[VariableTracker, list[VariableTracker]]:
    """Pop the two slots under a call's arguments: the callable, and ``[self]`` or ``[]``."""
    top, below = tx.pop(), tx.pop()
    # NOTE(3.13): [callable, NULL|self]; 3.11/3.12: [NULL, callable] or [callable, self].
    if NULL_ABOVE_CALLABLE:
        return below, [] if top is NULL else [top]
    return (top, []) if below is NULL else (below, [top])


@handler("PRECALL", until=(3, 11), frame_only=True)
def precall(tx: Translator, inst: Instr) -> None:
    """(--)  3.11 only; the work happens in CALL."""


@handler("KW_NAMES", until=(3, 12), frame_only=True)
def kw_names(tx: Translator, inst: Instr) -> None:
    """(--)  names of the keyword arguments of the next CALL (arg is the tuple itself)."""
    tx.kw_names = tuple(inst.arg)


@handler("CALL", pops=lambda inst: inst.arg + 2)
def call(tx: Translator, inst: Instr) -> None:
    """(NULL|meth fn|self args*n -- result); 3.13: (fn NULL|self args*n -- result).
    https://docs.python.org/3.11/library/dis.html#opcode-CALL"""
    kw_names, tx.kw_names = tx.kw_names, ()
    _call(tx, inst.arg, kw_names)


@handler("CALL_KW", pops=lambda inst: inst.arg + 3)  # the names tuple too
def call_kw(tx: Translator, inst: Instr) -> None:
    """(fn NULL|self args*n names -- result)  3.13: the last ``len(names)`` args are keywords.
    https://docs.python.org/3.13/library/dis.html#opcode-CALL_KW"""
    _call(tx, inst.arg, tuple(tx.pop().as_python_constant()))


def _call(tx: Translator, nargs: int, kw_names: tuple[str, ...]) -> None:
    args = tx.popn(nargs)
    fn, self_arg = pop_callable(tx)
    args = [*self_arg, *args]
    kwargs = {}
    if kw_names:
        kwargs = dict(zip(kw_names, args[len(args) - len(kw_names) :], strict=True))
        args = args[: len(args) - len(kw_names)]
    tx.push(tx.call_direct(fn, args, kwargs))


@handler("CALL_FUNCTION_EX")
def call_function_ex(tx: Translator, inst: Instr) -> None:
    """(NULL fn args_tuple [kwargs_dict] -- result), 3.13: (fn NULL ...)  ``fn(*a, **kw)``."""
    kwargs = tx.pop() if inst.arg & 1 else DictVariable({})
    args = tx.pop()
    # NOTE(3.13): the NULL is above the callable; 3.11/3.12 put it below (3.11 sometimes omits it).
    if NULL_ABOVE_CALLABLE:
        fn, _ = pop_callable(tx)
    else:
        fn = tx.pop()
        if tx.stack and tx.peek() is NULL:
            tx.pop()
    if not isinstance(kwargs, DictVariable):
        raise Unsupported("call_ex", f"**kwargs must be a dict, got {kwargs}")
    positional = dispatch.iterate(tx, args)
    keywords = mapping_items(tx, kwargs)
    if not all(isinstance(key, str) for key in keywords):  # CPython's check of every call
        raise PythonError(TypeError("keywords must be strings"))
    tx.push(tx.call_direct(fn, positional, keywords))


@handler("MAKE_FUNCTION")
def make_function(tx: Translator, inst: Instr) -> None:
    """(defaults? kwdefaults? annotations? closure? code -- function)  flags in arg.

    3.13: (code -- function); SET_FUNCTION_ATTRIBUTE adds the parts."""
    code = tx.pop().as_python_constant()
    fn = NestedFunctionVariable(code, tx.f_globals)
    flags = inst.arg if MAKE_FUNCTION_TAKES_FLAGS else 0
    for flag in (0x08, 0x04, 0x02, 0x01):
        if flags & flag:
            fn = _set_function_attribute(fn, flag, tx.pop())
    tx.push(fn)


@handler("SET_FUNCTION_ATTRIBUTE")
def set_function_attribute(tx: Translator, inst: Instr) -> None:
    """(value function -- function)  3.13: attach the part ``MAKE_FUNCTION`` flag ``arg`` names.
    https://docs.python.org/3.13/library/dis.html#opcode-SET_FUNCTION_ATTRIBUTE"""
    fn, value = tx.pop(), tx.pop()
    tx.push(_set_function_attribute(fn, inst.arg, value))


def _set_function_attribute(
    fn: NestedFunctionVariable, flag: int, value: VariableTracker
) -> NestedFunctionVariable:
    if flag == 0x08:
        return fn.clone(closure=dict(zip(fn.code.co_freevars, value.items, strict=True)))
    if flag == 0x02:
        return fn.clone(kwdefaults=dict(value.items))
    if flag == 0x01:
        return fn.clone(defaults=tuple(value.items))
    return fn.clone(has_annotations=True)  # annotations (0x04): not needed to run it
