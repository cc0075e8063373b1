"""torch's higher-order functions called with a function made in the trace (Mamba's
``associative_scan(combine_fn, ...)`` inside its forward): one graph node when the function is
pure, a graph break otherwise (``tracer/variables/torch_calls.py``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from bytegraph.tracer.variables import torch_calls
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


# -- the scan without vmap (``variables/torch_calls.py``) ------------------------------------
# Each case runs ``elementwise_scan`` and torch's ``associative_scan`` on equal inputs and requires
# equal results (bit for bit: the same operations in the same order) and equal gradients, and
# counts whether the vmap-free path ran.


def _pairs(left, right):
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def _add(x, y):
    return x + y


def _keyed(left, right):
    return {"a": left["a"] * right["a"], "b": right["a"] * left["b"] + right["b"]}


def _first_row(x, y):
    return x + y[0]  # indexes a tensor: vmap gives each slice its own row


def _in_place(x, y):
    y += x  # writes into the slices it is given
    return y


def _with_constants(x, y):
    return -(x * 0.5) + 2 * y - 1 + x**2 / (y + 3)


def _leaves(n, shape, dtype=torch.float32, grad=False):
    gen = torch.Generator().manual_seed(n)
    return [torch.rand(shape, generator=gen).to(dtype).requires_grad_(grad) for _ in range(n)]


@pytest.fixture
def fast_runs(monkeypatch):
    """How many times the vmap-free path ran (torch's own path never goes through
    ``torch_calls.generic_associative_scan``)."""
    runs = [0]
    original = torch_calls.generic_associative_scan

    def counted(*args, **kwargs):
        runs[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(torch_calls, "generic_associative_scan", counted)
    return runs


CASES = [
    # (combine, structure of xs, shape, dim, reverse, dtype, vmap-free?)
    (_pairs, "pair", (2, 5, 7, 3), 2, False, torch.float32, True),
    (_pairs, "pair", (2, 5, 8, 3), -2, True, torch.float32, True),
    (_pairs, "pair", (1, 1), 0, False, torch.float64, True),
    (_add, "one", (9,), 0, False, torch.float32, True),
    (_add, "one", (4, 6), 1, True, torch.int64, True),
    (_keyed, "dict", (3, 6, 2), 1, False, torch.float32, True),
    (_with_constants, "one", (5, 4), 0, False, torch.float16, True),
    (_first_row, "one", (6, 3), 0, False, torch.float32, False),
    (_in_place, "one", (6, 3), 0, False, torch.float32, False),
]


def _xs(structure, leaves):
    if structure == "pair":
        return tuple(leaves)
    if structure == "dict":
        return {"a": leaves[0], "b": leaves[1]}
    return leaves[0]


@pytest.mark.parametrize("combine,structure,shape,dim,reverse,dtype,vmap_free", CASES)
def test_elementwise_scan_equals_torchs(
    fast_runs, combine, structure, shape, dim, reverse, dtype, vmap_free
):
    grad = dtype.is_floating_point and combine is not _in_place
    count = 1 if structure == "one" else 2
    ours_in = _leaves(count, shape, dtype, grad)
    theirs_in = [t.detach().clone().requires_grad_(grad) for t in ours_in]
    ours = torch_calls.elementwise_scan(
        combine, _xs(structure, ours_in), dim, reverse=reverse, combine_mode="generic"
    )
    theirs = associative_scan(
        combine, _xs(structure, theirs_in), dim, reverse=reverse, combine_mode="generic"
    )
    assert fast_runs[0] == (1 if vmap_free else 0)
    out_ours = torch.utils._pytree.tree_leaves(ours)
    out_theirs = torch.utils._pytree.tree_leaves(theirs)
    assert len(out_ours) == len(out_theirs)
    for a, b in zip(out_ours, out_theirs, strict=True):
        assert (a.dtype, a.shape, a.requires_grad) == (b.dtype, b.shape, b.requires_grad)
        assert torch.equal(a, b)
    if grad:
        sum(o.float().sum() * (i + 1) for i, o in enumerate(out_ours)).backward()
        sum(o.float().sum() * (i + 1) for i, o in enumerate(out_theirs)).backward()
        for a, b in zip(ours_in, theirs_in, strict=True):
            torch.testing.assert_close(a.grad, b.grad)


def test_leaves_of_different_shapes_keep_vmap(fast_runs):
    a, b = torch.rand(5, 1), torch.rand(5, 3)
    ours = torch_calls.elementwise_scan(_pairs, (a, b), 0, combine_mode="generic")
    theirs = associative_scan(_pairs, (a, b), 0, combine_mode="generic")
    assert fast_runs[0] == 0
    for x, y in zip(ours, theirs, strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize(
    "args,kwargs",
    [
        # CPU: torch up to 2.14 refuses, 2.15 scans
        ((torch.rand(4), 0), {"combine_mode": "pointwise"}),
        ((torch.rand(4), 3), {"combine_mode": "generic"}),  # no such dim
        # empty scan dimension: torch up to 2.14 refuses, 2.15 returns it empty
        ((torch.rand(0, 2), 0), {"combine_mode": "generic"}),
        ((torch.rand(4), 0), {"combine_mode": "other"}),
    ],
)
def test_arguments_off_the_fast_path_behave_as_torchs(fast_runs, args, kwargs):
    """Whatever torch does with them (an error, or a result, depending on its release), the
    scan does the same, through torch's own implementation."""
    assert _outcome(torch_calls.elementwise_scan, *args, **kwargs) == _outcome(
        associative_scan, *args, **kwargs
    )
    assert fast_runs[0] == 0


def _outcome(scan: Any, *args: Any, **kwargs: Any) -> tuple:
    try:
        out = scan(_add, *args, **kwargs)
    except (ValueError, IndexError, RuntimeError) as e:
        return ("raises", type(e), str(e))
    return ("returns", out.dtype, tuple(out.shape), out.tolist())


def test_compiled_scan_runs_without_vmap_and_trains(fast_runs):
    def fn(a, b):
        def combine(left, right):
            a_left, b_left = left
            a_right, b_right = right
            return a_left * a_right, a_right * b_left + b_right

        _, states = associative_scan(combine, (a, b), dim=2, combine_mode="generic")
        return states.sum(-1)

    def inputs():
        gen = torch.Generator().manual_seed(3)
        return [torch.rand(2, 4, 7, 3, generator=gen).requires_grad_() for _ in range(2)]

    compiled = bytegraph.compile(fn, backend="eager")
    for _ in range(2):
        ours_in, theirs_in = inputs(), inputs()
        ours, theirs = compiled(*ours_in), fn(*theirs_in)
        assert_same(ours, theirs)
        ours.square().sum().backward()
        theirs.square().sum().backward()
        for a, b in zip(ours_in, theirs_in, strict=True):
            torch.testing.assert_close(a.grad, b.grad)
    assert fast_runs[0] >= 2  # each compiled call (the trace's fake run may add one)
