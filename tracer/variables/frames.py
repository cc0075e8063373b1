"""Frames of the inline stack: what ``sys._getframe(n)`` and ``inspect.currentframe()`` give in
traced code.

Each Python frame the user's program would have while the traced code runs, from the compiled
function down to the running callee, is a translator of the trace (``tx``, ``tx.parent``...). Such a
frame is known at trace time: its code, its globals and the line it is at (a caller's: the line of
its call) are constants. ``FrameVariable`` stands for one; what the trace cannot decide breaks
(``f_locals``, ``f_trace``, the frame above the compiled function, a frame whose chain of callers
is not the user's, a frame that returned), and the break's code reads the real frame
(``codegen/frame_locals.py``).

Entry points: the call rule of ``sys._getframe`` and the ``FrameVariable`` rules.
"""

from __future__ import annotations

import inspect
import sys
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Unsupported
from . import dispatch
from .base import VariableTracker, method_bound
from .call_rules import call_rule
from .constants import ConstantVariable
from .functions import MethodCallVariable, NestedFunctionVariable, UserFunctionVariable
from .objects import GlobalsVariable

if TYPE_CHECKING:
    from ..translator import Translator

_HINT = "frame introspection the trace cannot decide runs in Python"
#: frames CPython runs later than the trace does (a generator runs when its items are taken)
_DEFERRED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


@dataclass(eq=False)
class FrameVariable(VariableTracker):
    """The frame of the user's program that ``tx`` runs. Invariant (``user_frame``): ``tx`` is the
    compiled function's translator or was called by its parent's CALL instruction, up to the
    compiled function, so that its callers are the user's frames, in CPython's order."""

    tx: Any  #: the ``Translator`` of the frame

    def python_type(self) -> type:
        return types.FrameType

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        frame = self.tx
        _check_running(tx, frame)
        if name == "f_back":
            return frame_at(frame, 1)
        if name == "f_code":
            return ConstantVariable(user_code(frame))
        if name == "f_lineno":
            inst = frame.current
            if inst is None or inst.lineno is None:
                raise Unsupported("frame", "f_lineno of an instruction without a line", hint=_HINT)
            return ConstantVariable(inst.lineno)
        if name == "f_globals":
            if frame.f_globals is not frame.root.f_globals:
                raise Unsupported("frame", "f_globals of another module's frame", hint=_HINT)
            return GlobalsVariable(frame.f_globals)
        raise Unsupported("frame", f"the frame attribute {name!r}", hint=_HINT)

    def __repr__(self) -> str:
        return f"FrameVariable({self.tx.code.co_name})"


def user_code(tx: Translator) -> types.CodeType:
    """The user's code that ``tx`` runs: a resume function's template's code, else its own."""
    origin = getattr(tx.fn, "__bytegraph_resume__", None)
    return origin.template.__code__ if origin is not None else tx.code


def user_frame(tx: Translator) -> bool:
    """Whether ``tx`` and its parents are the user's frames, each the callee of its parent's CALL
    instruction (not a polyfill, a module's ``__call__`` run as ``forward``, a method run by an
    operator or an attribute read, or a generator, which CPython runs later)."""
    while tx is not None:
        if tx.code.co_flags & _DEFERRED:
            return False
        if tx.parent is not None and not _called_by_parent(tx):
            return False
        tx = tx.parent
    return True


def _called_by_parent(tx: Translator) -> bool:
    """Whether the callable the parent's CALL instruction called runs ``tx``'s code itself."""
    callee = tx.callee
    if isinstance(callee, UserFunctionVariable):
        return callee.fn.__code__ is tx.code
    if isinstance(callee, NestedFunctionVariable):
        return callee.code is tx.code
    if isinstance(callee, MethodCallVariable):
        method = method_bound(callee)
        return isinstance(method, types.FunctionType) and method.__code__ is tx.code
    return False


def frame_at(tx: Translator, depth: int) -> FrameVariable:
    """The frame ``depth`` calls above ``tx``'s, where the trace runs it."""
    if not user_frame(tx):
        raise Unsupported(
            "frame", f"a frame of {tx.code.co_name}, called by the tracer", hint=_HINT
        )
    for _ in range(depth):
        if tx.parent is None:
            raise Unsupported("frame", "a frame above the compiled function", hint=_HINT)
        tx = tx.parent
    return FrameVariable(tx)


def _check_running(reader: Translator, frame: Translator) -> None:
    """A frame's line is where it runs when its attribute is read: ``frame`` must be running,
    ``reader`` inside it, run by CPython where the trace runs it (no generator between)."""
    while reader is not frame:
        if reader is None:
            raise Unsupported("frame", "a frame that has returned", hint=_HINT)
        if reader.code.co_flags & _DEFERRED:
            raise Unsupported("frame", "a frame read from a generator", hint=_HINT)
        reader = reader.parent


@call_rule(sys._getframe)
def _getframe(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``sys._getframe([depth])``: the frame ``depth`` calls up (CPython's own errors: a call in
    Python)."""
    if kwargs or len(args) > 1 or not all(a.is_python_constant() for a in args):
        return None
    depth = args[0].as_python_constant() if args else 0
    if type(depth) is not int:
        return None
    return frame_at(tx, max(depth, 0))


@dispatch.rule("is_same", FrameVariable)
def _is_same(tx: Translator, lhs: FrameVariable, rhs: VariableTracker) -> bool:
    if isinstance(rhs, FrameVariable):
        return lhs.tx is rhs.tx
    if rhs.is_python_constant():
        return False
    raise Unsupported("frame", f"a frame compared with {rhs}", hint=_HINT)
