"""Code for a graph break: after the graph, rebuild the interpreter state and continue in Python.

Given the frames of a ``GraphBreak`` (innermost first), the rewritten function:

1. calls the graph and replays side effects (done by ``convert`` before calling ``emit_break``);
2. for a break in the function's own frame, outside any try/with block: rebuilds the live locals and
   the value stack, runs the breaking instruction itself with CPython (a conditional jump picks one
   of two resume functions), then calls the resume function after it with the new stack and locals;
3. otherwise (a break inside an inlined callee, or inside a try/with block) calls a resume function
   that starts *at* the breaking instruction in the callee's own code, then, for every caller frame,
   a resume function that continues right after its call, with the callee's return value pushed.
   A caller whose call stands in try or with blocks also gets a handler: what a callee's resume
   code raises is raised at its call by a resume function of its own code (``_raise_in_caller``),
   so its blocks (``__exit__``, ``except``, ``finally``) handle it as eager's do.

Resume functions are compiled like any function (own guards, cache entries and graph breaks), except
those starting inside a try/with block, which run in plain Python so exception handling stays exact.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bytecode import Instr, Label, TryBegin, TryEnd
from bytecode.instr import UNSET

from ...codegen.emit import NULL_OFFSET, Codegen
from ...codegen.frame_locals import (
    KEPT,
    READERS,
    WAITING,
    FrameReader,
    UserFrame,
    WaitingFrame,
    kept_locals,
)
from ...codegen.pyversion import NULL_ABOVE_CALLABLE
from ...guards import kinds
from ...guards.sources import AttrSource
from ..callees import compiles_on_its_own
from ..context_runtime import exit_with
from ..exc import Unsupported
from ..opcodes import operand_count
from ..translator import FrameState
from ..variables import iterators
from ..variables.base import NullVariable, VariableTracker, walk
from ..variables.constants import TextVariable
from ..variables.contexts import ContextExitVariable
from ..variables.frames import KNOWN_FRAME_READERS, given_as_known, hidden_callers, user_code
from ..variables.functions import BuiltinVariable, UserFunctionVariable, reconstruct_cell
from ..variables.iterators import BuiltinIteratorVariable, GeneratorVariable, IteratorVariable
from ..variables.modules import NNModuleVariable
from ..variables.objects import CFunctionVariable, UserIteratorVariable
from ..variables.tensors import TensorTruthVariable
from . import made_in_resume
from .break_frames import (
    call_start,
    cell_args,
    check_callers_held,
    dead_on_top,
    live_by_frame,
    live_names,
    template,
)

if TYPE_CHECKING:
    from ..translator import Translator

#: ``(template_fn, index, nstack, names, iter_slots, null_slots, compiled[, bool_slots,
#: continues]) -> callable``, from the driver (which caches them). ``continues``: the resume
#: function starts at the instruction of a break in a callee, which its own trace meets at once
#: (the driver reports that break once, from the caller).
ResumeFactory = Callable[..., Any]

_CONDITIONAL_JUMPS = (
    "POP_JUMP_IF_TRUE",
    "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE",
    "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE",
)


@dataclass(eq=False)
class LocalValue(VariableTracker):
    """A value the rewritten code keeps in one of its own locals (e.g. a resume function's
    result)."""

    name: str

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_local(self.name)


def emit_break(
    cg: Codegen,
    frames: list[FrameState],
    resume: ResumeFactory,
    callee: Callable[[Any], Any] | None = None,
) -> None:
    """The code after the graph call: run the instruction that broke, then resume. ``callee``
    (``CompiledCode.callees``), given a function the instruction calls in plain Python, returns
    its compiled version: what a frame hook would do for its frame."""
    _emit_break_code(cg, frames, resume, callee)
    _unguard_breaking_callable(frames)  # once the code is made: a failure keeps every guard


def _emit_break_code(
    cg: Codegen,
    frames: list[FrameState],
    resume: ResumeFactory,
    callee: Callable[[Any], Any] | None,
) -> None:
    leaf = frames[0]
    inline = len(frames) == 1 and _runs_inline(leaf)
    inst = leaf.tx.instructions[leaf.index]
    written = {inst.arg} if inline and isinstance(inst.arg, str) else set()
    written |= set(inst.arg) if inline and isinstance(inst.arg, tuple) else set()
    cg.made_in_resume = made_in_resume.made_locals(frames, live_by_frame(frames), written)
    if inline:
        _emit_inline(cg, leaf, resume, callee)
        return
    root = frames[-1]  # the frame the rewritten code stands for, at its call while resumes run
    line = root.tx.instructions[root.index].lineno
    if isinstance(line, int):  # what a warning's stacklevel or a traceback shows of it
        cg.lineno = line
    _make_texts_first(cg, frames)
    handlers = _raising_callers(frames)
    if handlers:  # the code branches below: objects the callers hold are made on every path
        _build_held_first(cg, frames)
    # A break at the function's own instruction that cannot run here continues in plain Python (a
    # compiled resume would stop at the same instruction again); in a callee it may still compile.
    region = _protected(cg, handlers, 1)
    _note_waiting(cg, frames, 1)
    _call_resume(
        cg,
        leaf,
        call_start(leaf.tx, leaf.index),
        leaf.stack,
        resume,
        compiled=len(frames) > 1,
        continues=len(frames) > 1,
        callee=callee,
        replaced=_known_frames(frames),
    )
    _resumed(cg, region)
    for depth, caller in enumerate(frames[1:], 2):
        done = Label()
        if depth in handlers:
            _raise_in_caller(cg, frames, depth, handlers, resume, done)
        region = _protected(cg, handlers, depth)
        _note_waiting(cg, frames, depth)
        ret = LocalValue("__bg_ret")  # the callee's result (not passed where the caller drops it)
        _call_resume(cg, caller, caller.index + 1, [*caller.stack, ret], resume)
        _resumed(cg, region)
        cg.label(done)
    check_callers_held(frames)  # after the frames' own reasons (a frame the code cannot rebuild)
    cg.load_local("__bg_ret")
    cg.return_value()


#: The rewritten code's local holding the exception a caller's raising resume function raises.
RAISED_LOCAL = "__bg_raised"


def _raising_callers(frames: list[FrameState]) -> dict[int, Label]:
    """The callers (by depth: ``frames[depth - 1]``) whose call stands in try or with blocks,
    each with the label of the rewritten code's handler that raises what reaches it in its own
    code (``_raise_in_caller``)."""
    return {
        depth: Label()
        for depth, caller in enumerate(frames[1:], 2)
        if caller.tx.in_try(caller.index)
    }


def _protected(cg: Codegen, handlers: dict[int, Label], depth: int) -> TryBegin | None:
    """Open the region the code of the resume call at ``depth`` runs in: what raises there is
    raised in the first caller above it whose call stands in a block (none: it propagates)."""
    above = [d for d in handlers if d > depth]
    if not above:
        return None
    region = TryBegin(handlers[min(above)], push_lasti=False, stack_depth=UNSET)
    cg.instrs.append(region)  # with an empty stack: results wait in ``__bg_ret``
    return region


def _resumed(cg: Codegen, region: TryBegin | None) -> None:
    """Keep a resume function's result in ``__bg_ret`` and close its region."""
    cg.store_local("__bg_ret")
    if region is not None:
        cg.instrs.append(TryEnd(region))


