"""The guard-soundness harness: a ``Scenario`` (a module defining ``fn(x)``, a mutation of something
``fn``'s trace read, the number of recompiles it must cause) run at one of three ``TIMINGS``:

* ``before_second_call``: call, mutate, call twice;
* ``between_calls``: call twice, mutate, call twice, undo the mutation, call (the first entry
  serves it);
* ``in_break``: ``fn`` has a graph break (a ``HOOK()`` call run in Python between two graphs) and
  the hook mutates on every call but the first, so the later graph's guards must see the change.

Every call is compared with eager (result or raised exception), and the number of traces (of ``fn``
and of its resume functions) is asserted exactly: ``recompiles`` more than after the first call.
"""

from __future__ import annotations

import sys
import textwrap
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same

import bytegraph

TIMINGS = ("before_second_call", "between_calls", "in_break")
NO_BREAK = ("before_second_call", "between_calls")


@dataclass(frozen=True)
class Scenario:
    """One mutation of something a trace read.

    ``source`` is the text of a fresh module defining ``fn`` (and optionally ``make_args()``,
    else ``fn`` gets ``(torch.arange(3.0),)``); a line ``BREAK`` marks where the graph break goes
    (``pass`` in the timings without one). ``mutate``/``restore`` are statements run in that
    module's namespace (state A -> B and back; ``restore=None`` when the change cannot be undone,
    e.g. an object died).
    ``helper`` is the text of a second module, imported in the first as ``helper``."""

    name: str
    source: str
    mutate: str
    restore: str | None = None
    recompiles: int = 1  #: traces the mutation must cause (fallbacks to Python included)
    #: traces going back to state A causes: 0 where an entry of state A serves it; 1 where the
    #: newer entry, made for state B, serves A too (it is tried first) and its resume function,
    #: refused in state B, is traced in A
    restore_traces: int = 0
    helper: str = ""
    dynamic: bool | None = None
    timings: tuple[str, ...] = TIMINGS
    reason: str = ""  #: a substring of the failing guard recorded for the recompile (when known)
    fallback: bool = False  #: the trace is refused on purpose (a warning is expected, see ``note``)
    note: str = ""  #: why the expectation is what it is
    check: Callable[[dict[str, Any], Any], None] | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.name


class Hook:
    """``HOOK()`` inside ``fn``: a call bytegraph cannot trace (so it runs in Python between two
    graphs) that runs ``armed`` when set."""

    armed: Callable[[], None] | None = None

    def _call() -> None:  # noqa: N805  (a staticmethod: the call is not a FunctionType)
        if Hook.armed is not None:
            Hook.armed()

    __call__ = staticmethod(_call)


class Run:
    """A scenario's modules, its compiled ``fn`` and the call-and-compare loop."""

    def __init__(self, scenario: Scenario, timing: str) -> None:
        self.scenario, self.timing = scenario, timing
        self.brk = timing == "in_break"
        self.modules: list[str] = []
        helper = self._module("helper", scenario.helper, {}) if scenario.helper else None
        self.ns = self._module("main", scenario.source, {"helper": helper, "HOOK": Hook()}).__dict__
        self.fn = self.ns["fn"]
        self.counter = CompileCounter()
        self.compiled = bytegraph.compile(self.fn, backend=self.counter, dynamic=scenario.dynamic)

    def _module(self, role: str, text: str, extra: dict[str, Any]) -> types.ModuleType:
        name = f"soundness_{self.scenario.name}_{role}"
        module = types.ModuleType(name)
        module.__dict__.update(extra, torch=torch)
        sys.modules[name] = module
        self.modules.append(name)
        text = textwrap.dedent(text)
        if role == "main":
            assert "BREAK" in text or not self.brk, "an in_break scenario needs a BREAK line"
            text = text.replace("BREAK", "HOOK()" if self.brk else "pass")
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)
        return module

    def close(self) -> None:
        Hook.armed = None
        for name in self.modules:
            sys.modules.pop(name, None)

    # -- state -------------------------------------------------------------------------------------
    def mutate(self) -> None:
        exec(self.scenario.mutate, self.ns)

    def restore(self) -> None:
        assert self.scenario.restore is not None
        exec(self.scenario.restore, self.ns)

    def traces(self) -> int:
        """Traces of ``fn`` and of every resume function (fallbacks to Python included)."""
        state = bytegraph.state_of(self.compiled)
        resumes = [r for r in state.resumes.values() if hasattr(r, "__bytegraph__")]
        return len(state.events) + sum(len(bytegraph.state_of(r).events) for r in resumes)

    # -- calls -------------------------------------------------------------------------------------
    def call(self, armed: bool = False) -> None:
        """Run eager then compiled from the same state; with ``armed`` both start from state A and
        the hook switches to state B in the break."""
        if armed:
            self.restore()
        Hook.armed = self.mutate if armed else None
        expected = self._outcome(self.fn)
        if armed:
            self.restore()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if self.scenario.fallback else "error")
            actual = self._outcome(self.compiled)
        Hook.armed = None
        (result, error), (e_result, e_error) = actual, expected
        if e_error is not None:
            assert type(error) is type(e_error) and str(error) == str(e_error), (error, e_error)
        else:
            assert error is None, f"compiled raised {error!r}, eager returned {e_result!r}"
            assert_same(_observable(result), _observable(e_result))

    def _outcome(self, fn: Callable[..., Any]) -> tuple[Any, BaseException | None]:
        make_args = self.ns.get("make_args")
        args = make_args() if make_args is not None else (torch.arange(3.0),)
        try:
            return fn(*args), None
        except Exception as e:  # noqa: BLE001 (compared with eager's)
            return None, e


def _observable(value: Any) -> Any:
    """What is compared: meta tensors (``set_default_device('meta')``) by metadata only."""
    if isinstance(value, torch.Tensor) and value.is_meta:
        return ("meta", tuple(value.shape), value.dtype, value.requires_grad)
    if type(value) in (tuple, list):
        return type(value)(_observable(v) for v in value)
    return value


def run_scenario(scenario: Scenario, timing: str) -> None:
    run = Run(scenario, timing)
    try:
        _run_timing(run, timing)
    finally:
        run.close()


def _run_timing(run: Run, timing: str) -> None:
    s = run.scenario
    run.call()
    if timing == "between_calls":
        run.call()
    base = run.traces()
    assert base >= 1
    if timing == "in_break":
        assert base >= 2, "HOOK() did not break the graph"
        run.call(armed=True)
        run.call(armed=True)
    else:
        run.mutate()
        run.call()
        run.call()
    assert run.traces() - base == s.recompiles, (
        f"expected {s.recompiles} recompile(s), got {run.traces() - base}: {_reasons(run)}"
    )
    if s.reason and timing != "in_break":
        assert any(s.reason in r for r in _reasons(run)[1:]), _reasons(run)
    if s.restore is not None and timing != "before_second_call":
        run.restore()
        run.call()  # back to state A: an existing entry serves it
        assert run.traces() - base == s.recompiles + s.restore_traces, _reasons(run)
    if s.check is not None:
        s.check(run.ns, run.compiled)


def _reasons(run: Run) -> list[str]:
    state = bytegraph.state_of(run.compiled)
    events = list(state.events)
    for resume in state.resumes.values():
        if hasattr(resume, "__bytegraph__"):
            events += bytegraph.state_of(resume).events
    return [e.reason for e in events]
