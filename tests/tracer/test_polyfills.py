"""Polyfills (``tracer/polyfills``): each equals the C builtin it replaces, run as plain Python and
traced; the registry finds bound C classmethods by equality."""

from __future__ import annotations

import functools
import itertools
import operator
import re

import pytest
import torch
from bytegraph.tracer import polyfills
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

SAMPLES = {
    itertools.chain: [([1, 2], "ab", ())],
    itertools.chain.from_iterable: [([[1], [], (2, 3)],)],
    itertools.accumulate: [([1, 2, 3],), ([1, 2, 3], operator.mul), ([], None)],
    itertools.islice: [("abcdefg", 2), ("abcdefg", 1, 6, 2), (range(10), 3, None, 3)],
    itertools.product: [("ab", [1, 2]), ((0, 1),)],
    itertools.permutations: [("abc",), ("abcd", 2)],
    itertools.combinations: [("abcd", 2), ("ab", 3)],
    itertools.combinations_with_replacement: [("abc", 2)],
    itertools.zip_longest: [([1, 2, 3], "a"), ()],
    itertools.pairwise: [([1, 2, 3, 4],), ([1],)],
    itertools.starmap: [(pow, [(2, 3), (3, 2)])],
    itertools.takewhile: [(lambda v: v < 3, [1, 2, 3, 1])],
    itertools.dropwhile: [(lambda v: v < 3, [1, 2, 3, 1])],
    itertools.filterfalse: [(None, [0, 1, 0, 2]), (lambda v: v % 2, range(6))],
    itertools.compress: [("abcdef", [1, 0, 1, 1])],
    itertools.cycle: [],
    itertools.count: [],
    itertools.repeat: [("x", 3)],
}
HAS_BATCHED = hasattr(itertools, "batched")  # the running Python has it (3.12+)
if HAS_BATCHED:
    SAMPLES[itertools.batched] = [("abcdefg", 3), (range(4), 2), ((), 1), ([1], 5)]


@pytest.mark.parametrize("target", list(SAMPLES), ids=lambda t: t.__qualname__)
def test_itertools_polyfill_equals_the_builtin(target):
    polyfill = polyfills.lookup(target)
    assert polyfill is not None
    for args in SAMPLES[target]:
        assert list(polyfill(*args)) == list(target(*args)), args


def test_infinite_polyfills_yield_the_builtins_prefix():
    for target, args in [(itertools.count, (5, 2)), (itertools.cycle, ("ab",))]:
        expected = list(itertools.islice(target(*args), 7))
        assert list(itertools.islice(polyfills.lookup(target)(*args), 7)) == expected


def test_groupby_and_tee_polyfills_equal_the_builtins():
    data = "aabbbcaa"
    groupby = polyfills.lookup(itertools.groupby)
    assert [(k, list(g)) for k, g in groupby(data)] == [
        (k, list(g)) for k, g in itertools.groupby(data)
    ]
    a, b = polyfills.lookup(itertools.tee)([1, 2, 3])
    assert (next(a), list(b), list(a)) == (1, [1, 2, 3], [2, 3])


def test_functools_reduce_and_dict_fromkeys_polyfills():
    reduce = polyfills.lookup(functools.reduce)
    assert reduce(operator.add, [1, 2, 3]) == 6 and reduce(operator.add, [], 5) == 5
    with pytest.raises(TypeError):
        reduce(operator.add, [])
    assert polyfills.lookup(dict.fromkeys)("ab", 0) == {"a": 0, "b": 0}


def test_operator_getter_polyfills():
    row = {"a": 1, "b": 2}
    assert polyfills.lookup(operator.itemgetter)("a", "b")(row) == (1, 2)
    assert polyfills.lookup(operator.attrgetter)("real.real")(3) == 3
    assert polyfills.lookup(operator.methodcaller)("split", ",")("a,b") == ["a", "b"]


def test_bound_c_classmethods_are_found_by_equality():
    assert itertools.chain.from_iterable is not itertools.chain.from_iterable
    assert polyfills.lookup(itertools.chain.from_iterable) is not None
    assert polyfills.lookup(dict.fromkeys) is not None
    assert polyfills.lookup([]) is None  # unhashable: never registered


