"""Resume functions: the original code, entered in the middle, with the value stack passed in.

``make_resume(fn, globals, ResumePoint(index, nstack, names))`` returns a function taking
``(*names, __stack0, ..., __stack{n-1})`` (locals first: zero-argument ``super()`` reads the first
argument, which must stay ``self``): its prefix pushes the stack arguments back, then jumps to
instruction ``index`` of the original code; from there the original instructions (and their
exception table) run unchanged, but for 3.13's two-local instructions, spelled as two (see
``_PAIRS``). Named ``__resume_at_{index}_{number}`` (its code keeps the template's name).
``resume_origin`` maps an instruction of a resume function back to the original function (through
its ``ResumeOrigin``).
"""

from __future__ import annotations

import bisect
import dis
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

from . import exception_table, frame_locals
from .frame_locals import UserFrame
from .pyversion import CALL_NEEDS_PRECALL, LOAD_ATTR_TAKES_METHOD_FLAG, NULL_ABOVE_CALLABLE
from .transform import make_function

#: The name of every resume function starts so.
RESUME_NAME = "__resume_at_"


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume function enters its template, and what it is called with."""

    index: int  #: the instruction it continues at (pseudo-instructions not counted)
    nstack: int  #: values on the stack there, passed as ``__stack0..``
    names: tuple[str, ...]  #: the locals live there, bound from the first arguments
    #: stack slots passed as tuples and turned into iterators by the prefix: a loop interrupted by
    #: a break continues over the remaining items (which the tracer can unroll)
    iter_slots: tuple[int, ...] = ()
    #: stack slots holding the CALL convention's NULL, which cannot be an argument: the prefix
    #: pushes it and no argument is taken for it
    null_slots: tuple[int, ...] = ()
    #: (3.13) stack slots passed as the value a ``TO_BOOL`` before ``index`` converted, converted
    #: by the prefix so that the resume function sees what the original did
    bool_slots: tuple[int, ...] = ()
    #: cell variables (among ``names``) passed as the cell itself, not its value: the frame's cell,
    #: shared with closures made before the break (``takes_cells``). The code reads and writes it
    #: as ``cell.cell_contents``
    cell_args: tuple[str, ...] = ()
    #: locals (among ``names``) passed as ``(function, args, kwargs)`` and made by the prefix
    #: (``make_local``): a generator that has not started, made in the resume function
    #: rather than before the break (``tracer/breaks/made_in_resume.py``)
    made_locals: tuple[str, ...] = ()
    #: instead of going on at ``index``, raise the exception passed as the last argument
    #: (``RAISED``) there: the try and with blocks around ``index`` handle it as the original
    #: code would if its instruction raised (a callee's resume function raised it)
    raises: bool = False


#: The argument of a ``raises`` resume function holding the exception it raises.
RAISED = "__bg_raised"


def make_local(recipe: tuple) -> Any:
    """Runtime helper a resume function's prefix calls for each of its ``made_locals``: ``recipe``
    is ``(function, args, (name, value) pairs)``."""
    function, args, kwargs = recipe
    return function(*args, **dict(kwargs))


@dataclass(frozen=True)
class ResumeOrigin:
    """What a resume function keeps of how it was made (``fn.__bytegraph_resume__``): instruction
    ``j >= first`` of it is instruction ``j - n_prefix`` of ``template``, less the split pairs'
    second halves up to ``j``."""

    template: types.FunctionType  #: the function it continues
    n_prefix: int  #: instructions the prefix added
    first: int  #: its first instruction copied from the template after the prefix
    seconds: tuple[int, ...]  #: its instructions that are second halves of split pairs
    cell_args: tuple[str, ...] = ()  #: see ``ResumePoint.cell_args``
    #: its arguments holding the rest of a loop's items, which its prefix iterates (the iterator
    #: slots: ``tracer/variables/iterators.ResumedItemsVariable``)
    iter_args: tuple[str, ...] = ()


def make_resume(
    template: types.FunctionType,
    globals_: dict[str, Any] | None,
    point: ResumePoint,
    number: int = 0,
) -> types.FunctionType:
    """A function running ``template``'s code from ``point`` (see ``ResumePoint``), named
    ``__resume_at_{index}_{number}`` (``number`` tells apart resume functions at one index)."""
    index, nstack, names = point.index, point.nstack, point.names
    iter_slots, null_slots, bool_slots = point.iter_slots, point.null_slots, point.bool_slots
    code = template.__code__
    items, depths_known = _decoded(code)
    kept = tuple(n for n in code.co_freevars if n not in point.cell_args)
    target = Label()
    body: list[Any] = []
    seen = 0
    prologue_end = None
    halves: set[int] = set()  #: second instructions of split pairs (see ``_PAIRS``)
    active: list[TryBegin] = []  #: try blocks open where the target instruction is
    for item in items:
        if isinstance(item, Instr):
            if seen == index:
                body.append(target)
                enclosing = list(active)
            seen += 1
        elif isinstance(item, TryBegin):
            active.append(item)
        elif isinstance(item, TryEnd) and item.entry in active:
            active.remove(item.entry)
        if isinstance(item, Instr) and point.cell_args:
            spelled = _cell_as_local(item, point.cell_args)
            if spelled is not None:
                body += spelled
                halves.update(id(extra) for extra in spelled[1:])
                continue
        if isinstance(item, Instr) and item.name == "COPY_FREE_VARS" and kept != code.co_freevars:
            # its free variables but those taken as cells
            body.append(Instr("COPY_FREE_VARS", len(kept)) if kept else Instr("NOP"))
            continue
        if isinstance(item, Instr) and item.name in _PAIRS:
            first_op, second_op = _PAIRS[item.name]
            second = Instr(second_op, item.arg[1], location=item.location)
            body += [Instr(first_op, item.arg[0], location=item.location), second]
            halves.add(id(second))
            continue
        body.append(item)
        if isinstance(item, Instr) and item.name == "RESUME" and prologue_end is None:
            prologue_end = len(body)
    if seen <= index:
        raise ValueError(f"instruction {index} is outside {code.co_name}")
    assert prologue_end is not None, "code without RESUME"
    stack = _stack_names(code, nstack)
    stack_args = tuple(stack[i] for i in range(nstack) if i not in null_slots)
    prefix: list[Any] = [instr for name in point.made_locals for instr in _made(name)]
    # Enter the try blocks around the target as the original did, each once the stack is as deep as
    # its handler expects, so ``bytecode`` computes the handlers' depths (and exits them after the
    # jump).
    opened = (
        sorted(
            (tb for tb in enclosing if isinstance(tb.stack_depth, int)),
            key=lambda tb: tb.stack_depth,
        )
        if depths_known
        else []
    )
    copies = []
    for i in range(nstack + 1):
        for tb in [tb for tb in opened if tb.stack_depth == i]:
            copies.append(TryBegin(tb.target, tb.push_lasti, stack_depth=tb.stack_depth))
            prefix.append(copies[-1])
        if i == nstack:
            break
        if i in null_slots:
            prefix.append(Instr("PUSH_NULL"))
            continue
        prefix.append(Instr("LOAD_FAST", stack[i]))
        if i in iter_slots:
            prefix.append(Instr("GET_ITER"))
        if i in bool_slots:  # NOTE(3.13): only 3.13 has TO_BOOL (and needs it before a jump)
            prefix.append(Instr("TO_BOOL"))
    if point.raises:
        if not depths_known:
            raise ValueError(f"the try blocks of {code.co_name} have no known depths")
        prefix += [Instr("LOAD_FAST", RAISED), Instr("RAISE_VARARGS", 1)]
    else:
        prefix.append(Instr("JUMP_FORWARD", target))
    prefix.extend(TryEnd(tb) for tb in reversed(copies))
    body[prologue_end:prologue_end] = prefix
    name = f"{RESUME_NAME}{index}_{number}"
    fn = make_function(
        template,
        body,
        name=name,
        argnames=tuple(names) + stack_args + ((RAISED,) if point.raises else ()),
        cellvars=[name for name in code.co_cellvars if name not in point.cell_args],
        freevars=kept,
        prologue=False,
        globals_=globals_,
        compute_exception_depths=not depths_known,
        # its frames run the user's function: tracebacks, logging's ``funcName`` and
        # ``f_code.co_name`` name that function, as in eager (the function keeps ``name``)
        code_name=(code.co_name, code.co_qualname),
    )
    n_prefix = sum(isinstance(item, Instr) for item in prefix)
    first = sum(isinstance(item, Instr) for item in body[:prologue_end]) + n_prefix
    instrs = [item for item in body if isinstance(item, Instr)]
    seconds = tuple(j for j, instr in enumerate(instrs) if id(instr) in halves)
    iter_args = tuple(stack[i] for i in iter_slots)
    fn.__bytegraph_resume__ = ResumeOrigin(
        template, n_prefix, first, seconds, point.cell_args, iter_args
    )
    if not depths_known:
        fn.__code__ = _fix_try_depths(fn.__code__, code, lambda j: _origin_index(fn, j))
    frame_locals.register(fn.__code__, _user_frame(code, point.cell_args))
    return fn


def _user_frame(code: types.CodeType, cells: tuple[str, ...]) -> UserFrame:
    """The user's frame a resume function of ``code`` stands for: ``code``'s own, or where
    ``code`` is a resume function's (one resuming in its prefix), the frame that one stands for."""
    user = frame_locals.registered(code)
    if user is None:
        return UserFrame.of(code, cells)
    more = tuple(c for c in cells if c not in user.cells)
    return UserFrame(user.names, user.cells + more, user.code)