def _raise_in_caller(
    cg: Codegen,
    frames: list[FrameState],
    depth: int,
    handlers: dict[int, Label],
    resume: ResumeFactory,
    done: Label,
) -> None:
    """The handler of the caller at ``depth``: a callee's resume code raised before this caller's
    resume function ran. A resume function of the caller's own code raises the exception at its
    call (``ResumePoint.raises``), where the caller's try and with blocks handle it as eager's
    do: ``__exit__`` of each context with the exception (which may swallow it), ``except`` and
    ``finally``. What it returns, if a block goes on past the call, is the caller's result; it
    jumps to ``done``. No exception is handled yet at the handler (none to pop): it is kept in
    ``RAISED_LOCAL`` for the call."""
    caller = frames[depth - 1]
    over = Label()
    cg.jump(over)
    cg.label(handlers[depth])
    cg.store_local(RAISED_LOCAL)
    region = _protected(cg, handlers, depth)
    _note_waiting(cg, frames, depth)
    _call_resume(cg, caller, caller.index, list(caller.stack), resume, raises=True)
    _resumed(cg, region)
    cg.jump(done)
    cg.label(over)


def _build_held_first(cg: Codegen, frames: list[FrameState]) -> None:
    """Make, before the code branches, the objects made in the trace (``build_once``) that the
    callers hold, on their stacks and in the locals either of their resume functions takes: the
    raising one and the one after the call load them from one local, whichever path ran first.
    Values that make no such object push no code here."""
    for frame in frames[1:]:
        tx = frame.tx
        names = {*live_names(tx, frame.locals, frame.index)}
        names |= {*live_names(tx, frame.locals, frame.index + 1)}
        names, cells = cell_args(cg, frame, tuple(n for n in frame.locals if n in names))
        for name in names:
            cg.build_ahead(functools.partial(_load_local, cg, frame, name, cells), Unsupported)
        for vt in frame.stack:
            if isinstance(vt, TensorTruthVariable):
                vt = vt.tensor
            if not isinstance(vt, NullVariable):
                cg.build_ahead(lambda vt=vt: vt.reconstruct(cg), Unsupported)


def _make_texts_first(cg: Codegen, frames: list[FrameState]) -> None:
    """The texts of tensors that the callers hold (``TextVariable``) are made before the callee's
    code runs on, which may change their tensors; the callers' resume calls load them
    (``build_once``)."""
    live = live_by_frame(frames)
    held = [vt for f in frames[1:] for vt in [*f.stack, *(f.locals[n] for n in live[id(f)])]]
    for vt in walk(held):
        if isinstance(vt, TextVariable):
            vt.reconstruct(cg)
            cg.pop_top()


