"""What user code sees of its own frames when generated code runs it.

Generated code runs the user's instructions in frames of its own: the rewritten function, which
keeps the graph's outputs and its callables in locals such as ``__graph_out``, and resume
functions, which take the stack as ``__stack0``... and may take a cell variable as the cell
itself (``ResumePoint.cell_args``), each called through an entry function. A call of a builtin
that reads its caller's frame there would see all of them, so generated code calls
``READERS[builtin]`` instead:

- ``locals()``, ``vars()``, ``dir()`` (``FrameReader``), given the ``UserFrame`` it runs for
  (bound at a break, or found by its code for a resume function run in plain Python,
  ``register``): what CPython gives in the user's own frame, the user's locals only, with their
  values, in the code's order. How often a new mapping is made is CPython's
  (``LOCALS_SNAPSHOT``): up to 3.12 ``locals()`` in a function returns the same dict at each
  call, updated in place (keys the user added stay), which resume functions are passed on
  (``KeptLocals``); from 3.13 (PEP 667) a new dict at each call.
- ``warnings.warn``, ``sys._getframe`` and ``inspect.currentframe``: their ``stacklevel`` and
  ``depth`` count the user's frames (``user_frames``), so a warning names the user's line. A
  user's frame that generated frames run (a fallback's routed copy, a function continued by
  resume functions) is given as a ``RunningFrame``: the user's code, the line and locals of the
  generated frame running it now, the user's caller as ``f_back``, the same object before and
  after a break. A frame of the user's stack that waits for a resumed callee, which the process
  does not have, is given as a ``FrameStandIn``.
"""

from __future__ import annotations

import dis
import inspect
import itertools
import sys
import traceback
import types
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..guards.epoch import unseen_by_dynamo
from .pyversion import LOCALS_SNAPSHOT


@dataclass(frozen=True)
class UserFrame:
    """The user's frame that a generated frame stands for."""

    #: the user's code's local names, in the order CPython's ``locals()`` lists them
    names: tuple[str, ...]
    #: those among ``names`` the generated frame holds as a plain local holding the cell
    cells: tuple[str, ...] = ()
    #: the user's code (not compared: a code object hashes its constants, maybe unhashable)
    code: types.CodeType | None = field(default=None, compare=False)
    #: a resume function's: the frame continues one that a frame of the same code started;
    #: False for a copy of the user's function run from its start (a fallback's routed copy)
    resumed: bool = True

    @classmethod
    def of(
        cls, code: types.CodeType, cells: tuple[str, ...] = (), resumed: bool = True
    ) -> UserFrame:
        """The frame of ``code``: arguments and locals, then cells that are no arguments, then
        free variables (the order of CPython's fast locals)."""
        plain = code.co_varnames
        names = plain + tuple(c for c in code.co_cellvars if c not in plain) + code.co_freevars
        return cls(names, tuple(cells), code, resumed)


#: generated code (by its id) -> (a weak reference to it, the user's frame it stands for): resume
#: functions, their routed copies and their rewritten code. Not keyed by the code itself: a code
#: object hashes its constants, which may be unhashable (a dict that rewritten code loads).
_FRAMES: dict[int, tuple[weakref.ref, UserFrame]] = {}
#: (3.11/3.12) the name under which a generated frame keeps the dict its ``locals()`` returns:
#: a key of its own locals dict, which CPython never writes back to the frame, or a resume
#: function's argument (``kept_locals``), so that the calls before and after a break share it
KEPT = "__bg_user_locals"
_UNBOUND = object()


def register(code: types.CodeType, frame: UserFrame) -> None:
    """Generated ``code`` stands for the user's ``frame``."""
    key = id(code)

    @unseen_by_dynamo  # a death callback: the collector runs it inside torch.compile's code too
    def forget(ref: weakref.ref, frames: dict = _FRAMES) -> None:  # (held: called at exit too)
        if frames.get(key, (None,))[0] is ref:  # not a later code object at the same address
            del frames[key]

    _FRAMES[key] = (weakref.ref(code, forget), frame)


