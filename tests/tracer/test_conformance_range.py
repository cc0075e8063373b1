"""Ranges and their iterators under the tracer behave as in CPython (random operation sequences,
see ``tests/conformance.py``): indexing, slicing, ``index``/``count``, containment, reversal,
iterators that keep their position across loops and escape the call."""

from __future__ import annotations

import pytest
import torch
from conformance import Op, check_conformance
from difftest import check_breaks

RANGES = ["range(5)", "range(2, 11, 3)", "range(10, 0, -2)", "range(0)", "range(-3, 3)"]

OPS = [
    Op("r = {r}"),
    Op("r[{i}]", value=True, raises=True),
    Op("r[{a}:{b}]", value=True),
    Op("r[::-1]", value=True),
    Op("len(r)", value=True),
    Op("{n} in r", value=True),
    Op("r.index({n})", value=True, raises=True),
    Op("r.count({n})", value=True),
    Op("list(r)", value=True),
    Op("sum(r)", value=True),
    Op("r == range(0, 5)", value=True),
    Op("bool(r)", value=True),
    Op("list(reversed(r))", value=True),
    Op("it = iter(r)"),
    Op("next(it, 'end')", value=True),
    Op("next(it)", value=True, raises=True),
    Op("rit = reversed(r)"),
    Op("next(rit, 'end')", value=True),
    Op("acc = acc + sum(v for v in it if v > {n})"),
    Op("acc = acc * len(r[{a}:])"),
    Op("pairs = list(zip(it, r))"),
    Op("out.append(pairs)"),
]


def _fill(rng):
    return {
        "r": rng.choice(RANGES),
        "i": rng.choice(["0", "1", "-1", "4", "-9"]),
        "a": rng.randint(-3, 3),
        "b": rng.randint(-3, 6),
        "n": rng.randint(-2, 6),
    }


SETUP = """
r = range(1, 8, 2)
it = iter(r)
rit = reversed(r)
acc = x
pairs = []
"""


def test_range_operations_match_cpython():
    check_conformance(OPS, _fill, setup=SETUP, finals="r, it, rit, acc", seed=13)


# -- searching a range for what is no int: each number compared with ``==`` --------------------
class _Plain:
    pass


class _EqualToAll:
    def __eq__(self, other):
        return True

    __hash__ = None


def _searches(x, item, r):
    out = []
    for search in (lambda: item in r, lambda: r.index(item), r.count, r.__contains__):
        try:
            out.append(search() if search.__name__ == "<lambda>" else search(item))
        except (ValueError, RuntimeError) as e:
            out.append(str(e))
    return x + 1, out


@pytest.mark.parametrize("r", [range(1, 7, 2), range(0)])
@pytest.mark.parametrize("item", [_Plain, _EqualToAll, lambda: torch.ones(2)])
def test_a_range_searched_for_an_object_or_a_tensor(item, r):
    # a plain object equals no number, one whose __eq__ says True every number; a tensor of two
    # elements makes ``n == t`` ambiguous whatever it holds; an empty range compares nothing
    check_breaks(_searches, lambda: (torch.ones(1), item(), r), graphs=1, breaks=0)
