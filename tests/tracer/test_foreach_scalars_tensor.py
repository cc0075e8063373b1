"""Foreach ops: an in-place one returns the list it was given; given their scalars as a 1-d
tensor (``torch._foreach_addcdiv_(params, t1, t2, scalars)``), as torch.optim's foreach Adam,
AdamW and NAdam do when compiling (their step sizes stacked), aot_eager's fake kernel of the fused
op rejects that tensor and the call fell back to Python with an internal error: the call is traced
as the same arithmetic in foreach ops."""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import assert_same

import bytegraph
from bytegraph.explain import Recorder


def _compiled(fn, backend):
    """``fn`` compiled, and a report that must show no fallback."""
    recorder = Recorder()
    compiled = bytegraph.compile(fn, backend=backend)

    def run(*args):
        with recorder, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="bytegraph: ")
            return compiled(*args)

    return run, recorder


def _lists(seed):
    torch.manual_seed(seed)
    shapes = [(3,), (2, 2)]
    return (
        [torch.randn(s) for s in shapes],
        [torch.randn(s) for s in shapes],
        [torch.rand(s) + 0.5 for s in shapes],
        torch.tensor([0.5, -0.25]),
    )


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize(
    "op",
    [
        torch._foreach_addcdiv_,
        torch._foreach_addcdiv,
        torch._foreach_addcmul_,
        torch._foreach_addcmul,
    ],
)
def test_scalars_tensor_matches_eager(op, backend):
    def fn(a, b, c, s):
        out = op(a, b, c, s)
        return a, out, out is a  # the in-place ops return the list given

    compiled, recorder = _compiled(fn, backend)
    for seed in range(3):
        expected = fn(*_lists(seed))
        actual = compiled(*_lists(seed))
        assert_same(actual, expected)
    report = recorder.report()
    assert not [r.reason for r in report.break_reasons], report
    assert report.graph_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("make", ["Adam", "AdamW", "NAdam"])
def test_foreach_optimizer_step_one_graph(make, backend):
    """``opt.step()`` of a foreach optimizer: one graph, no fallback, the same parameters and
    state as eager over four steps."""

    def world():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        opt = getattr(torch.optim, make)(model.parameters(), lr=0.01, foreach=True)
        return model, opt

    (model, opt), (ref_model, ref_opt) = world(), world()
    step, recorder = _compiled(lambda: opt.step(), backend)
    for i in range(4):
        torch.manual_seed(100 + i)
        grads = [torch.randn_like(p) for p in model.parameters()]
        for p, q, g in zip(model.parameters(), ref_model.parameters(), grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        step()
        ref_opt.step()
        assert_same(list(model.parameters()), list(ref_model.parameters()))
        assert_same(list(opt.state.values()), list(ref_opt.state.values()))
    report = recorder.report()
    assert not [r.reason for r in report.break_reasons], report


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_in_place_foreach_returns_the_list_given(backend):
    """An in-place foreach op returns the list object it was given (eager: ``out is a``); the
    trace gave a new list, so ``out is a`` was False and ``out.append`` left ``a`` alone."""

    def fn(a, b):
        out = torch._foreach_mul_(a, 2.0)
        again = torch._foreach_add_(a, b)
        out.append(torch.zeros(1))
        return out is a, again is a, len(a), out

    compiled, recorder = _compiled(fn, backend)
    for seed in range(3):
        a, b, _, _ = _lists(seed)
        expected_a = [t.clone() for t in a]
        expected = fn(expected_a, b)
        actual = compiled(a, b)
        assert_same(actual, expected)
        assert_same(a, expected_a)
    assert not [r.reason for r in recorder.report().break_reasons]
