"""Sets iterate in CPython's order, compiled as eager: input sets (arguments, globals) whose
order comes from their insertion history (collisions, deleted items, a table grown then emptied),
sets built in the trace, and the input set after the compiled call changed it in place.

Each case builds the same set twice with the same history, runs eager on one and compiled on the
other, and compares results, iteration orders and the set afterwards."""

from __future__ import annotations

import warnings

import pytest
import torch

from tests.difftest import compile_counted


class Obj:
    """Hashed by identity: its place in a set depends on its address."""


OBJS = [Obj() for _ in range(12)]


def _history(items, drop=()):
    """A set built by adding ``items`` one by one, then discarding ``drop``: its table keeps the
    size it grew to and the deleted slots."""
    s = set()
    for item in items:
        s.add(item)
    for item in drop:
        s.discard(item)
    return s


MAKERS = {
    "ints_grown_then_emptied": lambda: _history(
        range(100), [i for i in range(100) if i not in (1, 64)]
    ),
    "ints_colliding": lambda: _history([8, 16, 0, 24, 3, 11]),
    "strings_with_removals": lambda: _history(
        [f"k{i}" for i in range(40)], [f"k{i}" for i in range(0, 40, 3)]
    ),
    "tuples": lambda: _history([(i, "t") for i in range(9)], [(2, "t")]),
    "objects": lambda: _history(OBJS, OBJS[::4]),
    "mixed_literal": lambda: {3, "x", (1, 2), OBJS[0], 5.5, None},
    "add_discard_sequence": lambda: _history([5, 13, 21, "a", "b", 29, (1,)], [13, "a"]) | set(),
}


def _run_both(fn, make, *, graphs=None, breaks=None):
    """Eager on one set and compiled on another built the same way (twice, to use the cache):
    results, the sets afterwards and their iteration orders are the same."""
    compiled, counter = compile_counted(fn)
    for _ in range(2):
        s_eager, s_compiled = make(), make()
        assert list(s_eager) == list(s_compiled)  # the two histories give one order
        x = torch.ones(2)
        expected = fn(x, s_eager)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            actual = compiled(x, s_compiled)
        # nothing fell back to Python, but where no set the trace can build iterates as the
        # one it made (which depends on string hashes: a set that lost items, positions taken
        # by collisions), which runs that code in Python rather than give another order
        assert all("set_order" in str(w.message) for w in caught), [str(w.message) for w in caught]
        torch.testing.assert_close(actual[0], expected[0])
        assert actual[1:] == expected[1:]
        assert list(s_compiled) == list(s_eager)
    if graphs is not None:
        assert counter.frame_count == graphs
    return counter


def _read(x, s):
    return x + 1, list(s), [v for v in s], repr(s), tuple(s)


@pytest.mark.parametrize("kind", MAKERS)
def test_an_input_set_iterates_in_its_own_order(kind):
    _run_both(_read, MAKERS[kind], graphs=1)


@pytest.mark.parametrize("kind", MAKERS)
def test_a_set_derived_from_an_input_set_iterates_as_cpython(kind):
    def derived(x, s):
        return (
            x * 2,
            list(s.copy()),
            list(set(s)),
            list(s - {OBJS[1]}),
            list(s & {5, 29, "b", OBJS[2]}),
            sorted(map(repr, s)),
        )

    _run_both(derived, MAKERS[kind], graphs=1)


@pytest.mark.parametrize("kind", MAKERS)
def test_a_union_adding_items_to_an_input_set(kind):
    """Where the new items land depends on the slots of the real set's items: the trace computes
    the union on the input set's own object (its mirror), laid out as CPython's."""

    def union(x, s):
        return x * 2, list(s | {1000, "zz"}), list(s.union(["k41", 7]))

    _run_both(union, MAKERS[kind], graphs=1)


@pytest.mark.parametrize("kind", MAKERS)
def test_pop_and_discard_of_an_input_set(kind):
    def pops(x, s):
        first = s.pop()
        s.discard(first)
        second = s.pop()
        return x - 1, first, second, list(s)

    _run_both(pops, MAKERS[kind], graphs=1)


@pytest.mark.parametrize("kind", MAKERS)
def test_items_added_to_an_input_set_land_where_cpython_puts_them(kind):
    """The trace cannot see the real set's table, so after an item is added reading the order is
    a break; the set afterwards is laid out as eager's (the calls are replayed on it as made)."""

    def adds(x, s):
        s.add(72)
        s.discard(OBJS[2])
        s.update([(9, "t"), "k41"])
        s |= {OBJS[3], 1}
        y = x + 1
        return y, list(s)

    _run_both(adds, MAKERS[kind])


@pytest.mark.parametrize("kind", MAKERS)
def test_an_input_set_changed_but_not_read_is_replayed_in_order(kind):
    def changes(x, s):
        s.discard(64)
        s.add("new")
        s.symmetric_difference_update({"k3", 64, 8})
        s.difference_update(["x"])
        return (x + 1,)

    _run_both(changes, MAKERS[kind], graphs=1)


def test_a_global_set_iterates_in_its_order():
    global G_S
    G_S = MAKERS["strings_with_removals"]()
    expected_order = list(G_S)

    def reads(x):
        return x + 1, list(G_S), next(iter(G_S))

    compiled, counter = compile_counted(reads)
    result = compiled(torch.ones(1))
    assert result[1:] == (expected_order, expected_order[0])
    assert counter.frame_count == 1