def _stack_names(code: types.CodeType, nstack: int) -> tuple[str, ...]:
    """The names of the stack arguments: ``__stack0``... unless the template has a local so named.
    A resume function's own prefix may break (a generator it makes there, ``made_locals``, is
    rolled back to that call: ``tracer/breaks/iterator_rollback.py``), and the resume function
    resuming there takes its template's ``__stack`` arguments as live locals: its own stack
    arguments are then ``___stack0``..., or with more underscores, so no two arguments share a
    name (one would bind the other's value)."""
    taken = code.co_varnames + code.co_cellvars + code.co_freevars
    prefix = "__stack"
    while any(name.startswith(prefix) for name in taken):
        prefix = "_" + prefix
    return tuple(f"{prefix}{i}" for i in range(nstack))


#: Each template's instructions, decoded once: see ``_decoded``.
_DECODED: weakref.WeakKeyDictionary[types.CodeType, tuple[tuple[Any, ...], bool]] = (
    weakref.WeakKeyDictionary()
)


def _decoded(code: types.CodeType) -> tuple[tuple[Any, ...], bool]:
    """``code``'s instructions and whether their ``TryBegin``s hold their handlers' depths
    (``exception_table.set_try_depths``), decoded once per code: a function breaking at several
    places, or again in a later compile, has a resume function per break, all made from the same
    instructions. Shared by all of them, so never changed: ``make_resume`` spells what it changes
    as new items, and ``bytecode`` copies the items it assembles."""
    cached = _DECODED.get(code)
    if cached is None:
        items = list(Bytecode.from_code(code))
        cached = _DECODED[code] = (tuple(items), exception_table.set_try_depths(items, code))
    return cached


