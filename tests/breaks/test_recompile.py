"""Functions with graph breaks recompiled for other shapes and constant arguments, and functions
with two and three breaks (breaks inside resume functions)."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks, compile_counted

import bytegraph


def fn_print(x, n):
    y = x * n
    print("n =", n)
    return y + n


def test_recompile_for_new_shape():
    compiled, counter = compile_counted(fn_print)
    check_breaks(
        fn_print,
        lambda: (torch.randn(3), 2),
        graphs=2,
        breaks=1,
        compiled=compiled,
        counter=counter,
    )
    # a new shape: the function and its resume function compile again (or go dynamic)
    check_breaks(
        fn_print,
        lambda: (torch.randn(5), 2),
        graphs=4,
        breaks=1,
        compiled=compiled,
        counter=counter,
    )
    check_breaks(
        fn_print,
        lambda: (torch.randn(3), 2),
        graphs=4,
        breaks=0,
        compiled=compiled,
        counter=counter,
    )


def test_recompile_for_new_constant():
    compiled, counter = compile_counted(fn_print)
    check_breaks(
        fn_print,
        lambda: (torch.randn(3), 2),
        graphs=2,
        breaks=1,
        compiled=compiled,
        counter=counter,
    )
    check_breaks(
        fn_print,
        lambda: (torch.randn(3), 3),
        graphs=4,
        breaks=1,
        compiled=compiled,
        counter=counter,
    )


@pytest.mark.parametrize("flag", [False, True])
def test_constant_flag_moves_the_break(flag):
    def fn(x, flag):
        y = x + 1
        if flag:
            bytegraph.graph_break()
        y = y * 2
        if not flag:
            bytegraph.graph_break()
        return y - 1

    check_breaks(fn, lambda: (torch.randn(3), flag), graphs=2, breaks=1)


def test_two_breaks_each_resume_compiled():
    def fn(x):
        a = x.sin()
        print("1")
        b = a.cos()
        print("2")
        return a + b

    compiled, _, report = check_breaks(fn, lambda: (torch.randn(3),), graphs=3, breaks=2)
    functions = [r.function for r in report.break_reasons]
    assert functions[0] == fn.__qualname__ and functions[1].startswith("__resume_at_")
    assert len(bytegraph.state_of(compiled).resumes) == 2


def test_three_breaks_mixed_kinds():
    def fn(x):
        a = x * 2
        print("p")
        s = a.sum().tolist()
        b = a + s
        bytegraph.graph_break()
        return b.relu()

    check_breaks(fn, lambda: (torch.randn(3),), calls=1, graphs=4, breaks=3)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_breaks_per_loop_count(n):
    def fn(x, n):
        for _ in range(n):
            x = x + 1
            bytegraph.graph_break()
        return x

    # the function, then one resume variant for every iteration (the counter symbolic from the
    # first), which breaks again when it continues the loop
    check_breaks(fn, lambda: (torch.randn(2), n), graphs=min(n, 2), breaks=min(n, 2))


@pytest.mark.parametrize("shape", [(2,), (3, 4), (1, 2, 3)])
def test_break_for_shapes(shape):
    def fn(x):
        y = x.exp()
        print(y.shape)
        return y.log()

    check_breaks(fn, lambda: (torch.rand(*shape) + 0.1,), graphs=2, breaks=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_break_for_dtypes(dtype):
    def fn(x):
        y = x * 2
        print(y.dtype)
        return y + 1

    check_breaks(fn, lambda: (torch.randn(3, dtype=dtype),), graphs=2, breaks=1)
