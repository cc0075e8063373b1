"""Every parity-corpus case (``cases_*.py``), compiled with bytegraph, against eager: no observable
difference over ``CALLS`` calls, the recorded graph and break counts on the first call, and no new
trace after the first call. torch.compile itself runs on each case where either engine breaks: no
break more than torch.compile takes unless the case says why, and, on the torch release they were
measured with, the recorded ``tc_breaks`` (``benchmarks/parity.py`` prints every case)."""

from __future__ import annotations

import pytest
import torch
from corpus import harness

CASES = harness.load_all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_eager(name):
    c = CASES[name]
    expected = harness.run_eager(c)
    actual = harness.run_bytegraph(c)
    assert actual.crash is None, f"internal error: {actual.crash}"
    diffs = harness.differences(actual, expected, c.atol)
    assert not diffs, "differs from eager:\n" + "\n".join(diffs)
    assert (actual.graphs, actual.breaks) == (c.graphs, c.breaks), (
        f"graphs/breaks {actual.graphs}/{actual.breaks}, recorded {c.graphs}/{c.breaks}; "
        f"fell back: {actual.fell_back}"
    )
    assert actual.retraces == c.retraces, f"{actual.retraces} traces after the first call"


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.breaks))
def test_case_matches_eager_speculating(name):
    """With speculation on, a case that breaks still equals eager, and breaks no more often."""
    c = CASES[name]
    expected = harness.run_eager(c)
    actual = harness.run_bytegraph(c, speculate=True)
    assert actual.crash is None, f"internal error: {actual.crash}"
    diffs = harness.differences(actual, expected, c.atol)
    assert not diffs, "differs from eager:\n" + "\n".join(diffs)
    assert actual.breaks <= c.breaks, f"{actual.breaks} breaks speculating, {c.breaks} without"


#: Cases where either engine breaks. Elsewhere bytegraph takes no break, so it cannot break more
#: than torch.compile, whatever torch.compile's count.
BREAKING = sorted(name for name, c in CASES.items() if c.breaks or c.tc_breaks)


@pytest.mark.parametrize("name", BREAKING)
def test_torch_compile_breaks_as_recorded(name):
    c = CASES[name]
    run = harness.run_torch_compile(c)
    assert run.crash is None, run.crash
    assert c.breaks <= run.breaks or c.why, (
        f"bytegraph breaks {c.breaks}x, torch.compile {run.breaks}x, and the case says not why"
    )
    if torch.__version__.startswith("2.13."):  # the release ``tc_breaks`` was measured with
        assert run.breaks == c.tc_breaks, (
            f"torch.compile breaks {run.breaks}x, recorded {c.tc_breaks}"
        )


def test_recorded_counts_total_fewer_breaks_than_torch_compile():
    assert len(CASES) >= 150, f"only {len(CASES)} cases"
    assert sum(c.breaks for c in CASES.values()) < sum(c.tc_breaks for c in CASES.values())
