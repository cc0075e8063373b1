"""Inputs ``aot_eager`` must compile, compared with eager over several calls with no fallback.

Aliased tensor inputs (two views of one tensor, one written in place) with symbolic sizes:
AOTAutograd rebuilds each view from one synthetic base and needs the views' size symbols as
graph inputs of their own (``backends/size_inputs.py``).
"""

from __future__ import annotations

import warnings

import pytest
import torch

import bytegraph
from bytegraph.explain import Recorder
from tests.difftest import assert_same, assert_state_same, break_count


def check_aot_eager(fn, make_args, sizes, *, dynamic=None, breaks=0):
    """Compile ``fn`` with ``aot_eager`` and call it on ``make_args(n)`` for each ``n`` in
    ``sizes`` (eager on the same values, made again): results and arguments after the call
    equal eager's, no warning (a fallback warns), no fallback in the report, ``breaks`` graph
    breaks."""
    compiled = bytegraph.compile(fn, backend="aot_eager", dynamic=dynamic)
    recorder = Recorder()
    for n in sizes:
        torch.manual_seed(n)
        base = make_args(n)
        torch.manual_seed(n)
        eager_base = make_args(n)
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            actual = compiled(*base[1])
        expected = fn(*eager_base[1])
        assert_same(actual, expected)
        assert_state_same(list(base), list(eager_base))
    assert break_count(recorder.report()) == breaks


def mutate_first(x, y):
    x.mul_(2)
    return y + 0


def mutate_second(x, y):
    y.add_(1)
    return x * 2


VIEW_PAIRS = {
    "transposed_first": lambda b: (b.t(), b),
    "flat_first": lambda b: (b.view(-1), b),
    "two_slices": lambda b: (b[1:], b[:2]),
    "base_first": lambda b: (b, b.t()),
}


@pytest.mark.parametrize("dynamic", [True, None], ids=["dynamic", "automatic"])
@pytest.mark.parametrize("pair", list(VIEW_PAIRS))
@pytest.mark.parametrize("fn", [mutate_first, mutate_second], ids=lambda f: f.__name__)
def test_views_of_one_tensor_with_symbolic_sizes(fn, pair, dynamic):
    views = VIEW_PAIRS[pair]

    def make_args(n):
        b = torch.randn(n, n)
        return b, views(b)  # the base is compared too: the write seen through both views

    check_aot_eager(fn, make_args, [3, 4, 5, 3], dynamic=dynamic)


def test_views_of_one_tensor_requiring_grad():
    def fn(x, y):
        x.mul_(2)
        return (y * 3).sum()

    def make_args(n):
        w = torch.randn(n, n, requires_grad=True)
        b = w * 1
        return b, (b.t(), b)

    check_aot_eager(fn, make_args, [3, 4, 5], dynamic=True)


@pytest.mark.parametrize("returns_dict", [False, True], ids=["forward", "forward_and_dict"])
def test_state_dict_then_forward_of_a_module_writing_its_buffers(returns_dict):
    """``state_dict()`` holds ``detach()`` views of the buffers BatchNorm's forward writes, which
    the graph writes after taking them (one graph, as torch.compile's: the attribute
    ``state_dict`` stores on the ``OrderedDict`` it makes is traced); returned, the dict's
    tensors show the written buffers, as eager's."""

    def fn(m, x):
        sd = m.state_dict()
        out = m(x)
        return (out, sd) if returns_dict else out

    def make_args(n):
        m = torch.nn.BatchNorm1d(3)
        return m, (m, torch.randn(4, 3))

    check_aot_eager(fn, make_args, [0, 1, 2], breaks=0)
