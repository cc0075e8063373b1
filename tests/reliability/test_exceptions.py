"""Exceptions raised by user code inside compiled regions propagate as in eager: same type, args and
chaining (``__cause__``/``__context__``), and the traceback shows the user's file and line. Errors
of bytegraph itself are ``InternalError`` (``fullgraph=True``) or a clean fallback, never a user
error."""

from __future__ import annotations

import traceback
import warnings

import pytest
import torch
from bytegraph.tracer import convert
from bytegraph.tracer.exc import InternalError

import bytegraph


def raise_key(x):
    raise KeyError("inner", 1)


def fail_in_graph(x, y):
    return x + y  # shapes do not broadcast


def fail_after_break(x):
    print("break")
    raise ValueError("after break", 3)


def fail_in_callee(x):
    x = x + 1
    return raise_key(x)


def fail_chained(x):
    try:
        return raise_key(x)
    except KeyError as e:
        raise RuntimeError("wrapped") from e


def fail_with_context(x):
    try:
        raise_key(x)
    except KeyError:
        return {}["missing"]


def fail_index(x):
    y = x * 2
    return y[10]


def fail_int_math(x, n):
    y = x + 1
    return y * (1 // n)


CASES = [
    (fail_in_graph, lambda: (torch.ones(2), torch.ones(3))),
    (fail_after_break, lambda: (torch.ones(2),)),
    (fail_in_callee, lambda: (torch.ones(2),)),
    (fail_chained, lambda: (torch.ones(2),)),
    (fail_with_context, lambda: (torch.ones(2),)),
    (fail_index, lambda: (torch.ones(2),)),
    (fail_int_math, lambda: (torch.ones(2), 0)),
]


def _raise(fn, args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError(f"{fn.__name__} did not raise")


def _chain(e):
    out = []
    while e is not None:
        out.append((type(e), e.args, e.__suppress_context__))
        e = e.__cause__ or e.__context__
    return out


def _user_lines(e):
    return [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]


@pytest.mark.parametrize("fn, make_args", CASES, ids=[c[0].__name__ for c in CASES])
def test_user_exception_propagates_like_eager(fn, make_args, capsys):
    compiled = bytegraph.compile(fn)
    expected = _raise(fn, make_args())
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = _raise(compiled, make_args())
        assert _chain(actual) == _chain(expected)
        # the line that raised (innermost user frame) is in the traceback, with the user's file
        assert _user_lines(actual)[-1] == _user_lines(expected)[-1]


def test_internal_error_under_fullgraph_is_internal_error(monkeypatch):
    def broken(*args, **kwargs):
        raise AttributeError("bug inside bytegraph")

    monkeypatch.setattr("bytegraph.tracer.convert.convert_call", broken)
    compiled = bytegraph.compile(lambda x: x + 1, fullgraph=True)
    with pytest.raises(InternalError) as info:
        compiled(torch.ones(2))
    assert isinstance(info.value.__cause__, AttributeError)


def test_internal_error_falls_back_to_eager(monkeypatch):
    def broken(*args, **kwargs):
        raise AttributeError("bug inside bytegraph")

    monkeypatch.setattr("bytegraph.tracer.convert.convert_call", broken)
    compiled = bytegraph.compile(lambda x: x + 1)
    with pytest.warns(UserWarning, match="internal_error"):
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))


def test_internal_error_in_backend_is_not_a_user_error():
    def bad_backend(gm, example_inputs):
        raise AttributeError("backend bug")

    compiled = bytegraph.compile(lambda x: x * 2, backend=bad_backend)
    with pytest.warns(UserWarning, match="running"):
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert convert is not None
