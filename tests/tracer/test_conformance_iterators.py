"""Iterators under the tracer behave as in CPython (random operation sequences, see
``tests/conformance.py``): ``iter``/``next`` over lists, tuples, strings, dicts and sets, ``zip``,
``map``, ``filter``, ``enumerate``, ``reversed`` and itertools; positions shared by loops, lists
that grow while iterated, and iterators that escape the call at their position."""

from __future__ import annotations

import itertools

from conformance import Op, check_conformance

SOURCES = [
    "xs",
    "(1, 2, 3)",
    "'abc'",
    "d",
    "d.values()",
    "d.items()",
    "range(4)",
    "zip(xs, 'ab')",
    "map(lambda v: v * 2, xs)",
    "filter(None, [0, 1, 2, 0, 3])",
    "enumerate(xs, 1)",
    "reversed(xs)",
    "itertools.chain(xs, (9,))",
    "itertools.islice(xs, 1, None)",
    "itertools.islice(itertools.count(3), 5)",
]

OPS = [
    Op("it = iter({src})"),
    Op("it2 = iter({src})"),
    Op("next(it, 'end')", value=True),
    Op("next(it)", value=True, raises=True),
    Op("next(it2, 'end')", value=True),
    Op("xs.append({n})"),
    Op("d['k{n}'] = {n}", raises=True),
    Op("list(zip(it, it2))", value=True),
    Op("[v for _, v in zip(range({n}), it)]", value=True),
    Op("sorted(map(str, zip(range(2), it2)))", value=True),
    Op("total = total + sum(v * 0 + 1 for _, v in zip(range(2), it))", raises=True),
    Op("it = enumerate(it)"),
    Op("it2 = map(lambda v: (v, v), it2)"),
    Op("it = filter(lambda v: v != {n}, it)"),
    Op("it = zip(it, it2)"),
]


def _fill(rng):
    return {"src": rng.choice(SOURCES), "n": rng.randint(0, 3)}


SETUP = """
xs = [1, 2, 3]
d = {'a': 1, 'b': x}
it = iter(xs)
it2 = iter([])
total = x
"""


def test_iterator_operations_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup=SETUP,
        finals="it, it2, xs, d, total",
        seed=17,
        min_traced=0.6,  # many programs mutate the dict under an iterator: CPython raises there
        namespace={"itertools": itertools},
    )
