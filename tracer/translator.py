"""``Translator``: symbolic execution of one code object over VariableTrackers.

It owns the value stack, the symbolic locals and the instruction pointer, and ``step()`` dispatches
each instruction to its handler in ``opcodes/``; it knows no opcode semantics itself.
``inline_call`` runs a called user function in a child translator sharing the same ``OutputGraph``.

When an instruction cannot be traced, ``step()`` rolls the frame back to just before it and raises
``GraphBreak`` carrying each frame's state (innermost first): the leaf frame stopped *at* the
instruction, its callers stopped at the call that is still running. ``breaks.py`` turns that into
code.
"""

from __future__ import annotations

import sys
import types
import weakref
from dataclasses import dataclass
from inspect import (
    CO_ASYNC_GENERATOR,
    CO_COROUTINE,
    CO_GENERATOR,
    CO_ITERABLE_COROUTINE,
    CO_VARARGS,
    CO_VARKEYWORDS,
)
from typing import Any

from bytecode import Instr, Label

from ..guards.sources import (
    AttrSource,
    ClosureSource,
    ConstSource,
    GlobalSource,
    GlobalsSource,
    ItemSource,
    ModuleGlobalSource,
    Source,
)
from . import code_reader, opcodes, run_time_logging
from .breaks import iterator_rollback
from .breaks.deferred_checks import EffectsWait
from .breaks.liveness import live_locals
from .exc import ReturnValue, TracedException, TraceTooLong, Unsupported, UserLocation
from .fakes.shapes import is_data_dependent_guard
from .output_graph import OutputGraph
from .variables import builder, dispatch
from .variables.base import RUNNING, VariableTracker
from .variables.constants import ConstantVariable
from .variables.containers import DictVariable, TupleVariable
from .variables.functions import ClosureCellVariable, called_by_partials
from .variables.iterators import GeneratorVariable

#: Inlining deeper than this is treated as unsupported recursion.
MAX_INLINE_DEPTH = 32
#: A trace running more instructions than this, its inlined calls included, is abandoned: the
#: function runs in Python. Counted, not timed, so that whether a function compiles never depends
#: on how busy the machine is (a time limit let a large model fall back on a loaded machine).
MAX_TRACE_INSTRUCTIONS = 2_000_000


@dataclass
class FrameState:
    """Where one frame stopped: the instruction index and its stack and locals at that point."""

    tx: Translator
    index: int  #: the breaking instruction (leaf frame) or the running call (caller frames)
    stack: list[
        VariableTracker
    ]  #: leaf: before the instruction; callers: without the call's operands
    locals: dict[str, VariableTracker]


class GraphBreak(Exception):  # noqa: N818 (control flow)
    """Tracing stopped at an instruction; ``frames`` lists the frame states, innermost first."""

    def __init__(self, reason: Unsupported, frames: list[FrameState]) -> None:
        super().__init__(str(reason))
        self.reason = reason
        self.frames = frames