def registered(code: types.CodeType) -> UserFrame | None:
    """The user's frame generated ``code`` stands for, if it stands for one."""
    found = _FRAMES.get(id(code))
    return found[1] if found is not None and found[0]() is code else None


class KeptLocals:
    """(3.11/3.12) Holds the dict a frame's ``locals()`` returns. A resume function takes the
    holder, which a trace keeps as an opaque object, not the dict, whose items it would guard (and
    which may hold itself: ``d = locals()``)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: dict[str, Any] = {}


def kept_locals() -> KeptLocals:
    """(3.11/3.12) What keeps the dict the caller's frame gives as ``locals()`` (made if it has
    none): the rewritten code passes it on to its resume function (as argument ``KEPT``)."""
    return _kept(sys._getframe(1).f_locals)


def _kept(own: dict[str, Any]) -> KeptLocals:
    kept = own.get(KEPT)
    if type(kept) is not KeptLocals:
        kept = own[KEPT] = KeptLocals()  # not a fast local: CPython never writes it back
    return kept


def user_locals(frame: types.FrameType, user: UserFrame | None) -> dict[str, Any]:
    """What ``locals()`` returns in the user's frame that ``frame`` runs for (``frame``'s own
    locals where ``user`` is None: a frame of the user's code itself)."""
    if user is None:
        user = registered(frame.f_code)
        if user is None:
            return dict(frame.f_locals) if LOCALS_SNAPSHOT else frame.f_locals
    own = frame.f_locals  # up to 3.12 a dict the frame keeps; from 3.13 a view of the frame
    result: dict[str, Any] = {} if LOCALS_SNAPSHOT else _kept(own).value
    for name in user.names:
        value = own.get(name, _UNBOUND)
        if name in user.cells and value is not _UNBOUND:
            try:
                value = value.cell_contents
            except ValueError:  # an empty cell: the variable is unbound
                value = _UNBOUND
        if value is _UNBOUND:
            result.pop(name, None)
        else:
            result[name] = value
    return result


@dataclass(frozen=True)
class FrameReader:
    """What generated code calls in place of ``builtin`` (``locals``, ``vars`` or ``dir``): the
    builtin as the user's frame ``user`` would run it (None: the frame found by the caller's code,
    ``register``)."""

    builtin: Any
    user: UserFrame | None = None

    def __call__(self, *args: Any) -> Any:
        if args:  # ``vars(obj)``, ``dir(obj)`` (and CPython's own error for ``locals(x)``)
            return self.builtin(*args)
        found = user_locals(sys._getframe(1), self.user)
        return sorted(found) if self.builtin is dir else found


#: The file name of the entry functions (``tracer/entry.py``): frames no user code has.
ENTRY_FILE = "<bytegraph entry "
#: Files of bytegraph's own functions that a break calls a user's callable through
#: (``callees.call_module``): their frames, which the user's stack does not have, are left out.
PASS_THROUGH_FILES: set[str] = set()


#: The local in which rewritten code keeps, while a callee's resume function runs, the callers of
#: that callee that wait for it (``WaitingFrame``s, innermost first): their frames do not exist
#: yet (each one's resume function runs once the callee returns), but the user's stack has them.
WAITING = "__bg_waiting"


@dataclass(frozen=True)
class WaitingFrame:
    """A caller of the function a break resumed in, waiting for it: where its call is."""

    filename: str
    lineno: int
    module: str  #: the ``__name__`` of its globals
    code: types.CodeType | None = None  #: the code it runs (the user's)
    #: the positions of the instruction it is at (``co_positions``' item), where known
    positions: tuple[int | None, ...] | None = None

    @property
    def globals(self) -> dict[str, Any]:
        found = sys.modules.get(self.module)
        return found.__dict__ if found is not None else {"__name__": self.module}


#: what a stand-in's class gives as ``__module__``: an attribute error for its instances
_NO_MODULE = property(lambda self: _no_module())


