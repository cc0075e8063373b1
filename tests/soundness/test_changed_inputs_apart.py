"""Two inputs the trace found to be different objects, one changed and the other read: a later
call passing one object in both places must not run the variant traced while they were apart
(its reads through the other name miss the change). Each function runs with the two apart, then
one object in both places, then apart again; results and the inputs' contents compared with
eager's (all gave the old value before; torch.compile gives it too)."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import assert_same

import bytegraph


class Box:
    pass


def _box(k=1):
    box = Box()
    box.k = k
    return box


def loop_appending_to_the_other(x, ws, alias):
    for w in ws:
        x = x * w
        if len(alias) < 3:
            alias.append(w)
    return x


def list_changed_other_read(x, a, b):
    a.append(1)
    return x + len(b)


def dict_changed_other_read(x, a, b):
    a["k"] = 5
    return x + b["k"]


def set_changed_other_read(x, a, b):
    a.add(7)
    return x + len(b)


def deque_changed_other_read(x, a, b):
    a.appendleft(3)
    return x + b[0]


def attribute_stored_other_read(x, a, b):
    a.k = 5
    return x + b.k


#: function -> make one input (a fresh object each time)
CASES = {
    loop_appending_to_the_other: lambda: [2.0, 3.0],
    list_changed_other_read: lambda: [0],
    dict_changed_other_read: lambda: {"k": 1},
    set_changed_other_read: lambda: {1},
    deque_changed_other_read: lambda: collections.deque([1]),
    attribute_stored_other_read: _box,
}


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_one_object_in_both_places_after_two(fn):
    make = CASES[fn]
    compiled = bytegraph.compile(fn, backend="eager")
    for same in (False, True, False, True):
        results = []
        for run in (fn, compiled):
            a = make()
            b = a if same else make()
            out = run(torch.ones(2), a, b)
            results.append(
                (out, vars(a) if isinstance(a, Box) else a, vars(b) if isinstance(b, Box) else b)
            )
        assert_same(results[1], results[0])
