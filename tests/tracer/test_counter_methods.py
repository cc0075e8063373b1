"""The methods and operators of a plain ``collections.Counter``, on one made in the compiled
function and on one passed in: results compared with eager's (values, types, keys in order, zero
and negative counts kept where CPython keeps them), an input Counter changed in place showing the
change after the call, break counts no more than torch.compile's (``assert_no_more_breaks``).
"""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

Counter = collections.Counter


def _subtract(x, c):
    d = Counter("abca")
    r = d.subtract("aab")  # counts may go to zero and below; the result is None
    d.subtract(Counter(a=5, z=1))
    d.subtract(None)
    d.subtract({"b": -3}, q=2)
    return x + 1, r, d


def _subtract_input(x, c):
    r = c.subtract("aabz")
    c.subtract(Counter(b=1), b=2)
    return x * c["a"], r


def _subtract_each_other(x, c):
    d = Counter("abca")
    d.subtract(c)
    c.subtract(d)
    return x + 1, d


def _elements(x, c):
    d = Counter("abca")
    d.subtract("cccz")  # non-positive counts give no elements
    e = d.elements()
    return x + 1, next(e), list(e), list(c.elements()), type(c.elements())


def _in_place_operators(x, c):
    # ``__iadd__`` and the others keep the positive counts (``_keep_positive``)
    d = Counter("abca")
    d["z"] = -1
    d += Counter("ab")
    d -= Counter("aaaaa")
    c |= Counter("bbb")
    c &= Counter("aab")
    return x + 1, d


def _in_place_operators_on_input(x, c):
    c["z"] = -2
    c["y"] = 0
    c += Counter()
    c -= Counter("b")
    return x * len(c)


def _missing_key_deleted(x, c):
    d = Counter("abca")
    del d["zz"]  # no KeyError
    del d["a"]
    del c["zz"]
    del c["b"]
    return x + 1, d


def _dunder_methods(x, c):
    d = Counter("abca")
    return (
        x + 1,
        d.__missing__("q"),
        d.__add__(c),
        d.__sub__(c),
        c.__or__(d),
        c.__and__(d),
        Counter(a=-1, b=0, c=2).__pos__(),
        Counter(a=-1, b=0, c=2).__neg__(),
        d.__le__(c),
        d.__eq__(Counter("aabc")),
        d,
    )


FUNCTIONS = [
    _subtract,
    _subtract_input,
    _subtract_each_other,
    _elements,
    _in_place_operators,
    _in_place_operators_on_input,
    _missing_key_deleted,
    _dunder_methods,
]


def _args():
    return torch.ones(2), Counter("abcb")


#: Where torch 2.11's Dynamo compiles no graph (newer releases do): no baseline there.
NO_BASELINE = {
    _elements: "torch 2.11's Dynamo runs Counter.elements in Python (it cannot rebuild the "
    "chain iterator elements returns)",
}


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_counter_methods(fn):
    check_breaks(fn, _args, graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, *_args(), baseline_missing=NO_BASELINE.get(fn, ""))
