"""What the frames of a graph break hold where they resume: the locals live in each, the function
and instruction a resume function of each starts from, and the cells a resume function shares
with closures made in the trace (``ResumePoint.cell_args``).
"""

from __future__ import annotations

import dis
import types
import weakref
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ...codegen.emit import Codegen
from ...codegen.frame_locals import KEPT, UserFrame
from ...codegen.pyversion import LOCALS_SNAPSHOT
from ...codegen.resume import resume_origin, takes_cells
from ...guards.sources import AttrSource, ItemSource
from ..exc import Unsupported
from ..markers import REBUILT
from ..variables.base import VariableTracker, walk
from ..variables.frames import takes_own_frame, user_code
from ..variables.functions import (
    ClosureCellVariable,
    LocalCellVariable,
    NestedFunctionVariable,
    SavedCellVariable,
    UserFunctionVariable,
)
from .liveness import cells_written_from, code_cell_writes

if TYPE_CHECKING:
    from ..translator import FrameState, Translator


def live_values(frames: list[FrameState]) -> list[VariableTracker]:
    """What ``emit_break`` may rebuild: each frame's stack and the locals live where it resumes
    (objects made in the trace that only dead locals hold are never created)."""
    live = live_by_frame(frames)
    return [vt for f in frames for vt in [*f.stack, *(f.locals[n] for n in live[id(f)])]]


def live_by_frame(frames: list[FrameState]) -> dict[int, set[str]]:
    """Per frame (by ``id``): the locals live where it resumes."""
    live: dict[int, set[str]] = {}
    for i, frame in enumerate(frames):
        tx = frame.tx
        starts = {frame.index, call_start(tx, frame.index)} if i == 0 else {frame.index + 1}
        live[id(frame)] = {n for start in starts for n in live_names(tx, frame.locals, start)}
    return live


def call_start(tx: Translator, index: int) -> int:
    """Resuming *at* a CALL must also run the KW_NAMES/PRECALL before it (no-ops on the stack)."""
    while (
        index > 0
        and tx.instructions[index].name in ("CALL", "PRECALL", "KW_NAMES")
        and tx.instructions[index - 1].name in ("PRECALL", "KW_NAMES")
    ):
        index -= 1
    return index


def live_names(
    tx: Translator, local_vars: dict[str, VariableTracker], index: int
) -> tuple[str, ...]:
    """The locals a resume function at ``index`` needs, in order. Zero-argument ``super()`` reads
    the frame's first argument implicitly, so in code using it that argument is kept, and kept
    first."""
    live = tx.live_at(index)
    if reads_frame(tx):  # what ``locals()`` may read, now or later, and what the code reads
        live |= frozenset(UserFrame.of(user_code(tx)).names)
    names = [n for n in local_vars if n in live]
    first = (
        tx.code.co_varnames[0]
        if tx.code.co_argcount and "__class__" in tx.code.co_freevars
        else None
    )
    if first is not None and first in local_vars:
        names = [first] + [n for n in names if n != first]
    return tuple(names)


#: How code may read its whole frame (every local it has bound is then live there): the
#: builtins it loads by name, the attribute it reads (a frame from ``sys._getframe`` gives its
#: locals through ``f_locals`` only).
_FRAME_BUILTINS = frozenset({"locals", "vars", "dir"})
_FRAME_ATTRIBUTES = frozenset({"f_locals"})
_LOADS_NAME = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_LOADS_ATTRIBUTE = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
#: code -> whether it may read its whole frame
_READS_FRAME: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()


def _reads_frame(code: types.CodeType) -> bool:
    found = _READS_FRAME.get(code)
    if found is None:
        found = _READS_FRAME[code] = any(
            (i.opname in _LOADS_NAME and i.argval in _FRAME_BUILTINS)
            or (i.opname in _LOADS_ATTRIBUTE and i.argval in _FRAME_ATTRIBUTES)
            for i in dis.get_instructions(code)
        )
    return found


#: How code may read the locals of a frame object it holds: the attribute, or what reads it
_FRAME_LOCALS_READS = frozenset({"f_locals", "getargvalues"})
#: code -> whether it, or code nested in it (a comprehension, a lambda), reads a frame's locals
_READS_FRAME_LOCALS: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()


def _reads_frame_locals(code: types.CodeType) -> bool:
    found = _READS_FRAME_LOCALS.get(code)
    if found is None:
        nested = (c for c in code.co_consts if isinstance(c, types.CodeType))
        found = not _FRAME_LOCALS_READS.isdisjoint(code.co_names) or any(
            _reads_frame_locals(c) for c in nested
        )
        _READS_FRAME_LOCALS[code] = found
    return found


