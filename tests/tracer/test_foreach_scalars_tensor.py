"""Foreach ops given their scalars as a 1-d tensor (``torch._foreach_addcdiv_(params, t1, t2,
scalars)``), as torch.optim's foreach Adam, AdamW and NAdam do when compiling (their step sizes
stacked): under aot_eager the fused op's fake kernel rejects that tensor, and the call fell back to
Python with an internal error. The call is traced as the same arithmetic in foreach ops."""

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