def _note_waiting(cg: Codegen, frames: list[FrameState], depth: int) -> None:
    """Before the resume function of ``frames[depth - 1]`` runs: the callers between it and the
    rewritten code's own frame wait for it, with no frame of their own yet, and a warning's
    ``stacklevel`` counts them (``frame_locals.WAITING``); so do the frames of ``nn.Module``'s
    call above a ``forward`` (``frames.hidden_callers``), which the trace never runs. Before the
    resume function of the rewritten code's own frame, None: that one continues this frame, a
    callee's does not (``frame_locals.user_frames`` tells them apart, recursion too)."""
    if len(frames) < 2:
        return
    if depth == len(frames):
        cg.load_const(None)
        cg.store_local(WAITING)
        return
    waiting: list[WaitingFrame] = []
    for f in frames[depth - 1 : -1]:
        if f is not frames[depth - 1]:
            waiting.append(
                WaitingFrame(
                    f.tx.code.co_filename,
                    f.tx.instructions[f.index].lineno or f.tx.code.co_firstlineno,
                    f.tx.f_globals.get("__name__", "<string>"),
                    user_code(f.tx),
                )
            )
        hidden = hidden_callers(f.tx) or ()
        waiting += [WaitingFrame(h.code.co_filename, h.lineno, h.module, h.code) for h in hidden]
    cg.load_const(tuple(waiting))
    cg.store_local(WAITING)


def _unguard_breaking_callable(frames: list[FrameState]) -> None:
    """Drop the guards that only say which C method the breaking call calls (``sys.stdout.write``:
    its type, ``__name__`` and ``__self__``). The call runs in Python whatever it finds there,
    reading the callable from its source again, so the guards add a cost to every call and
    decide nothing. Only where nothing else in the trace could have read the
    callable's tracker: it was wrapped once at its source and only the call's stack slot holds
    it (its ``__name__`` folded into the graph would need its guard)."""
    leaf = frames[0]
    slot = _call_target_slot(leaf.tx.instructions[leaf.index], leaf.stack)
    if slot is None or not isinstance(leaf.stack[slot], CFunctionVariable):
        return
    vt, output = leaf.stack[slot], leaf.tx.output
    source = vt.source
    if not isinstance(source, AttrSource) or not _new_at_each_read(vt.value, source.attr):
        return
    owner = output.wrapped.get(id(vt.value.__self__))
    if owner is None or owner[1].source != source.base:
        return  # not read from its owner (a method stored in another object)
    if [v for _, v in output.wrapped.values() if v.source == source] != [vt]:
        return  # read more than once: one of the reads may have been used
    if any(other is vt for other in walk(_held_elsewhere(frames, slot))):
        return
    bound_to = AttrSource(source, "__self__")
    output.guards.difference_update(
        [
            g
            for g in output.guards
            if g.source in (source, AttrSource(source, "__name__"))
            or (g.source == bound_to and g.kind is kinds.DUPLICATE_INPUT)
        ]
    )


def _new_at_each_read(method: Any, attr: str) -> bool:
    """Whether ``method`` is a C method bound afresh by each read of ``owner.attr``: the class
    defines ``attr`` as a method descriptor and the instance's own dict does not shadow it. Then
    each read of the source is wrapped anew, and a tracker wrapped once was read once. (A method
    stored in an instance or a module is one object, whose reads all share one tracker.)"""
    owner = getattr(method, "__self__", None)
    if owner is None or isinstance(owner, (type, types.ModuleType)):
        return False
    try:
        own = object.__getattribute__(owner, "__dict__")
    except AttributeError:  # no instance dict (``__slots__``, most C types)
        own = {}
    except Exception:  # noqa: BLE001 (an odd ``__dict__`` descriptor: keep the guards)
        return False
    if type(own) is not dict or attr in own:
        return False
    for klass in type.__dict__["__mro__"].__get__(type(owner)):
        found = type.__dict__["__dict__"].__get__(klass).get(attr)
        if found is not None:
            return type(found) is types.MethodDescriptorType
    return False


def _held_elsewhere(frames: list[FrameState], slot: int) -> list[Any]:
    """Every tracker of the trace but the one at ``frames[0].stack[slot]``: the stacks and locals
    of all frames (the leaf's callers too) and what side effects store or change."""
    leaf = frames[0]
    held: list[Any] = [leaf.stack[:slot], leaf.stack[slot + 1 :]]
    held += [f.stack for f in frames[1:]] + [f.locals for f in frames]
    effects = leaf.tx.output.side_effects
    held += [
        list(effects.attr_stores.values()),
        effects.global_stores,
        effects.cell_stores,
        effects.mutated,
        effects.new_objects,
        effects.instance_dicts,
    ]
    return held


