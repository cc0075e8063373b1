"""What an in-place operator gives back is its operand: ``w -= lr * w.grad`` leaves ``w`` the
same object, a ``Parameter`` still, whose ``.grad`` is the gradient it had. The trace gave the
result a tracker of its own, a plain tensor made in the graph: after ``w -= ...`` on a parameter
``w.grad`` read ``None`` and ``type(w)`` was ``Tensor``, where eager keeps the parameter
(torch.compile 2.13 keeps the type but also reads ``.grad`` as ``None`` there). Results, types,
``.grad``, attributes set on the tensor and identities are compared with eager.
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same

import bytegraph


def sgd_step_augmented(w, x):
    with torch.no_grad():
        w -= 0.1 * w.grad
    return w.grad, type(w).__name__, w.is_leaf


def sgd_step_method(w, x):
    with torch.no_grad():
        v = w.sub_(0.1 * w.grad)
    return v.grad, v is w, type(v).__name__


def in_place_then_attribute(w, x):
    w.tag = "step"
    with torch.no_grad():
        w.mul_(0.5)
    return w.tag, w.grad


def made_then_added_in_place(w, x):
    y = x.clone()
    z = y.add_(1)
    y += 2
    return z is y, y * 1


def written_by_out(w, x):
    out = torch.empty(3)
    r = torch.add(x, 1, out=out)
    return r is out, out * 1


@pytest.mark.parametrize(
    "fn",
    [
        sgd_step_augmented,
        sgd_step_method,
        in_place_then_attribute,
        made_then_added_in_place,
        written_by_out,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_in_place_result_is_its_operand(fn, backend):
    def parameter():
        w = torch.nn.Parameter(torch.ones(3))
        w.grad = torch.full((3,), 2.0)
        return w

    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        x = torch.randn(3)
        w_eager, w_compiled = parameter(), parameter()
        expected, actual = fn(w_eager, x), compiled(w_compiled, x)
        assert_same(actual, expected)
        assert_same(w_compiled.detach(), w_eager.detach())
        assert_same(w_compiled.grad, w_eager.grad)
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]
