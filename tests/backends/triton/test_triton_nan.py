"""NaN through the lowered pointwise operators and reductions, as eager gives it: ``maximum``,
``minimum``, ``clamp`` and ``relu`` propagate a NaN from either side, ``max``/``min`` reductions
and ``amax`` return NaN for a row that holds one, comparisons with NaN are False (``ne`` True)."""

from __future__ import annotations

import pytest
import torch

NAN = float("nan")


def _with_nans(*shape):
    x = torch.randn(*shape)
    flat = x.view(-1)
    flat[::3] = NAN
    return x


POINTWISE = {
    "maximum": lambda x, y: torch.maximum(x, y),
    "maximum_swapped": lambda x, y: torch.maximum(y, x),
    "minimum": lambda x, y: torch.minimum(x, y),
    "minimum_swapped": lambda x, y: torch.minimum(y, x),
    "clamp": lambda x, y: x.clamp(-0.5, 0.5) + y,
    "relu": lambda x, y: torch.relu(x) * y,
    "compare": lambda x, y: ((x > y), (x == x), (x != y)),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_nan_as_eager(name, triton_check):
    fn = POINTWISE[name]
    triton_check(
        lambda x, y: tuple(fn(x, y)) if name == "compare" else (fn(x, y),),
        _with_nans(4, 6),
        torch.randn(4, 6),
    )


@pytest.mark.parametrize("op", ["amax", "amin", "max", "min"])
def test_row_reductions_return_nan_as_eager(op, triton_check):
    def fn(x):
        if op in ("max", "min"):
            return (getattr(x, op)(dim=1).values,)
        return (getattr(x, op)(dim=1),)

    x = torch.randn(5, 7)
    x[1, 3] = NAN
    x[4, 0] = NAN
    triton_check(fn, x)
