"""torch's higher-order functions called with a function made in the trace (Mamba's
``associative_scan(combine_fn, ...)`` inside its forward): one graph node when the function is
pure, a graph break otherwise (``tracer/variables/higher_order.py``)."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check

import bytegraph

associative_scan = pytest.importorskip("torch._higher_order_ops.associative_scan").associative_scan


def test_associative_scan_with_a_pure_function_made_in_the_trace():
    def fn(a, b):
        def combine(left, right):
            a_left, b_left = left
            a_right, b_right = right
            return a_left * a_right, a_right * b_left + b_right

        _, states = associative_scan(combine, (a, b), dim=1, combine_mode="generic")
        return states.sum(-1)

    a, b = torch.rand(2, 6, 3), torch.randn(2, 6, 3)
    compiled, counter = check(fn, a, b)
    node = [n for n in counter.graphs[0].graph.nodes if n.op == "call_function"][0]
    assert node.target.__name__ == "associative_scan"


def test_associative_scan_with_a_closure_breaks():
    def fn(a, scale):
        def combine(x, y):
            return x + y * scale  # reads a cell of the enclosing frame

        return associative_scan(combine, a, dim=0, combine_mode="generic")

    a = torch.randn(5, 2)
    report = bytegraph.explain(fn)(a, 2.0)
    assert report.graph_break_count == 1  # the scan runs in Python
    assert not [op for ops in report.ops_per_graph for op in ops if "scan" in op]
    compiled = bytegraph.compile(fn, backend="eager")
    assert_same(compiled(a, 2.0), fn(a, 2.0))