def test_traced_through_without_a_break_or_a_retrace():
    def fn(x):
        parts = list(itertools.chain.from_iterable([[x], [x * 2]]))
        total = functools.reduce(operator.add, parts)
        return total, dict.fromkeys("ab", 1)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0, calls=3)


def test_heapq_and_bisect_polyfills_equal_the_builtins_on_random_lists():
    import bisect
    import heapq
    import random

    rng = random.Random(0)
    for _ in range(200):
        data = [rng.randint(0, 20) for _ in range(rng.randint(1, 12))]
        value = rng.randint(-1, 21)
        for name in ("heapify", "_heapify_max"):
            real, poly = list(data), list(data)
            getattr(heapq, name)(real)
            polyfills.lookup(getattr(heapq, name))(poly)
            assert real == poly
        for name in ("heappush", "heappushpop", "heapreplace", "_heapreplace_max"):
            real, poly = list(data), list(data)
            heapq.heapify(real) if "max" not in name else heapq._heapify_max(real)
            poly = list(real)
            assert getattr(heapq, name)(real, value) == polyfills.lookup(getattr(heapq, name))(
                poly, value
            )
            assert real == poly
        ordered = sorted(data)
        for name in ("bisect_left", "bisect_right"):
            fn = getattr(bisect, name)
            assert polyfills.lookup(fn)(ordered, value) == fn(ordered, value)


# What the C ``itertools`` functions do when called, before any item is taken: make iterators of
# their sources (one over a dict then fails once the dict grows), read the pools of the
# combinatorics into tuples (items added later are not seen), check their arguments.
def _grown_dict():
    return {"a": 1, "b": 2}


CALLED_WITH_A_DICT = {
    itertools.chain.from_iterable: lambda d: (d,),
    itertools.cycle: lambda d: (d,),
    itertools.accumulate: lambda d: (d,),
    itertools.islice: lambda d: (d, 2),
    itertools.zip_longest: lambda d: (d, "xy"),
    itertools.pairwise: lambda d: (d,),
    itertools.starmap: lambda d: (max, d),
    itertools.takewhile: lambda d: (bool, d),
    itertools.dropwhile: lambda d: (bool, d),
    itertools.filterfalse: lambda d: (None, d),
    itertools.compress: lambda d: (d, [1, 1]),
    itertools.groupby: lambda d: (d,),
    itertools.product: lambda d: (d,),
    itertools.permutations: lambda d: (d,),
    itertools.combinations: lambda d: (d, 1),
    itertools.combinations_with_replacement: lambda d: (d, 1),
}
if HAS_BATCHED:
    CALLED_WITH_A_DICT[itertools.batched] = lambda d: (d, 1)


def _first_items_after_growing(make, args_of):
    d = _grown_dict()
    it = make(*args_of(d))
    d["c"] = 3
    try:
        return [next(it) for _ in range(2)]
    except (RuntimeError, StopIteration) as e:
        return type(e).__name__


@pytest.mark.parametrize("target", list(CALLED_WITH_A_DICT), ids=lambda t: t.__qualname__)
def test_itertools_polyfill_reads_its_sources_when_called(target):
    args_of = CALLED_WITH_A_DICT[target]
    expected = _first_items_after_growing(target, args_of)
    assert _first_items_after_growing(polyfills.lookup(target), args_of) == expected


BAD_ARGUMENTS = [
    (itertools.islice, ("abc",)),
    (itertools.islice, ("abc", 1, 2, 3, 4)),
    (itertools.islice, ("abc", -1)),
    (itertools.islice, ("abc", 1.5)),
    (itertools.islice, ("abc", -1, 2)),
    (itertools.islice, ("abc", 0, 2, 0)),
    (itertools.product, ("ab",), {"repeat": -1}),
    (itertools.permutations, ("ab", -1)),
    (itertools.permutations, ("ab", 1.5)),
    (itertools.combinations, ("ab", -2)),
]
if HAS_BATCHED:
    BAD_ARGUMENTS += [
        (itertools.batched, ("ab", 0)),
        (itertools.batched, ("ab", 1.5)),
        (itertools.batched, ("ab", [1])),
        (itertools.batched, ("ab", 2**64)),
        (itertools.batched, (3, 2)),
        (itertools.batched, ([], -1)),
    ]


