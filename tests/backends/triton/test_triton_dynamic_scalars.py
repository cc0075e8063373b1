"""Float scalars computed from symbolic sizes (``torch.sym_float(s0)``, ``1.0 / s0``): they reach
the kernels as scalar arguments the wrapper computes, so one compiled graph serves every size
instead of the whole graph running eagerly. A float input (a symbol once it changed value) is such
an argument too, a float64 (``backends/triton/float_scalars.py``)."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.triton import triton_backend
from dynamo_baseline import dynamo_graphs_over_calls

import bytegraph


def run_sizes(fn, shapes):
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(fn, backend=rec, dynamic=True)
    for shape in shapes:
        x = torch.randn(shape)
        actual, expected = compiled(x), fn(x)
        for a, e in zip(actual, expected, strict=True):
            torch.testing.assert_close(a, e)
    assert len(rec.compiled) == 1, "one compile serves all sizes"
    runner = rec.compiled[0]
    assert [getattr(g, "reason", None) for g in runner.graphs] == [None], "graph ran eagerly"
    return runner


def test_mean_over_dynamic_dim_one_compile_for_three_sizes():
    runner = run_sizes(lambda x: (x.mean(-1),), [(3, 5), (4, 7), (2, 9)])
    assert runner.kernels
    assert not runner.fallback_ops
    assert "float(s" in runner.source  # the divisor: computed by the wrapper from the size
    assert any("ks" in k.source for k in runner.kernels)


def test_float_size_arithmetic_in_kernels():
    def fn(x):
        return x.var(-1), x * (1.0 / x.shape[1]), x * (x.shape[1] / 2), x.std(0)

    runner = run_sizes(fn, [(3, 5), (6, 4), (2, 11)])
    assert runner.kernels


def test_layer_norm_and_mean_backward_dynamic():
    w = torch.randn(6, requires_grad=True)

    def fn(x):
        return (torch.nn.functional.layer_norm(x, (6,), w) * x.mean(0, keepdim=True),)

    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(fn, backend=rec, dynamic=True)
    for n in (3, 5, 8):
        x = torch.randn(n, 6, requires_grad=True)
        x_ref = x.detach().clone().requires_grad_()
        out, ref = compiled(x)[0], fn(x_ref)[0]
        torch.testing.assert_close(out, ref)
        cot = torch.randn(ref.shape)
        got = torch.autograd.grad(out, (x, w), cot)
        want = torch.autograd.grad(ref, (x_ref, w), cot)
        for g, e in zip(got, want, strict=True):
            torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)
    assert len(rec.compiled) == 1
    runner = rec.compiled[0]
    assert len(runner.graphs) == 2  # forward and backward
    assert all(getattr(g, "reason", None) is None for g in runner.graphs)
    assert runner.kernels


def _scaled(x, scale):
    return x * (-scale * 2) + scale * scale + x / scale


def test_a_float_input_reaches_kernels_as_a_float64_argument():
    """A float64 graph computes with the float as eager does, forward and backward (AOTAutograd
    wrote it as a float32 ``scalar_tensor``: 3e-8 off), one graph for every value."""
    calls = [(torch.randn(5, dtype=torch.float64, requires_grad=True), s) for s in (0.3, 1 / 3)]
    calls.append((calls[0][0], 0.1))
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(_scaled, backend=rec)
    for x, scale in calls:
        got, want = compiled(x, scale), _scaled(x, scale)
        assert torch.equal(got, want) and got.dtype == want.dtype  # bit for bit
        cot = torch.randn(5, dtype=torch.float64)
        (got_grad,) = torch.autograd.grad(got, x, cot)
        (want_grad,) = torch.autograd.grad(want, x, cot)
        assert torch.equal(got_grad, want_grad)
    assert len(rec.compiled) == 2  # the float a constant, then a symbol for every value
    runner = rec.compiled[-1]
    assert [getattr(g, "reason", None) for g in runner.graphs] == [None, None]
    assert any("ks0: tl.float64" in k.source for k in runner.kernels)
    assert dynamo_graphs_over_calls(_scaled, calls, triton_backend) == 2


def _mixed(x, t, scale):
    return x * scale + t * scale, (t * (scale * 3)).to(torch.float16) * scale


def test_a_float_input_keeps_each_operations_dtype():
    """Read by a float32 0-d tensor's operation, the float is converted to float32 as eager
    converts it; arithmetic on the float alone is done in float64 (``scale * 3``), then
    converted."""
    x, t = torch.randn(5, dtype=torch.float64), torch.tensor(0.7)
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(_mixed, backend=rec)
    for scale in (0.3, 1 / 3, 0.1):
        for got, want in zip(compiled(x, t, scale), _mixed(x, t, scale), strict=True):
            assert torch.equal(got, want) and got.dtype == want.dtype
    assert len(rec.compiled) == 2
    assert [getattr(g, "reason", None) for g in rec.compiled[-1].graphs] == [None]


def _int_tensors_and_a_float(x, t, h, s):
    k = torch.scalar_tensor(16777217, dtype=torch.int64)  # a 0-d int64 tensor of the program
    return x * s, k * s, k + s, k - s, k / s, s / k, t * s, t - s, h * s


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
def test_an_int_tensor_with_a_float_computes_in_the_default_dtype(grad):
    """An int tensor (0-d or not) with a Python float computes in float32, the float converted to
    float32 first, as eager does; a float16 tensor in float32 rounded to float16."""
    x = torch.randn(3, requires_grad=grad)
    t = torch.tensor([16777217, 3, -33554435, 123456789])
    h = torch.tensor([3.0, 0.1, 1 / 3, 1000.0], dtype=torch.float16)
    calls = [(x, t, h, scale) for scale in (0.1, 0.7, 1 / 3, 0.3)]
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(_int_tensors_and_a_float, backend=rec)
    for args in calls:  # the float a constant, then a symbol for every value
        got, want = compiled(*args), _int_tensors_and_a_float(*args)
        for i, (a, e) in enumerate(zip(got, want, strict=True)):
            assert a.dtype == e.dtype and torch.equal(a, e), (args[-1], i, a, e)
            assert a.requires_grad == e.requires_grad
    assert len(rec.compiled) == 2
    assert all(getattr(g, "reason", None) is None for r in rec.compiled for g in r.graphs)
    assert dynamo_graphs_over_calls(_int_tensors_and_a_float, calls, triton_backend) == 2


def _a_tensor_of_the_float(s):
    return torch.scalar_tensor(s) * 3, torch.scalar_tensor(s) / 3


def test_a_tensor_the_program_makes_of_a_float_keeps_its_dtype():
    """``torch.scalar_tensor(s)`` is a float32 tensor: ``* 3`` rounds s to float32 first and
    computes in float32, as eager does (only the float's own arithmetic is float64)."""
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(_a_tensor_of_the_float, backend=rec)
    for scale in (0.1, 0.7, 1 / 3, 0.3, 0.9):
        for a, e in zip(compiled(scale), _a_tensor_of_the_float(scale), strict=True):
            assert a.dtype == e.dtype and torch.equal(a, e), (scale, a, e)
    assert all(getattr(g, "reason", None) is None for r in rec.compiled for g in r.graphs)


def _scaled_by_count(x, n, s):
    return x * (s * n)


def test_an_int_input_in_a_floats_arithmetic_is_exact():
    """``s * n`` (an int input past float32's 2**24) is Python's float64 product, as in eager."""
    x = torch.randn(3, dtype=torch.float64)
    calls = [(x, n, s) for n, s in ((16777219, 0.1), (16777221, 0.3), (33554435, 0.7))]
    rec = CompileCounter(triton_backend)
    compiled = bytegraph.compile(_scaled_by_count, backend=rec)
    for args in calls:
        got, want = compiled(*args), _scaled_by_count(*args)
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert all(getattr(g, "reason", None) is None for r in rec.compiled for g in r.graphs)
    # torch 2.11's AOTAutograd asks for a restart (TensorifyScalarRestartAnalysis): compiled again
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]