def _no_module() -> Any:
    raise AttributeError("__module__")


class _StandIn:
    """What generated code gives user code in place of a process's frame. It answers
    ``isinstance(x, types.FrameType)`` (``isinstance`` asks ``__class__``, as of a proxy), so that
    ``inspect.getframeinfo``, ``inspect.getouterframes`` and ``traceback`` take it as CPython's
    frame; ``f_lasti`` is -1: no instruction of the user's code is known (no position)."""

    __slots__ = ()
    __class__ = property(lambda self: types.FrameType)  # type: ignore[assignment]
    f_lasti = -1
    f_trace = None

    def __init_subclass__(cls) -> None:
        # A frame has no ``__module__``: ``inspect.getmodule`` would find this module's, whose
        # loader ``linecache`` then asks for the source of a file it cannot read
        cls.__module__ = _NO_MODULE  # type: ignore[assignment]


class FrameStandIn(_StandIn):
    """What ``sys._getframe`` gives, in generated code, for a frame of the user's stack that the
    process does not have (a caller waiting for a resumed callee, ``WaitingFrame``): its code,
    line and globals, and the frames above it (``f_back``). Its locals are not known: reading
    ``f_locals`` raises AttributeError."""

    __slots__ = ("_waiting", "_above", "_back")

    def __init__(self, waiting: WaitingFrame, above: Iterator[types.FrameType | WaitingFrame]):
        self._waiting, self._above, self._back = waiting, above, _UNBOUND

    f_code = property(lambda self: self._waiting.code)
    f_lineno = property(lambda self: self._waiting.lineno)
    f_globals = property(lambda self: self._waiting.globals)
    f_builtins = property(lambda self: self._waiting.globals.get("__builtins__", {}))

    @property
    def f_back(self) -> types.FrameType | FrameStandIn | None:
        if self._back is _UNBOUND:
            self._back = _given(next(self._above, None), self._above)
        return self._back

    def __repr__(self) -> str:
        return f"<frame stand-in, file {self._waiting.filename!r}, line {self._waiting.lineno}>"


def _given(
    frame: types.FrameType | WaitingFrame | None, above: Iterator[types.FrameType | WaitingFrame]
) -> types.FrameType | FrameStandIn | RunningFrame | None:
    """A frame of ``user_frames`` as user code is given it: a waiting one as its stand-in, a
    generated one as the user's frame it runs."""
    if isinstance(frame, WaitingFrame):
        return FrameStandIn(frame, above)
    user = registered(frame.f_code) if frame is not None else None
    if user is not None and user.code is not None:
        return running_frame(frame, user.code)
    return frame


#: The key under which the generated frame that started running a user's frame keeps its
#: ``RunningFrame`` (in its ``f_locals``: never a fast local, CPython never writes it back).
_RUNNING = "__bg_running_frame"


