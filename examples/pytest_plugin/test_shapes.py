"""Tests using the bytegraph pytest plugin (installed with bytegraph; nothing to configure).

Run: ``pytest -v examples/pytest_plugin`` (add ``--bytegraph-no-graph-breaks`` to check every test).
"""

from __future__ import annotations

import pytest
import torch
from shapes import noisy_normalize, normalize, scale


@pytest.mark.no_graph_breaks
def test_normalize_is_one_graph(bytegraph_report):
    out = normalize(torch.arange(6.0))
    torch.testing.assert_close(out.mean(), torch.tensor(0.0))
    assert bytegraph_report.graph_count == 1


@pytest.mark.max_recompiles(2)
def test_three_factors_recompile_twice():
    for factor in (1, 2, 3):
        assert scale(torch.ones(2), factor).tolist() == [factor, factor]


@pytest.mark.xfail(strict=True, reason="shows the failure no_graph_breaks reports for a print()")
@pytest.mark.no_graph_breaks
def test_noisy_normalize_breaks():
    noisy_normalize(torch.arange(4.0))
