"""Every parity-corpus case (``cases_*.py``), compiled with bytegraph, against eager: no observable
difference over ``CALLS`` calls, the recorded graph and break counts on the first call, no break
more than torch.compile takes unless the case says why, and no new trace after the first call.
torch.compile itself runs in ``benchmarks/parity.py``, which checks the recorded ``tc_breaks``."""

from __future__ import annotations

import pytest
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


def test_corpus_is_large_and_breaks_no_more_than_torch_compile():
    assert len(CASES) >= 150, f"only {len(CASES)} cases"
    more = [c.name for c in CASES.values() if c.breaks > c.tc_breaks]
    assert all(CASES[n].why for n in more)
    assert sum(c.breaks for c in CASES.values()) < sum(c.tc_breaks for c in CASES.values())
