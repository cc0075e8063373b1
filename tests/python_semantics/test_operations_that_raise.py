"""Operators whose operands' types both decline them: CPython asks the left operand's method,
then the right's reflected one (``a < b``: ``a.__lt__(b)``, then ``b.__gt__(a)``; ``a * b``:
``a.__mul__(b)``, then ``b.__rmul__(a)``), each absent or giving NotImplemented for the other's
type, and raises its TypeError (``'<' not supported between instances of 'map' and 'int'``);
``==`` and ``!=`` fall back to identity instead. The trace raises that TypeError as a Python
exception, so a ``try``/``except TypeError`` around it in the compiled function handles it in the
graph, and one left uncaught leaves the compiled call after the effects before it, as in eager.
Iterators, generators, dict views, ``ChainMap`` and list subclasses with numbers, None and tuples:
each broke the graph at the operator."""

from __future__ import annotations

import collections
import operator

import pytest
import torch
from difftest import check, check_breaks


class SubList(list):
    pass


def _generator(xs):
    yield from xs


#: operands whose type defines no ordering or arithmetic with a number (or declines it)
OPERANDS = {
    "map": lambda xs: map(abs, xs),
    "zip": lambda xs: zip(xs, xs, strict=True),
    "enumerate": lambda xs: enumerate(xs),
    "list_iterator": lambda xs: iter(xs),
    "reversed": lambda xs: reversed(xs),
    "generator": lambda xs: _generator(xs),
    "dict_items": lambda xs: dict.fromkeys(xs).items(),
    "dict_keys": lambda xs: dict.fromkeys(xs).keys(),
    "dict_values": lambda xs: dict.fromkeys(xs).values(),
    "ChainMap": lambda xs: collections.ChainMap(dict.fromkeys(xs)),
    "SubList": lambda xs: SubList(xs),
}


def _message(operation, *args):
    try:
        operation(*args)
    except TypeError as e:
        return str(e)
    return "no error"


@pytest.mark.parametrize("name", list(OPERANDS))
def test_an_ordering_declined_by_both_types_is_caught_in_the_graph(name):
    make = OPERANDS[name]

    def fn(x, xs):
        y = x * 2
        out = []
        for other in (3, 2.5, None, (1, "a")):
            try:
                out.append(make(xs) < other)
            except TypeError as e:
                out.append(str(e))
            try:
                out.append(other >= make(xs))
            except TypeError as e:
                out.append(str(e))
        return y + 1, out

    check(fn, torch.ones(3), [1, -2])


@pytest.mark.parametrize("name", ["map", "zip", "enumerate", "generator", "dict_values"])
def test_arithmetic_declined_by_both_types_is_caught_in_the_graph(name):
    make = OPERANDS[name]

    def fn(x, n):
        out = []
        for operation in (lambda a, b: a * b, lambda a, b: b - a, lambda a, b: a | b):
            try:
                out.append(operation(make([n]), n))
            except TypeError as e:
                out.append(str(e))
        return x.sin(), out

    check(fn, torch.ones(3), 4)


def test_equality_declined_by_both_types_is_identity():
    def fn(x, xs):
        it, view = iter(xs), {1: 2}.values()
        return x + 1, [it == 7, it != (1, 2), it == it, it != it, view == None, view != view]  # noqa: E711

    check(fn, torch.ones(3), [1, 2])


def test_the_error_is_cpythons():
    def fn(x, xs):
        out = []
        for operation in (lambda a: a < 3, lambda a: a * 2, lambda a: None > a):
            try:
                operation(map(abs, xs))
            except TypeError as e:
                out.append(str(e))
        return x + 1, out

    _, expected = fn(torch.ones(1), [1])
    assert expected == [
        _message(lambda: map(abs, []) < 3),
        "unsupported operand type(s) for *: 'map' and 'int'",
        "'>' not supported between instances of 'NoneType' and 'map'",
    ]
    assert expected[0] == "'<' not supported between instances of 'map' and 'int'"
    check(fn, torch.ones(3), [1])


LOG = []


def test_an_uncaught_one_leaves_the_call_after_the_effects_before_it():
    """The in-place write and the list append happen, then the TypeError leaves the call (the
    trace ends at the raise: its one break, a Python error, not a fallback)."""

    def fn(x, xs):
        x.add_(1)
        LOG.append(len(xs))
        return x * 2, zip(xs, xs, strict=True) <= 3

    _, _, report = check_breaks(
        fn,
        lambda: (torch.ones(3), [1, 2]),
        graphs=1,
        breaks=1,
        setup=LOG.clear,
        observe=lambda: list(LOG),
    )
    assert [r.kind for r in report.break_reasons] == ["python_error"]


class Ordered(SubList):
    def __lt__(self, other):
        return len(self) < other


def test_a_type_defining_the_operator_is_asked():
    """A list subclass whose ``__lt__`` answers (its object given to the trace: CPython runs the
    comparison, a break), tuples and lists compared: no error."""

    def fn(x, ordered, plain):
        return x + 1, ordered < 3, (1, 2) < (1, 3), plain < [5], [plain] < [[0]]

    check(fn, torch.ones(3), Ordered([1, 2]), SubList([1, 2]), breaks=1)


@pytest.mark.parametrize(
    "make", [collections.OrderedDict, lambda: collections.defaultdict(list), lambda: SubList([1])]
)
def test_containers_of_c_subclasses_decline_as_their_type(make):
    """An ``OrderedDict`` or ``defaultdict`` (C subclasses of dict) declines as its own type:
    ``frozenset | od`` asks ``od.__ror__``, which declines too; ``[1] + od`` and ``(2,) < od``
    raise with the type's C name (``collections.OrderedDict``)."""

    def fn(x, given):
        out = []
        for other in (frozenset({0}), [1], (2,), 2.5):
            for operation in (operator.or_, operator.add, operator.lt, operator.sub):
                try:
                    out.append(operation(other, given))
                except TypeError as e:
                    out.append(str(e))
        return x + 1, out

    check(fn, torch.ones(3), make())
