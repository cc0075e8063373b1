"""Set operators between dict views and sets: ``d.items() & s``, ``s - d.keys()``,
``d.values() | d.keys()``, ``s |= d.keys()``, comparisons and ``isdisjoint``, each view kind
crossed with each kind of other operand (sets and frozensets made in the function, of numbers
and of tuples; a set read from a global; constants; another view), both ways round and in place.
Keys are numbers: a string's hash changes per process, and with it which sets collide.

CPython's items view finds only tuples, its values take part through the reflected operators of
the keys and items views, and a set's in-place operator takes only a set or frozenset (``s |=
view`` binds a new set: another name for the old one still sees the old set). Each result,
its type and iteration order, and what the names hold afterwards are compared with eager, and
nothing falls back.
"""

from __future__ import annotations

import itertools
import operator
import warnings

import pytest
import torch
from difftest import assert_same

import bytegraph

GLOBAL_PAIRS = {(10, 1), (90, 0)}

VIEWS = {
    "keys": lambda d: d.keys(),
    "items": lambda d: d.items(),
    "values": lambda d: d.values(),
}
OTHERS = {
    "set of ints": lambda d: {10, 90},
    "set of tuples": lambda d: {(10, 1), (90, 0)},
    "frozenset of tuples": lambda d: frozenset({(20, 2)}),
    "set of tuples, grown": lambda d: {(10, 1)} | {(20, 2), (30, 3)},
    "global set of tuples": lambda d: GLOBAL_PAIRS,
    "constant frozenset": lambda d: frozenset({1, 20}),
    "list of tuples": lambda d: [(10, 1)],
    "tuple of ints": lambda d: (10, 20),
    "keys of another dict": lambda d: {10: 9}.keys(),
    "items of another dict": lambda d: {10: 1, 70: 3}.items(),
}
OPERATORS = {
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "-": operator.sub,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "isdisjoint": lambda a, b: a.isdisjoint(b),
}


def _outcome(op, a, b):
    try:
        result = op(a, b)
    except (TypeError, AttributeError) as e:  # a list has no ``isdisjoint``, nor a values view
        return type(e).__name__
    return result


def _compare(fn):
    x = torch.ones(2)
    expected = fn(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warns: turn it into a failure
        actual = bytegraph.compile(fn, backend="eager")(x)
    assert_same(actual, expected)
    for a, e in zip(actual[1:], expected[1:], strict=True):
        assert list(a) == list(e) if isinstance(e, (set, frozenset)) else a == e  # the order too


@pytest.mark.parametrize(
    ("view", "other", "op", "view_first"),
    [
        pytest.param(v, o, op, first, id=f"{v} {op} {o}{'' if first else ' (other first)'}")
        for v, o, op, first in itertools.product(VIEWS, OTHERS, OPERATORS, (True, False))
    ],
)
def test_a_view_and_another_operand_as_in_cpython(view, other, op, view_first):
    make_view, make_other, fn_op = VIEWS[view], OTHERS[other], OPERATORS[op]

    def fn(x):
        d = {10: 1}
        d[20] = 2  # a dict changed after it was made: its items are still what the view finds
        a, b = make_view(d), make_other(d)
        return x + 1, _outcome(fn_op, a, b) if view_first else _outcome(fn_op, b, a)

    _compare(fn)


@pytest.mark.parametrize("view", ["keys", "items"])
@pytest.mark.parametrize("op", ["&=", "|=", "^=", "-="])
def test_a_sets_in_place_operator_given_a_view_binds_a_new_set(view, op):
    in_place = {"&=": operator.iand, "|=": operator.ior, "^=": operator.ixor, "-=": operator.isub}

    def fn(x):
        d = {10: 1, 20: 2}
        s = {(10, 1), (90, 0)} if view == "items" else {10, 70}
        alias = s
        s = in_place[op](s, VIEWS[view](d))
        return x + 1, s, alias, s is alias

    _compare(fn)


def test_a_sets_in_place_operator_given_a_set_changes_it():
    def fn(x):
        s = {(10, 1), (90, 0)}
        alias = s
        s &= {(10, 1)}
        s |= frozenset({(70, 2)})
        return x + 1, s, alias, s is alias

    _compare(fn)


@pytest.mark.parametrize("view_first", [True, False], ids=["view | tuple", "tuple | view"])
def test_a_set_made_from_an_items_view_is_rebuilt_by_the_same_calls(view_first):
    """``V | d.items()`` is ``set(V)`` updated with the pairs: where the pairs collide in the
    table (these numbers do), only the same calls lay the new set out as CPython's, so the
    rewritten code repeats them on a dict of the same pairs rather than breaking (which it did
    whenever a string's hash, drawn per process, made such a collision)."""

    def fn(x):
        v = (21, 21)
        items = {1: v, 21: 1, 29: 1}.items()
        return x + 1, items | v if view_first else v | items, items ^ v

    x = torch.ones(2)
    report = bytegraph.explain(fn)(x)
    assert report.graph_break_count == 0, report.break_reasons
    _compare(fn)
