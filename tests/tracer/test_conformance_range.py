"""Ranges and their iterators under the tracer behave as in CPython (random operation sequences,
see ``tests/conformance.py``): indexing, slicing, ``index``/``count``, containment, reversal,
iterators that keep their position across loops and escape the call."""

from __future__ import annotations

from conformance import Op, check_conformance

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