def test_equal_frozensets_of_other_orders_are_not_mixed_up():
    """Two equal frozensets may iterate differently: each call sees its own order."""
    a = frozenset(_history([8, 16, 0, 24]))
    b = frozenset(_history([0, 8, 16, 24]))
    c = frozenset(_history(range(40), range(4, 40)) | {8, 16, 24}) - {1, 2, 3}
    assert a == b == c

    def reads(x, fs):
        return x + 1, list(fs), list(fs | {5})

    compiled, _ = compile_counted(reads)
    for fs in (a, b, c, a):
        expected = reads(torch.ones(1), fs)
        assert compiled(torch.ones(1), fs)[1:] == expected[1:]


def test_a_set_built_in_the_trace_comes_back_in_cpython_order():
    def builds(x, items):
        s = set()
        for item in items:
            s.add(item)
        s.discard(items[0])
        t = set(items[3:]) | s
        return x + 1, s, t, list(s), frozenset(items)

    items = [f"w{i}" for i in range(30)] + list(range(0, 400, 16))
    compiled, _ = compile_counted(builds)
    expected = builds(torch.ones(1), items)
    actual = compiled(torch.ones(1), items)
    for a, e in zip(actual[1:], expected[1:], strict=True):
        assert a == e and list(a) == list(e)


#: Sets of objects hashed by their addresses, computed from sets made in the call and from input
#: sets: each result must iterate as CPython's (which depends on how its table was laid out, not
#: only on the order its operands iterate in), with no break: the trace computes on tables laid
#: out as CPython's (an input set's own object) and the rewritten code rebuilds a result with the
#: calls that made it.
_COMPUTED = [
    "f",
    "f | {B}",
    "{B} | f",
    "f & {A}",
    "f - {A}",
    "f.union([B])",
    "set(f) | {B}",
    "{B}.union(f)",
    "{A, B, Plain, len}",
    "F | {B}",
    "{B} | F",
    "F & {A, B}",
    "F - {A}",
    "F.union([B])",
    "set(F)",
    "S.copy()",
    "S - {A}",
    "{B} | S",
    "{*S, B}",
    "{v for v in S if v is not A}",
    "f.union(iter([B]))",
    "{B}.union(v for v in (A, Plain, len))",
    "set(map(type, [A, B]))",
    "set(v for v in (A, B, Plain))",
    "frozenset(iter([B, A, len]))",
    "{B} | dict.fromkeys([A, Plain]).keys()",
    "f ^ dict.fromkeys([B, A]).keys()",
    "S.union(iter([B]))",
]


@pytest.mark.parametrize("expr", _COMPUTED)
def test_sets_computed_from_sets_iterate_as_cpythons(expr):
    import random

    from bytegraph.explain import Recorder
    from tests.difftest import break_count

    rng = random.Random(expr)
    held = []  # the objects stay alive: new ones land at other addresses
    refused = 0
    for _ in range(25):
        plain = type("Plain", (), {})
        a, b, c = plain(), plain(), plain()
        items = [a, plain, len, c, f"s{rng.random()}"]
        rng.shuffle(items)
        s = set(items)
        s.discard(c)
        held.append((plain, a, b, c))
        namespace = {"A": a, "B": b, "Plain": plain, "F": frozenset(items), "S": s}
        source = f"def fn(x):\n    f = frozenset([A, Plain, len])\n    r = {expr}\n"
        exec(source + "    return x + 1, r, list(r)\n", namespace)
        fn = namespace["fn"]
        compiled, counter = compile_counted(fn)
        recorder = Recorder()
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")  # a fallback fails the case
            got = compiled(torch.ones(2))
        want = fn(torch.ones(2))
        assert [id(v) for v in got[1]] == [id(v) for v in want[1]], expr
        assert [id(v) for v in got[2]] == [id(v) for v in want[2]], expr
        assert type(got[1]) is type(want[1])
        reasons = [str(b.reason) for b in recorder.report().break_reasons]
        if reasons == ["set_order: a set of values iterating as the trace's set"]:
            # ``ordered_keys`` found no order of insertion that lays these addresses out as the
            # set is laid out (a rare layout: 1 in 25 in some full runs): the set is made in
            # Python there, in CPython's order (checked above), at one break
            refused += 1
            continue
        assert (counter.frame_count, break_count(recorder.report())) == (1, 0), (expr, reasons)
    assert refused <= 2, f"{expr}: {refused} of 25 layouts made in Python"


def test_a_set_changed_while_a_set_method_reads_its_argument():
    """A set method reading a ``map`` item by item runs its function, which here changes the
    receiver: the result is CPython's (``union`` copied the receiver first), and no recipe
    repeats calls that no longer make it."""

    def changes(x):
        s = {1, 2, 3}
        r = s.union(map(lambda v: s.discard(v) or v + 10, [2, 3]))
        t = {4, 5}
        t.update(map(lambda v: t.add(v + 100) or v, [6, 7]))
        return x + 1, r, s, t, list(r), list(t)

    compiled, counter = compile_counted(changes)
    actual, expected = compiled(torch.ones(1)), changes(torch.ones(1))
    for a, e in zip(actual[1:], expected[1:], strict=True):
        assert a == e and list(a) == list(e)
    assert counter.frame_count == 1
