"""Frames of the inline stack: what ``sys._getframe(n)`` and ``inspect.currentframe()`` give in
traced code.

Each Python frame the user's program would have while the traced code runs, from the compiled
function down to the running callee, is a translator of the trace (``tx``, ``tx.parent``...), or,
between a module's ``forward`` and the frame that called the module, one of the frames of
``nn.Module.__call__`` that the trace does not run (``hidden_callers``: ``_call_impl`` and
``_wrapped_call_impl``, at the lines CPython calls ``forward`` from, measured once on a module of
bytegraph's own). Such a frame is known at trace time: its code, its globals and the line it is at
(a caller's: the line of its call) are constants. ``FrameVariable`` stands for one; what the trace
cannot decide breaks (``f_locals``, ``f_trace``, a frame whose chain of callers is not the user's,
a frame that returned), and the break's code reads the real frame (``codegen/frame_locals.py``).
A frame above the compiled function is a caller, which differs from call to call:
``CallerFrameVariable`` stands for it, rebuilt at run time as the user's frame (never a frame of
bytegraph's generated code), and reading it breaks.

Entry points: the call rules of ``sys._getframe`` and ``warnings.warn``, and the
``FrameVariable`` rules.
"""

from __future__ import annotations

import dis
import functools
import inspect
import itertools
import sys
import traceback
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ...codegen.frame_locals import (
    FrameStandIn,
    RunningFrame,
    WaitingFrame,
    frame_above,
    own_frame,
)
from ...guards.sources import AttrSource
from ..exc import Unsupported
from ..run_time_warnings import Site, give_from_above, give_later, in_polyfill, warning_called
from . import dispatch
from .base import VariableTracker, method_bound
from .call_rules import call_rule
from .constants import ConstantVariable
from .functions import (
    MethodCallVariable,
    NestedFunctionVariable,
    UserFunctionVariable,
    called_by_partials,
)
from .objects import GlobalsVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ...guards.sources import Source
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
    #: 0: ``tx``'s own frame; ``n``: the ``n``-th of ``hidden_callers(tx)``, a frame above it
    hidden: int = 0

    def python_type(self) -> type:
        return types.FrameType

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        frame = self.tx
        _check_running(tx, frame)
        if name == "f_back":
            return _up(self, 1)
        if self.hidden:
            return self._hidden_attr(name)
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

    def known(self, at: Any) -> FrameStandIn:
        """The frame as the trace knows it, ``at`` the instruction its code is at: its code,
        line, module and that instruction's positions (not its locals: for a reader that reads
        no more, ``given_as_known``)."""
        if self.hidden:
            hidden = hidden_callers(self.tx)[self.hidden - 1]
            code, lineno, module = hidden.code, hidden.lineno, hidden.module
            positions = hidden.positions
        else:
            location = at.location
            code, lineno = user_code(self.tx), at.lineno
            module = self.tx.f_globals.get("__name__", "<string>")
            positions = (lineno, location.end_lineno, location.col_offset, location.end_col_offset)
        waiting = WaitingFrame(code.co_filename, lineno, module, code, positions)
        return FrameStandIn(waiting, iter(()))

    def _hidden_attr(self, name: str) -> VariableTracker:
        """An attribute of a frame of ``nn.Module.__call__`` (its globals are torch's)."""
        hidden = hidden_callers(self.tx)[self.hidden - 1]
        if name == "f_code":
            return ConstantVariable(hidden.code)
        if name == "f_lineno":
            return ConstantVariable(hidden.lineno)
        raise Unsupported("frame", f"the attribute {name!r} of a frame of torch's", hint=_HINT)

    def reconstruct(self, cg: Codegen) -> None:
        """The compiled function's own frame, live at a break: the user's frame that the
        rewritten code and its resume functions run (``frame_locals.own_frame``), where its code
        takes its own frame (``takes_own_frame``: the generated frames then hold every local it
        has bound, which its ``f_locals`` shows). A callee's or a hidden frame has no generated
        frame of its own here to stand for it."""
        if self.hidden or self.tx.parent is not None or not takes_own_frame(self.tx):
            raise Unsupported("reconstruct", f"cannot rebuild {self} as a Python value")
        cg.push_callable(lambda: cg.load_const(own_frame))
        cg.load_const(user_code(self.tx))
        cg.call(1)

    def __repr__(self) -> str:
        return f"FrameVariable({self.tx.code.co_name}, {self.hidden})"


