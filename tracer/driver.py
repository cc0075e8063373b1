"""The compile driver: what ``bytegraph.compile`` builds around a user function.

``CompiledCode`` holds one function's variant cache; every call reaches it through the entry
function of ``entry.py``. On a miss the function is traced (``convert.convert_call``); failures to
trace install a fallback variant (the original function, its calls routed through compiled
callees: ``routed``) guarded by what the trace had assumed so far, so the same inputs never trace
twice. ``recompile_limit`` bounds the variants; past it the function runs eagerly.

This module, and what ``bytegraph`` imports, load none of the tracer's translator and trackers:
``convert`` is imported at the first compile, so ``import bytegraph`` stays cheap.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import logging
import threading
import time
import types
import warnings
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ..codegen import route_calls
from ..codegen.frame_locals import ENTRY_FILE
from ..codegen.resume import ResumePoint, make_resume
from ..codegen.transform import Numbering
from ..guards import kinds
from ..guards.cache import FunctionCache, Variant
from ..guards.guard import Guard
from ..guards.kinds import global_state_guards
from ..guards.module_tree import member_names
from ..guards.sources import ChainedSource, ModuleGlobalSource, Source
from . import callees
from .callees import CalleeCompiler
from .code_reader import parameters
from .entry import dispatch, make_entry, run_directly
from .exc import BytegraphError, InternalError, NumbersAdvance, TraceTooLong, Unsupported
from .fakes.shapes import DynamicPolicy
from .process import COMPILE_LOCK

if TYPE_CHECKING:
    from .convert import TraceResult

log = logging.getLogger("bytegraph")
recompile_log = logging.getLogger("bytegraph.recompiles")
guards_log = logging.getLogger("bytegraph.guards")
graph_log = logging.getLogger("bytegraph.graph_code")
breaks_log = logging.getLogger("bytegraph.graph_breaks")


@dataclass
class Settings:
    """What ``compile(...)`` was given for one function."""

    backend: Any  #: the resolved compiler function
    fullgraph: bool = False
    dynamic: bool | None = None
    recompile_limit: int | None = None  #: None: ``GlobalSettings.recompile_limit``
    name: str | None = None  #: the name reports show (``compile(name=...)``)
    mode: str | None = None  #: as given to ``compile``, for reports
    options: dict[str, Any] = field(default_factory=dict)  #: as given to ``compile``, for reports


@dataclass(frozen=True)
class GlobalSettings:
    """Process-wide settings, read at every miss (``bytegraph.config`` and the honoured
    ``torch._dynamo.config`` values; the facade installs the reader as ``global_settings``)."""

    recompile_limit: int = 8
    error_on_recompile: bool = False  #: a recompile raises instead of tracing again
    error_on_graph_break: bool = False  #: a graph break raises (``error_on_graph_break()``)
    automatic_dynamic: bool = True  #: sizes and ints that change are traced symbolically
    dynamic_default: bool | None = (
        None  #: what ``dynamic=None`` means (True: dynamic from the start)
    )
    speculate: bool = False  #: branches on tensor data take the call's side (``speculation.py``)
    speculation_miss_limit: int = 2  #: misses at one branch before traces break there
    speculation_unroll_limit: int = 64  #: speculations at one branch within one trace


#: Returns the current ``GlobalSettings``; replaced by the facade (``bytegraph.config``) at import.
global_settings: Callable[[], GlobalSettings] = GlobalSettings


@dataclass
class CompileEvent:
    """One trace of the function, for reports (``explain``, the pytest plugin, the bytecode log).

    Listeners get ``(compiled_code, event)``. A trace that fell back to Python has ``unsupported``
    set and no ``fn``; a trace that graph-broke lists each break in ``breaks`` (and has ``fn``).
    """

    reason: str
    graphs: list[Any] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)
    unsupported: Unsupported | None = None  #: why it fell back to Python, if it did
    guards: str = ""
    breaks: list[Unsupported] = field(default_factory=list)  #: graph breaks (went on in Python)
    #: branches on tensor data the trace speculated on (``speculation.Site``: live hit/miss counts)
    speculated: list[Any] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  #: failing guards that caused this recompile
    fn: Any = None  #: the rewritten function installed for this trace (None on a fallback)
    compiled: list[Any] = field(default_factory=list)  #: what the backend returned, per graph
    trace_s: float = 0.0  #: seconds tracing and generating code (backend time excluded)
    backend_s: float = 0.0  #: seconds in the backend
    guard_us: float | None = None  #: µs a call spends in the guards (when ``measure_guard_time``)
    when: float = field(default_factory=time.time)  #: wall-clock time the event was recorded
    #: the trace returned without a tensor operation: the code is left alone from now on
    tensor_free: bool = False

    @property
    def is_recompile(self) -> bool:
        return bool(self.failures)


def format_break(e: Unsupported) -> str:
    """A break with its whole user stack (outermost frame first) and hint, for logs and reports."""
    lines = [str(e)]
    for loc in e.user_stack:
        lines += [f"  at {loc}", f"    {loc.line}"]
    if e.hint:
        lines.append(f"  hint: {e.hint}")
    return "\n".join(lines)


#: Every live CompiledCode, so ``bytegraph.reset()`` can clear them (weak: dropping a function frees
#: it).
ALL: weakref.WeakSet[CompiledCode] = weakref.WeakSet()
#: Process-wide counters (``bytegraph.stats()``): ``frames`` traced, ``break:<kind>`` graph breaks,
#: ``fallback:<kind>`` traces that fell back to Python, ``recompile_limit`` functions that hit it.
COUNTERS: Counter[str] = Counter()
#: Observers notified of each CompileEvent (the pytest plugin and ``explain`` subscribe here).
LISTENERS: list[Any] = []
#: Time the guard function after each compile (``CompileEvent.guard_us``: 10 calls of a few µs).
measure_guard_time = True
_GUARD_TIMING_S = 0.0005  #: at most about this long (and 3 calls at least): it delays a first call
#: Numbers every CompiledCode of the process (``serial``), so reports can tell them apart.
SERIALS = itertools.count()
#: Numbers every compile of the process, so a resume function can tell whether its compile comes
#: right after its caller's (``CompiledCode.continued_break``).
COMPILES = itertools.count()


class TimedBackend:
    """Calls ``backend``, adding up the seconds it takes and keeping what it returns."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.seconds = 0.0
        self.results: list[Any] = []

    def __call__(self, gm: Any, example_inputs: list[Any]) -> Any:
        started = time.perf_counter()
        try:
            compiled = self.backend(gm, example_inputs)
        finally:
            self.seconds += time.perf_counter() - started
        self.results.append(compiled)
        return compiled