@pytest.mark.parametrize("case", BAD_ARGUMENTS, ids=lambda c: f"{c[0].__qualname__}{c[1][1:]}")
def test_itertools_polyfill_checks_its_arguments_when_called(case):
    target, args, kwargs = (*case, {})[:3]
    with pytest.raises(Exception) as expected:
        target(*args, **kwargs)
    with pytest.raises(type(expected.value), match=f"^{re.escape(str(expected.value))}$"):
        polyfills.lookup(target)(*args, **kwargs)


def _pools_read_when_called(x):
    items = [x, x * 2]
    p = itertools.product(items, repeat=2)
    q = itertools.permutations(items)
    c = itertools.combinations_with_replacement(items, 2)
    s = itertools.islice(items, 3)
    items.append(x * 3)  # not in p, q or c; seen by s, whose list iterator is live
    return [a * b for a, b in p], [a - b for a, b in q], len(list(c)), list(s)


def test_combinatorics_made_in_the_trace_read_their_pools_when_called():
    check_breaks(_pools_read_when_called, lambda: (torch.randn(3),), graphs=1, breaks=0)


class _Resuming:
    """An iterator that gives more items after ending once (``batched`` asks it again)."""

    def __init__(self):
        self.items = [[1, 2, 3], [4, 5]]

    def __iter__(self):
        return self

    def __next__(self):
        if not self.items[0]:
            self.items.pop(0)
            raise StopIteration
        return self.items[0].pop(0)


@pytest.mark.skipif(not HAS_BATCHED, reason="itertools.batched is 3.12+")
def test_batched_asks_its_source_again_after_a_short_batch():
    expected = list(itertools.batched(_Resuming(), 2))
    assert expected == [(1, 2), (3,), (4, 5)]
    assert list(polyfills.lookup(itertools.batched)(_Resuming(), 2)) == expected


@pytest.mark.skipif(not HAS_BATCHED, reason="itertools.batched is 3.12+")
def test_batched_in_the_trace():
    def fn(x, xs):
        whole = [sum(b) for b in itertools.batched(xs, 2)]
        resumed = list(itertools.batched(iter(xs), 3))
        try:
            list(itertools.batched(xs, 0))
        except ValueError as e:
            zero = str(e)
        return x * len(whole), whole, resumed, zero, type(itertools.batched(xs, 3))

    check_breaks(fn, lambda: (torch.randn(3), [1, 2, 3, 4, 5]), graphs=1, breaks=0)


@pytest.mark.skipif(
    not HAS_BATCHED or "strict" not in itertools.batched.__text_signature__,
    reason="batched(strict=) is 3.13+",
)
def test_batched_strict_in_the_trace():
    def fn(x, xs):
        return x + 1, list(itertools.batched(xs, 2, strict=1))

    check_breaks(fn, lambda: (torch.randn(3), [1, 2, 3, 4]), graphs=1, breaks=0)
    with pytest.raises(ValueError, match=r"^batched\(\): incomplete batch$"):
        list(itertools.batched([1, 2, 3], 2, strict=True))
    with pytest.raises(ValueError, match=r"^batched\(\): incomplete batch$"):
        list(polyfills.lookup(itertools.batched)([1, 2, 3], 2, strict=True))
    assert_no_more_breaks(0, _pools_read_when_called, torch.randn(3))


def _types_of_itertools_objects(x):
    made = [
        itertools.product([1], repeat=2),
        itertools.chain.from_iterable([[x]]),
        itertools.islice([x], 1),
        itertools.count(),
        itertools.accumulate([1, 2]),
        (v for v in [x]),
    ]
    names = [type(it).__name__ for it in made]
    return x + 1, names, isinstance(made[1], itertools.chain), type(made[0]) is itertools.product


def test_type_of_an_itertools_object_made_in_the_trace_is_the_c_type():
    check_breaks(_types_of_itertools_objects, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _types_of_itertools_objects,
        torch.randn(3),
        baseline_missing="torch.compile 2.11 runs the call in Python (itertools.count has no type)",
    )
