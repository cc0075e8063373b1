"""Breaks inside try blocks and non-grad with blocks: by design the rest of the function continues
in plain Python (exact exception handling), and must stay correct."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from difftest import check_breaks

import bytegraph


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def test_break_in_try_body():
    def fn(x):
        y = x + 1
        try:
            print("in try")
            y = y * 2
        finally:
            y = y - 1
        return y

    check_breaks(fn, randn(3), graphs=1, breaks=1)


def test_break_raises_caught_by_except():
    def fn(x):
        y = x.sin()
        try:
            y.numpy() + "bad"
        except TypeError:
            y = y * 10
        return y

    check_breaks(fn, randn(3), graphs=1, breaks=1)


@pytest.mark.parametrize("raise_it", [False, True])
def test_break_then_raise_in_try(raise_it):
    def fn(x, raise_it):
        y = x * 2
        try:
            bytegraph.graph_break()
            if raise_it:
                raise KeyError("k")
            y = y + 1
        except KeyError:
            y = y - 1
        return y

    check_breaks(fn, lambda: (torch.randn(3), raise_it), graphs=1, breaks=1)


def test_break_in_user_context_manager():
    events = []

    @contextlib.contextmanager
    def tracking():
        events.append("enter")
        yield
        events.append("exit")

    def fn(x):
        y = x + 1
        with tracking():
            print("inside")
            y = y * 2
        return y

    # the generator is traced up to its yield, then print breaks inside the block: a suspended
    # generator cannot be rebuilt, so the break is taken at the ``with`` (rolled back), and the
    # block and the rest run in plain Python; the second call hits the cache
    check_breaks(fn, randn(3), graphs=1, breaks=1, setup=events.clear, observe=lambda: list(events))


def test_break_after_try_block_compiles():
    def fn(x):
        try:
            y = x + 1
        except Exception:
            y = x
        print("after try")
        return y * 2

    check_breaks(fn, randn(3), graphs=2, breaks=1)


def test_raise_inside_no_grad_after_a_recompile_restores_grad_mode():
    """A resume function that starts inside a ``with`` block enters the block's handler region with
    the depth the original code had (read from its exception table), so it compiles and unwinds
    right."""

    def fn(x, boom):
        with torch.no_grad():
            y = x * 2
            if boom:
                raise ValueError("boom")
        return y

    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to Python
        torch.testing.assert_close(compiled(x, False), fn(x, False))
        with pytest.raises(ValueError, match="boom"):
            compiled(x, True)
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("sign", [1.0, -1.0])
@bytegraph.config.patch(speculate=False)  # the break at the branch is under test
def test_data_dependent_branch_in_try_takes_the_right_branch(sign):
    """The resume function starts at the jump itself (inside a try block); on 3.13 it receives the
    tensor and converts it as ``TO_BOOL`` did (a jump on a tensor would not test its truth)."""

    def fn(x, d):
        y = x * 2
        try:
            if y.sum() > 0:
                d["branch"] = "then"
                y = y + 1
            else:
                d["branch"] = "else"
                y = y - 1
        finally:
            y = y * 3
        return y

    check_breaks(fn, lambda: (torch.ones(3) * sign, {}), graphs=1, breaks=1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_not_of_tensor_in_try(sign):
    def fn(x):
        y = x + 1
        try:
            flag = not (y > 0).all()
            y = y * 2
        finally:
            y = y - 1
        return y, flag

    check_breaks(fn, lambda: (torch.ones(3) * sign,), graphs=1, breaks=1)