def _made(name: str) -> list[Instr]:
    """``name = make_local(name)``."""
    if NULL_ABOVE_CALLABLE:
        call = [Instr("LOAD_CONST", make_local), Instr("PUSH_NULL")]
    else:
        call = [Instr("PUSH_NULL"), Instr("LOAD_CONST", make_local)]
    call.append(Instr("LOAD_FAST", name))
    if CALL_NEEDS_PRECALL:
        call.append(Instr("PRECALL", 1))
    return [*call, Instr("CALL", 1), Instr("STORE_FAST", name)]


#: What code may do with a cell variable for it to be passed as its cell (``takes_cells``).
_CELL_OPS = frozenset({"MAKE_CELL", "LOAD_DEREF", "STORE_DEREF", "LOAD_CLOSURE", "LOAD_FAST"})


def takes_cells(code: types.CodeType, names: tuple[str, ...]) -> bool:
    """Can a resume function of ``code`` take the cell variables ``names`` as cells? Not where the
    code deletes one, or (3.12+ inlined comprehensions) saves and restores its slot."""
    for instr in dis.get_instructions(code):
        if instr.opcode in _NAMES_LOCAL and instr.argval in names and instr.opname not in _CELL_OPS:
            return False
    return True


#: The opcodes whose argument names a local, cell or free variable (not a constant ``"c"``, a
#: global or an attribute of that name).
_NAMES_LOCAL = frozenset(dis.haslocal) | frozenset(dis.hasfree)


