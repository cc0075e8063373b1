"""A float the trace reads as a symbol (a scale, an eps passed as an argument, once it changed
value) goes to AOTAutograd's backends as a 0-d float64 tensor, as torch.compile gives it
(``backends/float_inputs.py``): Inductor compiles such a graph (its C++ code named the symbol
undeclared: the function ran in Python) and ``aot_eager``'s training graph computes with the float
as eager does (AOTAutograd made it a float32 tensor: a float64 graph differed from eager's in its
eighth digit). Results are eager's, the graph serves every value the float takes, and a float
Inductor must specialise (``alpha=``) is guarded on its value."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from dynamo_baseline import dynamo_graphs_over_calls

import bytegraph

pytestmark = pytest.mark.heavy  # Inductor compiles: run first (tests/conftest.py)


def _stats() -> dict[str, int]:
    stats = bytegraph.stats()
    assert not any(k.startswith("fallback") for k in stats), stats
    return stats


def _scaled_loss(x: torch.Tensor, scale: float) -> torch.Tensor:
    return (x * scale + scale).sum()


def test_aot_eager_trains_a_float64_graph_with_eagers_float():
    torch.manual_seed(0)
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    calls = [(x, s) for s in (0.3, 1 / 3, 0.1)]
    compiled = bytegraph.compile(_scaled_loss, backend="aot_eager")
    for args in calls:
        got = compiled(*args)
        (got_grad,) = torch.autograd.grad(got, x)
        want = _scaled_loss(*args)
        (want_grad,) = torch.autograd.grad(want, x)
        assert torch.equal(got, want) and torch.equal(got_grad, want_grad)  # bit for bit
        assert (got.dtype, got.requires_grad) == (want.dtype, want.requires_grad)
    assert _stats()["frames"] == 2  # the float a constant, then a symbol for every value
    assert dynamo_graphs_over_calls(_scaled_loss, calls, "aot_eager") == 2


def _normalised(x: torch.Tensor, scale: float, eps: float) -> torch.Tensor:
    return torch.add(x, x.abs().sum(), alpha=2.0) * scale / (x.sum() + eps)


def _shifted(x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.add(x, y, alpha=scale) * scale


def test_inductor_compiles_a_graph_reading_floats():
    torch.manual_seed(0)
    calls = [
        (torch.randn(6, dtype=dtype), s, e)
        for dtype in (torch.float32, torch.float64)
        for s, e in ((0.5, 1e-5), (0.25, 1e-6), (1 / 3, 3e-3))
    ]
    compiled = bytegraph.compile(_normalised, backend="inductor")
    for args in calls:
        got, want = compiled(*args), _normalised(*args)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    assert _stats()["frames"] == 3  # the floats constants, then symbols (both dtypes)
    assert dynamo_graphs_over_calls(_normalised, calls, "inductor") == 3


def test_inductor_guards_a_float_it_specialises():
    """``alpha=`` takes no tensor: Inductor makes the float a constant there, which the variant
    guards (AOTAutograd's cache, whose guards are on sizes alone, is not used for such a graph:
    an entry made for one value was taken for another)."""
    torch.manual_seed(0)
    x, y = torch.randn(5), torch.randn(5)
    compiled = bytegraph.compile(_shifted, backend="inductor")
    for scale in (0.5, 0.25, 0.75, 0.25):
        torch.testing.assert_close(compiled(x, y, scale), _shifted(x, y, scale))
    assert _stats()["frames"] == 3  # a constant, then one variant per value (0.25's reused)


def _positive_scaled(x: torch.Tensor, scale: float) -> torch.Tensor:
    return (x[x > 0] * scale).sum() + scale


def test_inductor_compiles_a_graph_with_a_size_from_data_and_a_float():
    """``x[x > 0]``'s size is read from data: with the float a constant, the graph's inputs are
    real tensors and Inductor's first attempt raises; the second one runs in the trace's fake mode
    (a new ``ShapeEnv`` named its symbol ``u0`` again, which AOTAutograd took for a stale memo:
    the function ran in Python), through the same float conversion as the first."""
    torch.manual_seed(0)
    calls = [(torch.randn(8, dtype=torch.float64), s) for s in (0.5, 0.25, 1 / 3)]
    compiled = bytegraph.compile(_positive_scaled, backend="inductor")
    for args in calls:
        got, want = compiled(*args), _positive_scaled(*args)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    assert _stats()["frames"] == 2  # the float a constant, then a symbol for every value
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):  # no break there
        assert dynamo_graphs_over_calls(_positive_scaled, calls, "inductor") == 2