class Translator:
    def __init__(
        self,
        code: types.CodeType,
        f_globals: dict[str, Any],
        output: OutputGraph,
        symbolic_locals: dict[str, VariableTracker],
        closure: dict[str, VariableTracker],
        parent: Translator | None = None,
        fn: types.FunctionType | None = None,
    ) -> None:
        self.code = code
        self.fn = fn  #: the real function whose code this is (None for closures made in the trace)
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", __builtins__)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.output = output
        self.symbolic_locals = symbolic_locals
        self.closure = closure
        self.parent = parent
        self.stack: list[VariableTracker] = []
        linearized = _linearize(code)
        self.instructions, self.labels, self.handlers, self.try_depth, self.names = linearized
        self._live: list[frozenset[str]] | None = None
        self.ip = 0
        self.current: Instr | None = None
        self.kw_names: tuple[str, ...] = ()
        self.local_cells: dict[str, VariableTracker] = {}  #: cell var -> its LocalCellVariable
        self.depth = parent.depth + 1 if parent is not None else 0
        #: the translator of the compiled function itself, which every inlined call's comes from
        self.root: Translator = parent.root if parent is not None else self
        self.direct_callee: Any = None  #: the callable of the CALL being run (see ``call_direct``)
        self.inlined_direct = False  #: the running instruction inlined its direct callee
        #: the callable of the parent's CALL instruction, where that call inlined this code
        self.callee: VariableTracker | None = None
        #: exceptions that a builtin run by this frame's current instruction catches when its
        #: traced callees raise them (``hasattr``: AttributeError; see ``will_be_caught``)
        self.builtin_catches: list[type[BaseException]] = []
        #: a generator's frame: the frame that resumed it last, where an exception it lets out
        #: goes on (see ``will_be_caught``)
        self.resumed_by: Translator | None = None
        #: instructions traced by this trace, all its inlined frames together (``[count]``)
        self.traced: list[int] = parent.traced if parent is not None else [0]
        #: the source of ``f_globals`` once found (``_globals_source``)
        self.globals_source: Source | None = None

    # -- stack -------------------------------------------------------------------------------------
    def push(self, vt: VariableTracker) -> None:
        assert isinstance(vt, VariableTracker), vt
        self.stack.append(vt)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def peek(self, depth: int = 1) -> VariableTracker:
        return self.stack[-depth]

    def jump(self, label: Label) -> None:
        self.ip = self.labels[label]

    # -- running -----------------------------------------------------------------------------------
    def run(self) -> VariableTracker:
        previous, self.output.current_tx = self.output.current_tx, self
        running, RUNNING.tx = RUNNING.tx, self
        if self.code.co_flags & CO_GENERATOR:
            self.resumed_by = previous
        step = self.step
        try:
            while True:
                step()
        except ReturnValue as ret:
            return ret.value
        finally:
            self.output.current_tx = previous
            RUNNING.tx = running

    def step(self) -> None:
        index = self.ip
        if index >= len(self.instructions):
            raise Unsupported("fell_off", "reached the end of the code without a return")
        inst = self.instructions[index]
        name = self.names[index]
        self.ip += 1
        self.traced[0] += 1
        if self.traced[0] > MAX_TRACE_INSTRUCTIONS:
            raise TraceTooLong(
                f"tracing {self.code.co_name} ran over {MAX_TRACE_INSTRUCTIONS} instructions"
            )
        self.current = inst
        fn = opcodes.HANDLERS.get(name)
        # the state a break rolls back to; the output's part left out (None) before an
        # instruction that cannot change it (see ``complete``)
        frame_only = name in opcodes.FRAME_ONLY
        saved = (
            list(self.stack),
            dict(self.symbolic_locals),
            None if frame_only else self.output.checkpoint(),
            self.kw_names,
        )
        self.direct_callee, self.inlined_direct = None, False
        self.step_start = (index, saved)
        try:
            if fn is None:
                reason = opcodes.UNSUPPORTED.get(name, "not implemented")
                raise Unsupported("opcode", f"no handler for {name} ({reason})")
            fn(self, inst)
            # A whole instruction of the root frame ran: nothing undoes it (unless a context that
            # cannot be re-entered is open: a break in its block rolls back to its ``with``; or an
            # iterator that cannot be rebuilt is pending: a break rolls back to its birth, which
            # is noted in any frame: asked only with a generator on top, the usual answer first).
            if self.stack and isinstance(self.stack[-1], GeneratorVariable):
                iterator_rollback.note(self, index, saved)
            if self.parent is None and not frame_only:  # (one changes nothing to commit)
                if not self.output.state.holds_rollback() and not iterator_rollback.pending(self):
                    self.output.side_effects.commit()
        except ReturnValue:  # the frame returned (the usual way out): nothing to roll back
            raise
        except TracedException as te:  # raised here or in a callee: caught here or further up
            if not opcodes.exceptions.catch(self, index, te.exc):
                raise
        except GraphBreak as gb:
            point = self.output.state.rollback_point(self)
            if point is not None:  # see ``with_start``
                raise self.break_at(point[1], point[2], gb.reason) from None
            here = FrameState(self, index, list(saved[0]), dict(saved[1]))
            moved = iterator_rollback.rollback(self, [*gb.frames, here], gb.reason)
            if moved is not None:
                raise moved from None
            # The callee resumes in its own code; a call inside try or with blocks too: what its
            # resume code raises is raised at this call, in this frame's code, whose handlers run
            # (``breaks.continuation._raise_in_caller``). A break there only because side effects
            # wait for the graph is taken at such a call instead: the call runs in Python after
            # the effects, its callee compiled on its own, with none waiting (``EffectsWait``).
            callee = gb.frames[-1].tx
            waits = isinstance(gb.reason, EffectsWait) and not self.resumable_at(index)
            if self.inlined_direct and self.resumes_in(callee) and not waits:
                gb.frames.append(
                    FrameState(self, index, list(self.stack), dict(self.symbolic_locals))
                )
                raise
            raise self.break_at(index, saved, gb.reason) from None
        except Unsupported as e:
            traced = opcodes.exceptions.traced_python_error(self, e)
            if traced is None:
                point = self.output.state.rollback_point(self)
                if point is not None:
                    raise self.break_at(point[1], point[2], e) from None
                brk = self.break_at(index, saved, e)
                raise iterator_rollback.rollback(self, brk.frames, e) or brk from None
            if not opcodes.exceptions.catch(self, index, traced.exc):
                raise traced from None
        except Exception as e:
            if not is_data_dependent_guard(e):
                raise
            # a value computed from tensor data was needed
            cond = getattr(e, "cond", None)
            cond = str(e).splitlines()[0] if cond is None else cond
            reason = Unsupported(
                "data_dependent",
                f"needs to know whether {cond}, a value computed from tensor data",
                hint="keep the decision in tensor operations (torch.where), or move it out",
            )
            raise self.break_at(index, saved, reason) from None

    def resumes_in(self, callee: Translator) -> bool:
        """Can a break in ``callee``, called by this frame, resume inside it? Not in a closure
        made in the trace (no function to resume), nor in logging's code, which names the first
        frame above its own (``findCaller``): generated code once it resumes. Else the whole call
        runs in Python, the break taken at this frame's call."""
        return callee.fn is not None and not run_time_logging.names_its_caller(callee.code)

    def with_start(self) -> tuple[Translator, int, tuple]:
        """Where the running instruction (a ``with``) began: a context that rewritten code cannot
        enter again (a suspended generator, user code) keeps it, and a break anywhere inside its
        block is taken there instead, rolled back like a partly run instruction."""
        index, saved = self.step_start
        return self, index, saved

    def complete(self, saved: tuple) -> tuple:
        """``saved`` (the state before an instruction, as ``step`` took it) with the output's
        checkpoint, taken now where the instruction was frame-only: it changed nothing there. For
        a state kept to roll back to later (an iterator's birth), asked right after the
        instruction."""
        if saved[2] is not None:
            return saved
        return (saved[0], saved[1], self.output.checkpoint(), saved[3])

    def break_at(self, index: int, saved: tuple, reason: Unsupported) -> GraphBreak:
        """Undo the partly run instruction and describe a break *at* it."""
        stack, local_vars, checkpoint, kw_names = saved
        self.stack, self.kw_names = stack, kw_names
        # In place: the frame's cells (``LocalCellVariable``) read and write this very dict, and
        # a closure rebuilt at the break makes its cells from what they read.
        if local_vars is not self.symbolic_locals:
            self.symbolic_locals.clear()
            self.symbolic_locals.update(local_vars)
        self.ip = index
        if checkpoint is not None:  # None: a frame-only instruction, which changed no output
            self.output.restore(checkpoint)
        loc = self.location()
        if loc is not None:
            reason.user_stack.insert(0, loc)
        return GraphBreak(reason, [FrameState(self, index, list(stack), dict(local_vars))])

    def handler_runs(self, classes: tuple[type[BaseException], ...]) -> bool:
        """Would an exception of one of ``classes`` raised at the running instruction run code of
        the traced frames' handlers (``opcodes.exceptions.handler_runs``)? Asked from below the
        opcodes' layer (``deferred_checks.note_op``)."""
        return opcodes.exceptions.handler_runs(self, classes)

    def in_try(self, index: int) -> bool:
        """Is instruction ``index`` covered by an exception handler (a try or with block)?"""
        return index < len(self.handlers) and self.handlers[index] is not None

    def resumable_at(self, index: int) -> bool:
        """Can a compiled resume function start at ``index``? Outside try/with blocks, or directly
        in one ``with`` block (a break there runs inline, protected: see ``breaks.py``; the block's
        exit must also be a ``ContextExit``, which ``breaks.py`` checks)."""
        return not self.in_try(index) or self.with_exit_at(index)

    def with_exit_at(self, index: int) -> bool:
        """Is ``index`` directly in a ``with`` block that no try/with block encloses? CPython's
        exception table is flat (one region per instruction), so nesting shows one level down: the
        with-block handler's own cleanup handler is itself covered only when a block encloses it."""
        handler = self.handlers[index] if index < len(self.handlers) else None
        if handler is None or self.try_depth[index] != 1:
            return False
        if [i.name for i in self.instructions[handler : handler + 2]] != [
            "PUSH_EXC_INFO",
            "WITH_EXCEPT_START",
        ]:
            return False
        cleanup = self.handlers[handler]
        return cleanup is not None and self.handlers[cleanup] is None

    def live_at(self, index: int) -> frozenset[str]:
        """Locals that may be read from instruction ``index`` on (see ``liveness.py``)."""
        if self._live is None:
            cells = frozenset(self.code.co_cellvars)
            self._live = live_locals(self.instructions, self.labels, self.handlers, cells)
        return self._live[index] if index < len(self._live) else frozenset()

    def call_direct(
        self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """The call of a CALL instruction: if it inlines ``fn`` and breaks inside, the break can
        resume in this frame right after the call (nested resume) instead of re-running the whole
        call."""
        self.direct_callee = fn
        return dispatch.call(self, fn, args, kwargs)

    def location(self) -> UserLocation | None:
        return UserLocation(*self.frame_summary())

    def frame_summary(self) -> tuple[str, int, str]:
        """``(filename, lineno, function)`` of the running instruction (``location``'s fields, read
        for each frame of every node's stack trace)."""
        inst = self.current
        lineno = inst.lineno if inst is not None else None
        if lineno is None:
            lineno = self.code.co_firstlineno
        return self.code.co_filename, lineno, self.code.co_name

    # -- wrapping values ---------------------------------------------------------------------------
    def wrap(self, value: Any, source: Source | None) -> VariableTracker:
        return builder.wrap(self, value, source)

    def wrap_static(self, value: Any) -> VariableTracker:
        return builder.wrap_static(self, value)

    def wrap_fixed(self, value: Any, label: str) -> VariableTracker:
        return builder.wrap_fixed(self, value, label)

    def wrap_unsourced(self, value: Any, what: str) -> VariableTracker:
        return builder.wrap_unsourced(self, value, what)

    def fold(self, value: Any) -> VariableTracker:
        return builder.fold(self, value)

    def fold_call(
        self, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return builder.fold_call(self, fn, args, kwargs)

    def load_global(self, name: str) -> VariableTracker:
        effects = self.output.side_effects
        own = self.f_globals is self.root.f_globals  # the compiled function's module
        pending = effects.global_stores.get(name) if own else None
        if own and effects.global_deleted(name):  # a builtin's guard would see it present
            raise Unsupported("global", f"global {name!r} was deleted in the trace")
        if pending is None and self.parent is not None:  # set as an attribute of its module
            pending = effects.namespace_store(self.f_globals, name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            source = _global_source(self, name)
            return self.wrap(self.f_globals[name], source)
        if name in self.f_builtins:
            return builder.wrap_builtin(self, self.f_builtins[name], _globals_source(self), name)
        raise Unsupported("name_error", f"name {name!r} is not defined")

    # -- calls -------------------------------------------------------------------------------------
    def inline_call(
        self,
        code: types.CodeType,
        f_globals: dict[str, Any],
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        defaults: tuple[dict, dict],
        closure: dict[str, VariableTracker],
        fn: Any,
    ) -> VariableTracker:
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("recursion", f"inlining {code.co_name} is nested too deeply")
        if code.co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR):
            raise Unsupported(
                "generator",
                f"{code.co_name} is a coroutine",
                hint="coroutines are not traced; call it outside the compiled function",
            )
        local_vars = bind_args(self, code, args, kwargs, defaults)
        callee = self.direct_callee
        self.direct_callee = None
        self.inlined_direct = callee is not None and _is_callee(callee, code)
        tx = Translator(code, f_globals, self.output, local_vars, closure, parent=self, fn=fn)
        tx.callee = callee if self.inlined_direct else None
        if (
            code.co_flags & CO_GENERATOR
        ):  # a generator runs to exhaustion; what it yields becomes an iterator
            return opcodes.control.run_generator(tx)
        return tx.run()


def _is_callee(callee: VariableTracker, code: types.CodeType) -> bool:
    """Is ``code`` the code the CALL instruction's callable runs (not a callback inside a
    builtin)?"""
    callee = called_by_partials(callee)
    target = getattr(callee, "fn", None) or getattr(callee, "value", None)
    forward = getattr(type(target), "forward", None) if target is not None else None
    return (
        getattr(target, "__code__", None) is code
        or getattr(forward, "__code__", None) is code
        or getattr(callee, "code", None) is code
    )


def _global_source(tx: Translator, name: str) -> Source:
    """Globals of the root frame are ``G[...]``; those of functions inlined from another module are
    ``M['mod'][...]``, guarded the same way; those of code exec'd outside any module are read
    through the inlined function the trace was given (``L['fn'].__globals__[...]``). Other globals
    we cannot name are constants of the trace (a ``ConstSource``, which refuses to be
    guarded)."""
    globals_source = _globals_source(tx)
    if globals_source is None:
        return ConstSource(tx.f_globals[name], f"{tx.f_globals.get('__name__')}.{name}")
    if not isinstance(globals_source, GlobalsSource):
        return ItemSource(globals_source, name)
    if globals_source.module is None:
        return GlobalSource(name)
    return ModuleGlobalSource(globals_source.module, name)


def _globals_source(tx: Translator) -> Source | None:
    """The globals dict of ``tx``'s code as a guard can read it (``G``, ``M['mod']``, or the
    ``__globals__`` of the function ``tx`` runs, when the trace has it from a source: its
    identity is guarded, and a function's ``__globals__`` cannot be rebound), or None. Asked at
    each global load: a frame keeps the source once found (its globals are fixed)."""
    found = tx.globals_source
    if found is None:
        found = tx.globals_source = _find_globals_source(tx)
    return found


def _find_globals_source(tx: Translator) -> Source | None:
    if tx.f_globals is tx.root.f_globals:
        return GlobalsSource()
    # a module may rename itself (``_collections_abc`` sets ``__name__ = "collections.abc"``):
    # its import name is its spec's
    spec = tx.f_globals.get("__spec__")
    for module in (tx.f_globals.get("__name__"), getattr(spec, "name", None)):
        if (
            isinstance(module, str)
            and getattr(sys.modules.get(module), "__dict__", None) is tx.f_globals
        ):
            return GlobalsSource(module)
    known = tx.output.wrapped.get(id(tx.fn)) if tx.fn is not None else None
    if known is not None and known[0] is tx.fn and known[1].source is not None:
        return AttrSource(known[1].source, "__globals__")
    if tx.parent is not None and tx.parent.f_globals is tx.f_globals:  # a function made there
        return _globals_source(tx.parent)
    return None


def bind_args(
    tx: Translator,
    code: types.CodeType,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    defaults: tuple[dict, dict],
) -> dict[str, VariableTracker]:
    """Bind call arguments to ``code``'s parameters, as CPython does (TypeError cases are
    Unsupported)."""
    nargs, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    bound: dict[str, VariableTracker] = {}
    pos_defaults, kw_defaults = defaults
    for name, value in zip(names[:nargs], args, strict=False):
        bound[name] = value
    extra = list(args[nargs:])
    kwargs = dict(kwargs)
    for name in names[code.co_posonlyargcount : nargs + nkw]:
        if name in kwargs:
            if name in bound:
                raise Unsupported("bad_call", f"{code.co_name}() got multiple values for {name!r}")
            bound[name] = kwargs.pop(name)
    for name in names[: nargs + nkw]:
        if name not in bound:
            default = pos_defaults.get(name, kw_defaults.get(name, _MISSING))
            if default is _MISSING:
                raise Unsupported("bad_call", f"{code.co_name}() missing argument {name!r}")
            bound[name] = (
                default if isinstance(default, VariableTracker) else _wrap_default(tx, default)
            )
    index = nargs + nkw
    if code.co_flags & CO_VARARGS:
        bound[names[index]] = TupleVariable(extra)
        index += 1
    elif extra:
        raise Unsupported("bad_call", f"{code.co_name}() got too many positional arguments")
    if code.co_flags & CO_VARKEYWORDS:
        bound[names[index]] = DictVariable(kwargs)
    elif kwargs:
        raise Unsupported(
            "bad_call", f"{code.co_name}() got unexpected keyword {next(iter(kwargs))!r}"
        )
    return bound


def _wrap_default(tx: Translator, value: Any) -> VariableTracker:
    if isinstance(value, (int, float, bool, str, type(None))):
        return ConstantVariable(value)
    return tx.wrap(value, ConstSource(value, "default"))


_MISSING = object()


def root_closure(fn: types.FunctionType, output: OutputGraph) -> dict[str, VariableTracker]:
    """The compiled function's closure cells (``C['name']``), each the one tracker of its cell in
    the trace (``functions.closure_cell``): a function that shares the cell, reached through
    another source (``L['g'].__closure__[0]``), reads the stores the frame made."""
    cells = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        cells[name] = ClosureCellVariable(cell, ClosureSource(name))
        output.wrapped[id(cell)] = (cell, cells[name])
    return cells


#: ``_linearize`` results per code object (read-only once made): a model's layers share their
#: code, and parsing bytecode is a large part of inlining a call.
_LINEARIZED: weakref.WeakKeyDictionary[types.CodeType, tuple] = weakref.WeakKeyDictionary()


def _linearize(
    code: types.CodeType,
) -> tuple[list[Instr], dict[Label, int], list[int | None], list[int], list[str]]:
    """Instructions without pseudo-instructions, each label's index, and for each instruction the
    index of the innermost exception handler covering it (None outside try/with blocks) and how many
    handler regions cover it (``code_reader.read``), then each instruction's name (read once:
    ``step`` asks for it at every instruction). Cached per code object; callers must not change
    what they get."""
    cached = _LINEARIZED.get(code)
    if cached is None:
        read = code_reader.read(code)
        cached = _LINEARIZED[code] = (*read, [inst.name for inst in read[0]])
    return cached