class CompiledCode:
    """The state behind one compiled function: settings, variant cache, compile history."""

    def __init__(self, fn: types.FunctionType, settings: Settings) -> None:
        self.fn = fn
        self.settings = settings
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
        self.cache = FunctionCache(
            fn.__code__.co_name.replace("<", "_").replace(">", "_"),
            fn.__globals__,
            cells,
            tuple(name for name, _ in parameters(fn.__code__)),
        )
        self.events: list[CompileEvent] = []
        self.compile_lock = COMPILE_LOCK  #: process-wide (see there)
        self.warned_limit = False
        self.warned_code = False
        self.warned_fallback = False  #: the fallback warning is given once per code object
        self.following = False  #: tracing for a filled registry (``follow``)
        #: the entry calling this (``entry.make_entry``), held weakly: it holds this
        self.entry: weakref.ref[types.FunctionType] | None = None
        self.resumes: dict[tuple, Any] = {}  #: resume functions of this function's graph breaks
        #: compiled versions of the functions its breaks call in plain Python (shared like resumes)
        self.callees = CalleeCompiler(
            self._compiled_callee, lambda: self.recompile_limit(global_settings())
        )
        #: functions run in plain Python, as ``routed`` made them
        self.routed_fns: dict[types.FunctionType, types.FunctionType] = {}
        self.numbering = Numbering()  #: names of graphs and resume functions (shared like resumes)
        #: for a resume function starting at the instruction of a break in a callee: that
        #: instruction (original code, index), see ``continued_break``
        self.continues: tuple[types.CodeType, int] | None = None
        self.compile_number = -1  #: from ``COMPILES``, set as each compile of this starts
        #: the ``compile_number`` of the caller whose trace last emitted a call to this function
        #: (a resume function with ``continues``)
        self.called_by = -2
        self.policy = self._new_policy()  #: what is traced symbolically (grows on recompiles)
        self.serial = next(SERIALS)  #: unique in the process
        self.root_serial = self.serial  #: for a resume function, the serial of the compiled one
        self.asked_resume = False  #: the trace running now stopped at a break (asked for resumes)
        ALL.add(self)

    @property
    def recompiles(self) -> int:
        return max(0, len(self.events) - 1)

    def on_miss(self, L: dict[str, Any]) -> Any:
        """No variant matched ``L``: compile one (serialised with every other compile) and return
        what to run."""
        with self.compile_lock:
            selected = self.cache.select(L)  # another thread may have compiled it meanwhile
            if selected is not None:
                return selected
            if torch._C._functorch.peek_interpreter_stack() is not None:
                # called inside torch.func's vmap/grad/jvp (its tensors fail the tensor guards):
                # the transform runs the code as it is; nothing compiled, nothing remembered
                return self.fn
            settings = global_settings()
            strict = self.settings.fullgraph or settings.error_on_graph_break
            if not strict and callees.is_left_alone(self.fn.__code__):  # by another's trace
                return self._leave_alone()
            why = self.cache.why(L)
            reason = (
                "first call"
                if not why.failures
                else "; ".join(f"entry {v.index}: {p.code}" for v, p in why.failures)
            )
            self._apply_settings(self.policy, settings)
            if len(self.cache.variants) >= self.recompile_limit(settings):
                self._warn_limit(why, self.recompile_limit(settings))
                self.cache.set_no_match(self.fn)  # later misses run eagerly without coming here
                return self.fn
            if why.failures and settings.error_on_recompile:
                raise BytegraphError(
                    f"{self.fn.__qualname__} would recompile (error_on_recompile is set): {reason}"
                )
            if why.failures:
                recompile_log.info(
                    "Recompiling function %s in %s:%s\n"
                    "    triggered by the following guard failure(s):\n%s",
                    self.fn.__qualname__,
                    self.fn.__code__.co_filename,
                    self.fn.__code__.co_firstlineno,
                    "\n".join(f"    - {p.code}" for _, p in why.failures),
                )
            with _no_gc():
                return self._compile(L, reason, [p.code for _, p in why.failures], settings)

    def recompile_limit(self, settings: GlobalSettings) -> int:
        limit = self.settings.recompile_limit
        return settings.recompile_limit if limit is None else limit

    def _compile(
        self, L: dict[str, Any], reason: str, failures: list[str], settings: GlobalSettings
    ) -> Any:
        COUNTERS["frames"] += 1
        self.compile_number = next(COMPILES)
        state_guards = global_state_guards()  # autocast etc. as the call sees them, before tracing
        backend = TimedBackend(self.settings.backend)
        from .breaks.speculation import Policy
        from .convert import convert_call  # the tracer's modules load at the first compile

        speculation = Policy(
            settings.speculate, settings.speculation_miss_limit, settings.speculation_unroll_limit
        )

        started = time.perf_counter()
        self.asked_resume = False
        try:
            result = self._trace(convert_call, L, backend, settings, speculation)
        except Exception as e:  # noqa: BLE001 (every failed trace is remembered: _failure says how)
            failure = self._failure(e)
            strict = failure.is_error(self.settings.fullgraph, settings.error_on_graph_break)
            elapsed = time.perf_counter() - started
            return self._fallback(failure, reason, failures, state_guards, strict, elapsed)
        elapsed = time.perf_counter() - started
        if self._tensor_free(result, settings):
            callees.leave_alone(self.fn.__code__)
            COUNTERS["tensor_free"] += 1
            self._record(
                CompileEvent(
                    reason, failures=failures, fn=result.fn, trace_s=elapsed, tensor_free=True
                )
            )
            return self._leave_alone()
        breaks = [] if self.continued_break(result) else result.breaks
        variant = Variant(
            self.cache.new_guard_set(result.guards + state_guards),
            result.fn,
            graphs=result.graphs,
            reason=reason,
            changes_its_guards=self.root_serial == self.serial
            and _changes_a_tree(result.guards, result.writes),
        )
        self.cache.add(variant)
        event = CompileEvent(
            reason,
            result.graphs,
            result.ops,
            guards=variant.guards.source,
            failures=failures,
            fn=result.fn,
            breaks=breaks,
            speculated=result.speculated,
            compiled=backend.results,
            trace_s=elapsed - backend.seconds,
            backend_s=backend.seconds,
            guard_us=self._time_guards(L) if measure_guard_time else None,
        )
        for brk in breaks:
            COUNTERS[f"break:{brk.kind}"] += 1
            breaks_log.info("graph break in %s: %s", self.fn.__qualname__, format_break(brk))
        self._record(event)
        return result.fn if self.following else _first_run(result.fn, self, L, variant)

    def _trace(
        self,
        convert_call: Any,
        L: dict[str, Any],
        backend: Any,
        settings: GlobalSettings,
        speculation: Any,
    ) -> Any:
        """One trace of this function for ``L``. A trace that read numbers its own call changes
        (``NumbersAdvance``: the policy has made them dynamic) is traced again before anything is
        compiled, so that the next identical call finds the variant."""
        while True:
            try:
                return convert_call(
                    self.fn,
                    L,
                    backend,
                    fullgraph=self.settings.fullgraph,
                    error_on_graph_break=settings.error_on_graph_break,
                    resume=self.resume_function,
                    policy=self.policy,
                    numbering=self.numbering,
                    callee=self.callees,
                    speculation=speculation,
                )
            except NumbersAdvance:
                self.asked_resume = False

    def follow(self, L: dict[str, Any], variant: Variant, trees: frozenset | None) -> None:
        """After the first run of ``variant`` for ``L``: where the call filled a registry the
        variant guards (a library's global dict that got keys after those it had: einops'
        backends by tensor type, filled on first use) or grew a module tree it guards
        (``trees``: its ``module_keys`` before the outermost run; a buffer registered on first
        use, x-transformers' ALiBi bias), the variant for the tree or registry as the call left
        it is traced now, as the next identical call would trace it, so that call finds it.
        So is the variant of a function (not of a resume function, whose arguments and state
        after the run are not the next call's) whose call changes the state of a module tree it
        guards (``Variant.changes_its_guards``), where its guards now fail for ``L``: a cache dict
        filled on first use (timm's attention-bias caches), a buffer replaced by one of another
        size (convit's), a cached length (rotary-embedding-torch's), a config field set on first
        use (``config.problem_type`` of transformers' classification heads), a flag (RWKV's
        ``layers_are_rescaled``).
        Other changes of a tree are not followed: what a caller sets up around a call and tears
        down after (a hook, diffusers' LoRA scale flag) is not there at the next call's start.
        ``following``: the variant traced is not followed in turn."""
        scope = self._follow_scope(L, variant)
        filled = any(_registry(p.guard) and _filled(p.guard, scope) for p in variant.guards.parts)
        changed = variant.changes_its_guards
        if not (filled or changed) and not (trees and trees < self.module_keys(L, variant)):
            return
        if global_settings().error_on_recompile or self.cache.select(L) is not None:
            return  # (the next call recompiles, and raises there)
        self.following = True
        try:
            self.on_miss(L)
        finally:
            self.following = False

    def module_keys(self, L: dict[str, Any], variant: Variant) -> frozenset | None:
        """``module_tree.member_names`` of the module trees ``variant`` guards (read without
        running user code); None where it guards no tree."""
        scope = self._follow_scope(L, variant)
        roots = []
        for part in variant.guards.parts:
            if part.guard.kind is kinds.MODULE_TREE:
                with contextlib.suppress(Exception):  # the root is gone: nothing to compare
                    roots.append(eval(part.guard.source.expr, scope))  # noqa: S307 (as _filled)
        return member_names(roots) if roots else None

    def _follow_scope(self, L: dict[str, Any], variant: Variant) -> dict[str, Any]:
        # only registries and module trees are read with it: the other guards may call user code
        # (an lru_cache the trace read), which a call's guards run once, before it
        return {"L": L, **self.cache.scope, "M": variant.guards.module_globals}

    def _tensor_free(self, result: TraceResult, settings: GlobalSettings) -> bool:
        """Did the trace return without recording a tensor operation (no graph, no break), where
        a graph break is no error and no earlier trace of this function is installed? Then the
        code is not compiled, whatever the arguments: the original code does what the trace
        found (torch.compile skips such a frame for good)."""
        if self.settings.fullgraph or settings.error_on_graph_break or result.graphs:
            return False
        if self.root_serial != self.serial:
            # a resume function: the code after a break, which runs after Python code that may
            # change what it reads (a global, an attribute); it keeps its guards, so that a value
            # that makes it do tensor work compiles it
            return False
        if result.speculated:
            return False
        stopped = self.asked_resume or result.breaks or result.stopped_at is not None
        return not stopped and not self.cache.variants

    def _leave_alone(self) -> Any:
        """Every call of this function runs it in Python (its calls routed), without guards."""
        in_python = self.routed(self.fn)
        self.cache.clear()
        self.cache.set_no_match(in_python)
        entry = self.entry() if self.entry is not None else None
        if entry is not None:
            run_directly(entry, in_python)  # no guards to ask
        return in_python

    def _clear(self) -> None:
        """Forget every variant: the entry asks the guards (which miss) again."""
        self.cache.clear()
        entry = self.entry() if self.entry is not None else None
        if entry is not None:
            dispatch(entry)

    def _failure(self, e: Exception) -> Unsupported:
        """What a trace that raised ``e`` fell back for: the break itself, ``too_large`` (never
        traced again: every call runs in Python) or ``internal_error`` (a bug in bytegraph, raised
        as ``InternalError`` under ``fullgraph``)."""
        if isinstance(e, Unsupported):
            return e
        if isinstance(e, TraceTooLong):
            self.cache.set_no_match(self.fn)
            return Unsupported("too_large", str(e))
        if self.settings.fullgraph:
            raise InternalError(f"bytegraph failed to compile {self.fn.__qualname__}: {e}") from e
        log.debug("internal error while tracing %s", self.fn.__qualname__, exc_info=True)
        internal = Unsupported("internal_error", f"{type(e).__name__}: {e}")
        internal.guards = getattr(e, "guards", None) or []
        return internal

    def continued_break(self, result: TraceResult) -> bool:
        """Whether the trace of this resume function stopped at the instruction it starts at, where
        a break in a callee stopped the trace of the caller compiled just before: that break is
        reported once, by the caller (the instruction then runs in Python and the trace resumes
        after it). Called with the values the caller's trace stopped on, its trace stops there
        on its first visit. A compile of it that follows no compile of its caller (the caller
        hit its cache) reports the break itself."""
        return (
            self.continues is not None
            and result.stopped_at == self.continues
            and self.called_by == self.compile_number - 1
        )

    def _time_guards(self, L: dict[str, Any]) -> float:
        """Microseconds one call spends choosing its variant (the guard function on ``L``): the
        fastest of up to 10 calls (the first warms caches), fewer once ~0.5 ms are spent, so that
        timing the guards of a large model (thousands of checks) does not slow its first call."""
        args = [L[name] for name in self.cache.arg_names]
        guard_fn, best = self.cache.guard_fn, float("inf")
        deadline = time.perf_counter() + _GUARD_TIMING_S
        for calls in range(1, 11):
            started = time.perf_counter()
            guard_fn(*args)
            ended = time.perf_counter()
            best = min(best, ended - started)
            if calls >= 3 and ended > deadline:
                break
        return best * 1e6

    def _fallback(
        self,
        e: Unsupported,
        reason: str,
        failures: list[str],
        state_guards: list[Guard],
        strict: bool,
        elapsed: float,
    ) -> Any:
        """The trace failed: run the original code, and remember the failure as a cache entry that
        runs it under the guards the trace had reached (none: every call), so the same inputs are
        never traced again. Warns once per code object."""
        COUNTERS[f"fallback:{e.kind}"] += 1
        if strict:  # the error chains the reason (a report would keep it detached)
            what = "as one graph" if self.settings.fullgraph else "without a graph break"
            raise BytegraphError(
                f"{self.fn.__qualname__} cannot be compiled {what}: {e.describe()}"
            ) from e
        e.detach()  # it is kept in the compile events
        if not self.warned_fallback:
            self.warned_fallback = True
            warnings.warn(
                f"bytegraph: running {self.fn.__qualname__} in Python: {e.describe()}",
                stacklevel=4,
            )
        breaks_log.info(
            "graph break in %s (running it in Python): %s", self.fn.__qualname__, format_break(e)
        )
        if e.kind != "internal_error" and not self.cache.variants:
            # the first trace failed as the tracer reports it: every call runs in Python, as
            # torch.compile skips such a frame (a bug in bytegraph keeps the guards it reached,
            # so that other arguments are traced again)
            callees.leave_alone(self.fn.__code__)
            self._record(CompileEvent(reason, unsupported=e, failures=failures, trace_s=elapsed))
            return self._leave_alone()
        guards: list[Guard] = getattr(e, "guards", None) or []
        try:
            guard_set = self.cache.new_guard_set(guards + state_guards)
        except Exception:  # noqa: BLE001 (guards of a broken trace: remember it for every call)
            COUNTERS["fallback_guards_dropped"] += 1
            guard_set = self.cache.new_guard_set(state_guards)
        in_python = self.routed(self.fn)
        self.cache.add(Variant(guard_set, in_python, reason=f"fallback: {e}"))
        self._record(CompileEvent(reason, unsupported=e, failures=failures, trace_s=elapsed))
        return in_python

    def routed(self, fn: types.FunctionType) -> types.FunctionType:
        """``fn`` as this function's code runs it in plain Python (a fallback, a resume function
        that is not compiled): each call it makes goes through ``callees.route``, so a user
        function it calls runs compiled (``codegen/route_calls.py``), as a frame hook would make
        it; a compiled caller of ``callees.py`` runs as it is. Made once per function."""
        made = self.routed_fns.get(fn)
        if made is None and callees.is_caller(fn):
            made = self.routed_fns[fn] = fn  # routed, its call would come back to it
        if made is None:
            try:
                made = route_calls.routed(fn, self.callees.route)
            except Exception:  # noqa: BLE001 (code the rewrite cannot take: counted, run as it is)
                COUNTERS["routing_failed"] += 1
                log.debug("cannot route the calls of %s", fn.__qualname__, exc_info=True)
                made = fn
            self.routed_fns[fn] = made
        return made

    def resume_function(
        self,
        template: types.FunctionType,
        index: int,
        nstack: int,
        names: tuple[str, ...],
        iter_slots: tuple[int, ...],
        null_slots: tuple[int, ...],
        compiled: bool,
        bool_slots: tuple[int, ...] = (),
        continues: bool = False,
        cell_args: tuple[str, ...] = (),
        made_locals: tuple[str, ...] = (),
        raises: bool = False,
    ) -> Any:
        """The resume function continuing ``template`` at instruction ``index`` (cached per
        position, stack shape and live names); compiled like any function unless ``compiled`` is
        False. ``continues``: it starts at a break in a callee (see ``continued_break``).
        ``raises``: it raises its last argument at ``index`` instead (``ResumePoint.raises``)."""
        self.asked_resume = True
        slots = (iter_slots, null_slots, bool_slots)
        # The resume function closes over ``template``'s cells but those it takes as arguments
        # (``cell_args``): closures of one code with cells of their own (``make(2)``,
        # ``make(3)``) each get theirs. The cells stay alive while the cached function holds
        # them, so their ids stay theirs.
        free = template.__code__.co_freevars
        cells = tuple(
            id(c)
            for n, c in zip(free, template.__closure__ or (), strict=True)
            if n not in cell_args
        )
        key = (
            template.__code__,
            *(index, nstack, names, slots, compiled, continues, cell_args, made_locals, cells),
            raises,
        )
        cached = self.resumes.get(key)
        if cached is not None:
            state = getattr(cached, "__bytegraph__", None)
            if continues and state is not None:
                state.called_by = self.compile_number
            return cached
        point = ResumePoint(
            index,
            nstack,
            names,
            *slots,
            cell_args=cell_args,
            made_locals=made_locals,
            raises=raises,
        )
        raw = make_resume(template, template.__globals__, point, next(self.numbering.resumes))
        if compiled:
            state = CompiledCode(raw, self.settings)
            state.resumes = self.resumes  # shared: a break in a resume function reuses these
            state.callees = self.callees
            state.numbering = self.numbering
            state.root_serial = self.root_serial
            if continues:
                state.continues = (template.__code__, index)
                state.called_by = self.compile_number
            entry = make_entry(raw, state, resume=True)
        else:
            entry = self.routed(raw)
        self.resumes[key] = entry
        return entry

    def _compiled_callee(self, fn: types.FunctionType) -> Any:
        """``fn`` compiled on its own with these settings (see ``callees.py``)."""
        state = CompiledCode(fn, dataclasses.replace(self.settings, name=None))
        return make_entry(fn, state, callee=True)

    def rerun(self) -> Any:
        """A check on tensor data the trace assumed failed after the graph ran: run this call as
        plain Python, which raises (or goes on) exactly as eager (``deferred_checks``)."""
        COUNTERS["rerun"] += 1
        return self.fn

    def code_replaced(self) -> Any:
        """``fn.__code__`` was replaced after ``compile``: what was traced no longer applies. Run
        the function (its new code) in Python from now on."""
        with self.compile_lock:
            if not self.warned_code:
                self.warned_code = True
                warnings.warn(
                    f"bytegraph: the code of {self.fn.__qualname__} was replaced after "
                    "compile; running it in Python",
                    stacklevel=3,
                )
                self._clear()
        return self.fn

    def _warn_limit(self, why: Any, limit: int) -> None:
        if not self.warned_limit:
            self.warned_limit = True
            failing = why.failures[-1][1].code if why.failures else "?"
            warnings.warn(
                f"bytegraph: {self.fn.__qualname__} hit recompile_limit "
                f"({limit}); running it in Python from now on. "
                f"The guard that keeps failing: {failing}",
                stacklevel=4,
            )
            COUNTERS["recompile_limit"] += 1

    def _record(self, event: CompileEvent) -> None:
        self.events.append(event)
        for graph in event.graphs if graph_log.isEnabledFor(logging.INFO) else ():
            graph_log.info(
                "TRACED GRAPH %s\n%s",
                self.fn.__qualname__,
                graph.print_readable(print_output=False),
            )
        if event.guards:
            guards_log.info("GUARDS %s\n%s", self.fn.__qualname__, event.guards)
        for listener in list(LISTENERS):
            listener(self, event)

    def reset(self) -> None:
        with self.compile_lock:
            self._clear()
            self.events.clear()
            self.resumes.clear()
            self.numbering.restart()
            self.policy = self._new_policy()
            self.warned_limit = False
            self.warned_fallback = False

    def _new_policy(self) -> DynamicPolicy:
        """A policy that has seen nothing; what is dynamic is set from the settings at each miss
        (``on_miss``), before a trace reads it."""
        return DynamicPolicy()

    def _apply_settings(self, policy: DynamicPolicy, settings: GlobalSettings) -> None:
        """What is dynamic follows ``compile(dynamic=)``, else the settings now (read per miss)."""
        dynamic = self.settings.dynamic
        policy.mode = settings.dynamic_default if dynamic is None else dynamic
        policy.automatic = settings.automatic_dynamic


