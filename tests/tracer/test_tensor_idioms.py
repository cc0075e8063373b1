"""Tensor idioms kept in the graph as torch.compile keeps them: ``min``/``max`` of 0-dim
tensors (CPython's rule: a later item wins only when strictly greater/smaller, so ties and NaNs keep
the earlier one) and ``x.type(torch.HalfTensor)``."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_counts


def check(fn, *args):
    check_breaks(fn, lambda: args, graphs=1, breaks=0)
    assert dynamo_counts(fn, *args) == (1, 0)


def _extremes(x):
    a, b, c = x.sum(), x.amin(), x[0]
    return max(a, b) + min(a, b), max(a, b, c), min([c, b, a])


def _max_of_map(xs):
    return max(map(lambda t: t.sum(), xs)), min(t.abs().max() for t in xs)


@pytest.mark.parametrize(
    "x",
    [
        torch.tensor([1.0, 2.0, 3.0]),
        torch.tensor([2.0, 2.0, 2.0]),  # ties: the first item
        torch.tensor([float("nan"), 1.0, 2.0]),  # NaN compares False: the first item stays
        torch.tensor([1.0, float("nan"), 2.0]),
        torch.tensor([3, 1, 2]),  # integers
    ],
    ids=["plain", "ties", "nan_first", "nan_later", "int"],
)
def test_min_max_of_scalar_tensors(x):
    check(_extremes, x)


def test_max_of_a_map_over_tensors():
    check(_max_of_map, [torch.randn(3), torch.randn(3) * 3, torch.randn(2)])


def test_min_max_keep_gradients_flowing_to_the_chosen_one():
    def fn(w):
        a, b = (w * 2).sum(), (w * 3).sum()
        return max(a, b)

    w = torch.ones(3, requires_grad=True)
    check_breaks(fn, lambda: (w,), graphs=1, breaks=0)


def _to_half(x):
    return x.type(torch.HalfTensor), x.type(torch.DoubleTensor) * 2, x.type("torch.IntTensor")


def test_type_with_a_tensor_type():
    check(_to_half, torch.randn(3))
