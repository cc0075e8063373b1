"""An exception raised where the trace breaks, inside a ``with`` block whose ``__exit__`` the trace
cannot follow (it prints): CPython calls ``__exit__``, and where that returns a true value the
exception is swallowed and the code after the block runs. The rewritten code re-raised whatever
``__exit__`` returned, so the compiled call raised where eager returned. Results, printed output
and exceptions are compared with eager, over two calls.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch
from difftest import assert_same

import bytegraph


class Swallows:
    """Swallows KeyError, lets any other exception go on; prints on the way out (no trace)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        print("exit", kind.__name__ if kind else None)
        return kind is not None and issubclass(kind, KeyError)


class Passes:
    """Never swallows (every return gives None); prints on the way out."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        print("exit", kind.__name__ if kind else None)


class SwallowsByAnOr:
    """Swallows every exception: ``return self.swallow or False`` ends in a ``LOAD_CONST False``
    that the true value jumps over to the same ``RETURN_VALUE``. Prints on the way out."""

    swallow = True

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        print("exit", kind.__name__ if kind else None)
        return self.swallow or False


class TracedSwallowsByAnOr:
    """``SwallowsByAnOr`` without the print: its exit is traced where the exception is raised."""

    swallow = True

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return self.swallow or False


def raises_in_block(x, ctx):
    y = x + 1
    with ctx:
        y = y * 2
        raise KeyError("k")
    return y + 3


def other_error_in_block(x, ctx):
    y = x + 1
    with ctx:
        y = y * 2
        raise ValueError("v")
    return y + 3


def missing_key_in_block(x, ctx):
    y = x + 1
    with ctx:
        y = y * 2
        print("in block")
        y = y + {}["a"]
    return y + 3


def swallowed_in_a_loop(x, ctx):
    y = x + 1
    for i in range(3):
        with ctx:
            y = y * 2
            if i == 1:
                raise KeyError(i)
            y = y + i
    return y + 3


def _raises_after_printing(y):
    y = y * 2
    print("callee")
    raise KeyError("k")


def raised_by_a_callee(x, ctx):
    y = x + 1
    with ctx:
        y = _raises_after_printing(y)
    return y - 1


def _run(fn, x, ctx):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = fn(x, ctx)
        except Exception as e:  # noqa: BLE001 (compared with eager's)
            result = (type(e), e.args)
    return result, out.getvalue()


@pytest.mark.parametrize(
    "ctx_cls",
    [Swallows, Passes, SwallowsByAnOr, TracedSwallowsByAnOr],
    ids=lambda c: c.__name__,
)
@pytest.mark.parametrize(
    "fn",
    [
        raises_in_block,
        other_error_in_block,
        missing_key_in_block,
        swallowed_in_a_loop,
        raised_by_a_callee,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_exit_swallowing_the_exception_goes_on_after_its_block(fn, ctx_cls, backend):
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        x = torch.randn(3)
        expected = _run(fn, x, ctx_cls())
        actual = _run(compiled, x, ctx_cls())
        assert actual[1] == expected[1]  # what ran, in order: the exit once, the code after it
        assert_same(actual[0], expected[0])