@contextlib.contextmanager
def _no_gc() -> Any:
    """No cyclic garbage collection while compiling: a trace allocates many short-lived objects,
    and with torch and a model loaded each collection walks a large heap (2-3% of a first call).
    What the trace leaves behind is collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _registry(guard: Guard) -> bool:
    """Does ``guard`` check the keys (or the length) of a library's registry: something read from
    another module's globals, through that module's functions the trace inlined? Not the
    compiled function's own globals, which the program itself assigns between calls."""
    return guard.kind in (kinds.DICT_KEYS, kinds.LEN_MATCH) and isinstance(
        getattr(guard.source, "root", None), ModuleGlobalSource
    )


def _changes_a_tree(guards: list[Guard], places: frozenset[Source]) -> bool:
    """Does the call change the state of a module tree its guards check (``places`` under the
    root of a ``MODULE_TREE`` guard: a module's attribute, buffer, or a container it holds)?
    What a model's call leaves in the model is there at its next call."""
    trees = {g.source for g in guards if g.kind is kinds.MODULE_TREE}
    return bool(trees) and any(_within(place, trees) for place in places)


def _within(source: Source, roots: set[Source]) -> bool:
    """Is ``source`` one of ``roots`` or reached through one?"""
    while isinstance(source, ChainedSource) and source not in roots:
        source = source.base
    return source in roots


