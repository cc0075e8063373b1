"""``OrderedDict.move_to_end`` and ``popitem`` at either end (``last=False`` included), on a dict
passed in (the caller sees the new order) and on one made in the call, compared with eager."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import check, check_breaks


def _move_to_front_then_pop_front(x, od):
    od.move_to_end("c", last=False)
    key, value = od.popitem(last=False)
    return x * value, key, list(od)


def _move_to_back_then_pop_back(x, od):
    od.move_to_end("a")
    key, value = od.popitem()
    return x * value, key, list(od)


def _both_ends_by_keyword(x, od):
    od.move_to_end(key="b", last=False)
    od.move_to_end("a", last=True)
    first = od.popitem(last=False)
    last = od.popitem(True)
    return x + first[1] + last[1], first[0], last[0], list(od.items())


def _made_in_the_call(x):
    od = collections.OrderedDict([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    od.move_to_end("d", last=False)
    od.move_to_end("a")
    front = od.popitem(last=False)
    back = od.popitem(last=True)
    return x * front[1] - back[1], od, front, back


def _ordered(**values):
    return collections.OrderedDict((k, torch.tensor(float(v))) for k, v in values.items())


@pytest.mark.parametrize(
    "fn",
    [_move_to_front_then_pop_front, _move_to_back_then_pop_back, _both_ends_by_keyword],
    ids=lambda f: f.__name__.strip("_"),
)
def test_ends_of_an_ordered_dict_passed_in(fn):
    check_breaks(fn, lambda: (torch.randn(3), _ordered(a=1, b=2, c=3, d=4)), graphs=1, breaks=0)


def test_ends_of_an_ordered_dict_made_in_the_call():
    check(_made_in_the_call, torch.randn(3))


def test_a_missing_key_and_an_empty_dict_raise_as_eager():
    def fn(x, od, key):
        try:
            od.move_to_end(key, last=False)
        except KeyError as e:
            return x * 2, "missing", str(e)
        while od:
            od.popitem(last=False)
        try:
            od.popitem(last=False)
        except KeyError as e:
            return x + 1, "empty", str(e)
        return x, "unreachable", ""

    check(fn, torch.randn(3), _ordered(a=1), "zz")
    # popitem() on the emptied dict raises in the tracer as a break (python_error), not as an
    # exception traced into the handler, unlike move_to_end's KeyError: the rest runs in Python
    check_breaks(fn, lambda: (torch.randn(3), _ordered(a=1, b=2), "b"), graphs=0, breaks=1)