class RunningFrame(_StandIn):
    """The user's frame that generated frames run, as user code reads it: ``start`` (the
    generated frame that began running it, or any that continues it), then the resume functions
    continuing it (their frames nested in ``start``'s, each a frame of the same file and first
    line). Its code is the user's; its line, globals and locals are those of the innermost
    generated frame running it when read (``start``'s once none runs it); ``f_back`` is the user's
    caller (``user_frames``). One object per user's frame (``running_frame``), so ``is`` compares
    as CPython's frames do, before and after a break."""

    __slots__ = ("_start", "_code")

    def __init__(self, start: types.FrameType, code: types.CodeType):
        self._start, self._code = start, code

    f_code = property(lambda self: self._code)
    f_lineno = property(lambda self: self._running().f_lineno)
    f_globals = property(lambda self: self._start.f_globals)
    f_builtins = property(lambda self: self._start.f_builtins)

    @property
    def f_locals(self) -> dict[str, Any]:
        frame = self._running()
        return user_locals(frame, registered(frame.f_code) or UserFrame.of(self._code))

    @property
    def f_back(self) -> types.FrameType | FrameStandIn | RunningFrame | None:
        above = user_frames(self._start)
        next(above, None)
        return _given(next(above, None), above)

    @property
    def runs_here(self) -> bool:
        """Whether the innermost generated frame out from the reader runs this user's frame (a
        trace, or its guards, asking of a frame its code was given: the line of the one it
        continues moves while its code runs, a caller's does not)."""
        frame = _generated_out(sys._getframe(1))
        return frame is not None and _innermost_of(frame, self._start) is frame

    @property
    def resumed_here(self) -> bool:
        """Whether the innermost generated frame out from the reader runs this user's frame and
        is about to call its own resume function, not a callee's (``WAITING`` set: that callee
        may run the same code, recursing, while this frame waits at its call): a trace of that
        resume function continues this frame, and reads its line as the one it is at."""
        frame = _generated_out(sys._getframe(1))
        if frame is None or _innermost_of(frame, self._start) is not frame:
            return False
        return WAITING not in frame.f_code.co_varnames or frame.f_locals.get(WAITING) is None

    def _running(self) -> types.FrameType:
        """The innermost generated frame running this user's frame now."""
        inner = _innermost_of(sys._getframe(1), self._start)
        return inner if inner is not None else self._start

    def __repr__(self) -> str:
        frame = self._running()
        return (
            f"<frame at {id(self):#x}, file {self._code.co_filename!r}, line {frame.f_lineno}, "
            f"code {self._code.co_name}>"
        )


def _generated_out(frame: types.FrameType | None) -> types.FrameType | None:
    """Walking out from ``frame``: the first generated frame that runs a user's frame."""
    while frame is not None and registered(frame.f_code) is None:
        frame = frame.f_back
    return frame


def _innermost_of(frame: types.FrameType | None, start: types.FrameType) -> types.FrameType | None:
    """Walking out from ``frame``: the first frame that is ``start`` or a resume function's
    continuing it (``_continued``); None where there is none."""
    while frame is not None:
        outer: types.FrameType | None = frame
        while outer is not None:
            if outer is start:
                return frame
            outer = _continued(outer)
        frame = frame.f_back
    return None


def running_frame(frame: types.FrameType, code: types.CodeType) -> RunningFrame:
    """The ``RunningFrame`` of the user's frame (of ``code``) that the generated ``frame`` runs:
    the one a frame continuing it (``frame``, or one it continues) keeps, else a new one that
    ``frame`` keeps."""
    outer: types.FrameType | None = frame
    while outer is not None:
        kept = outer.f_locals.get(_RUNNING)
        if type(kept) is RunningFrame and kept._code is code:
            return kept
        outer = _continued(outer)
    made = frame.f_locals[_RUNNING] = RunningFrame(frame, code)
    return made


def _continued(frame: types.FrameType) -> types.FrameType | None:
    """The generated frame that the resume function's ``frame`` continues: the next frame out,
    past entry functions, of the same file and first line, where it waits for no callee
    (``WAITING``: then ``frame`` is a callee's, a call of the same function); else None."""
    user = registered(frame.f_code)
    if user is None or not user.resumed:
        return None
    outer = frame.f_back
    while outer is not None and outer.f_code.co_filename.startswith(ENTRY_FILE):
        outer = outer.f_back
    if outer is None or _key(outer) != _key(frame):
        return None
    if WAITING in outer.f_code.co_varnames and outer.f_locals.get(WAITING) is not None:
        return None
    return outer


def _key(frame: types.FrameType) -> tuple[str, int]:
    return frame.f_code.co_filename, frame.f_code.co_firstlineno


def own_frame(code: types.CodeType) -> RunningFrame:
    """The frame of the user's ``code`` that the calling generated frame runs (rewritten code
    rebuilding a frame live at a break)."""
    return running_frame(sys._getframe(1), code)


