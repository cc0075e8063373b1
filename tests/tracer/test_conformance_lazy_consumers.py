"""Methods that consume an iterable into a container take the items one at a time, as CPython's do
(``list.extend``, ``deque.extend``/``extendleft``, ``+=``, ``dict.update``, ``|=``,
``Counter.update``, the ``set`` methods), and the rest read all items first (slice assignment,
``set.symmetric_difference_update``), or stop early (``set.intersection``, ``isdisjoint``): a
``map``, ``filter`` or generator whose function reads or changes the container being filled
must see, under the tracer, what it sees in CPython. Random operation sequences
(``tests/conformance.py``) plus one differential test per consumer with graph and break counts
(torch.compile 2.13: 1 graph, 0 breaks on each, and a wrong dict on the ``dict.update`` ones and
``set.intersection_update``).
"""

from __future__ import annotations

import collections

import pytest
import torch
from conformance import Op, check_conformance
from difftest import check_breaks

#: ``{t}`` is the container being filled; the iterables read it (``len``) or change it.
READERS = [
    "map(lambda v: v + len({t}), [10, 20, 30])",
    "(len({t}) + v for v in (1, 2))",
    "filter(lambda v: len({t}) % 2 == 0, [5, 6, 7, 8])",
]

OPS = [
    *(Op(f"xs.extend({r.format(t='xs')})") for r in READERS),
    *(Op(f"xs += {r.format(t='xs')}") for r in READERS),
    *(Op(f"inp.extend({r.format(t='inp')})") for r in READERS),
    Op("xs.extend(map(lambda v: xs.append(-v) or v, [1, 2]))"),
    Op("xs[1:2] = map(lambda v: v + len(xs), [10, 20])"),
    *(Op(f"dq.extend({r.format(t='dq')})") for r in READERS),
    *(Op(f"dq.extendleft({r.format(t='dq')})") for r in READERS),
    *(Op(f"bq.extendleft({r.format(t='bq')})") for r in READERS),
    *(Op(f"bq.extend({r.format(t='bq')})") for r in READERS),
    Op("dq += map(lambda v: v * len(dq), [1, 2])"),
    Op("dq.extend(dq)"),
    Op("dq.extendleft(dq)"),
    Op("d.update(map(lambda v: (v, len(d)), [{k}, 7, 8]))"),
    Op("d.update((k, len(d)) for k in ({k}, 9))"),
    Op("d |= map(lambda v: (v, len(d)), [{k}, 4])"),
    Op("d.update(map(lambda v: (v, d.pop({k}, -1)), [{k}, 3]))"),
    Op("od.update(map(lambda v: (v, len(od)), [{k}, 7]))"),
    Op("c.update(map(lambda v: v + len(c), [{k}, 1, 2]))"),
    Op("c.update(map(lambda v: v % 3, [{k}, 1]), z=2)"),
    Op("s.update(map(lambda v: v + len(s), [{k}, 10, 20]))"),
    Op("s.update(map(lambda v: s.add(v + 100) or v, [{k}, 3]))"),
    Op("s.difference_update(map(lambda v: s.add(v + 50) or v, [{k}, 1]))"),
    Op("s.intersection_update(map(lambda v: s.add(v) or v, [{k}, 1, 10, 20]))"),
    Op("s.symmetric_difference_update(map(lambda v: v + len(s), [{k}, 2]))"),
    Op("s.intersection(map(lambda v: s.add(v) or v, [1, {k}, 30]))", value=True),
    Op("s.isdisjoint(map(lambda v: s.add(v + 1) or v, [{k}, 1, 2]))", value=True),
    Op("s.union(map(lambda v: s.discard(v) or v + len(s), [{k}, 2]))", value=True),
    Op("s.issubset(map(lambda v: s.add(v) or v, [{k}, 4]))", value=True),
    Op("len(xs) + len(dq) + len(d) + len(s)", value=True),
    Op("x * len(xs)", value=True),
]


def _fill(rng):
    return {"k": rng.choice([0, 1, 2, 3, 10])}


def test_lazy_consumers_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup="""
xs = [1, 2]
dq = collections.deque([1, 2])
bq = collections.deque([1], maxlen=4)
d = {1: 0}
od = collections.OrderedDict(a=1)
c = collections.Counter([1, 1])
s = {1, 2}
""",
        finals="xs, dq, bq, d, od, c, s",
        make_input=lambda: [5],
        namespace={"collections": collections},
        count=40,
        seed=24,
    )


def _deque_extendleft(x):
    d = collections.deque([1, 2])
    d.extendleft(map(lambda v: v + len(d), [10, 20, 30]))
    return x + 1, d


def _deque_extend(x):
    d = collections.deque([1, 2], maxlen=4)
    d.extend(map(lambda v: v + len(d), [10, 20, 30]))
    return x + len(d), d


def _list_extend(x):
    d = [1, 2]
    d.extend(map(lambda v: v + len(d), [10, 20, 30]))
    return x + 1, d


def _dict_update(x):
    d = {1: 2}
    d.update(map(lambda v: (v, len(d)), [10, 20, 30]))
    return x + 1, d


def _dict_ior(x):
    d = collections.OrderedDict({1: 2})
    d |= map(lambda v: (v, len(d)), [10, 20, 30])
    return x + 1, d


def _set_update(x):
    s = {1}
    s.update(map(lambda v: v + len(s), [10, 20, 30]))
    return x + 1, s


def _set_intersection_update(x):
    s = {1}
    s.intersection_update(map(lambda v: s.add(v) or v, [1, 10, 20]))  # CPython stops after 1
    return x + 1, s


def _counter_update(x):
    c = collections.Counter([1])
    c.update(map(lambda v: v + len(c), [10, 20, 30]))
    return x + 1, c


def _input_list_extend(x, xs):
    xs.extend(map(lambda v: v + len(xs), [10, 20, 30]))
    return x + 1


@pytest.mark.parametrize(
    "fn",
    [
        _deque_extendleft,
        _deque_extend,
        _list_extend,
        _dict_update,
        _dict_ior,
        _set_update,
        _set_intersection_update,
        _counter_update,
    ],
)
def test_consumer_takes_items_one_at_a_time(fn):
    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=0)


def test_input_list_filled_one_at_a_time():
    check_breaks(_input_list_extend, lambda: (torch.ones(2), [1, 2]), graphs=1, breaks=0)