def _load_local(cg: Codegen, frame: FrameState, name: str, cells: tuple[str, ...]) -> None:
    """Push the frame's local ``name`` for a resume call: its cell, for a cell passed as one (a
    free variable's: the cell of the function the frame runs, ``free_cells``)."""
    cell = frame.tx.local_cells.get(name) if name in cells else None
    if cell is None and name in cells and name not in frame.locals:
        cell = frame.tx.closure.get(name)
    if name == KEPT and name not in frame.locals:  # the dict the frame's ``locals()`` returns
        cg.push_callable(lambda: cg.load_const(kept_locals))
        cg.call(0)
    elif cell is not None:
        reconstruct_cell(cg, cell)
    elif _made_locals(cg, frame, (name,)):
        made_in_resume.load_recipe(cg, frame.locals[name])
    else:
        frame.locals[name].reconstruct(cg)


def _made_locals(cg: Codegen, frame: FrameState, names: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``names`` the frame's resume function makes itself (``made_in_resume``)."""
    made = getattr(cg, "made_in_resume", {}).get(id(frame), ())
    return tuple(n for n in names if n in made)


def _runs_inline(frame: FrameState) -> bool:
    tx = frame.tx
    inst = tx.instructions[frame.index]
    if tx.in_try(frame.index) and _with_exit(frame) is None:
        return False  # exact exception handling needs the original code: resume there
    if inst.name == "LOAD_SUPER_ATTR":
        return False
    if _null_slots(frame.stack) and _operands(inst) > len(frame.stack):
        return False  # NULLs under an instruction whose operands we do not know
    return not isinstance(inst.arg, Label) or inst.name in _CONDITIONAL_JUMPS


def _with_exit(frame: FrameState) -> ContextExitVariable | None:
    """The ``__exit__`` of the one ``with`` block around the break, if that is all there is and the
    rewritten code can call it (see ``variables/contexts/``)."""
    if not frame.tx.with_exit_at(frame.index):
        return None
    exits = [vt for vt in frame.stack if isinstance(vt, ContextExitVariable)]
    if len(exits) != 1 or not exits[0].ctx.exit_reconstructable():
        return None
    return exits[0]


def _compilable(frame: FrameState, index: int) -> bool:
    """Can the resume function at ``index`` of ``frame`` be compiled? The code must allow it, and
    each ``with`` exit it receives must be a ``ContextExit`` (guarded by key: any other exit, such
    as that of a block entered by the breaking instruction itself, would be guarded by identity and
    never match again)."""
    inst = frame.tx.instructions[frame.index]
    return (
        frame.tx.resumable_at(index)
        and inst.name != "BEFORE_WITH"
        and all(vt.carried() for vt in frame.stack if isinstance(vt, ContextExitVariable))
    )


def _call_resume(
    cg: Codegen,
    frame: FrameState,
    index: int,
    stack: list[VariableTracker],
    resume: ResumeFactory,
    compiled: bool = True,
    continues: bool = False,
    callee: Callable[[Any], Any] | None = None,
    replaced: dict[int, Any] | None = None,
    raises: bool = False,
) -> None:
    """``callee``: where the resume function runs the instruction at ``index`` in plain Python, a
    function it calls goes as its compiled version (see ``emit_break``). ``replaced``: the stack
    items given as those constants (``_reconstruct_stack``). ``raises``: a resume function that
    raises the exception in ``RAISED_LOCAL`` at ``index`` (``_raise_in_caller``)."""
    tx = frame.tx
    dead = 0 if raises else dead_on_top(tx, index, len(stack), _null_slots(stack))
    index, stack = index + dead, stack[: len(stack) - dead]
    compiled = compiled and not raises and _compilable(frame, index)
    callee = None if compiled else callee
    names, cells = cell_args(cg, frame, live_names(tx, frame.locals, index))
    live_locals = [frame.locals[n] for n in names if n in frame.locals]
    slots, nulls = _iterator_slots(stack, len(stack), live_locals), _null_slots(stack)
    # 3.13: ``bool(tensor)`` for the jump at ``index`` travels as the tensor (see ``make_resume``),
    # so the resume function breaks on the tensor as the original would.
    truths = tuple(i for i, vt in enumerate(stack) if isinstance(vt, TensorTruthVariable))
    fn = resume(
        *template(tx, index),
        len(stack),
        names,
        slots,
        nulls,
        compiled,
        bool_slots=truths,
        continues=continues,
        cell_args=cells,
        made_locals=_made_locals(cg, frame, names),
        **({"raises": True} if raises else {}),
    )
    cg.push_callable(lambda: cg.load_cell_value(fn.__name__, fn))
    for name in names:  # locals first: see ``make_resume``
        _load_local(cg, frame, name, cells)
    compiled_at = _compiled_callee(frame, callee)
    _reconstruct_stack(cg, stack, slots, as_args=True, compiled_at=compiled_at, replaced=replaced)
    if raises:
        cg.load_local(RAISED_LOCAL)
    cg.call(len(stack) - len(nulls) + len(names) + raises)


def _emit_inline(
    cg: Codegen,
    frame: FrameState,
    resume: ResumeFactory,
    callee: Callable[[Any], Any] | None = None,
) -> None:
    """Break in the function's own frame: restore locals and stack, run the instruction, resume."""
    tx, index = frame.tx, frame.index
    inst = tx.instructions[index]
    names, cells = cell_args(cg, frame, live_names(tx, frame.locals, index))
    # Iterators below the operands of the instruction travel as tuples (see ``make_resume``).
    untouched = len(frame.stack) - _operands(inst)
    slots = _iterator_slots(
        frame.stack, untouched, [frame.locals[n] for n in names if n in frame.locals]
    )
    exit_vt = _with_exit(frame)
    protect = (
        TryBegin(Label(), push_lasti=False, stack_depth=UNSET) if exit_vt is not None else None
    )
    # Once the block's context is entered again, rebuilding the rest (``tensor.numpy()`` of a
    # bfloat16 graph output, say) may raise: that is inside the block, as in the original code.
    begin = (frame.stack.index(exit_vt), protect) if protect is not None else None
    _reconstruct_stack(
        cg,
        frame.stack,
        slots,
        as_args=False,
        begin=begin,
        compiled_at=_compiled_callee(frame, callee),
        replaced={**_known_frames([frame]), **_frame_reader(frame, cells)},
        consumed=untouched,
    )
    for name in names:
        _load_local(cg, frame, name, cells)
    for name in reversed(names):
        cg.store_local(name)
    if isinstance(inst.lineno, int):  # the instruction runs here: tracebacks show the user's line
        cg.lineno = inst.lineno
    if inst.name in _CONDITIONAL_JUMPS:
        taken = Label()
        # Our own jump always goes forward (the Emitter's names carry 3.11's FORWARD spelling).
        if inst.name.endswith("IF_TRUE"):
            cg.pop_jump_if_true(taken)
        else:
            cg.pop_jump_if_false(taken)
        if protect is not None:
            cg.instrs.append(TryEnd(protect))
        _resume_with_stack(cg, frame, index + 1, len(frame.stack) - 1, names, slots, resume)
        cg.label(taken)
        _resume_with_stack(
            cg, frame, tx.labels[inst.arg], len(frame.stack) - 1, names, slots, resume
        )
    elif _is_method_load(inst):
        # Run it as a plain attribute load and add a NULL: [NULL, bound method] (3.13: [bound
        # method, NULL]) is a valid CALL convention, and the NULL is a known slot ([meth, self] is
        # not).
        cg.load_attr(_attr_name(inst))
        if protect is not None:
            cg.instrs.append(TryEnd(protect))
        cg.add_null_to_callable()
        nstack = len(frame.stack) + 1
        _resume_with_stack(
            cg, frame, index + 1, nstack, names, slots, resume, (nstack - NULL_OFFSET,)
        )
    else:
        _run_instruction(cg, tx, inst)
        if protect is not None:
            cg.instrs.append(TryEnd(protect))
        # CALL n consumes [NULL|self, fn, *args] (3.11's PRECALL share included); others as ``dis``
        # says.
        effect = -(inst.arg + 1) if inst.name == "CALL" else inst.stack_effect(jump=False)
        if inst.name not in ("RAISE_VARARGS", "RERAISE"):  # nothing runs after a raise
            _resume_with_stack(
                cg, frame, index + 1, len(frame.stack) + effect, names, slots, resume
            )
    if protect is not None and not exit_vt.ctx.exit_may_swallow():
        _emit_exit_handler(cg, protect.target, exit_vt)
    elif protect is not None:
        below = frame.stack.index(exit_vt)  # the stack the handler unwinds to: these, the exit
        swallowed = Label()
        _emit_exit_handler(cg, protect.target, exit_vt, swallowed)
        # ``__exit__`` swallowed the exception: on after the block, as the original handler goes
        cg.label(swallowed)
        cg.pop_top()  # the exception
        cg.add("POP_EXCEPT")
        cg.pop_top()  # the exit
        after = _after_swallowed(tx, tx.handlers[index])
        _resume_with_stack(cg, frame, after, below, names, slots, resume)


def _emit_exit_handler(
    cg: Codegen, label: Label, exit_vt: VariableTracker, swallowed: Label | None = None
) -> None:
    """If the instruction raised: call the ``with`` block's ``__exit__`` with the exception (leaving
    the context), then re-raise, as the original block's handler would (its own cleanup
    included). Where ``__exit__`` returns a true value it swallows the exception: the code jumps
    to ``swallowed`` (the exception and its predecessor's exc_info on the stack), or, where no
    such label is given (``exit_vt``'s exit ignores exceptions), re-raises all the same."""
    cleanup = TryBegin(Label(), push_lasti=True, stack_depth=UNSET)
    cg.label(label)
    cg.instrs.append(cleanup)
    cg.add("PUSH_EXC_INFO")  # (prev_exc exc)
    cg.push_callable(lambda: cg.load_const(exit_with))
    exit_vt.reconstruct(cg)
    cg.copy(4)  # exc (the callable and its NULL sit between, in either order)
    cg.call(2)
    if swallowed is not None:
        cg.pop_jump_if_true(swallowed)
    else:
        cg.pop_top()
    cg.add("RERAISE", 0)
    cg.instrs.append(TryEnd(cleanup))
    cg.label(cleanup.target)
    cg.add("COPY", 3)
    cg.add("POP_EXCEPT")
    cg.add("RERAISE", 1)


#: What a ``with`` block's handler runs once ``__exit__`` swallowed the exception: it pops the
#: exception, restores the one handled before, pops the raising offset and the exit.
_SWALLOWED_CLEANUP = frozenset({"POP_TOP", "POP_EXCEPT"})
_JUMPS = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
)


