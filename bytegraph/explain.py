"""``bytegraph.explain``: what compiling a function does on one call, as a readable report.

``Recorder`` subscribes to ``driver.LISTENERS`` and keeps every ``CompileEvent`` (graphs, breaks,
fallbacks, recompiles) seen while it is active; ``Report`` reads a list of those records.
``explain`` and the pytest plugin (``bytegraph.pytest_plugin``) are both built on these two. The
events themselves come from ``tracer/driver.py``; nothing here traces or compiles anything.

Definition → example → printed output::

    def fn(x):
        y = x.sin()
        print("hi")
        return y * 2

    out = bytegraph.explain(fn)(torch.randn(3))
    out.graph_break_count        # 1
    print(out)
    # Graph count: 2
    # Graph break count: 1
    # Op count: 2
    # Break reasons:
    #   1. print: call to print()  [graph break in fn]
    #      at demo.py:4 in fn
    #        print("hi")
    #      hint: print() runs in Python; move it out of the compiled function or accept the ...
    # Ops per graph:
    #   __compiled_fn_0: sin
    #   __compiled_fn_1: mul
    # Guards:
    #   fn (first call):
    #     type(L['x']) is ___Tensor
    #     ...
"""

from __future__ import annotations

import threading
import types
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from .compiler import compile
from .distributed import collectives
from .tracer import driver
from .tracer.exc import Unsupported, UserLocation


@dataclass
class CompileRecord:
    """One ``CompileEvent`` plus the function it belongs to (``event.fn`` is the rewritten one)."""

    function: str  #: qualified name of the traced function
    filename: str
    lineno: int  #: first line of the function
    event: driver.CompileEvent
    key: int  #: identifies the compiled function (one per ``CompiledCode``) within one recording


@dataclass
class BreakReason:
    """Why code stayed out of a graph: a graph break, or the whole call falling back to Python."""

    function: str  #: the compiled function whose trace stopped
    kind: str  #: short constant (``"print"``, ``"tensor_to_python"``, ...), for counting
    reason: str  #: kind and detail
    hint: str  #: how to avoid it ("" when there is no advice)
    user_stack: list[UserLocation]  #: outermost frame first; the last one is where tracing stopped
    fell_back: bool  #: True: the whole call ran in Python; False: a graph break (the trace went on)

    @classmethod
    def of(cls, function: str, e: Unsupported, fell_back: bool) -> BreakReason:
        return cls(function, e.kind, str(e), e.hint, list(e.user_stack), fell_back)

    @property
    def location(self) -> UserLocation | None:
        return self.user_stack[-1] if self.user_stack else None

    @property
    def filename(self) -> str:
        return self.location.filename if self.location else "?"

    @property
    def lineno(self) -> int:
        return self.location.lineno if self.location else 0

    @property
    def line(self) -> str:
        """The user's source line where tracing stopped."""
        return self.location.line if self.location else ""

    def __str__(self) -> str:
        what = (
            f"{self.function} ran in Python"
            if self.fell_back
            else f"graph break in {self.function}"
        )
        lines = [f"{self.reason}  [{what}]"]
        for loc in self.user_stack:
            lines += [f"  at {loc}", f"    {loc.line}"]
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


@dataclass
class Recompile:
    """A function traced again because the guards of all its entries failed on new inputs."""

    function: str
    filename: str
    lineno: int
    failures: list[str]  #: the first failing guard of each existing entry
    key: int  #: which compiled function (as ``CompileRecord.key``)

    def __str__(self) -> str:
        return f"{self.function} ({self.filename}:{self.lineno}): " + "; ".join(self.failures)