def _cell_as_local(item: Instr, names: tuple[str, ...]) -> list[Instr] | None:
    """How a resume function spells ``item`` when the cell variables ``names`` are plain locals
    holding their cell (None: as it is): ``MAKE_CELL`` is a ``NOP`` (instructions keep their
    positions), ``LOAD_DEREF c`` reads ``c.cell_contents``, ``STORE_DEREF c`` writes it,
    ``LOAD_CLOSURE c`` loads ``c``. The second instruction of a pair maps back to the same
    template instruction (``ResumeOrigin.seconds``)."""
    arg = item.arg
    name = arg.name if isinstance(arg, (CellVar, FreeVar)) else arg
    if item.name not in _CELL_OPS or not isinstance(name, str) or name not in names:
        return None  # (a constant or attribute named as the cell is no use of it)
    where = {"location": item.location}
    if item.name == "MAKE_CELL":
        return [Instr("NOP", **where)]
    if item.name == "LOAD_DEREF":
        attr = (False, "cell_contents") if LOAD_ATTR_TAKES_METHOD_FLAG else "cell_contents"
        return [Instr("LOAD_FAST", name, **where), Instr("LOAD_ATTR", attr, **where)]
    if item.name == "STORE_DEREF":
        return [Instr("LOAD_FAST", name, **where), Instr("STORE_ATTR", "cell_contents", **where)]
    return [Instr("LOAD_FAST", name, **where)]  # LOAD_CLOSURE, or 3.13's LOAD_FAST of the cell


#: NOTE(3.13): the instructions naming two locals, and the two instructions each stands for. Their
#: argument packs both local numbers in 4 bits each: a resume function numbers its locals anew
#: (its arguments first), where one may be 16 or more, and ``bytecode`` then writes another local
#: without a word (fuzz seed 957955461 returned an int for a tensor). Resume functions spell each
#: pair as its two instructions; the other versions have none.
_PAIRS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}


def _fix_try_depths(
    new: types.CodeType, original: types.CodeType, origin: Callable[[int], int]
) -> types.CodeType:
    """The prefix jumps past the ``TryBegin`` of a try block around the target, so ``bytecode``
    never reaches it and gives its handlers depth 32768: unwinding to that depth corrupts memory.
    The code after the prefix is the original's (``origin`` maps an instruction of ``new`` to the
    original's): give each handler the original's depth for the same handler (or refuse, if one
    cannot be matched)."""
    entries = exception_table.entries(new)
    if all(e.depth < exception_table.UNREACHED for e in entries):
        return new
    depths = {e.target: e.depth for e in exception_table.entries(original)}
    regions = []
    for e in entries:
        depth = e.depth
        if depth >= exception_table.UNREACHED:
            handler = origin(e.target)
            if handler not in depths:
                raise ValueError(f"cannot place the try-block handlers of {original.co_name}")
            depth = depths[handler]
        regions.append((e.start_unit, e.end_unit, e.target_unit, depth, e.lasti))
    return new.replace(
        co_exceptiontable=exception_table.encode(regions),
        co_stacksize=max(new.co_stacksize, original.co_stacksize),
    )


def resume_origin(fn: types.FunctionType, index: int) -> tuple[types.FunctionType, int]:
    """Where instruction ``index`` of ``fn`` comes from: for a resume function, the original
    function and the index there, so a break inside a resume function resumes in the original code
    (a loop breaking at every iteration reuses one resume function instead of nesting new ones)."""
    origin: ResumeOrigin | None = getattr(fn, "__bytegraph_resume__", None)
    if origin is None or index < origin.first:
        return fn, index
    return origin.template, _origin_index(fn, index)


def _origin_index(fn: types.FunctionType, index: int) -> int:
    """The template's instruction for instruction ``index`` (at or after the prefix) of resume
    function ``fn``; both instructions of a split pair map to the pair."""
    origin: ResumeOrigin = fn.__bytegraph_resume__
    return index - origin.n_prefix - bisect.bisect_right(origin.seconds, index)
