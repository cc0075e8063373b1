"""The bytegraph pytest plugin, loaded automatically through the ``pytest11`` entry point.

- ``@pytest.mark.no_graph_breaks``: the test fails if a bytegraph-compiled function graph-breaks or
  falls back to Python while it runs; the message lists each break (reason, file:line, source line).
- ``@pytest.mark.max_recompiles(n)``: the test fails if any compiled function recompiles more than
  ``n`` times while it runs.
- ``--bytegraph-no-graph-breaks``: ``no_graph_breaks`` for every test.
- fixture ``bytegraph_report``: a live ``bytegraph.explain.Report`` of what the test compiled so far
  (``.graphs``, ``.break_reasons``, ``.recompiles``, ...).
- a "bytegraph" terminal summary section lists the breaks and recompiles seen, per test, and a
  census line (graphs, breaks, collectives per graph) for tests whose graphs run collectives.
- ``bytegraph.config.distributed_consistency_check`` is on (also in the processes tests start,
  through ``BYTEGRAPH_DISTRIBUTED_CHECK=1``): ranks compiling different code fail, not hang.
  ``--bytegraph-no-distributed-check`` (or ``BYTEGRAPH_DISTRIBUTED_CHECK=0``) turns it off.

Recording uses ``bytegraph.explain.Recorder`` from setup to teardown of each test; the checks run
after the test body passed. Disable the whole plugin with ``-p no:bytegraph``.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from . import config as bytegraph_config
from .explain import Recorder, Report

_RECORDER = pytest.StashKey[Recorder]()

MARKERS = [
    "no_graph_breaks: fail the test if a function compiled by bytegraph graph-breaks or falls back "
    "to Python while it runs",
    "max_recompiles(n): fail the test if a function compiled by bytegraph recompiles more than n "
    "times while it runs",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bytegraph")
    group.addoption(
        "--bytegraph-no-graph-breaks",
        action="store_true",
        default=False,
        help="fail every test in which a bytegraph-compiled function graph-breaks or "
        "falls back to Python (as if marked no_graph_breaks)",
    )
    group.addoption(
        "--bytegraph-no-distributed-check",
        action="store_true",
        default=False,
        help="do not compare compile fingerprints across torch.distributed ranks",
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if config.getoption("bytegraph_no_distributed_check", False):
        os.environ["BYTEGRAPH_DISTRIBUTED_CHECK"] = "0"
    os.environ.setdefault("BYTEGRAPH_DISTRIBUTED_CHECK", "1")  # inherited by started processes
    enabled = os.environ["BYTEGRAPH_DISTRIBUTED_CHECK"] == "1"
    bytegraph_config.distributed_consistency_check = enabled
    config.pluginmanager.register(BytegraphSession(config), "bytegraph-session")


@pytest.fixture
def bytegraph_report(request: pytest.FixtureRequest) -> Report:
    """What bytegraph compiled during this test so far: graphs, break reasons, recompiles (live)."""
    recorder = request.node.stash.get(_RECORDER, None)
    if recorder is None:  # the session object was unregistered: record from here on
        recorder = Recorder()
        request.addfinalizer(recorder.__exit__)
        recorder.__enter__()
    return recorder.report()


class BytegraphSession:
    """Per-session state (one per ``pytest.Config``, so nested ``pytester`` runs do not mix)."""

    def __init__(self, config: pytest.Config) -> None:
        self.all_tests = bool(config.getoption("bytegraph_no_graph_breaks"))
        self.root = config.rootpath
        self.summaries: dict[str, list[str]] = {}  #: nodeid -> lines (tests with breaks/recompiles)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: Any
    ) -> Generator[None, Any, Any]:
        recorder = Recorder()
        item.stash[_RECORDER] = recorder
        try:
            with recorder:
                return (yield)
        finally:
            lines = summarise(recorder.report(), self.root)
            if lines:
                self.summaries[item.nodeid] = lines
            del item.stash[_RECORDER]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        recorder = item.stash.get(_RECORDER, None)
        try:
            result = yield  # a failing test body raises here: that failure is reported unchanged...
        except BaseException:
            lines = summarise(recorder.report(), self.root) if recorder is not None else []
            if lines:  # ...with what bytegraph saw shown beside it
                item.add_report_section("call", "bytegraph", "\n".join(lines))
            raise
        if recorder is None:
            return result
        problems = self.violations(item, recorder.report())
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)
        return result

    def violations(self, item: pytest.Item, report: Report) -> list[str]:
        problems = []
        if self.all_tests or item.get_closest_marker("no_graph_breaks") is not None:
            reasons = report.break_reasons
            if reasons:
                why = "--bytegraph-no-graph-breaks" if self.all_tests else "no_graph_breaks"
                problems.append(
                    f"bytegraph: {len(reasons)} graph break(s) in a test run with {why}:"
                )
                problems += [_indent(f"{i}. {br}") for i, br in enumerate(reasons, 1)]
        marker = item.get_closest_marker("max_recompiles")
        if marker is not None:
            limit = _recompile_limit(marker)
            for key, (name, count) in report.recompile_counts().items():
                if count > limit:
                    problems.append(
                        f"bytegraph: {name} recompiled {count} times (max_recompiles({limit})):"
                    )
                    problems += [
                        f"  - {'; '.join(r.failures)}" for r in report.recompiles if r.key == key
                    ]
        return problems

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.summaries:
            return
        terminalreporter.section("bytegraph: graph breaks and recompiles")
        for nodeid, lines in self.summaries.items():
            terminalreporter.write_line(nodeid)
            for line in lines:
                terminalreporter.write_line(f"  {line}")


def summarise(report: Report, root: Path | None = None) -> list[str]:
    """One line per break and per recompile (empty when none); paths relative to ``root``."""
    lines = []
    for br in report.break_reasons:
        what = "fallback to Python" if br.fell_back else "graph break"
        where = f" at {_short(br.filename, root)}:{br.lineno}" if br.location else ""
        source = f"  -> {br.line}" if br.line else ""
        lines.append(f"{what}{where} in {br.function}: {br.reason}{source}")
    for r in report.recompiles:
        lines.append(
            f"recompile of {r.function} ({_short(r.filename, root)}:{r.lineno}): "
            + "; ".join(r.failures)
        )
    if report.collective_count:  # the break census of distributed code
        per_graph = ", ".join(str(len(c)) for c in report.collectives_per_graph)
        lines.append(
            f"census: {report.graph_count} graphs, {report.graph_break_count} breaks, "
            f"{report.collective_count} collectives (per graph: {per_graph})"
        )
    return lines


def _short(filename: str, root: Path | None) -> str:
    if root is None:
        return filename
    try:
        return str(Path(filename).relative_to(root))
    except ValueError:
        return filename


def _recompile_limit(marker: pytest.Mark) -> int:
    limit = marker.args[0] if marker.args else marker.kwargs.get("n")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        pytest.fail(f"max_recompiles needs a non-negative int, got {marker}", pytrace=False)
    return limit


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
