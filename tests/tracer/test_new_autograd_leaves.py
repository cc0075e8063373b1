"""Tensors made in a compiled function as autograd leaves that require grad: a factory given
``requires_grad=True``, ``t.requires_grad_()`` on a tensor the function made or was given.

A graph compiled by AOTAutograd (``aot_eager``, ``inductor``) gives such a tensor back without
the flag, and whatever the graph computed from it too: ``x.clone().requires_grad_()`` returned
``requires_grad=False`` and a loss built from it could not be differentiated. The operator runs in
Python instead (``output_graph._check_no_new_leaf``); results, ``requires_grad``, ``is_leaf`` and
the gradients a backward pass gives are compared with eager, for each backend.

torch.compile keeps the three factories in its graph (no break) and breaks at
``requires_grad_()`` where the tensor leaves the graph; bytegraph breaks at each of them, one break
where torch.compile has none for the factories, and gets ``new_ones(..., requires_grad=True)``
right where torch.compile (aot_eager) returns it without the flag.
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same

import bytegraph


def factory(x):
    w = torch.ones(3, requires_grad=True)
    return w * x, w


def factory_like(x):
    w = torch.zeros_like(x, requires_grad=True)
    return (w + x).sum(), w


def factory_from_data(x):
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return (w * x).sum(), w


def new_ones(x):
    w = x.new_ones(3, requires_grad=True)
    return w * 2, w


def made_then_flagged(x):
    w = x.clone().requires_grad_()
    return w * 2, w


def detached_then_flagged(x):
    w = (x * 3).detach().requires_grad_(True)
    return (w**2).sum(), w


def input_flagged(x):
    x.requires_grad_()
    return x * 2, x


def flagged_then_no_grad_block_with_a_break(x):
    w = x.clone().requires_grad_()
    with torch.no_grad():
        a = w * 2
        print("", end="")  # a break inside the block
        b = w * 3
    c = w * 4
    return (a + b + c).sum(), w, c


CASES = [
    factory,
    factory_like,
    factory_from_data,
    new_ones,
    made_then_flagged,
    detached_then_flagged,
    input_flagged,
    flagged_then_no_grad_block_with_a_break,
]


def _autograd_state(values):
    return [(v.requires_grad, v.is_leaf) for v in values if isinstance(v, torch.Tensor)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_a_new_leaf_requiring_grad_keeps_its_flag_and_its_gradient(fn, backend):
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        x_eager = torch.randn(3)
        x_compiled = x_eager.clone()
        expected, actual = fn(x_eager), compiled(x_compiled)
        assert_same(actual, expected)
        assert _autograd_state(actual) == _autograd_state(expected)
        assert x_compiled.requires_grad == x_eager.requires_grad
        # the gradient reaches the leaf, as in eager
        expected[0].sum().backward()
        actual[0].sum().backward()
        assert_same(actual[1].grad, expected[1].grad)
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]


def module_frozen(x, m):
    m.requires_grad_(False)
    return m(x), m.weight.requires_grad


def parameter_frozen_after_use(x, m):
    y = m(x)
    m.weight.requires_grad_(False)
    return y * 2, m.weight.requires_grad


def input_unflagged(x, m):
    x.requires_grad_(requires_grad=False)
    return m(x * 2)


def unflagged_under_no_grad(x, m):
    with torch.no_grad():
        m.bias.requires_grad_(False)
    return m(x)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize(
    "fn",
    [module_frozen, parameter_frozen_after_use, input_unflagged, unflagged_under_no_grad],
    ids=lambda f: f.__name__,
)
def test_turning_off_requires_grad_of_a_leaf_is_eagers(fn, backend):
    """``requires_grad_(False)`` on a parameter or input that requires grad (``m.requires_grad_(
    False)`` freezing a module): AOTAutograd cannot change a graph input's flag (the function ran
    in Python after an internal error); it runs in Python, as torch.compile breaks there too. The
    flags, results and gradients are eager's."""
    bytegraph.reset()
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        torch.manual_seed(0)
        x, m = torch.randn(2, 3, requires_grad=True), torch.nn.Linear(3, 3)
        ex, em = x.detach().clone().requires_grad_(), torch.nn.Linear(3, 3)
        em.load_state_dict(m.state_dict())
        actual, expected = compiled(x, m), fn(ex, em)
        assert_same(actual, expected)
        flags = [(t.requires_grad, t.is_leaf) for t in (x, *m.parameters())]
        assert flags == [(t.requires_grad, t.is_leaf) for t in (ex, *em.parameters())]
        loss = actual[0] if isinstance(actual, tuple) else actual
        if loss.requires_grad:
            loss.sum().backward()
            (expected[0] if isinstance(expected, tuple) else expected).sum().backward()
            assert_same(
                [t.grad for t in (x, *m.parameters())], [t.grad for t in (ex, *em.parameters())]
            )
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]