def _after_swallowed(tx: Any, handler: int) -> int:
    """The instruction CPython runs next when the ``__exit__`` of the ``with`` block whose handler
    starts at ``handler`` swallows the exception: past the handler's jump on the exit's result
    and its cleanup (a jump after it followed), the stack left as it was below the exit."""
    ins = tx.instructions
    for i in range(handler + 2, min(handler + 5, len(ins))):
        if ins[i].name.startswith("POP_JUMP") and ins[i].name.endswith("IF_TRUE"):
            at = tx.labels[ins[i].arg]
            break
    else:
        raise Unsupported("resume", f"unrecognised with-block handler at {handler}")
    while at < len(ins) and ins[at].name in _SWALLOWED_CLEANUP:
        at += 1
    if at < len(ins) and ins[at].name in _JUMPS:
        at = tx.labels[ins[at].arg]
    return at


def _operands(inst: Instr) -> int:
    """How many stack items the breaking instruction consumes, as its handler declares (all of them
    where it does not). The container stores declare none: a dict iterator below them travels as a
    tuple of its remaining items and would no longer see the dict change size, so those keep the
    old conservative path."""
    count = operand_count(inst)
    return 1 << 30 if count is None else count


def _is_method_load(inst: Instr) -> bool:
    # NOTE(3.12): the method form is LOAD_ATTR with (True, name); 3.11 has LOAD_METHOD.
    return inst.name == "LOAD_METHOD" or (
        inst.name == "LOAD_ATTR" and isinstance(inst.arg, tuple) and inst.arg[0]
    )


