"""Exceptions raised and caught inside the trace (``tracer/opcodes/exceptions.py``)."""

from __future__ import annotations

import collections
import warnings

import pytest
import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


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


# -- the texts of exceptions carrying objects ------------------------------------------------
class _Key:
    def __repr__(self):
        return "_Key()"


class _Plain:  # ``object.__repr__``: its address, read at trace time from the object
    pass


class _Failure(Exception):
    pass


_MODE = ["a"]


class _Described(Exception):
    def __str__(self):
        return f"described-{_MODE[0]}-{self.args[0]!r}"


_KEY, _PLAIN = _Key(), _Plain()


def missing_object_key(x):
    try:
        {1: x}[_KEY]
    except KeyError as e:
        return x + 1, str(e), repr(e), f"{e}|{e!r}", e.args[0] is _KEY


def missing_plain_object_key(x):
    try:
        {}[_PLAIN]
    except KeyError as e:
        return x + 1, str(e) == repr(_PLAIN), repr(e) == f"KeyError({_PLAIN!r})"


def missing_tuple_key(x):
    try:
        {}[(1, _KEY)]
    except KeyError as e:
        return x + 1, str(e), repr(e), e.args


def popped_and_removed_keys(x):
    texts = []
    try:
        {}.pop(_KEY)
    except KeyError as e:
        texts.append(str(e))
    try:
        set().remove(_KEY)
    except KeyError as e:
        texts.append(repr(e))
    return x + 1, texts


def raised_with_objects(x):
    texts = []
    for exc in (
        ValueError(_KEY, 2, "s"),
        _Failure(_KEY),
        KeyError(_KEY, 1),
        KeyError(),
        TypeError(),
    ):
        try:
            raise exc
        except Exception as e:
            formatted = "%s" % e, "{!r}".format(e)  # noqa: UP031, UP032 (both paths tested)
            texts.append((str(e), repr(e), *formatted))
    return x + 1, texts


def not_in_sequences(x):
    texts = []
    for seq in (collections.deque([1]), _Items([1]), (1,), [1]):
        for value in (2, _KEY):
            try:
                seq.index(value)
            except ValueError as e:
                texts.append(str(e))
    return x + 1, texts


class _Items(list):
    pass


#: where torch.compile compiles no graph, there is no count of its to compare with
_IN_PYTHON = "torch.compile runs the call in Python (2.11 all of these, later ones some)"


@pytest.mark.parametrize(
    "fn",
    [
        missing_object_key,
        missing_plain_object_key,
        missing_tuple_key,
        popped_and_removed_keys,
        raised_with_objects,
        not_in_sequences,
    ],
    ids=lambda f: f.__name__,
)
def test_texts_of_exceptions_carrying_objects(fn):
    """``str``/``repr``/``args`` of an exception holding objects (a missing object key's
    KeyError, ``list.index``'s ValueError, one raised with objects) are CPython's, made in the
    trace from the objects' texts: no break (they made the call run in Python)."""
    check_breaks(fn, randn(2), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(2), baseline_missing=_IN_PYTHON)


def described(x):
    try:
        raise _Described(_KEY)
    except _Described as e:
        return x + 1, str(e)


def test_a_str_written_by_the_exception_class_runs_at_each_call():
    """A ``__str__`` the class writes in Python is traced, not run once at trace time: what it
    reads is guarded, so a changed global gives the text eager gives."""
    compiled, _ = compile_counted(described)
    try:
        for mode in ("a", "b"):
            _MODE[0] = mode
            assert (
                compiled(torch.ones(2))[1]
                == described(torch.ones(2))[1]
                == f"described-{mode}-_Key()"
            )
    finally:
        _MODE[0] = "a"
    check_breaks(described, randn(2), graphs=1, breaks=0)
