"""``iter()`` of an object whose class has ``__getitem__`` and no ``__iter__``: CPython's sequence
iterator asks ``obj[0]``, ``obj[1]``... one item at a time, until ``IndexError`` or
``StopIteration``. The tracer walks it the same way (``polyfills.builtins.sequence_items``): items
taken lazily (a loop that stops early asks for no more), ``type(it)`` is CPython's ``iterator``,
and ``__iter__ = None`` anywhere in the MRO makes the object not iterable. Counts beside
torch.compile's."""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


class Indexed:
    """Old-style iteration, counting the indexes asked for."""

    def __init__(self, n=3):
        self.n = n
        self.asked = []

    def __getitem__(self, i):
        self.asked.append(i)
        if i >= self.n:
            raise IndexError(i)
        return i * 2


class StopsByStopIteration:
    def __getitem__(self, i):
        if i >= 2:
            raise StopIteration
        return i + 10


class NotIterable(Indexed):
    __iter__ = None


G_INDEXED = Indexed(4)


def _sum(x):
    return x + sum(Indexed())


def _unpack(x):
    a, b, c = Indexed()
    return x + a + b + c


def _stops_early(x):
    seq = Indexed(6)
    taken = []
    for item in seq:
        if item > 4:
            break
        taken.append(item)
    return x + len(taken), taken, seq.asked


def _iterator_kind(x):
    it = iter(Indexed())
    first = next(it)
    return x + first, type(it) is type(iter(StopsByStopIteration())), list(it)


def _stop_iteration(x):
    return x + len(list(StopsByStopIteration())), list(StopsByStopIteration())


def _global_object(x):
    G_INDEXED.asked.clear()
    return x * max(G_INDEXED), list(G_INDEXED.asked)


def _comprehensions(x):
    return x + sum(v for v in Indexed() if v), [v * x for v in Indexed(2)]


def _not_iterable(x):
    try:
        iter(NotIterable())
    except TypeError as e:
        return x + 1, str(e)
    return x, "iterable"


def _check(fn, baseline_missing=""):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(3), baseline_missing=baseline_missing)


def test_sum_of_an_indexed_object():
    _check(_sum)


def test_unpacking_an_indexed_object():
    _check(_unpack)


def test_a_loop_that_stops_early_asks_for_no_more_items():
    _check(_stops_early)


def test_the_iterator_is_cpythons_sequence_iterator():
    _check(_iterator_kind)


def test_stop_iteration_ends_it():
    # torch.compile of torch 2.11 gives up on the StopIteration __getitem__ raises
    _check(_stop_iteration, baseline_missing="torch 2.11's Dynamo: an observed exception")


def test_an_indexed_global():
    _check(_global_object)


def test_comprehensions_over_indexed_objects():
    _check(_comprehensions)


def test_iter_none_makes_an_indexed_class_not_iterable():
    # torch.compile 2.13 compiles no graph for it (it fails on iter() of the object)
    check_breaks(_not_iterable, lambda: (torch.randn(3),), graphs=1, breaks=0)


def test_callable_iterator_type():
    def fn(x):
        count = [0]

        def step():
            count[0] += 1
            return count[0]

        it = iter(step, 4)
        return x + sum(it), type(iter(int, 1)) is type(it)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