def check_callers_held(frames: list[FrameState]) -> None:
    """A break in a callee whose code may read a frame's ``f_locals`` (its caller's, reached by
    ``inspect.stack()``, ``sys._getframe(n)`` or ``f_back``): once it resumes, its callers are
    the generated frames that run them, which hold the locals they were called with, not every
    local the user's frames have bound (a constant, a value dead after the call, one the trace
    has changed since), and a caller waiting for a resumed callee has no frame at all. The
    callers' locals cannot be given as CPython gives them, so the whole call runs in Python. The
    same for a frame object such a callee is given (a comprehension reading a frame from
    ``inspect.stack()``)."""
    for frame in frames[:-1]:
        if _reads_frame_locals(user_code(frame.tx)):
            raise Unsupported(
                "frame",
                f"{frame.tx.code.co_name} may read the locals of its callers' frames",
                hint="a callee reading its callers' f_locals runs with them in Python",
            )


def template(tx: Translator, index: int) -> tuple[Any, int]:
    """The function and instruction index a resume function starts from (inside a resume function:
    the original function's, see ``resume_origin``)."""
    if tx.fn is None:
        raise Unsupported(
            "resume", f"cannot resume inside {tx.code.co_name} (a closure made in the trace)"
        )
    if tx.fn in REBUILT and tx.fn.__code__.co_freevars:
        # Guarded by what it is made of, not by identity: a later call may give a function with
        # other cells, which a resume function made from this one's closure would read. Its resume
        # functions take its cells as arguments (``free_cells``), read from where the trace found
        # them; where they cannot (``super()`` needs its ``__class__`` cell as a free variable),
        # its cells are guarded by identity: a closure made anew at each call traces again.
        for name in tx.fn.__code__.co_freevars:
            if _cell_base(tx, name) is None:
                raise Unsupported(
                    "resume", f"cannot resume inside {tx.code.co_name}: its cells have no source"
                )
        if not free_cells(tx):
            for name in tx.fn.__code__.co_freevars:
                tx.output.assume_identity(_cell_base(tx, name), tx.closure[name].cell)
    elif tx.fn.__code__.co_freevars:
        # a closure read from the inputs, guarded by what it is made of (``builder``): its resume
        # functions close over its cells, so its identity is guarded
        known = tx.output.wrapped.get(id(tx.fn))
        if known is not None and known[0] is tx.fn and isinstance(known[1], UserFunctionVariable):
            known[1].pin_identity(tx)
    return resume_origin(tx.fn, index)


def _cell_base(tx: Translator, name: str) -> Any:
    """Where the trace found the cell of free variable ``name`` (None: nowhere to read again): the
    compiled function's own cell (``C[name]``, one tracker wherever it is found) is read again
    through the function ``tx`` runs where the trace was given that from a source."""
    cell = tx.closure.get(name)
    if not isinstance(cell, ClosureCellVariable):
        return None
    base = cell.cell_source()
    known = tx.output.wrapped.get(id(tx.fn)) if base is None else None
    if known is not None and known[0] is tx.fn and known[1].source is not None:
        index = tx.fn.__code__.co_freevars.index(name)
        base = ItemSource(AttrSource(known[1].source, "__closure__"), index)
    return base


def free_cells(tx: Translator) -> tuple[str, ...]:
    """The free variables of the user's code of ``tx`` that its resume functions take as their
    cells (``ResumePoint.cell_args``) rather than closing over the cells of the function they are
    made from: all of them, for a function made anew at each call (``REBUILT``: each call's
    closure has cells of its own, so one resume function serves every call) and for a resume
    function that took them so; none where zero-argument ``super()`` reads ``__class__``, which
    must stay a free variable, or where the code deletes one (``takes_cells``)."""
    origin = getattr(tx.fn, "__bytegraph_resume__", None)
    if origin is not None:
        free = origin.template.__code__.co_freevars
        return free if free and set(free) <= set(origin.cell_args) else ()
    code = tx.fn.__code__
    free = code.co_freevars if tx.fn in REBUILT else ()
    return free if "__class__" not in free and takes_cells(code, free) else ()


