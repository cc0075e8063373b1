"""Graph breaks inside ``with torch.no_grad()`` / ``torch.enable_grad()``: the breaking code sees
the grad mode eager would, results' ``requires_grad`` match, and an exception raised by the breaking
code inside the block still restores grad mode."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks, compile_counted

import bytegraph


def leaf():
    return (torch.randn(3, requires_grad=True),)


def test_print_sees_grad_mode_in_no_grad():
    def fn(x):
        y = x * 2
        with torch.no_grad():
            z = y + 1
            print("inside", torch.is_grad_enabled())
            w = z * 3
        return w + y, torch.is_grad_enabled()

    check_breaks(fn, leaf, graphs=2, breaks=1)


def test_item_in_no_grad():
    def fn(x):
        with torch.no_grad():
            s = (x * 2).sum().item()
        return x * s

    check_breaks(fn, leaf, calls=2, graphs=1, breaks=0)


def test_tolist_in_no_grad():
    def fn(x):
        with torch.no_grad():
            s = (x * 2).sum().tolist()
        return x * s

    check_breaks(fn, leaf, calls=1, graphs=2, breaks=1)


def test_graph_break_in_enable_grad_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            a = x + 1
            with torch.enable_grad():
                b = x * 2
                bytegraph.graph_break()
                c = b * 3
            d = a * c
        return d, c

    # two with blocks around the break: the rest runs in plain Python (known limitation)
    check_breaks(fn, leaf, graphs=1, breaks=1)


def test_result_requires_grad_after_no_grad_break():
    def fn(x):
        with torch.no_grad():
            y = x * 2
            bytegraph.graph_break()
            z = y + x
        return z, x * z

    check_breaks(fn, leaf, graphs=2, breaks=1)


def test_exception_in_no_grad_restores_grad_mode():
    def fn(x, boom):
        y = x * 2
        with torch.no_grad():
            z = y + 1
            print("inside", torch.is_grad_enabled())
            if boom:
                raise ValueError("boom")
            w = z * 3
        return w + y

    # breaks at print and at the raise (ValueError("boom") is traced): each runs inside the
    # protected region
    check_breaks(fn, lambda: (torch.randn(3, requires_grad=True), True), graphs=1, breaks=2)
    assert torch.is_grad_enabled()


def test_breaking_call_raises_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            y = x + 1
            y.numpy() + "x"  # the breaking call itself raises
        return y

    compiled, _ = compile_counted(fn)
    for f in (fn, compiled):
        with pytest.raises(TypeError):
            f(torch.randn(3))
        assert torch.is_grad_enabled()


def test_breaking_print_raises_inside_no_grad():
    class Bad:
        def __str__(self):
            raise RuntimeError("no str")

    bad = Bad()

    def fn(x):
        with torch.no_grad():
            y = x * 2
            print(bad)
        return y

    check_breaks(fn, leaf, graphs=1, breaks=1)
    assert torch.is_grad_enabled()


def test_grad_mode_seen_by_callee_break():
    def report(t):
        print("grad", torch.is_grad_enabled(), t.requires_grad)
        return t * 2

    def fn(x):
        with torch.no_grad():
            a = report(x + 1)
        b = report(x - 1)
        return a, b

    # the callee breaks once inside the with block and once outside (each reported once, see
    # test_nested)
    check_breaks(fn, leaf, graphs=4, breaks=2)


def test_no_grad_break_in_loop():
    def fn(x):
        out = []
        with torch.no_grad():
            for i in range(2):
                out.append(x * i)
                print(i, torch.is_grad_enabled())
        return out

    # the resume after the last print only leaves no_grad: no graph (the exit runs in Python)
    check_breaks(fn, leaf, graphs=2, breaks=2)


def test_enable_grad_inside_no_grad_compiled_caller():
    def fn(x):
        with torch.no_grad():
            y = x + 1
            print("x")
        return y.requires_grad, (x * 2).requires_grad

    check_breaks(fn, leaf, graphs=2, breaks=1)


def test_called_under_no_grad_by_the_caller():
    def fn(x):
        y = x * 2
        print(torch.is_grad_enabled())
        return y + 1

    compiled, counter = compile_counted(fn)
    with torch.no_grad():
        check_breaks(fn, leaf, graphs=2, breaks=1, compiled=compiled, counter=counter)
    # grad mode is guarded: a second variant (and resume variant) for grad enabled
    check_breaks(fn, leaf, graphs=4, breaks=1, compiled=compiled, counter=counter)
