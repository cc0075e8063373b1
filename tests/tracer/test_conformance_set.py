"""Sets (and frozensets) under the tracer behave as in CPython (random operation sequences, see
``tests/conformance.py``): mutation methods, the operators and their in-place forms, comparisons,
errors for missing items, iteration order, an input set changed in place."""

from __future__ import annotations

from conformance import Op, check_conformance

ITEMS = ["1", "2", "3", "'a'", "'b'", "(1, 2)"]
OTHERS = ["{1, 2}", "{'a', 3}", "set()", "[2, 2, 'b']", "frozenset({3})", "range(3)", "'ab'"]

OPS = [
    Op("s.add({e})"),
    Op("inp.add({e})"),
    Op("s.discard({e})"),
    Op("s.remove({e})", raises=True),
    Op("s.pop()", value=True, raises=True),
    Op("s.update({o})"),
    Op("s.intersection_update({o})"),
    Op("s.difference_update({o})"),
    Op("s.symmetric_difference_update({o})"),
    Op("s.union({o})", value=True),
    Op("s.intersection({o})", value=True),
    Op("s.difference({o}, {o2})", value=True),
    Op("s.symmetric_difference({o})", value=True),
    Op("s.issubset({o})", value=True),
    Op("s.issuperset({o})", value=True),
    Op("s.isdisjoint({o})", value=True),
    Op("s | set({o})", value=True),
    Op("s & set({o})", value=True),
    Op("s - set({o})", value=True),
    Op("s ^ set({o})", value=True),
    Op("s |= set({o})"),
    Op("s &= set({o})"),
    Op("s -= set({o})"),
    Op("s ^= set({o})"),
    Op("s <= set({o})", value=True),
    Op("s == {{1, 2}}", value=True),
    Op("frozenset({o}) | s", value=True),
    Op("{e} in s", value=True),
    Op("len(s)", value=True),
    Op("list(s)", value=True),
    Op("sorted(s, key=repr)", value=True),
    Op("s.copy()", value=True),
    Op("{{v for v in s if v != {e}}}", value=True),
    Op("x * len(s)", value=True),
    Op("s.clear()"),
]


def _fill(rng):
    return {"e": rng.choice(ITEMS), "o": rng.choice(OTHERS), "o2": rng.choice(OTHERS)}


def test_set_operations_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup="s = {1, 'a'}",
        finals="s",
        make_input=lambda: {1, 2, "z"},
        seed=5,
    )