class Recorder:
    """Collects the compile events of every bytegraph function while active (a context manager).

    ``thread_only=True`` keeps only events from the thread that entered it (what ``explain`` wants);
    the pytest plugin records all threads. ``records`` only grows while active; it may be entered
    again.
    """

    def __init__(self, thread_only: bool = False) -> None:
        self.records: list[CompileRecord] = []
        self.thread_only = thread_only
        self.thread: int | None = None  #: the thread that entered it last (when ``thread_only``)
        self._keys: dict[int, tuple[int, Any]] = {}  # id(state) -> (key, state): keeps ids unique

    def __enter__(self) -> Recorder:
        self.thread = threading.get_ident() if self.thread_only else None
        driver.LISTENERS.append(self.on_event)
        return self

    def __exit__(self, *exc: Any) -> None:
        driver.LISTENERS.remove(self.on_event)

    def on_event(self, state: driver.CompiledCode, event: driver.CompileEvent) -> None:
        if self.thread is not None and threading.get_ident() != self.thread:
            return
        key, _ = self._keys.setdefault(id(state), (len(self._keys), state))
        code = state.fn.__code__
        self.records.append(
            CompileRecord(state.fn.__qualname__, code.co_filename, code.co_firstlineno, event, key)
        )

    def report(self) -> Report:
        """A live view: it sees records added after this call too."""
        return Report(self.records)


class Report:
    """Graphs, breaks, guards and recompiles of a list of ``CompileRecord`` (what explain returns).

    Everything is computed from ``records`` on access: a report over a ``Recorder``'s list is live.
    """

    def __init__(self, records: list[CompileRecord]) -> None:
        self.records = records

    @property
    def graphs(self) -> list[torch.fx.GraphModule]:
        return [gm for r in self.records for gm in r.event.graphs]

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def break_reasons(self) -> list[BreakReason]:
        reasons = []
        for r in self.records:
            reasons += [BreakReason.of(r.function, e, fell_back=False) for e in r.event.breaks]
            if r.event.unsupported is not None:
                reasons.append(BreakReason.of(r.function, r.event.unsupported, fell_back=True))
        return reasons

    @property
    def graph_break_count(self) -> int:
        """Graph breaks plus fallbacks to Python (each kept some code out of a graph)."""
        return len(self.break_reasons)

    @property
    def speculated(self) -> list[Any]:
        """The branches on tensor data the traces speculated on, each once (``speculation.Site``:
        file, line, source line and live ``hits``/``misses`` counts)."""
        return list({s: None for r in self.records for s in r.event.speculated})

    @property
    def ops_per_graph(self) -> list[list[str]]:
        """For each graph, the targets of its call nodes (``"add"``, ``"sin"``, ``"linear"``...)."""
        return [
            [_target_name(n) for n in gm.graph.nodes if n.op.startswith("call_")]
            for gm in self.graphs
        ]

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    @property
    def collectives_per_graph(self) -> list[list[str]]:
        """For each graph, the collectives it runs in order (``"all_reduce(sum, 0)"``: reduce op and
        group name), from ``bytegraph.distributed.collectives``."""
        return [collectives(gm) for gm in self.graphs]

    @property
    def collective_count(self) -> int:
        return sum(len(c) for c in self.collectives_per_graph)

    @property
    def guards(self) -> list[str]:
        """Every guard condition of every entry compiled, in order (one string per condition)."""
        return [line for r in self.records for line in r.event.guards.splitlines()]

    @property
    def recompiles(self) -> list[Recompile]:
        return [
            Recompile(r.function, r.filename, r.lineno, list(r.event.failures), r.key)
            for r in self.records
            if r.event.is_recompile
        ]

    def recompile_counts(self) -> dict[int, tuple[str, int]]:
        """Recompiles per compiled function: key -> (function name, count)."""
        counts: dict[int, tuple[str, int]] = {}
        for r in self.records:
            name, n = counts.get(r.key, (r.function, 0))
            counts[r.key] = (name, n + r.event.is_recompile)
        return counts

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, br in enumerate(self.break_reasons, 1):
                lines.append(_indent(f"{i}. {br}", "  ", "   "))
        if self.speculated:
            lines.append("Speculated branches (checked after the graph; a miss reruns in Python):")
            lines += [_indent(str(site), "  ", "  ") for site in self.speculated]
        if self.graphs:
            lines.append("Ops per graph:")
            for gm, ops in zip(self.graphs, self.ops_per_graph, strict=True):
                lines.append(f"  {type(gm).__name__}: {', '.join(ops)}")
        if self.collective_count:
            lines.append(f"Collectives per graph ({self.collective_count} in all):")
            for gm, colls in zip(self.graphs, self.collectives_per_graph, strict=True):
                lines.append(f"  {type(gm).__name__}: {', '.join(colls) or '-'}")
        guarded = [r for r in self.records if r.event.guards]
        if guarded:
            lines.append("Guards:")
            for r in guarded:
                lines.append(f"  {r.function} ({r.event.reason}):")
                lines += [f"    {g}" for g in r.event.guards.splitlines()]
        if self.recompiles:
            lines.append("Recompile reasons:")
            lines += [f"  {r}" for r in self.recompiles]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Report: {self.graph_count} graphs, {self.graph_break_count} breaks, "
            f"{len(self.recompiles)} recompiles>"
        )


