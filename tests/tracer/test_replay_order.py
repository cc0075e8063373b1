"""The replay of side effects after the graph writes into the objects the trace saw, whatever the
replay changed before (``convert._preload_stale``): a store into ``o`` where ``o = lst[0]`` and
``lst`` is changed too. Before, the replay read a store's target through its source (``lst[0]``)
after refilling ``lst``: an ``IndexError`` where it was emptied. The other shapes (another object
put first, a container below a changed one, a stored value read before the change) check the same
rule."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks


class Box:
    def __init__(self, tag):
        self.tag = tag


OBJECTS: list = []
NESTED: list = []


def _setup():
    OBJECTS[:] = [Box("first"), Box("second")]
    NESTED[:] = [[1], [2]]


def _observe():
    return [vars(o) for o in OBJECTS], [list(x) for x in NESTED]


def _store_after_clear(x):
    o = OBJECTS[0]
    OBJECTS.clear()
    o.val = 5
    return x + 1


def _store_after_insert(x):
    o = OBJECTS[0]
    OBJECTS.insert(0, Box("new"))
    o.val = 5  # into "first", not the new object at index 0
    return x + 1


def _container_after_outer_change(x):
    inner = NESTED[0]
    NESTED.insert(0, [])
    inner.append(3)
    return x + 1


def _stored_value_read_before_change(x):
    o = OBJECTS[1]
    OBJECTS.pop()
    OBJECTS[0].other = o  # the object read before the pop
    return x * 2


@pytest.mark.parametrize(
    "fn",
    [
        _store_after_clear,
        _store_after_insert,
        _container_after_outer_change,
        _stored_value_read_before_change,
    ],
)
def test_replay_writes_into_the_objects_the_trace_saw(fn):
    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=1, breaks=0, calls=3, setup=_setup, observe=_observe
    )