@dataclass(frozen=True)
class HiddenFrame:
    """A frame CPython runs between a callee and its caller that the trace does not run."""

    code: types.CodeType
    lineno: int  #: the line of the call it waits for
    module: str  #: the ``__name__`` of its globals
    positions: tuple[int | None, ...]  #: those of the call it waits for (``co_positions``')
    #: its globals (torch's module's: the ``__warningregistry__`` of a warning it is named by)
    globals: dict[str, Any] = field(compare=False, repr=False)


class _Probe(nn.Module):
    """Called once (see ``_module_call_frames``): ``forward`` lists the frames above it."""

    def forward(self) -> tuple[HiddenFrame, ...]:
        found, frame = [], sys._getframe(1)
        while frame is not None and frame.f_code is not _call_probe.__code__:
            code, lasti = frame.f_code, frame.f_lasti
            positions = next(itertools.islice(code.co_positions(), lasti // 2, None))
            module = frame.f_globals["__name__"]
            found.append(HiddenFrame(code, frame.f_lineno, module, positions, frame.f_globals))
            frame = frame.f_back
        return tuple(found)


def _call_probe(module: nn.Module) -> tuple[HiddenFrame, ...]:
    return module()


@functools.cache
def _module_call_frames(hooked: bool) -> tuple[HiddenFrame, ...]:
    """The frames of ``nn.Module.__call__`` above ``forward``, innermost first, as CPython runs
    them for a module without (``hooked`` False) or with forward hooks of its own (another path in
    ``_call_impl``), and no global hooks (the trace inlines no call where there are: see
    ``modules._check_hooks``)."""
    probe = _Probe()
    if hooked:
        probe.register_forward_hook(lambda module, args, result: None)
    return _call_probe(probe)


def hidden_callers(tx: Translator) -> tuple[HiddenFrame, ...] | None:
    """The frames CPython runs between ``tx``'s frame and its parent's that the trace does not:
    none for a function the parent's CALL called, ``nn.Module.__call__``'s for a ``forward`` run
    by a call of its module; None where they are not known (a module compiled by
    ``Module.compile()``, global hooks, a JIT trace, a call the tracer made)."""
    callee = tx.callee
    module = getattr(callee, "value", None)
    if not isinstance(module, nn.Module):
        return () if _called_by_parent(tx) else None
    if (
        type(module).__call__ is not nn.Module.__call__
        or getattr(module, "_compiled_call_impl", None) is not None
        or any(getattr(nn.modules.module, name) for name in _GLOBAL_HOOKS)
        or torch._C._get_tracing_state() is not None
    ):
        return None
    hooked = any(getattr(module, name, None) for name in _HOOKS)
    return _module_call_frames(hooked)


#: the tables of hooks that send ``_call_impl`` its slow way (``_check_hooks`` refuses the others)
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
)


def user_code(tx: Translator) -> types.CodeType:
    """The user's code that ``tx`` runs: a resume function's template's code, else its own. A
    resume function breaking in its own prefix has a resume function as its template: the user's
    code is that one's."""
    fn, code = tx.fn, tx.code
    while (origin := getattr(fn, "__bytegraph_resume__", None)) is not None:
        fn = origin.template
        code = fn.__code__
    return code


#: the names by which code takes its own frame object (``inspect.stack()`` lists it first)
_OWN_FRAME_GETTERS = frozenset({"_getframe", "currentframe", "stack"})
_NAME_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD"})
#: code -> whether it takes its own frame
_TAKES_OWN_FRAME: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()


def takes_own_frame(tx: Translator) -> bool:
    """Whether the user's code of ``tx`` takes its own frame object (``sys._getframe()``,
    ``sys._getframe(0)``, ``inspect.currentframe()``, ``inspect.stack()``, ``inspect.stack(n)``,
    called as loaded), which anything it gives the frame to may read whole (``f_locals``): then
    every local it has bound is live at its breaks."""
    code = user_code(tx)
    if _OWN_FRAME_GETTERS.isdisjoint(code.co_names):
        return False
    found = _TAKES_OWN_FRAME.get(code)
    if found is None:
        found = _TAKES_OWN_FRAME[code] = _calls_for_own_frame(code)
    return found


def _calls_for_own_frame(code: types.CodeType) -> bool:
    instrs = [i for i in dis.get_instructions(code) if i.opname not in _CALL_PREPARATION]
    for n, inst in enumerate(instrs):
        if inst.opname not in _NAME_LOADS or inst.argval not in _OWN_FRAME_GETTERS:
            continue
        after = instrs[n + 1 : n + 3]
        if after and after[0].opname == "CALL" and after[0].arg == 0:
            return True
        if len(after) == 2 and after[0].opname == "LOAD_CONST" and after[1].opname == "CALL":
            # ``_getframe(0)``; ``stack(n)``: ``n`` lines of context, its own frame first
            wanted = (lambda n: type(n) is int) if inst.argval == "stack" else (lambda n: n == 0)
            if after[1].arg == 1 and wanted(after[0].argval):
                return True
    return False


#: what comes between loading a callable and its arguments or call (3.11's ``PRECALL``)
_CALL_PREPARATION = frozenset({"PRECALL", "PUSH_NULL"})


def user_frame(tx: Translator) -> bool:
    """Whether ``tx`` and its parents are the user's frames, each the callee of its parent's CALL
    instruction (not a polyfill, a module's ``__call__`` run as ``forward``, a method run by an
    operator or an attribute read, or a generator, which CPython runs later)."""
    while tx is not None:
        if tx.code.co_flags & _DEFERRED:
            return False
        if tx.parent is not None and hidden_callers(tx) is None:
            return False
        tx = tx.parent
    return True


def _called_by_parent(tx: Translator) -> bool:
    """Whether the callable the parent's CALL instruction called runs ``tx``'s code itself (a
    ``functools.partial`` calls its function from C: no frame between)."""
    callee = called_by_partials(tx.callee)
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
    return _up(FrameVariable(tx), depth)


def _up(frame: FrameVariable, depth: int) -> FrameVariable:
    """The frame ``depth`` calls above ``frame`` (a user frame: see ``frame_at``)."""
    tx, hidden = frame.tx, frame.hidden
    for above in range(depth, 0, -1):
        if hidden < len(hidden_callers(tx) or ()):
            hidden += 1
            continue
        if tx.parent is None:
            if _own_code(tx):
                raise Unsupported("frame", "a frame above bytegraph's own code", hint=_HINT)
            return CallerFrameVariable(above)
        tx, hidden = tx.parent, 0
    if tx.parent is None and hidden == 0 and _own_code(tx):
        raise Unsupported("frame", f"the frame of bytegraph's {tx.code.co_name}", hint=_HINT)
    return FrameVariable(tx, hidden)


@dataclass(eq=False)
class CallerFrameVariable(VariableTracker):
    """A frame above the compiled function's (``depth`` frames above it): a caller, which differs
    from call to call. The trace knows nothing of it; it is read at run time, where rewritten code
    rebuilds it (``frame_locals.frame_above``: the user's frames, not the generated ones between),
    and reading anything of it breaks, so that CPython reads it."""

    depth: int

    def python_type(self) -> type:
        return types.FrameType

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        raise Unsupported("frame", "a frame above the compiled function, read at run time")

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_callable(lambda: cg.load_const(frame_above))
        cg.load_const(self.depth)
        cg.call(1)

    def __repr__(self) -> str:
        return f"CallerFrameVariable({self.depth})"


@dataclass(eq=False)
class InputFrameVariable(VariableTracker):
    """A frame object the trace is given (a caller's, rebuilt at a break and passed to the resume
    function). Its code is fixed for good, and so is its line while the call runs: a frame that
    is not a generator's runs only when the frames it called return (the traced code is one of
    them, or the frame has returned), so its line is guarded with its code. Its ``f_back`` is
    the real one, its ``f_globals`` the traced code's own where they are (``_given_globals``);
    the rest (``f_locals``, another module's globals) is read by CPython: a break."""

    value: types.FrameType
    source: Source | None = None

    def python_type(self) -> type:
        return types.FrameType

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("f_code", "f_back"):
            return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
        if name == "f_lineno":
            source = AttrSource(self.source, name)
            tx.output.assume_equal(source, self.value.f_lineno)
            return ConstantVariable(self.value.f_lineno, source)
        if name == "f_globals":
            return _given_globals(tx, self)
        raise Unsupported("frame", f"the attribute {name!r} of a frame given to the trace")


def _given_globals(
    tx: Translator, frame: InputFrameVariable | StandInFrameVariable
) -> VariableTracker:
    """``f_globals`` of a frame given to the trace: the traced code's own module's, which a
    frame keeps for good, are its globals (guarded by identity); another module's are read by
    CPython."""
    if frame.value.f_globals is not tx.root.f_globals:
        raise Unsupported("frame", "f_globals of another module's frame given to the trace")
    return tx.wrap(tx.root.f_globals, AttrSource(frame.source, "f_globals"))


def wrap_frame(tx: Translator, frame: types.FrameType, source: Source) -> VariableTracker | None:
    """``frame`` given to the trace as an ``InputFrameVariable``, its code guarded; None for a
    generator's frame (resumed by the traced code, its line moves) or one without a line."""
    if frame.f_code.co_flags & _DEFERRED or frame.f_lineno is None:
        return None
    tx.output.assume_type(source, types.FrameType)
    tx.output.assume_identity(AttrSource(source, "f_code"), frame.f_code)
    return InputFrameVariable(frame, source=source)


@dataclass(eq=False)
class StandInFrameVariable(VariableTracker):
    """A frame given to the trace as generated code makes it (``frame_locals.RunningFrame``: a
    user's frame generated frames run; ``FrameStandIn``: a caller waiting for a resumed callee).
    Its code is fixed, guarded. A frame other than the one the trace continues waits while the
    trace runs (the trace's callees have no frame yet): its line is guarded with its code, as
    ``InputFrameVariable``'s; the line of the one the trace continues moves: where a resume
    function's trace continues it (``_continued_here``), it is the trace's root frame, at the
    line the trace is at. Its ``f_globals`` as ``InputFrameVariable``'s. The rest is read by
    CPython: a break."""

    value: RunningFrame | FrameStandIn
    source: Source | None = None

    def python_type(self) -> type:
        return types.FrameType  # what it stands for (its ``__class__``; eager's ``type()``)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        code = AttrSource(self.source, "f_code")
        if name == "f_code":
            return tx.wrap(self.value.f_code, code)
        if name == "f_globals":
            return _given_globals(tx, self)
        if name == "f_lineno" and self._continued_here(tx):
            return FrameVariable(tx.root).var_getattr(tx, name)
        if name == "f_lineno" and not self._runs_here(tx):
            tx.output.assume_identity(code, self.value.f_code)
            line = AttrSource(self.source, name)
            tx.output.assume_equal(line, self.value.f_lineno)
            return ConstantVariable(self.value.f_lineno, line)
        raise Unsupported("frame", f"the attribute {name!r} of a frame given to the trace")

    def _continued_here(self, tx: Translator) -> bool:
        """Whether the frame is the user's frame that the traced resume function continues
        (guarded: its code, and that the generated frame calling the resume function runs it,
        ``RunningFrame.resumed_here``): the trace's own root frame, whose line is where the trace
        is."""
        root = tx.root
        if not isinstance(self.value, RunningFrame) or not self._runs_here(tx):
            return False
        origin = getattr(root.fn, "__bytegraph_resume__", None)
        if origin is None or self.value.f_code is not user_code(root):
            return False
        tx.output.assume_identity(AttrSource(self.source, "f_code"), self.value.f_code)
        source = AttrSource(self.source, "resumed_here")
        here = self.value.resumed_here
        tx.output.assume_equal(source, here)
        return here

    def _runs_here(self, tx: Translator) -> bool:
        """Whether the frame is the one the trace continues (guarded either way)."""
        if not isinstance(self.value, RunningFrame):
            return False
        source = AttrSource(self.source, "runs_here")
        here = self.value.runs_here
        tx.output.assume_equal(source, here)
        return here


#: calls that read of a frame its code, line, module and the positions of its instruction alone,
#: and keep nothing of it: a frame of the inline stack goes to them as the trace knows it
KNOWN_FRAME_READERS = (inspect.getframeinfo,)


def given_as_known(vt: VariableTracker, at: dict[int, Any]) -> FrameStandIn | None:
    """What a break gives a ``KNOWN_FRAME_READERS`` call for its argument ``vt``: a frame of the
    inline stack as the trace knows it (``FrameVariable.known``), ``at`` the instruction each
    translator of the break is at (by id); None for any other value (rebuilt as it is)."""
    if not isinstance(vt, FrameVariable) or id(vt.tx) not in at:
        return None
    inst = at[id(vt.tx)]
    if not vt.hidden and (inst.lineno is None or inst.location is None):
        return None
    return vt.known(inst)


#: the frames generated code gives user code in place of the process's own
STAND_IN_FRAMES = (RunningFrame, FrameStandIn)


def _own_code(tx: Translator) -> bool:
    """Whether ``tx`` runs bytegraph's own code (``callees.call_module`` compiled, which stands
    for the frames of a module's call), not the user's."""
    return tx.f_globals.get("__name__", "").partition(".")[0] == __name__.partition(".")[0]


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


@call_rule(warnings.warn)
def _warn(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``warnings.warn(text, category, stacklevel)`` with values: the warning given by the
    compiled call after the graph (``run_time_warnings``), named by the frame ``stacklevel``
    names: one the trace runs or knows (``nn.Module.__call__``'s), or a caller of the compiled
    function, found at run time. Other forms, and frames of the inline stack that are not the
    user's, run in Python."""
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        return None
    values = [a.as_python_constant() for a in args]
    called = warning_called(values, {k: v.as_python_constant() for k, v in kwargs.items()})
    if called is None or in_polyfill(tx.code.co_filename):
        return None
    category, text, stacklevel = called
    try:
        frame = frame_at(tx, stacklevel - 1) if stacklevel > 1 else FrameVariable(tx)
    except Unsupported:
        return None  # CPython finds the frame
    if isinstance(frame, CallerFrameVariable):
        give_from_above(tx, category, text, frame.depth)
    elif frame.hidden:
        hidden = hidden_callers(frame.tx)[frame.hidden - 1]
        give_later(tx, category, text, Site(hidden.code.co_filename, hidden.lineno, hidden.globals))
    else:
        give_later(frame.tx, category, text)
    return ConstantVariable(None)


@call_rule(
    inspect.stack,
    inspect.getouterframes,
    inspect.getframeinfo,
    traceback.extract_stack,
    traceback.format_stack,
    traceback.print_stack,
)
def _stack_reader(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """A call that reads the whole stack of frames (their code, lines, source text): CPython runs
    it, through what generated code calls instead (``frame_locals.READERS``: the user's frames)."""
    raise Unsupported("frame", f"{fn.__module__}.{fn.__name__}() reads the stack", hint=_HINT)


@dispatch.rule(
    "is_same", FrameVariable, CallerFrameVariable, InputFrameVariable, StandInFrameVariable
)
def _is_same(tx: Translator, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    # a frame given to the trace (a real one, or as generated code makes it) may be any frame of
    # the process: the one a ``sys._getframe(1)`` of the trace reads at run time, say
    given = {type(lhs), type(rhs)} & {InputFrameVariable, StandInFrameVariable}
    if given and not rhs.is_python_constant():
        raise Unsupported("frame", f"{lhs} compared with {rhs}", hint=_HINT)
    if isinstance(lhs, FrameVariable) and isinstance(rhs, FrameVariable):
        return lhs.tx is rhs.tx and lhs.hidden == rhs.hidden
    if rhs.is_python_constant() or {type(lhs), type(rhs)} == {FrameVariable, CallerFrameVariable}:
        return False
    raise Unsupported("frame", f"a frame compared with {rhs}", hint=_HINT)
