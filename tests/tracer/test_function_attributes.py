"""Attributes of functions made in the compiled function: ``functools.wraps`` /
``functools.update_wrapper`` applied inside it copy ``__name__``, ``__doc__``, ``__dict__``... onto
the wrapper and set ``__wrapped__``; the wrapper keeps them when it leaves the trace."""

from __future__ import annotations

import functools

import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import dynamo_counts


def _wrapped_inside(x):
    def inner(y):
        """Adds one."""
        return y + 1

    inner.tag = "t"

    @functools.wraps(inner)
    def wrapper(y):
        return inner(y) * 2

    return (
        wrapper(x),
        wrapper.__name__,
        wrapper.__qualname__.rsplit(".", 1)[-1],
        wrapper.__doc__,
        wrapper.__module__,
        wrapper.__wrapped__ is inner,
        wrapper.tag,
        sorted(wrapper.__dict__),
    )


def test_wraps_applied_inside_the_function():
    x = torch.randn(3)
    check_breaks(_wrapped_inside, lambda: (x,), graphs=1, breaks=0)
    assert dynamo_counts(_wrapped_inside, x) == (1, 0)


def _update_wrapper_returned(x):
    def inner(y):
        """Doc."""
        return y + 1

    def wrapper(y):
        return inner(y) * 2

    functools.update_wrapper(wrapper, inner)
    return wrapper, x + 1


def test_a_wrapper_leaving_the_trace_keeps_its_attributes():
    x = torch.randn(3)
    compiled, counter = compile_counted(_update_wrapper_returned)
    for _ in range(2):
        fn, y = compiled(x)
        expected_fn, expected_y = _update_wrapper_returned(x)
        torch.testing.assert_close(y, expected_y)
        torch.testing.assert_close(fn(x), expected_fn(x))
        for name in ("__name__", "__qualname__", "__doc__", "__module__"):
            assert getattr(fn, name) == getattr(expected_fn, name), name
        assert fn.__wrapped__.__name__ == expected_fn.__wrapped__.__name__ == "inner"
    assert counter.frame_count == 1