def _attr_name(inst: Instr) -> str:
    return inst.arg[1] if isinstance(inst.arg, tuple) else inst.arg


def _iterator_slots(
    stack: list[VariableTracker], limit: int, live_locals: list[VariableTracker]
) -> tuple[int, ...]:
    """The stack positions below ``limit`` whose iterators travel as tuples of their remaining
    items. An input iterator (``iterators.wrap_input_iterator``) goes on as the caller's own object,
    and so does one that shares its position with another live value (a loop over ``it`` that a
    local also holds, a ``zip`` pulling from it): taking its items ahead would leave the other
    behind. So does an iterator over a list (``iter_at`` of the real list, positioned): CPython's
    sees the items the rest of the loop appends to the list, which a tuple taken at the break
    would not hold."""
    for vt in stack:
        if isinstance(vt, GeneratorVariable) and not (
            iterators.restartable(vt) or vt.escapes_as_is()
        ):
            # its remaining items are not known: cannot rebuild
            raise Unsupported(
                "generator",
                "a generator is suspended at the graph break",
                hint="consume the generator before the graph break",
            )
    slots = []
    for i, vt in enumerate(stack[: max(limit, 0)]):
        if not isinstance(vt, IteratorVariable) or vt.source is not None:
            continue
        if _rebuilt_as_object(vt) or iterators.over_a_list(vt):
            continue
        mine = {id(v) for v in walk(vt) if isinstance(v, IteratorVariable)}
        others = {id(v) for v in walk([*live_locals, *stack[:i], *stack[i + 1 :]])}
        if not mine & others:
            slots.append(i)
    return tuple(slots)


def _rebuilt_as_object(vt: IteratorVariable) -> bool:
    """A ``map``/``filter`` (or a ``zip``/``enumerate`` over one) whose remaining items cannot be
    made ahead: each calls a function, which may break or have effects (``q, k, v = map(f, qkv)``
    where ``f`` breaks a few calls deep). It goes on as the real object over its rebuilt sources,
    its items still to be made, by whatever consumes it; so does a polyfilled C iterator made
    again from its suspended state (``GeneratorVariable.escapes_as_is``: a sequence iterator)."""
    if isinstance(vt, GeneratorVariable):
        return vt.escapes_as_is()
    if isinstance(vt, UserIteratorVariable):  # an object keeping its own position
        return True
    return (
        isinstance(vt, BuiltinIteratorVariable)
        and not vt.rebuildable()
        and vt.index >= len(vt.items)
    )


def _null_slots(stack: list[VariableTracker]) -> tuple[int, ...]:
    return tuple(i for i, vt in enumerate(stack) if isinstance(vt, NullVariable))


