"""Float scalars computed from symbolic sizes (``torch.sym_float(s0)``, ``1.0 / s0``): they reach
the kernels as scalar arguments the wrapper computes, so one compiled graph serves every size
instead of the whole graph running eagerly."""

from __future__ import annotations

import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.triton import triton_backend

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
