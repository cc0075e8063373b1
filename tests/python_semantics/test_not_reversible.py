"""``reversed(m)`` of a mapping whose type sets ``__reversed__ = None`` (``ChainMap``, any
``collections.abc.Mapping``), or of an object with neither ``__reversed__`` nor ``__len__`` and
``__getitem__``, raises CPython's TypeError "'ChainMap' object is not reversible"; the tracer
reversed its iteration instead, a wrong result (found by the matrix's ``ChainMap.__reversed__``
cells). Compared with eager, made in the function, passed in and global; reversible values
beside them still reversed."""

from __future__ import annotations

import collections

import torch
from difftest import assert_same

import bytegraph

G = collections.ChainMap({7: "a"}, {"b": 7})


def _reversed_each(x, given):
    out = []
    values = (given, G, collections.ChainMap({1: 2}), collections.OrderedDict(a=1), [1, 2], "ab")
    for value in values:
        try:
            out.append(list(reversed(value)))
        except TypeError as e:
            out.append(str(e))
    return x + 1, out


def test_reversed_of_a_mapping_without_reversed_raises():
    expected = _reversed_each(torch.ones(2), collections.ChainMap({7: "a"}, {"b": 7}))
    compiled = bytegraph.compile(_reversed_each, backend="eager")
    actual = compiled(torch.ones(2), collections.ChainMap({7: "a"}, {"b": 7}))
    assert_same(actual, expected)
