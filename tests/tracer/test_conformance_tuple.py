"""Tuples (plain, ``torch.Size`` and namedtuples) under the tracer behave as in CPython (random
operation sequences, see ``tests/conformance.py``): indexing and slicing with CPython's errors,
``count``/``index``, concatenation, repetition, comparisons, unpacking, conversions."""

from __future__ import annotations

import collections

from conformance import Op, check_conformance

Pair = collections.namedtuple("Pair", ["first", "second"])

INDICES = ["0", "1", "-1", "3", "-5"]
SLICES = ["1:3", ":2", "::2", "::-1", "5:"]

OPS = [
    Op("t[{i}]", value=True, raises=True),
    Op("t[{s}]", value=True),
    Op("t.count({n})", value=True),
    Op("t.index({n})", value=True, raises=True),
    Op("t + ({n}, x)", value=True),
    Op("t = t + ({n},)"),
    Op("t * {n}", value=True),
    Op("len(t)", value=True),
    Op("{n} in t", value=True),
    Op("t == (1, 2)", value=True),
    Op("size < ({n}, 3)", value=True),
    Op("size + ({n},)", value=True),
    Op("size[{i}]", value=True, raises=True),
    Op("a, *rest = t", raises=True),
    Op("out.append(rest)", raises=True),
    Op("tuple(reversed(t))", value=True),
    Op("list(t)", value=True),
    Op("p = p._replace(second={n})"),
    Op("p.first + p[1]", value=True, raises=True),
    Op("p._asdict()", value=True),
    Op("tuple(p)", value=True),
    Op("min(size) + max(size)", value=True),
    Op("t = tuple(v for v in t if v != {n})"),
]


def _fill(rng):
    return {"i": rng.choice(INDICES), "s": rng.choice(SLICES), "n": rng.randint(0, 3)}


SETUP = """
t = (1, 2, 1, 3)
size = x.reshape(1, 3).shape
p = Pair(1, x)
rest = []
"""


def test_tuple_operations_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup=SETUP,
        finals="t, size, p",
        seed=7,
        namespace={"Pair": Pair},
    )
