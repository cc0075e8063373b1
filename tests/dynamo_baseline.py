"""torch.compile's own counts for a function, to compare bytegraph's with (bytegraph must not break
more than torch.compile on the same code).

``dynamo_counts`` gives what ``torch._dynamo.explain`` reports: its break count is
``graph_count - 1`` (a break whose second part compiles nothing, or one that makes Dynamo skip the
rest of the frame, counts 0 there; -1 where no graph was compiled). ``dynamo_breaks`` counts the
breaks themselves, as the parity corpus does (``torch._dynamo.utils.counters["graph_break"]``),
and ``assert_no_more_breaks`` compares with that.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def untimed_guards() -> Iterator[None]:
    """Dynamo compiles without timing its guards: after checking a new entry's guards, each
    torch.compile flushes the CPU caches and runs them once more to time them
    (``profile_guard_manager``, for a debug log and its compile metrics), half of a small
    function's compile. The baselines read graph and break counts, never that time; the guards
    are still built and checked as in any compile."""
    import torch._dynamo.guards as guards

    timed = getattr(guards, "profile_guard_manager", None)
    if timed is None:
        yield
        return
    guards.profile_guard_manager = _no_latency
    try:
        yield
    finally:
        guards.profile_guard_manager = timed


def _no_latency(*args: object) -> float:
    return 0.0


def dynamo_counts(fn, *args, **kwargs) -> tuple[int, int]:
    """``(graphs, breaks)`` that ``torch._dynamo.explain`` reports for one call of ``fn``."""
    import torch._dynamo

    torch._dynamo.reset()
    with warnings.catch_warnings(), untimed_guards():
        warnings.simplefilter("ignore")
        report = torch._dynamo.explain(fn)(*args, **kwargs)
    torch._dynamo.reset()
    return report.graph_count, report.graph_break_count


def dynamo_graphs_over_calls(fn, calls, backend) -> int:
    """The graphs ``torch.compile(fn, backend=backend)`` compiles over ``calls`` (argument tuples,
    one call each): its recompiles included."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, backend=backend)
    with untimed_guards():
        for args in calls:
            compiled(*args)
    return counters["stats"]["unique_graphs"]


def dynamo_breaks(fn, *args, **kwargs) -> tuple[int, int]:
    """``(graphs, breaks)`` of one call of ``torch.compile(fn, backend="eager")``: the graphs
    compiled and the graph breaks Dynamo counted (``counters["graph_break"]``), inner frames
    included."""
    graphs, breaks, _ = dynamo_run(fn, *args, **kwargs)
    return graphs, breaks


def dynamo_run(fn, *args, **kwargs) -> tuple[int, int, list[str]]:
    """``dynamo_breaks`` and the first line of each reason Dynamo gave for a break or for
    running code in Python (``counters["unimplemented"]``)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    graphs = 0

    def backend(gm, example_inputs):
        nonlocal graphs
        graphs += 1
        return gm.forward

    torch._dynamo.reset()
    counters.clear()
    try:
        with warnings.catch_warnings(), untimed_guards():
            warnings.simplefilter("ignore")
            torch.compile(fn, backend=backend)(*args, **kwargs)
        reasons = [
            str(reason).splitlines()[0]
            for kind in ("graph_break", "unimplemented")
            for reason in counters[kind]
        ]
        return graphs, sum(counters["graph_break"].values()), reasons
    finally:
        torch._dynamo.reset()
        counters.clear()


def assert_no_more_breaks(
    breaks: int, fn, *args, baseline_missing: str = "", **kwargs
) -> tuple[int, int]:
    """bytegraph's ``breaks`` for one call of ``fn`` are at most torch.compile's
    (``dynamo_breaks``). Returns Dynamo's ``(graphs, breaks)``.

    Where torch.compile compiles no graph at all (it ran the whole call in Python) or fails on
    the code (an internal error of Dynamo's) there is no baseline to compare with, and the
    assertion fails unless the test says why it expects that:
    ``baseline_missing="torch.compile runs the generator in Python"``."""
    import torch._dynamo

    try:
        graphs, dynamo, reasons = dynamo_run(fn, *args, **kwargs)
    except torch._dynamo.exc.InternalTorchDynamoError as e:
        graphs, dynamo, reasons = 0, -1, [f"internal error: {str(e).splitlines()[0]}"]
    if graphs == 0:
        assert baseline_missing, (
            f"torch.compile compiled no graph for {getattr(fn, '__qualname__', fn)} "
            f"({dynamo} breaks): no baseline; say why with baseline_missing=...; "
            f"Dynamo's reasons: {reasons}"
        )
        return graphs, dynamo
    assert breaks <= dynamo, f"bytegraph breaks {breaks}x, torch.compile {dynamo}x"
    return graphs, dynamo


def dynamo_counts_in_a_fresh_process(calls: list[tuple]) -> list[tuple[int, int]]:
    """``dynamo_counts`` of each ``(fn, *args)`` in ``calls`` (module-level functions), measured
    in one new interpreter: Dynamo's walk of a generator's globals
    (``LazyVariableTracker.realize_all``) raises RecursionError late in a long test session
    (state the session left behind), where a fresh process shows what torch.compile itself does
    with the function. ``args`` travel pickled."""
    import ast
    import pickle
    import subprocess
    import sys

    code = (
        "import importlib.util, pickle, sys\n"
        f"sys.path[:0] = {sys.path!r}\n"
        "from dynamo_baseline import dynamo_counts\n"
        "modules = {}\n"
        "def function(path, name):\n"
        "    if path not in modules:\n"
        "        spec = importlib.util.spec_from_file_location('_baseline', path)\n"
        "        modules[path] = importlib.util.module_from_spec(spec)\n"
        "        spec.loader.exec_module(modules[path])\n"
        "    return getattr(modules[path], name)\n"
        "calls = pickle.loads(sys.stdin.buffer.read())\n"
        "print(repr([dynamo_counts(function(*where), *args) for where, args in calls]))\n"
    )
    shipped = [((fn.__code__.co_filename, fn.__name__), args) for fn, *args in calls]
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps(shipped),
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return ast.literal_eval(done.stdout.decode().strip().splitlines()[-1])
