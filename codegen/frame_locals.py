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
- ``warnings.warn`` and ``sys._getframe``: their ``stacklevel`` and ``depth`` count the user's
  frames (``user_frames``), so a warning names the user's line. The frame objects are the
  generated ones (their ``f_locals`` hold the generated names too).
"""

from __future__ import annotations

import itertools
import sys
import types
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .pyversion import LOCALS_SNAPSHOT


@dataclass(frozen=True)
class UserFrame:
    """The user's frame that a generated frame stands for."""

    #: the user's code's local names, in the order CPython's ``locals()`` lists them
    names: tuple[str, ...]
    #: those among ``names`` the generated frame holds as a plain local holding the cell
    cells: tuple[str, ...] = ()

    @classmethod
    def of(cls, code: types.CodeType, cells: tuple[str, ...] = ()) -> UserFrame:
        """The frame of ``code``: arguments and locals, then cells that are no arguments, then
        free variables (the order of CPython's fast locals)."""
        plain = code.co_varnames
        names = plain + tuple(c for c in code.co_cellvars if c not in plain) + code.co_freevars
        return cls(names, tuple(cells))


#: generated code -> the user's frame it stands for (resume functions, and their routed copies)
_FRAMES: weakref.WeakKeyDictionary[types.CodeType, UserFrame] = weakref.WeakKeyDictionary()
#: (3.11/3.12) the name under which a generated frame keeps the dict its ``locals()`` returns:
#: a key of its own locals dict, which CPython never writes back to the frame, or a resume
#: function's argument (``kept_locals``), so that the calls before and after a break share it
KEPT = "__bg_user_locals"
_UNBOUND = object()


def register(code: types.CodeType, frame: UserFrame) -> None:
    """Generated ``code`` stands for the user's ``frame``."""
    _FRAMES[code] = frame


def registered(code: types.CodeType) -> UserFrame | None:
    return _FRAMES.get(code)


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
        user = _FRAMES.get(frame.f_code)
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

    @property
    def globals(self) -> dict[str, Any]:
        found = sys.modules.get(self.module)
        return found.__dict__ if found is not None else {"__name__": self.module}


def user_frames(
    frame: types.FrameType | None,
) -> Iterator[types.FrameType | WaitingFrame]:
    """The frames of the user's stack from ``frame`` outward, each the real frame that runs it:
    without entry functions, and a function continued by resume functions once (the innermost
    resume function; the frames that called it wait for it to return). Callers that wait for a
    resumed callee (``WAITING``) come where the user's stack has them, as ``WaitingFrame``s."""
    continued = None  #: (file, first line) of the resume function met last
    while frame is not None:
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno)
        if not code.co_filename.startswith(ENTRY_FILE) and key != continued:
            if WAITING in code.co_varnames:
                yield from frame.f_locals.get(WAITING) or ()
            yield frame
            continued = key if code in _FRAMES else None  # a resume function
        frame = frame.f_back


def _real_depth(frame: types.FrameType, depth: int) -> int | None:
    """How many real frames above ``frame`` the user's frame ``depth`` levels above it is (None
    where the user's stack is not that deep, or that frame waits for a resumed callee)."""
    real_frames = (f for f in user_frames(frame) if not isinstance(f, WaitingFrame))
    target = next(itertools.islice(real_frames, depth, None), None)
    real = 0
    while frame is not None and frame is not target:
        frame, real = frame.f_back, real + 1
    return real if target is not None else None


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
        real_wanted = sum(1 for f in found[:wanted] if not isinstance(f, WaitingFrame))
        real = _real_depth(caller, real_wanted)
        stacklevel = 2 + (wanted if real is None else real)  # past this function's own frame
    warnings.warn(message, category, stacklevel, source, **kwargs)


def _getframe(depth: Any = 0) -> types.FrameType:
    """``sys._getframe`` called by generated code: ``depth`` counts the user's frames."""
    if type(depth) is not int:
        return sys._getframe(depth)  # CPython's TypeError
    caller = sys._getframe(1)
    if depth <= 0:
        return caller
    real = _real_depth(caller, depth)
    if real is None:
        raise ValueError("call stack is not deep enough")
    return sys._getframe(1 + real)


#: the builtins that read their caller's frame -> what routed code calls instead
READERS: dict[Any, Any] = {
    **{fn: FrameReader(fn) for fn in (locals, vars, dir)},
    warnings.warn: _warn,
    sys._getframe: _getframe,
}