def user_frames(
    frame: types.FrameType | None, own_waiting: bool = True
) -> Iterator[types.FrameType | WaitingFrame]:
    """The frames of the user's stack from ``frame`` outward, each the real frame that runs it:
    without entry functions and the frames of ``PASS_THROUGH_FILES``, and a function continued by
    resume functions once (the innermost resume function; the frames of the same function that
    called it wait for it to return, but for one that called it as a callee's: ``WAITING`` is set
    there). Callers that wait for a resumed callee (``WAITING``) come where the user's stack has
    them, as ``WaitingFrame``s; ``own_waiting`` False: those of ``frame`` itself are left out
    (rewritten code rebuilding a frame above its own, before it resumes a callee)."""
    continued = None  #: (file, first line) of the resume function met last
    first = frame
    while frame is not None:
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno)
        waiting = frame.f_locals.get(WAITING) if WAITING in code.co_varnames else None
        if frame is first and not own_waiting:
            waiting = None
        if not code.co_filename.startswith(ENTRY_FILE) and (
            key != continued or waiting is not None
        ):
            yield from waiting or ()
            if code.co_filename not in PASS_THROUGH_FILES:
                yield frame
            user = registered(code)
            continued = key if user is not None and user.resumed else None  # a resume function
        frame = frame.f_back


def _warn(
    message: Any, category: Any = None, stacklevel: Any = 1, source: Any = None, **kwargs: Any
) -> None:
    """``warnings.warn`` called by generated code: ``stacklevel`` counts the user's frames; one
    that waits for a resumed callee is named as ``warnings.warn`` would name its frame."""
    if type(stacklevel) is int and not kwargs:
        caller = sys._getframe(1)
        wanted = max(stacklevel, 1) - 1
        found = list(itertools.islice(user_frames(caller), wanted + 1))
        if len(found) > wanted and isinstance(found[wanted], WaitingFrame):
            at = found[wanted]
            if category is None:
                category = UserWarning
            if isinstance(message, Warning):
                category = message.__class__
            registry = at.globals.setdefault("__warningregistry__", {})
            # as ``warnings.warn`` calls it: the line is read from the file, not from a loader
            warnings.warn_explicit(
                message, category, at.filename, at.lineno, at.module, registry, source=source
            )
            return
        stacklevel = 2 + _real_depth(caller, found[wanted] if len(found) > wanted else None, wanted)
    warnings.warn(message, category, stacklevel, source, **kwargs)


def _real_depth(frame: types.FrameType, target: Any, default: int) -> int:
    """How many real frames above ``frame`` the real frame ``target`` is (``default`` where
    ``target`` is None: the user's stack is not that deep)."""
    real = 0
    while frame is not None and frame is not target:
        frame, real = frame.f_back, real + 1
    return real if target is not None else default


def getframe(depth: Any = 0) -> types.FrameType | FrameStandIn | RunningFrame:
    """``sys._getframe`` called by generated code: ``depth`` counts the user's frames, and the
    frames above the one user code calls it in are the user's (``user_frames``)."""
    if type(depth) is not int:
        return sys._getframe(depth)  # CPython's TypeError
    caller = sys._getframe(1)
    if depth <= 0:
        return _given(caller, iter(()))
    frames = user_frames(caller)
    found = next(itertools.islice(frames, depth, None), None)
    if found is None:
        raise ValueError("call stack is not deep enough")
    return _given(found, frames)


def frame_above(depth: int) -> types.FrameType | FrameStandIn | RunningFrame:
    """The user's frame ``depth`` calls above the one the calling generated frame runs
    (rewritten code rebuilding a frame above the compiled function's, ``depth`` > 0): the
    callers waiting for a callee it is about to resume are below that frame, not above."""
    frames = user_frames(sys._getframe(1), own_waiting=False)
    found = next(itertools.islice(frames, depth, None), None)
    if found is None:
        raise ValueError("call stack is not deep enough")
    return _given(found, frames)


def currentframe() -> types.FrameType | FrameStandIn | RunningFrame | None:
    """``inspect.currentframe`` called by generated code: its caller's frame, the user's."""
    return _given(sys._getframe(1), iter(()))


