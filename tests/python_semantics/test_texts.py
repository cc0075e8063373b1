"""Texts CPython writes, traced: ``repr``/``str`` of a ``collections.deque`` and of objects of
deque subclasses (``deque([...], maxlen=n)``, the class's name, ``[...]`` for a deque inside
itself), ``fmt % args`` where ``args`` is not a tuple display at the ``%`` (a variable, a call's
result, ``tuple(...)``, a dict for ``%(name)s``, one value), and ``ascii()`` (of tensors, of
strings with non-ASCII characters, of containers, and ``%a`` / ``{!a}``). A tensor's text is made
after the graph (``TextVariable``). Results compared with eager's (the texts, and CPython's
errors), break counts beside torch.compile's.
"""

# the ``%`` and ``str.format`` forms are the behaviour under test
# ruff: noqa: UP031, UP032, F507

from __future__ import annotations

import collections

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


class Queue(collections.deque):
    pass


class Obj:
    def __repr__(self):
        return "Obj(é)"


class Mapping:
    def __getitem__(self, key):
        return key


class Unicode:
    def __init__(self, t):
        self.t = t

    def __repr__(self):
        return f"Ü({self.t})"


# -- repr and str of a deque -----------------------------------------------------------------------
def _deque_of_constants(x):
    d = collections.deque([1, "a", (2, 3)])
    d.append(None)
    return x + 1, repr(d), str(collections.deque([1, 2], maxlen=3)), repr(collections.deque())


def _deque_of_tensors(x):
    d = collections.deque([x + 1, [1, {2: x}]], maxlen=4)
    return x * 2, repr(d), str(d), f"{d}"


def _deque_subclass(x):
    q = Queue([1, 2], maxlen=5)
    q.append(x.sum())
    return x - 1, repr(q), str(Queue()), repr(Queue([x], 0))


def _deque_inside_itself(x):
    d = collections.deque([1])
    d.append(d)
    q = Queue(["q"])
    q.append([q])
    return x + 1, repr(d), repr(q), repr([d])


DEQUES = [_deque_of_constants, _deque_of_tensors, _deque_subclass, _deque_inside_itself]


@pytest.mark.parametrize("fn", DEQUES)
def test_deque_repr(fn):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0, fn, torch.randn(3), baseline_missing="torch.compile runs the texts in Python"
    )


# -- ``%`` with a tuple that is not a display ------------------------------------------------------
def _helper(x):
    return 3, x


def _tuple_in_a_variable(x):
    args = (x.sum(), "a")
    held = (x,)
    return x + 1, "%s %s" % args, "%r!" % held


def _tuple_from_a_call(x):
    return x + 1, "%d: %s" % _helper(x), "%.1f %s" % tuple([2.5, x.shape])


def _dict_by_name(x):
    named = {"a": x, "b": 4, "c": Obj()}
    return x + 1, "%(a)s-%(b)d-%(c)r %%" % named, "%s" % {"k": x}


def _one_value(x):
    text = repr(x)  # a string made after the graph
    return x + 1, "%s" % x, "%r" % [x, Obj()], "hello" % Mapping(), "%s" % Obj(), "<%s>" % text


def _in_place(x):
    text = "v=%s"
    text %= (x,)
    return x + 1, text


def _errors(x):
    found = []
    errors = [("%s", (x, 1)), ("%s %s", (x,)), ("%(a)s", {"b": x}), ("hi", Obj()), ("hi", str(x))]
    for fmt, args in errors:
        try:
            fmt % args
        except (TypeError, KeyError) as e:
            found.append(f"{type(e).__name__}: {e}")
    return x + 1, found


def _ascii_conversion(x):
    pair = (x, Unicode(x.sum()))
    return x + 1, "%a|%a" % pair, "{!a}".format(Unicode(x))


PERCENT = [
    _tuple_in_a_variable,
    _tuple_from_a_call,
    _dict_by_name,
    _one_value,
    _in_place,
    _errors,
    _ascii_conversion,
]


@pytest.mark.parametrize("fn", PERCENT)
def test_percent_format(fn):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0, fn, torch.randn(3), baseline_missing="torch.compile runs the formatting in Python"
    )


def _number_of_a_tensor(x):
    args = (x.sum(), 2)
    return x + 1, "%.3f and %d" % args


def _padded_text_of_a_tensor(x):
    args = (x,)
    return x + 1, "[%40s]" % args


@pytest.mark.parametrize("fn", [_number_of_a_tensor, _padded_text_of_a_tensor])
def test_percent_format_reading_a_value_breaks(fn):
    # a number read from a tensor, or a text padded to a width, is not known in the trace: the
    # graph breaks before the ``%``, which CPython runs
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=1)


# -- ascii() ---------------------------------------------------------------------------------------
def _ascii_of_values(x):
    return (
        x + 1,
        ascii(x),
        ascii(x.sum()),
        ascii("héllo \U0001f600"),
        ascii(["é", 1]),
        ascii({"ü": x.shape}),
        ascii([x, "ß"]),
        ascii(Unicode(x)),
        ascii(Unicode("é")),
    )


def test_ascii():
    check_breaks(_ascii_of_values, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _ascii_of_values, torch.randn(3))
