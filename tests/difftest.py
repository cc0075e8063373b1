"""Differential-test helpers: compile with a counting backend and compare with eager.

``compiled, counter = compile_counted(fn)`` compiles with a ``CompileCounter``; ``assert_same(a, b)``
compares nested results (tensors with ``torch.testing.assert_close``, everything else with ``==``);
``check(fn, *args, graphs=1)`` does both and asserts the graph count and that nothing fell back.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

import bytegraph
from bytegraph.backends.debug import CompileCounter


def compile_counted(fn, **kwargs):
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter, **kwargs), counter


def assert_same(actual: Any, expected: Any) -> None:
    assert type(actual) is type(expected), f"{type(actual)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, equal_nan=True)
        assert actual.requires_grad == expected.requires_grad
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    else:
        assert actual == expected


def check(fn, *args, graphs: int = 1, calls: int = 2, **kwargs):
    """Compile ``fn`` with a counting backend, call it ``calls`` times with ``args`` and compare each result
    with eager; assert exactly ``graphs`` graphs were compiled and no fallback to Python happened."""
    compiled, counter = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warns: turn it into a failure
        for _ in range(calls):
            assert_same(compiled(*args, **kwargs), fn(*args, **kwargs))
    assert counter.frame_count == graphs, f"expected {graphs} graphs, got {counter.frame_count}"
    return compiled, counter