def _filled(guard: Guard, scope: dict[str, Any]) -> bool:
    """The dict ``guard`` checks has its keys (all of them, first, in order) and more now."""
    try:
        now = eval(guard.source.expr, scope)  # noqa: S307 (a source's expression, as guards read it)
    except Exception:  # noqa: BLE001 (gone: nothing was filled)
        return False
    if type(now) is not dict:
        return False
    if guard.kind is kinds.LEN_MATCH:
        return len(now) > guard.arg
    return len(now) > len(guard.arg) and kinds.same_keys(now, guard.arg)


class _FirstRuns(threading.local):
    """The first runs of variants in progress on this thread, and the variants whose first runs
    ended inside them: each is checked (``CompiledCode.follow``) once the outermost has
    returned, so that a variant whose registry a later part of the same call filled (a resume
    function after a graph break, or another function) is followed too."""

    def __init__(self) -> None:
        self.depth = 0
        self.checks: list[tuple[CompiledCode, dict[str, Any], Variant, frozenset | None]] = []


_FIRST_RUNS = _FirstRuns()
#: the file of ``_first_run``'s wrappers: an entry's, so that frame counts skip them
_HIDDEN_FILE = f"{ENTRY_FILE}first run>"


def _first_run(fn: Any, state: CompiledCode, L: dict[str, Any], variant: Variant) -> Any:
    """``fn`` for the first run of ``variant``, then ``state.follow`` (see ``_FirstRuns``)."""

    def first_run(*args: Any, **kwargs: Any) -> Any:
        runs = _FIRST_RUNS
        trees = state.module_keys(L, variant) if runs.depth == 0 else None
        runs.depth += 1
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            if runs.depth == 1:
                runs.checks.clear()  # the call raised: nothing is followed
            raise
        finally:
            runs.depth -= 1
        runs.checks.append((state, L, variant, trees))
        if runs.depth == 0:
            checks, runs.checks = runs.checks, []
            for owner, args_of, ran, keys in checks:
                owner.follow(args_of, ran, keys)
        return result

    first_run.__code__ = first_run.__code__.replace(co_filename=_HIDDEN_FILE)
    return first_run
