"""A float argument of -0.0 is not 0.0 to a guard: ``-0.0 == 0.0``, yet ``x / s``,
``math.copysign`` and ``str`` tell them apart. A variant traced with one zero is not taken for the
other: a constant float's ``EQUALS_MATCH`` checks the sign of a zero (a complex's parts too), and
a float traced as a symbol (sympy has no -0.0) stands for every float but -0.0, which is never made
one."""

from __future__ import annotations

import math

import pytest
import torch

import bytegraph

NAN, INF = float("nan"), float("inf")


def _signed(x: torch.Tensor, s: float):
    return x / s, math.copysign(1.0, s), str(s)


def _complex_signed(x: torch.Tensor, s: complex):
    return x * abs(s), str(s), 1 / s if s else None


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize(
    "values",
    [
        (0.0, -0.0, 0.0),
        (-0.0, 0.0),
        (0.5, INF, -0.0),
        (0.5, NAN, -0.0),
        (0.5, 0.25, 0.0, -0.0, 0.0),
        (0.5, 0.25, -0.0, 0.75),
    ],
)
def test_a_negative_zero_is_not_taken_for_zero(values, backend):
    compiled = bytegraph.compile(_signed, backend=backend)
    x = torch.tensor([1.0, -2.0])
    for s in values:
        got, want = compiled(x, s), _signed(x, s)
        torch.testing.assert_close(got[0], want[0], rtol=0, atol=0, equal_nan=True)
        assert got[1:] == want[1:], s


def test_a_complex_zeros_signs_are_guarded():
    compiled = bytegraph.compile(_complex_signed, backend="eager")
    x = torch.ones(2)
    for s in (complex(0.0, 0.0), complex(-0.0, 0.0), complex(0.0, -0.0), complex(0.0, 0.0)):
        got, want = compiled(x, s), _complex_signed(x, s)
        torch.testing.assert_close(got[0], want[0], rtol=0, atol=0, equal_nan=True)
        assert got[1:] == want[1:], s