def _reconstruct_stack(
    cg: Codegen,
    stack: list[VariableTracker],
    slots: tuple[int, ...],
    as_args: bool,
    begin: tuple[int, TryBegin] | None = None,
    compiled_at: tuple[int | None, Any] = (None, None),
    replaced: dict[int, Any] | None = None,
    consumed: int = 0,
) -> None:
    """Push ``stack``; ``as_args``: for a resume call, where NULLs are left out (its prefix pushes
    them) and 3.13's ``bool(tensor)`` goes as the tensor (its prefix converts it). ``begin``:
    ``(i, try_begin)`` opens that protected region right after item ``i`` is pushed.
    ``compiled_at``: ``(i, compile)``: item ``i`` goes through ``compile`` (a called function).
    ``replaced``: item ``i`` is ``replaced[i]`` instead (a constant). A callable at ``consumed``
    or above (the instruction run next takes it) read as an attribute is read as a method with
    its NULL (``push_method``: no bound method made); one below stays a NULL and the bound
    method, the layout ``_resume_with_stack`` hands on to the resume function."""
    replaced = replaced or {}
    methods = (
        {} if as_args else _method_calls(stack, slots, compiled_at[0], replaced, begin, consumed)
    )
    for i, vt in enumerate(stack):
        if as_args and isinstance(vt, NullVariable):
            continue
        if i in methods.values():
            continue  # the NULL of a method call: ``push_method`` places it
        if i in methods:
            cg.push_method(lambda vt=vt: vt.reconstruct(cg))
            continue
        if as_args and isinstance(vt, TensorTruthVariable):
            vt = vt.tensor  # the resume function's prefix converts it
        if i in replaced:
            cg.load_const(replaced[i])
        elif i in slots:
            vt.reconstruct_items(cg)
        elif i == compiled_at[0]:
            cg.load_const(compiled_at[1])
            vt.reconstruct(cg)
            cg.call_function(1)
        else:
            vt.reconstruct(cg)
        if begin is not None and begin[0] == i:
            cg.instrs.append(begin[1])


def _method_calls(
    stack: list[VariableTracker],
    slots: tuple[int, ...],
    compiled: int | None,
    replaced: dict[int, Any],
    begin: tuple[int, TryBegin] | None,
    consumed: int,
) -> dict[int, int]:
    """The stack positions of callables rebuilt by ``push_method``, each with its NULL's: those
    ``_reconstruct_stack`` rebuilds as they are, with no region opened between them, that the
    instruction run next consumes (at ``consumed`` or above)."""
    pairs = {}
    for null in _null_slots(stack):
        # NOTE(3.13): [callable, NULL]; 3.11/3.12: [NULL, callable]
        fn = null - 1 if NULL_ABOVE_CALLABLE else null + 1
        if not max(consumed, 0) <= min(fn, null) or fn >= len(stack):
            continue
        if isinstance(stack[fn], (NullVariable, TensorTruthVariable)):
            continue
        if fn in slots or fn == compiled or fn in replaced:
            continue
        if begin is not None and begin[0] in (fn, null):
            continue
        pairs[fn] = null
    return pairs


def continues_in_callee(frames: list[FrameState], reason: Unsupported) -> bool:
    """Does the break stop at a call in the function's own frame (the callee's break could not
    resume there) whose callee then runs compiled (``callees.py``) and reports the break itself?"""
    leaf = frames[0]
    runs_in_python = len(frames) == 1 or not _compilable(leaf, call_start(leaf.tx, leaf.index))
    return (
        runs_in_python
        and len(reason.user_stack) > 1  # it happened inside the callee
        and _compiled_slot(leaf) is not None
    )


def _callable_slot(inst: Instr, stack: list[VariableTracker]) -> int | None:
    """Where the callable of the call ``inst`` is on ``stack``, if it is a user function (or a
    method of one) made before the call, that ``callees.py`` compiles on its own; else None."""
    base = _call_target_slot(inst, stack)
    if base is None:
        return None
    vt = stack[base]
    # a function made in the trace is a new object at each call: it would compile every call
    if isinstance(vt, UserFunctionVariable) and compiles_on_its_own(vt.fn):
        return base
    if isinstance(vt, NNModuleVariable) and vt.source is not None:
        return base  # ``callees.py`` decides, from the module, whether it compiles
    return None


def _call_target_slot(inst: Instr, stack: list[VariableTracker]) -> int | None:
    """Where the callable of the call ``inst`` is on ``stack`` (None if ``inst`` is no call).
    NOTE(3.13): [callable, NULL|self, args]; 3.11/3.12: [NULL, callable, args] or [method, self,
    args]."""
    extra = {"CALL": 2, "CALL_KW": 3}.get(inst.name)
    if extra is not None:
        base = len(stack) - inst.arg - extra
    elif inst.name == "CALL_FUNCTION_EX":
        base = len(stack) - 3 - (inst.arg & 1)  # the args tuple, and the kwargs dict if any
    else:
        return None
    if base < 0:
        return None
    if not NULL_ABOVE_CALLABLE and isinstance(stack[base], NullVariable):
        base += 1
    return base


