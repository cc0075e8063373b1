"""``d | o`` where ``o``'s type is a proper subclass of ``d``'s overriding ``__ror__``
(``OrderedDict``, ``defaultdict``): CPython asks ``o.__ror__`` first, and the union is of
``o``'s type (a ``defaultdict`` keeping ``o``'s factory). The tracer's dict union always took the
left operand's type: a plain dict where eager gives an OrderedDict or a defaultdict (found by the
matrix's ``OrderedDict.__ror__`` and ``defaultdict.__ror__`` cells). Compared with eager for the
right operand made in the function, passed in and global."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import assert_same

import bytegraph

MAKERS = {
    "OrderedDict": lambda: collections.OrderedDict([(7, "a"), ("b", 7)]),
    "defaultdict": lambda: collections.defaultdict(list, {7: "a", "b": 7}),
    "Counter": lambda: collections.Counter("ab"),
    "dict": lambda: {7: "a", "b": 7},
}
G = {}


def _union(x, given):
    made = type(given)(given) if not isinstance(given, collections.defaultdict) else None
    out = [{7: 0, "c": 1} | given, {"c": 1} | G["o"], given | {7: 0}]
    if made is not None:
        out.append({7: 0} | made)
    return x + 1, [(type(v), v, getattr(v, "default_factory", None)) for v in out]


@pytest.mark.parametrize("name", list(MAKERS))
def test_union_has_the_type_cpython_gives(name):
    G["o"] = MAKERS[name]()
    expected = _union(torch.ones(2), MAKERS[name]())
    G["o"] = MAKERS[name]()
    actual = bytegraph.compile(_union, backend="eager")(torch.ones(2), MAKERS[name]())
    assert_same(actual, expected)
