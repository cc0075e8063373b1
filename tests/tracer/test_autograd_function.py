"""Custom ``torch.autograd.Function``s called with ``.apply``: one graph node running the real
``apply`` (autograd then uses the user's backward), after a check that the forward has no
effects."""

from __future__ import annotations

import io
import warnings
from contextlib import redirect_stdout

import pytest
import torch
from difftest import compile_counted

import bytegraph


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.save_for_backward(x)
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.factor + x * 0, None


class SplitSquare(torch.autograd.Function):
    """Two outputs, ``setup_context`` style (forward takes no ctx)."""

    @staticmethod
    def forward(x):
        return x * x, x + 1

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_sq, grad_inc):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_sq + grad_inc


SEEN: list[str] = []


class Noisy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        SEEN.append("forward")
        return x * 3

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def _grads(fn, x):
    x = x.detach().clone().requires_grad_(True)
    out = fn(x)
    loss = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
    loss.backward()
    return out, x.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_apply_is_one_node_with_the_user_backward(backend):
    def fn(x):
        return Scale.apply(x, 2.5) + 1

    compiled, counter = compile_counted(fn)
    if backend == "aot_eager":
        compiled = bytegraph.compile(fn, backend="aot_eager")
    x = torch.randn(4)
    for _ in range(3):
        out, grad = _grads(compiled, x)
        expected, expected_grad = _grads(fn, x)
        torch.testing.assert_close(out, expected)
        assert out.requires_grad and out.dtype == expected.dtype
        torch.testing.assert_close(grad, expected_grad)
    if backend == "eager":
        assert counter.frame_count == 1
        assert "torch.autograd.function" not in counter.graphs[0].code


def test_setup_context_style_with_two_outputs():
    def fn(x):
        sq, inc = SplitSquare.apply(x)
        return sq, inc * 2

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for _ in range(2):
        (out, grad), (expected, expected_grad) = _grads(compiled, x), _grads(fn, x)
        for a, b in zip(out, expected, strict=True):
            torch.testing.assert_close(a, b)
        torch.testing.assert_close(grad, expected_grad)
    assert counter.frame_count == 1
    assert len(bytegraph.cache_entries(compiled)) == 1


def test_forward_with_side_effects_breaks_and_runs_once():
    def fn(x):
        return Noisy.apply(x * 2) + 1

    SEEN.clear()
    compiled = bytegraph.compile(fn)
    report = bytegraph.explain(fn)(torch.ones(2))
    assert report.graph_break_count == 1
    assert report.break_reasons[0].kind == "autograd_function"
    SEEN.clear()
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 7.0))
    assert SEEN == ["forward"]


def test_forward_that_prints_breaks_at_the_call_and_prints_once():
    class Loud(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            print("forward ran")
            return x + 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    def fn(x):
        return Loud.apply(x) * 2

    compiled = bytegraph.compile(fn)
    out = io.StringIO()
    with redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compiled(torch.ones(2))
    torch.testing.assert_close(result, torch.full((2,), 4.0))
    assert out.getvalue() == "forward ran\n"


def test_graph_code_names_every_callable_by_object():
    class Shift(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x - 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    def fn(x):
        return Shift.apply(x)

    compiled, counter = compile_counted(fn)
    compiled(torch.ones(2))
    gm = counter.graphs[0]
    exec(compile(gm.code, "<check>", "exec"), dict(gm.forward.__globals__))  # names resolve
    assert "torch.autograd" not in gm.code


class ClassScaled(torch.autograd.Function):
    """``forward`` and ``backward`` as classmethods (``entmax``'s Functions): the class is their
    first argument, and its attribute a constant of the forward."""

    factor = 1.5

    @classmethod
    def forward(cls, ctx, x, dim=-1):
        ctx.save_for_backward(x)
        return x * cls.factor - x.amax(dim=dim, keepdim=True)

    @classmethod
    def backward(cls, ctx, grad):
        return grad * cls.factor, None


class ClassNoisy(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, x):
        SEEN.append(cls.__name__)
        return x * 3

    @classmethod
    def backward(cls, ctx, grad):
        return grad * 3


@pytest.mark.parametrize("grad", [True, False])
def test_a_classmethod_forward_is_one_node(grad):
    """One graph, whether grad is on or off; torch.compile breaks no more (with grad, torch 2.15's
    compiles no graph of it)."""
    from difftest import check_breaks
    from dynamo_baseline import assert_no_more_breaks

    def fn(x):
        with torch.set_grad_enabled(grad):
            return ClassScaled.apply(x * 2, 0) + 1

    def make():
        return (torch.randn(3, 4, requires_grad=True),)

    check_breaks(fn, make, graphs=1, breaks=0, calls=3)
    compiled, _ = compile_counted(fn)
    x = torch.randn(3, 4)
    if grad:
        (out, g), (expected, expected_g) = _grads(compiled, x), _grads(fn, x)
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(g, expected_g)
    missing = "torch 2.15's Dynamo runs it in Python (Unsupported python_type() call)" * grad
    assert_no_more_breaks(0, fn, *make(), baseline_missing=missing)


def test_a_classmethod_forward_with_side_effects_breaks_and_runs_once():
    def fn(x):
        return ClassNoisy.apply(x * 2) + 1

    SEEN.clear()
    compiled = bytegraph.compile(fn)
    report = bytegraph.explain(fn)(torch.ones(2))
    assert report.graph_break_count == 1
    assert report.break_reasons[0].kind == "autograd_function"
    SEEN.clear()
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 7.0))
    assert SEEN == ["ClassNoisy"]
