"""torch's context managers used as decorators on functions made in the compiled function
(``@torch.no_grad()`` on a nested function): each call runs inside a fresh copy of the
context, and the state is restored after it, also when the function raises."""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_counts


def _decorated_inside(x):
    @torch.no_grad()
    def frozen(y):
        return y * 2, torch.is_grad_enabled()

    @torch.enable_grad()
    def live(y):
        return y * 3, torch.is_grad_enabled()

    a, grad_a = frozen(x)
    b, grad_b = live(x)
    return a + b, grad_a, grad_b, torch.is_grad_enabled(), a.requires_grad, b.requires_grad


def test_no_grad_decorating_a_nested_function():
    x = torch.randn(3, requires_grad=True)
    check_breaks(_decorated_inside, lambda: (x,), graphs=1, breaks=0)
    assert dynamo_counts(_decorated_inside, x) == (1, 0)


def _decorated_called_twice_in_no_grad(x):
    @torch.enable_grad()
    def live(y):
        return y * 3

    with torch.no_grad():
        a = live(x)
    return a, live(x), torch.is_grad_enabled()


def test_decorated_function_called_in_another_context():
    x = torch.randn(3, requires_grad=True)
    check_breaks(_decorated_called_twice_in_no_grad, lambda: (x,), graphs=1, breaks=0)


def _raises_inside(x):
    @torch.no_grad()
    def failing(y):
        raise ValueError("inside")

    try:
        failing(x)
    except ValueError:
        return x * 2, torch.is_grad_enabled()
    return x, False


def test_context_exits_when_the_function_raises():
    x = torch.randn(3, requires_grad=True)
    check_breaks(_raises_inside, lambda: (x,), graphs=1, breaks=0)