def _given_stack(frame: types.FrameType) -> Iterator[types.FrameType | FrameStandIn | RunningFrame]:
    """The user's stack from ``frame`` outward, each frame as user code is given it."""
    frames = user_frames(frame)
    for found in frames:
        yield _given(found, frames)  # type: ignore[misc]


def stack(context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.stack`` called by generated code: the user's frames (``inspect.getframeinfo``
    of each, a stand-in's too)."""
    return [_frame_info(f, context) for f in _given_stack(sys._getframe(1))]


def _frame_info(frame: Any, context: int) -> inspect.FrameInfo:
    info = frame_info(frame, context)
    return inspect.FrameInfo(frame, *info, positions=info.positions)


def _positions(frame: Any) -> dis.Positions | None:
    """The positions of the instruction a stand-in is at, which its ``f_lasti`` does not give
    (None for a process's frame: its own ``f_lasti`` gives them)."""
    if type(frame) is RunningFrame:  # the generated code's instructions keep the user's positions
        return inspect.getframeinfo(frame._running(), 0).positions
    if type(frame) is FrameStandIn and frame._waiting.positions is not None:
        return dis.Positions(*frame._waiting.positions)
    return None


def frame_info(frame: Any, context: int = 1) -> inspect.Traceback:
    """``inspect.getframeinfo(frame, context)``, a stand-in's with the positions (and so the
    line) of the instruction it is at, as CPython's frame there gives them."""
    info = inspect.getframeinfo(frame, context)
    positions = _positions(frame)
    if positions is None or positions.lineno is None:
        return info
    return inspect.Traceback(*info, positions=positions)


def getouterframes(frame: Any, context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.getouterframes`` called by generated code: ``frame`` and the frames above it,
    a stand-in's with its positions (the frames above a ``RunningFrame``: the user's)."""
    return [_frame_info(found, context) for found in _along(frame)]


def _along(frame: Any) -> Iterator[Any]:
    """``frame`` and the frames above it: from a process's frame or a ``RunningFrame`` the
    user's stack there, from another stand-in (or None) its ``f_back``s."""
    if type(frame) is RunningFrame:
        frame = frame._start
    if type(frame) is types.FrameType:
        yield from _given_stack(frame)
        return
    while frame:
        yield frame
        frame = frame.f_back


def extract_stack(f: Any = None, limit: int | None = None) -> traceback.StackSummary:
    """``traceback.extract_stack`` called by generated code: from ``f`` (the caller's frame by
    default) outward along the user's frames."""
    return _summary(sys._getframe(1) if f is None else f, limit)


def format_stack(f: Any = None, limit: int | None = None) -> list[str]:
    """``traceback.format_stack`` called by generated code (see ``extract_stack``)."""
    return traceback.format_list(_summary(sys._getframe(1) if f is None else f, limit))


def print_stack(f: Any = None, limit: int | None = None, file: Any = None) -> None:
    """``traceback.print_stack`` called by generated code (see ``extract_stack``)."""
    traceback.print_list(_summary(sys._getframe(1) if f is None else f, limit), file=file)


def _summary(f: Any, limit: int | None) -> traceback.StackSummary:
    """``traceback.extract_stack(f, limit)`` along the user's frames from ``f``: a process's
    frame or a ``RunningFrame`` from the user's stack there, a stand-in's along its ``f_back``."""
    frames = _along(f)
    summary = traceback.StackSummary.extract(((fr, fr.f_lineno) for fr in frames), limit=limit)
    summary.reverse()
    return summary


#: the functions that read their caller's frame -> what routed code calls instead
READERS: dict[Any, Any] = {
    **{fn: FrameReader(fn) for fn in (locals, vars, dir)},
    warnings.warn: _warn,
    sys._getframe: getframe,
    inspect.currentframe: currentframe,
    inspect.stack: stack,
    inspect.getframeinfo: frame_info,
    inspect.getouterframes: getouterframes,
    traceback.extract_stack: extract_stack,
    traceback.format_stack: format_stack,
    traceback.print_stack: print_stack,
}
