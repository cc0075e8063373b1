"""Dicts and their views under the tracer behave as in CPython (random operation sequences, see
``tests/conformance.py``): insertion order, live ``keys()``/``values()``/``items()`` views,
``update`` forms, ``|``, ``popitem``, errors for missing keys, an input dict changed in place."""

from __future__ import annotations

from conformance import Op, check_conformance

KEYS = ["'a'", "'b'", "'c'", "'d'", "1", "2"]
VALUES = ["0", "1", "x", "x * 2", "x + 1", "None"]

OPS = [
    Op("d[{k}] = {v}"),
    Op("inp[{k}] = {v}"),
    Op("d[{k}]", value=True, raises=True),
    Op("d.get({k})", value=True),
    Op("d.get({k}, {v})", value=True),
    Op("d.pop({k})", value=True, raises=True),
    Op("d.pop({k}, None)", value=True),
    Op("d.popitem()", value=True, raises=True),
    Op("inp.pop({k}, 0)", value=True),
    Op("d.setdefault({k}, {v})", value=True),
    Op("d.update({{{k}: {v}}})"),
    Op("d.update([({k}, {v}), ({k2}, 0)])"),
    Op("d.update(e=5, f={v})"),
    Op("del d[{k}]", raises=True),
    Op("{k} in d", value=True),
    Op("len(d)", value=True),
    Op("list(d)", value=True),
    Op("list(keys)", value=True),
    Op("list(values)", value=True),
    Op("list(items)", value=True),
    Op("len(items)", value=True),
    Op("({k}, 0) in items", value=True),
    Op("sorted(keys & {{{k}, {k2}}}, key=str)", value=True),
    Op("sorted(keys - {{{k}}}, key=str)", value=True),
    Op("d | {{{k}: {v}}}", value=True),
    Op("d |= {{{k2}: {v}}}"),
    Op("list(reversed(d))", value=True),
    Op("d.copy()", value=True),
    Op("dict(d, z=1)", value=True),
    Op("d == {{{k}: 0}}", value=True),
    Op("{{k: v for k, v in d.items() if k != {k}}}", value=True),
    Op("d.clear()"),
    Op("it = iter(d)"),
    Op("next(it, 'end')", value=True, raises=True),
    Op("keys = d.keys()"),
    Op("values = inp.values()"),
    Op("items = d.items()"),
]


def _fill(rng):
    return {"k": rng.choice(KEYS), "k2": rng.choice(KEYS), "v": rng.choice(VALUES)}


SETUP = """
d = {'a': 1, 'b': x}
keys, values, items = d.keys(), d.values(), d.items()
it = iter([])
"""


def test_dict_operations_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup=SETUP,
        finals="d, keys, values, items, it",
        make_input=lambda: {"a": 1, 2: "two"},
        seed=11,
    )
