"""Things the tracer cannot put in a graph (printing, reading tensor data, branching on it, unknown
C functions, raising) still give eager's results. How they run (fallback or graph break) is not
asserted here; only that nothing is wrong and nothing crashes."""

from __future__ import annotations

import warnings
import zlib

import pytest
import torch
from difftest import assert_same, compile_counted


def run_both(fn, *args, calls=2):
    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(calls):
            assert_same(compiled(*args), fn(*args))


def test_print_gives_same_result(capsys):
    def fn(x):
        y = x + 1
        print("value", 3)
        return y * 2

    compiled, _ = compile_counted(fn)
    x = torch.randn(3)
    capsys.readouterr()
    for _ in range(2):  # each run's output captured on its own: the compiled run must print
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = compiled(x)
        assert capsys.readouterr().out == "value 3\n"
        expected = fn(x)
        assert capsys.readouterr().out == "value 3\n"
        assert_same(actual, expected)


def test_item_gives_same_result():
    def fn(x):
        return x * x.sum().item()

    run_both(fn, torch.randn(3))


def test_data_dependent_branch_both_ways():
    def fn(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    run_both(fn, torch.ones(3))
    run_both(fn, -torch.ones(3))


def test_unsupported_c_function():
    def fn(x):
        return x * (zlib.crc32(b"abc") % 7) + len(str(x.shape))

    run_both(fn, torch.randn(4))


def test_raise_propagates_same_exception():
    def fn(x, n):
        if n > 2:
            raise ValueError("too big")
        return x + n

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="too big"):
            compiled(torch.randn(2), 3)
        torch.testing.assert_close(compiled(torch.ones(2), 1), torch.ones(2) + 1)


def test_failing_assert_raises_assertion_error():
    def fn(x):
        assert x.dim() == 2, "need a matrix"
        return x

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            compiled(torch.randn(3))


def test_try_except_runs_handler():
    def fn(x, d):
        try:
            return x * d["missing"]
        except KeyError:
            return x - 1

    run_both(fn, torch.randn(2), {"k": 1})


def test_tensor_in_bool_context_with_and():
    def fn(x, y):
        return x if (x.sum() > 0 and y.sum() > 0) else y

    run_both(fn, torch.ones(2), torch.ones(2))


def test_unbounded_generator_with_islice():
    def counter():
        n = 0
        while True:
            yield n
            n += 1

    def fn(x):
        for _, c in zip(range(3), counter(), strict=False):
            x = x + c
        return x

    run_both(fn, torch.randn(2))


def test_mutating_input_list_is_replayed():
    def fn(xs, x):
        xs.append(1)
        return x + len(xs)

    compiled, _ = compile_counted(fn)
    a, b = [0], [0]
    x = torch.randn(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(a, x)
    assert_same(out, fn(b, x))
    assert a == b == [0, 1]


def test_dict_changed_size_during_iteration_raises():
    def fn(x):
        d = {"a": 1}
        for k in d:
            d[k + "x"] = 2
        return x

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="changed size"):
            compiled(torch.randn(2))
