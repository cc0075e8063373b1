"""``__context__``, ``__cause__`` and ``__suppress_context__`` of exceptions raised and caught in
the trace, set as CPython sets them: at a raise (a ``raise`` statement, or an error a builtin
raises) while an exception is handled, the new one's context is the handled one (in a called
function too), a link back to the new one in that chain is cut; ``raise ... from ...`` sets the
cause and suppresses the context; a bare ``raise`` changes nothing. Compared with eager and with
torch.compile's break count."""

from __future__ import annotations

import pytest
import torch

import bytegraph
from tests.difftest import check
from tests.dynamo_baseline import assert_no_more_breaks


def implicit_context(t):
    try:
        try:
            raise ValueError("a")
        except ValueError:
            raise KeyError("b")  # noqa: B904 (the implicit context is what is tested)
    except KeyError as e:
        ctx = e.__context__
        return t + (ctx is not None), type(ctx), ctx.args, e.__cause__, e.__suppress_context__


def explicit_cause(t):
    handled = []
    try:
        try:
            raise ValueError("a")
        except ValueError as v:
            handled.append(v)
            raise KeyError("b") from TypeError("c")
    except KeyError as e:
        return (
            t + 1,
            type(e.__cause__),
            e.__cause__.args,
            e.__context__ is handled[0],
            e.__suppress_context__,
            e.args,
        )


def cause_none(t):
    try:
        try:
            raise ValueError("a")
        except ValueError:
            raise KeyError("b") from None
    except KeyError as e:
        return t + 1, e.__cause__, type(e.__context__), e.__suppress_context__


def no_context(t):
    try:
        raise KeyError("b")
    except KeyError as e:
        return t + 1, e.__context__, e.__cause__, e.__suppress_context__


def builtin_error_in_handler(t):
    try:
        try:
            raise ValueError("a")
        except ValueError:
            return {}["missing"]
    except KeyError as e:
        return t + 1, type(e.__context__), e.__context__.args, e.args


def _raise_inside():
    raise IndexError("in a callee")


def context_in_callee(t):
    try:
        try:
            raise ValueError("a")
        except ValueError:
            _raise_inside()
    except IndexError as e:
        return t + 1, type(e.__context__), e.args


def chain_of_three(t):
    try:
        try:
            try:
                raise ValueError("a")
            except ValueError:
                raise TypeError("b")  # noqa: B904
        except TypeError:
            raise KeyError("c")  # noqa: B904
    except KeyError as e:
        mid = e.__context__
        return t + 1, type(mid), type(mid.__context__), mid.__context__.__context__


def cycle_cut(t):
    try:
        raise ValueError("a")
    except ValueError as a:
        try:
            raise KeyError("b")
        except KeyError as b:
            try:
                raise a  # raised while b is handled: a's context is b, b's link to a is cut
            except ValueError as again:
                return t + 1, again is a, a.__context__ is b, b.__context__


def bare_reraise_keeps_context(t):
    try:
        try:
            try:
                raise ValueError("a")
            except ValueError:
                raise KeyError("b")  # noqa: B904
        except KeyError:
            raise
    except KeyError as e:
        return t + 1, type(e.__context__), e.__context__.args


def traceback_set_by_raise(t):
    made = ValueError("not raised")
    try:
        raise KeyError("b")
    except KeyError as e:
        raised = e.__traceback__ is not None
    try:
        {}["k"]
    except KeyError as e:
        builtin = e.__traceback__ is None
    return t + 1, made.__traceback__ is None, raised, builtin


CASES = [
    traceback_set_by_raise,
    implicit_context,
    explicit_cause,
    cause_none,
    no_context,
    builtin_error_in_handler,
    context_in_callee,
    chain_of_three,
    cycle_cut,
    bare_reraise_keeps_context,
]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_exception_context(fn):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(2))


def escaping(t):
    try:
        try:
            raise ValueError("a")
        except ValueError:
            raise KeyError("b") from None
    except KeyError as e:
        return t + 1, e


def test_escaping_exception_keeps_its_context():
    """An exception given back to Python carries the context and the suppression it was given."""
    bytegraph.reset()
    _, got = bytegraph.compile(escaping)(torch.ones(2))
    _, want = escaping(torch.ones(2))
    assert type(got) is type(want) and got.args == want.args
    assert type(got.__context__) is type(want.__context__)
    assert got.__context__.args == want.__context__.args
    assert got.__suppress_context__ is want.__suppress_context__ is True
    assert got.__cause__ is want.__cause__ is None


def traceback_escaping(t):
    try:
        raise KeyError("b")
    except KeyError as e:
        tb = e.__traceback__
    return t + 1, type(tb).__name__, tb.tb_lineno > 0


def test_traceback_escaping_is_cpythons():
    """A traceback the trace cannot rebuild: the code that needs it runs as CPython runs it."""
    bytegraph.reset()
    got = bytegraph.compile(traceback_escaping)(torch.ones(2))
    want = traceback_escaping(torch.ones(2))
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:]