def cells_written_after(frames: list[FrameState]) -> set[int]:
    """The cells of the traced frames (``LocalCellVariable``s, by id) that a frame may write once
    it resumes. A resume function makes cells of its own, holding the values the break passes it:
    a closure made in the trace gets a new cell too, which is the same as sharing the frame's only
    while neither writes it (see ``NestedFunctionVariable.reconstruct``)."""
    shared: set[int] = set()
    for frame in frames:
        tx = frame.tx
        # 3.12: a break inside an inlined comprehension, whose end puts the saved cell back
        shared |= {
            id(vt.cell) for vt in frame.stack if isinstance(vt, SavedCellVariable) and vt.cell
        }
        if not tx.local_cells:
            continue
        written = cells_written_from(tx.instructions, tx.labels, tx.handlers, frame.index)
        shared |= {id(cell) for name, cell in tx.local_cells.items() if name in written}
    return shared


def passed_cells(frames: list[FrameState]) -> dict[int, tuple[str, ...]]:
    """Per frame (by ``id``): the cell variables its resume function takes as the cell itself
    (``ResumePoint.cell_args``), so that closures made in the trace and the resumed frame share
    them as in CPython: each cell of the frame that a live closure holds and that the frame writes
    once resumed, or a live closure writes (``nonlocal``). Other cells are rebuilt as new cells
    holding their value, which is the same while no one writes them."""
    held: set[int] = set()
    written_by_closures: set[int] = set()
    for vt in walk(live_values(frames)):
        if isinstance(vt, NestedFunctionVariable):
            own = code_cell_writes(vt.code)
            for name, cell in vt.closure.items():
                if isinstance(cell, LocalCellVariable):
                    held.add(id(cell))
                    if name in own:
                        written_by_closures.add(id(cell))
    passed: dict[int, tuple[str, ...]] = {}
    for frame in frames:
        tx = frame.tx
        if not tx.local_cells or tx.fn is None:
            continue
        written = cells_written_from(tx.instructions, tx.labels, tx.handlers, frame.index)
        names = tuple(
            name
            for name, cell in tx.local_cells.items()
            if id(cell) in held and (name in written or id(cell) in written_by_closures)
        )
        if names and takes_cells(template(tx, frame.index)[0].__code__, names):
            passed[id(frame)] = names
    return passed


def cell_args(
    cg: Codegen, frame: FrameState, names: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(names, cell_args)`` for a resume function of ``frame``: the cells it shares with the
    trace's closures (``passed_cells``, added to the names when dead as values), those the frame
    already took as cells (a resume function's own ``cell_args``: once a cell, always one) and its
    free variables' cells (``free_cells``)."""
    origin = getattr(frame.tx.fn, "__bytegraph_resume__", None)
    free = free_cells(frame.tx) if frame.tx.fn is not None else ()
    carried = tuple(n for n in names if origin is not None and n in origin.cell_args)
    carried += tuple(n for n in free if n not in carried)
    new = getattr(cg, "passed_cells", {}).get(id(frame), ())
    names += tuple(n for n in (*new, *free) if n not in names)
    if keeps_locals(frame.tx) and KEPT not in names:
        names += (KEPT,)
    return names, carried + new


def reads_frame(tx: Translator) -> bool:
    """Whether the user's code of ``tx`` may read its whole frame (``locals()``, or through its
    own frame object: ``frames.takes_own_frame``): then every local it has bound is live."""
    code = user_code(tx)
    names = code.co_names
    reads = not (_FRAME_BUILTINS.isdisjoint(names) and _FRAME_ATTRIBUTES.isdisjoint(names))
    return (reads and _reads_frame(code)) or takes_own_frame(tx)


def keeps_locals(tx: Translator) -> bool:
    """Whether the resume functions of ``tx`` take the dict its ``locals()`` returns: the same
    dict at each call of one frame, before and after a break (3.11/3.12)."""
    return not LOCALS_SNAPSHOT and reads_frame(tx)


def dead_on_top(tx: Translator, index: int, depth: int, kept: Collection[int] = ()) -> int:
    """How many of the ``depth`` values on top of the stack the code at ``index`` pops without
    reading them (a run of ``POP_TOP``: the result of a call made for its effect), none of them at
    a position in ``kept`` (NULLs, iterator slots: they travel). The resume function starts
    after those ``POP_TOP``s and is not given the values: no parameter, no guard, for what it
    drops."""
    n = 0
    while n < depth and index + n < len(tx.instructions):
        if tx.instructions[index + n].name != "POP_TOP" or depth - 1 - n in kept:
            break
        n += 1
    return n