#: What ``explain(fn)(...)`` returns (the name torch users know).
ExplainOutput = Report


def explain(fn: Any, *, backend: Any = "eager") -> Explainer:
    """Return an ``Explainer``: calling it runs ``fn(*args, **kwargs)`` through a fresh compiled
    copy of ``fn`` and returns a ``Report`` of every graph, graph break, fallback, guard and
    recompile so far.

    ``fn`` may be a plain function, a bound method, an ``nn.Module`` or a function already compiled
    by bytegraph; an already-compiled function's own cache is left untouched (its original code is
    compiled again, separately, with its ``dynamic`` setting). ``backend`` compiles the graphs
    (default ``"eager"``). Calls of one explainer share its copy, so a second call with other inputs
    reports the recompile and the guard that failed. Bytegraph's fallback warnings are silenced
    during the call: the report has them.

    >>> out = bytegraph.explain(fn)(torch.randn(3))
    >>> out.graph_break_count, out.break_reasons[0].kind, out.break_reasons[0].line
    (1, 'print', 'print("hi")')
    """
    return Explainer(fn, backend)


class Explainer:
    """What ``explain(fn)`` returns: ``explainer(*args, **kwargs) -> Report`` (see ``explain``)."""

    def __init__(self, fn: Any, backend: Any) -> None:
        self.fn = fn
        self.backend = backend
        self.recorder = Recorder(thread_only=True)
        self._copy: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        if self._copy is None:
            self._copy = _fresh_copy(self.fn, self.backend)
        with warnings.catch_warnings(), self.recorder:
            warnings.filterwarnings("ignore", message="bytegraph: ")
            self._copy(*args, **kwargs)
        return Report(list(self.recorder.records))


def _fresh_copy(fn: Any, backend: Any) -> Any:
    """``fn`` compiled anew, sharing no cache with any compiled version of it."""
    if isinstance(fn, torch.nn.parallel.DistributedDataParallel):
        return _ddp_copy(fn, _fresh_copy(fn.module, backend))
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward
    if isinstance(fn, types.MethodType):
        return types.MethodType(_fresh_copy(fn.__func__, backend), fn.__self__)
    state = getattr(fn, "__bytegraph__", None)
    if state is None:
        return compile(fn, backend=backend)
    return compile(state.fn, backend=backend, dynamic=state.settings.dynamic)


def _ddp_copy(ddp: torch.nn.Module, inner: Any) -> Any:
    """Run ``ddp`` with its module's forward compiled (``inner``) for the call, as
    ``bytegraph.compile(ddp)`` would: DDP's own forward stays in Python."""

    def run(*args: Any, **kwargs: Any) -> Any:
        module = ddp.module
        had, previous = "forward" in vars(module), vars(module).get("forward")
        module.forward = inner
        try:
            return ddp(*args, **kwargs)
        finally:
            if had:
                module.forward = previous
            else:
                del module.forward

    return run


def _target_name(node: torch.fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _indent(text: str, first: str, rest: str) -> str:
    head, *tail = text.splitlines()
    return "\n".join([first + head] + [rest + line for line in tail])


__all__ = [
    "BreakReason",
    "CompileRecord",
    "ExplainOutput",
    "Explainer",
    "Recompile",
    "Recorder",
    "Report",
    "explain",
]
