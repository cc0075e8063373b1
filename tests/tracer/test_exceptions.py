"""Exceptions raised and caught inside the trace (``tracer/opcodes/exceptions.py``)."""

from __future__ import annotations

import collections
import contextlib
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


def test_exception_leaving_a_user_context_is_traced():
    class Ctx:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True  # suppresses: the code after the block runs

    def fn(x):
        y = x * 2
        try:
            with Ctx():
                raise KeyError("k")
        except KeyError:
            return y + 1
        return y - 1

    check_breaks(fn, lambda: (torch.randn(2),), graphs=1, breaks=0)


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


# -- exceptions leaving a with-block whose __exit__ may swallow them ------------------------------
class Exit:
    """A context whose ``__exit__`` records what CPython gives it (the type, the exception's args,
    whether a traceback came), keeps the exception, and returns ``answer(type)``."""

    def __init__(self, log, answer):
        self.log, self.answer, self.value = log, answer, None

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, typ, value, tb):
        self.value = value
        self.log.append((typ and typ.__name__, value is not None and value.args, tb is not None))
        return self.answer(typ)


def _lookup(d, key):
    return d[key]


#: The contexts (built in the function; ``log`` its list): whether each swallows is its own call.
CONTEXTS = {
    "suppress_key": "contextlib.suppress(KeyError)",
    "suppress_zero": "contextlib.suppress(ZeroDivisionError)",
    "suppress_many": "contextlib.suppress(LookupError, ArithmeticError)",
    "nullcontext": "contextlib.nullcontext()",
    "swallow_value_error": "Exit(log, lambda t: t is not None and issubclass(t, ValueError))",
    "returns_none": "Exit(log, lambda t: None)",
    "returns_zero": "Exit(log, lambda t: 0)",
    "returns_text": "Exit(log, lambda t: 'yes')",
}

#: What the block raises: a raise statement, a builtin's error, an error raised in a callee, none.
RAISES = {
    "raise_value_error": "raise err",
    "raise_key_error": "raise KeyError('k')",
    "missing_key": "{}['a']",
    "divide_by_zero": "1 / n",
    "in_a_callee": "_lookup({}, 'b')",
    "nothing": "pass",
}

WITH_SOURCE = """
def f(x, log):
    err, n = ValueError("v"), 0
    y = x + 1
    try:
        with {ctx} as c:
            y = y * 2
            {raise_it}
            y = y + 100
        y = y - 1
        log.append("after")
    except Exception as e:
        log.append(("caught", type(e).__name__, e.args, e is err))
        y = y + 3
    log.append(getattr(c, "value", None) is err)
    return y
"""


@pytest.mark.parametrize("raise_it", sorted(RAISES))
@pytest.mark.parametrize("ctx", sorted(CONTEXTS))
def test_an_exception_leaving_a_with_block_as_eager(ctx, raise_it):
    """Swallowed or let through as CPython decides (``__exit__`` traced, its arguments CPython's,
    the exception the same object), the code after the block or the enclosing handler running,
    each exit's effects once: one graph, no break."""
    namespace = {"contextlib": contextlib, "Exit": Exit, "_lookup": _lookup}
    exec(WITH_SOURCE.format(ctx=CONTEXTS[ctx], raise_it=RAISES[raise_it]), namespace)
    check_breaks(namespace["f"], lambda: (torch.randn(2), []), graphs=1, breaks=0)


def test_an_exception_an_exit_lets_through_and_nothing_catches_breaks():
    """CPython raises it (the exit has run once, its effects seen); the block of a user context
    runs in Python from its ``with``."""

    def fn(x, log):
        y = x + 1
        with Exit(log, lambda t: False):
            y = y * 2
            raise KeyError("k")
        return y

    check_breaks(fn, lambda: (torch.randn(2), []), graphs=1, breaks=1)


def test_an_exit_after_an_inner_block_swallowed_the_exception_sees_none():
    def fn(x, log):
        with Exit(log, lambda t: False):
            with contextlib.suppress(KeyError):
                log.append(_lookup({}, "k"))
            y = x * 2
        return y

    check_breaks(fn, lambda: (torch.randn(2), []), graphs=1, breaks=0)


def test_an_exit_that_breaks_the_graph_breaks_at_the_raise():
    class Printing:
        def __enter__(self):
            return self

        def __exit__(self, typ, value, tb):
            print("exit", typ)
            return True

    def fn(x):
        y = x + 1
        with Printing():
            raise KeyError("k")
        return y * 2

    check_breaks(fn, randn(2), graphs=1, breaks=1)


def suppress_missing_key(x):
    d = {}
    with contextlib.suppress(KeyError):
        d["a"]
    return x + 1


def suppress_division(x):
    y = x + 1
    with contextlib.suppress(ZeroDivisionError):
        1 / 0  # noqa: B018 (the division raises)
    return y * 2


class SwallowValueError:
    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        return typ is not None and issubclass(typ, ValueError)


def user_exit_swallows(x):
    with SwallowValueError():
        raise ValueError("x")
    return x + 1


def user_exit_lets_through(x):
    try:
        with SwallowValueError():
            raise KeyError("k")
    except KeyError:
        x = x + 1
    return x * 2


def nullcontext_lets_through(x):
    try:
        with contextlib.nullcontext():
            raise KeyError("k")
    except KeyError:
        x = x + 1
    return x * 2


@pytest.mark.parametrize(
    "fn",
    [
        suppress_missing_key,
        suppress_division,
        user_exit_swallows,
        user_exit_lets_through,
        nullcontext_lets_through,
    ],
    ids=lambda fn: fn.__name__,
)
def test_with_exits_break_no_more_than_torch_compile(fn):
    check_breaks(fn, randn(2), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(2))


def test_an_input_context_swallowing_the_exception_runs_the_code_after_the_block():
    """The context comes from the caller (its exit could run after a break): its ``__exit__``
    returning True is traced, so the code after the block runs, as in eager."""

    def fn(x, ctx):
        y = x + 1
        with ctx:
            raise ValueError("v")
        return y + 1, ctx.log

    check_breaks(fn, lambda: (torch.randn(2), Exit([], lambda t: True)), graphs=1, breaks=0)


class RaisingExit:
    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        raise RuntimeError("in exit")


def test_an_exception_raised_by_an_exit_breaks_at_the_raise():
    """CPython's RuntimeError from ``__exit__`` (the KeyError its context) reaches the enclosing
    handler: the block runs in Python, no fallback."""

    def fn(x, log):
        y = x + 1
        try:
            with RaisingExit():
                raise KeyError("k")
        except RuntimeError as e:
            log.append((str(e), type(e.__context__).__name__))
        return y

    check_breaks(fn, lambda: (torch.randn(2), []), graphs=1, breaks=1)