def _compiled_slot(frame: FrameState) -> int | None:
    """Where the frame's instruction runs in plain Python because it is a call inside a ``try``
    block (the callee's break cannot resume there: the caller's handlers must see what it
    raises), the stack position of the callable, which goes as its compiled version. Other calls a
    break leaves to Python (through a builtin, of a closure made in the trace) stay plain, as
    their frames hold little tensor work (wav2vec2's NumPy mask sampler)."""
    if not frame.tx.in_try(frame.index) or _with_exit(frame) is not None:
        return None
    return _callable_slot(frame.tx.instructions[frame.index], frame.stack)


def _called(frame: FrameState) -> tuple[int | None, Any]:
    """The stack position of the callable the frame's instruction calls, and the callable where
    the trace knows it (None, None where the instruction is no call)."""
    slot = _call_target_slot(frame.tx.instructions[frame.index], frame.stack)
    vt = frame.stack[slot] if slot is not None else None
    plain = isinstance(vt, (BuiltinVariable, UserFunctionVariable))  # ``inspect.stack``: Python
    return slot, vt.fn if plain else getattr(vt, "value", None)


def _frame_reader(frame: FrameState, cells: tuple[str, ...]) -> dict[int, Any]:
    """Where the frame's instruction calls ``locals``, ``vars`` or ``dir``, which read the frame
    calling them, and that frame is the rewritten one: the stack position of the callable and what
    the rewritten code calls instead, which reads the user's frame it stands for (``cells``: the
    locals the rewritten code holds as their cells)."""
    slot, fn = _called(frame)
    reader = next((r for f, r in READERS.items() if f is fn), None) if slot is not None else None
    if reader is None:
        return {}
    if isinstance(reader, FrameReader):
        reader = FrameReader(fn, UserFrame.of(user_code(frame.tx), cells))
    return {slot: reader}


def _known_frames(frames: list[FrameState]) -> dict[int, Any]:
    """Where the breaking call reads of a frame what the trace knows (``KNOWN_FRAME_READERS``:
    ``inspect.getframeinfo``): the stack positions of its arguments that are frames of the
    inline stack, and each such frame as the trace knows it (``frames.given_as_known``: a frame
    its locals are not live for, a callee's, one of ``nn.Module``'s call)."""
    leaf = frames[0]
    slot, fn = _called(leaf)
    if slot is None or not any(fn is reader for reader in KNOWN_FRAME_READERS):
        return {}
    at = {id(f.tx): f.tx.instructions[f.index] for f in frames}
    given = {i: given_as_known(leaf.stack[i], at) for i in range(slot + 1, len(leaf.stack))}
    return {i: frame for i, frame in given.items() if frame is not None}


def _compiled_callee(frame: FrameState, callee: Any) -> tuple[int | None, Any]:
    """``compiled_at`` for ``_reconstruct_stack`` (``(None, None)`` without a ``callee``)."""
    return (None, None) if callee is None else (_compiled_slot(frame), callee)


def _run_instruction(cg: Codegen, tx: Translator, inst: Instr) -> None:
    """Run the breaking instruction ``inst`` in CPython, at its own position (line and columns:
    what a traceback, ``inspect.stack()`` or a frame's reader sees there)."""
    start = len(cg.instrs)
    if inst.name == "CALL":
        cg.call(inst.arg, tx.kw_names)
    else:
        cg.add(inst.name, inst.arg)
    if inst.location is not None:
        for emitted in cg.instrs[start:]:
            emitted.location = inst.location


def _resume_with_stack(
    cg: Codegen,
    frame: FrameState,
    index: int,
    nstack: int,
    names: tuple[str, ...],
    slots: tuple[int, ...],
    resume: ResumeFactory,
    new_nulls: tuple[int, ...] = (),
) -> None:
    """The instruction left ``nstack`` values; pass them and the live locals to the resume function
    at ``index`` and return its result. NULLs (the CALL convention's) cannot be arguments: they are
    consumed by a dummy call here and pushed again by the resume prefix (``new_nulls``: NULLs the
    instruction pushed)."""
    tx = frame.tx
    untouched = min(nstack, len(frame.stack) - _operands(frame.tx.instructions[frame.index]))
    nulls = tuple(i for i in _null_slots(frame.stack) if i < untouched) + new_nulls
    dead = dead_on_top(tx, index, nstack, {*nulls, *slots})
    for _ in range(dead):
        cg.pop_top()
    index, nstack = index + dead, nstack - dead
    names, cells = cell_args(
        cg, frame, tuple(n for n in live_names(tx, frame.locals, index) if n in names)
    )
    slots = tuple(s for s in slots if s < nstack)
    fn = resume(
        *template(tx, index),
        nstack,
        names,
        slots,
        nulls,
        _compilable(frame, index),
        cell_args=cells,
        made_locals=_made_locals(cg, frame, names),
    )
    for i in reversed(range(nstack)):
        if i in nulls:
            cg.pop_null()
        else:
            cg.store_local(f"__bg_s{i}")
    cg.push_callable(lambda: cg.load_cell_value(fn.__name__, fn))
    for name in names:
        cg.load_local(name)
    for i in range(nstack):
        if i not in nulls:
            cg.load_local(f"__bg_s{i}")
    cg.call(len(names) + nstack - len(nulls))
    cg.return_value()
