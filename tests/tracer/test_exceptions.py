"""Exceptions raised and caught inside the trace (``tracer/opcodes/exceptions.py``)."""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import check_breaks, compile_counted


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def test_raise_caught_in_the_same_function_is_traced():
    def fn(x):
        try:
            raise ValueError("bad", 3)
        except ValueError as e:
            return x * e.args[1], str(e)

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_builtin_error_caught_by_the_caller_of_the_raising_function():
    def lookup(d, key):
        return d[key]

    def fn(x):
        try:
            return lookup({"a": x}, "b")
        except KeyError as e:
            return x - 1, e.args

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_uncaught_exception_breaks_and_cpython_raises_it():
    def fn(x):
        y = x + 1
        if y.shape[0] == 3:
            raise ValueError(f"size {y.shape[0]}")
        return y

    check_breaks(fn, randn(3), graphs=1, breaks=1)


def test_finally_runs_then_the_exception_is_caught_outside():
    def fn(x):
        log = []
        try:
            try:
                [][0]
            finally:
                log.append("finally")
        except IndexError:
            log.append("caught")
        return x + len(log), log

    check_breaks(fn, randn(2), graphs=1, breaks=0)


def test_unmatched_clause_passes_the_exception_on():
    def fn(x):
        try:
            try:
                {}["k"]
            except TypeError:
                return x
        except LookupError:
            return x * 2

    check_breaks(fn, randn(2), graphs=1, breaks=0)


def test_exception_leaving_a_grad_mode_block_is_traced():
    def fn(x):
        try:
            with torch.no_grad():
                y = x * 2
                raise KeyError("k")
        except KeyError:
            return x + 1, y, torch.is_grad_enabled()

    check_breaks(fn, lambda: (torch.randn(2, requires_grad=True),), graphs=1, breaks=0)


def test_exception_leaving_a_user_context_breaks():
    class Ctx:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True  # suppresses: the trace cannot skip what its exit decides

    def fn(x):
        y = x * 2
        try:
            with Ctx():
                raise KeyError("k")
        except KeyError:
            return y + 1
        return y - 1

    check_breaks(fn, lambda: (torch.randn(2),), graphs=1, breaks=1)


def test_graph_break_while_handling_falls_back_to_python():
    def fn(x):
        try:
            raise ValueError("v")
        except ValueError:
            print("handling")
            return x + 1

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 1)
    assert any("while an exception is handled" in str(w.message) for w in caught)


def test_bare_raise_in_handler_reraises_the_handled_exception():
    def fn(x):
        try:
            try:
                raise KeyError("inner")
            except KeyError:
                raise
        except KeyError as e:
            return x + len(e.args[0])

    check_breaks(fn, randn(2), graphs=1, breaks=0)


@pytest.mark.parametrize("n", [0, 1])
def test_exception_message_is_cpythons(n):
    def fn(x, n):
        try:
            return x / [1, 2][n + 5]
        except IndexError as e:
            return x, str(e)

    check_breaks(fn, lambda: (torch.randn(2), n), graphs=0, breaks=0)
