"""A ``functools.lru_cache`` wrapper called with constants that returns an object of the user's
(einops' ``_prepare_transformation_recipe`` and its ``TransformRecipe``): its body is traced on the
constants, and where the result escapes the rewritten code calls the wrapper again, which gives
the object eager's call returned (the cached one). Before, the call broke ("not a constant"). A
body with effects, and a trace changing the cached object, still break, and eager's count of body
runs, identities and eviction order are kept."""

import functools

import pytest
import torch
from bytegraph.tracer.variables import functions
from difftest import assert_same, compile_counted
from dynamo_baseline import dynamo_counts

import bytegraph


class Recipe:
    def __init__(self, pattern):
        names = pattern.split()
        self.n = len(names)
        self.axes = [[i] for i in range(len(names))]  # lists in a list, as einops' recipe
        self.positions = {name: i for i, name in enumerate(names)}
        self.known = (tuple(range(len(names))), [])


@functools.lru_cache(256)
def recipe(pattern):
    return Recipe(pattern)


def _permute(x, pattern):  # an einops-style user of the recipe
    r = recipe(pattern)
    order = [r.positions[name] for name in reversed(pattern.split())]
    return x.permute(*order) * r.n + len(r.axes[0])


def uses_the_recipe(x):
    return _permute(x, "a b c") + recipe("a b c").known[0][2]


def returns_the_recipe(x):
    r = recipe("a b")
    return x * r.n, r, r is recipe("a b"), r.axes


def _counts(fn, *args):
    compiled, counter = compile_counted(fn)
    report = bytegraph.explain(fn)(*args)
    return compiled, counter, (report.graph_count, report.graph_break_count)


def test_a_cached_recipe_is_traced_without_a_break():
    x = torch.randn(2, 3, 4)
    compiled, counter = compile_counted(uses_the_recipe)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), uses_the_recipe(x))
    assert counter.frame_count == 1
    assert bytegraph.explain(uses_the_recipe)(x).graph_break_count == 0
    assert dynamo_counts(uses_the_recipe, x) == (1, 0)


def test_the_escaping_result_is_the_cached_object():
    x = torch.randn(3)
    compiled, counter = compile_counted(returns_the_recipe)
    for clear in (False, True, False):
        if clear:
            recipe.cache_clear()
        out, r, same, axes = compiled(x)
        torch.testing.assert_close(out, x * 2)
        assert r is recipe("a b") and same is True and axes is r.axes
    assert counter.frame_count == 1
    assert bytegraph.explain(returns_the_recipe)(x).graph_break_count == 0
    assert dynamo_counts(returns_the_recipe, x) == (1, 0)


RUNS = []


@functools.lru_cache(8)
def counted(pattern):
    RUNS.append(pattern)
    return Recipe(pattern)


def uses_a_counted_recipe(x):
    return x + counted("a").n + counted("a b").n


def test_a_body_with_an_effect_runs_as_often_as_in_eager():
    x = torch.randn(3)
    compiled = bytegraph.compile(uses_a_counted_recipe)
    counted.cache_clear()
    RUNS.clear()
    for _ in range(3):
        torch.testing.assert_close(compiled(x), x + 3)
    assert RUNS == ["a", "a b"]  # each key ran once, as eager runs it
    counted.cache_clear()
    uses_a_counted_recipe(x)
    assert RUNS == ["a", "a b", "a", "a b"]


@functools.lru_cache(1)
def one(pattern):
    return Recipe(pattern)


def evicts(x):
    first = one("a")
    one("a b")  # drops "a": the next call makes a new object
    again = one("a")
    kept = one("a")
    return x + first.n, first is again, again is kept, kept


def test_eviction_with_maxsize_one_gives_eagers_identities():
    x = torch.randn(3)
    compiled = bytegraph.compile(evicts)
    for _ in range(2):
        one.cache_clear()
        out, first_is_again, again_is_kept, kept = compiled(x)
        assert (first_is_again, again_is_kept) == (False, True)
        assert kept is one("a")  # the object eager's cache holds now
        torch.testing.assert_close(out, x + 1)
    one.cache_clear()
    assert evicts(x)[1:3] == (False, True)


def changes_the_recipe(x):
    r = recipe("a b c d")
    r.axes.append([9])  # eager changes the cached object
    return x + len(r.axes)


def test_changing_the_cached_object_changes_it_as_in_eager():
    x = torch.randn(3)
    recipe.cache_clear()
    compiled = bytegraph.compile(changes_the_recipe)
    torch.testing.assert_close(compiled(x), x + 5)
    torch.testing.assert_close(compiled(x), x + 6)
    assert len(recipe("a b c d").axes) == 6
    torch.testing.assert_close(changes_the_recipe(x), x + 7)


def reads_the_recipe(x):
    return x + len(recipe("a b c d e").axes)


def test_a_cached_object_changed_outside_is_read_as_it_is_now():
    # eager returns the cached object with its changes: a guard sees them and the trace breaks
    x = torch.randn(3)
    recipe.cache_clear()
    compiled = bytegraph.compile(reads_the_recipe)
    torch.testing.assert_close(compiled(x), x + 5)
    recipe("a b c d e").axes.append([9])
    torch.testing.assert_close(compiled(x), x + 6)
    recipe("a b c d e").axes.pop()
    torch.testing.assert_close(compiled(x), x + 5)
    recipe.cache_clear()
    torch.testing.assert_close(compiled(x), x + 5)


class _SlotBase:
    __slots__ = ("n",)


class _Slotted(_SlotBase):  # has a __dict__ too, but n lives in the base's slot
    def __init__(self, n):
        self.n = n


@functools.lru_cache(4)
def slotted(k):
    return _Slotted(k)


@functools.lru_cache(4)
def big(k):
    return list(range(k))


def reads_a_slot_and_a_big_list(x):
    return x + slotted(2).n + big(5000)[-1]


def test_results_whose_state_cannot_be_read_cheaply_break_and_stay_right():
    # a slot is not in the instance dict, and a long list would make a slow guard: both break
    x = torch.randn(3)
    compiled = bytegraph.compile(reads_a_slot_and_a_big_list)
    torch.testing.assert_close(compiled(x), x + 5001)
    slotted(2).n = 7
    torch.testing.assert_close(compiled(x), x + 5006)
    report = bytegraph.explain(reads_a_slot_and_a_big_list)(x)
    assert [r.kind for r in report.break_reasons] == ["memoized_call", "memoized_call"]


# The guard on a cached object: each call it must see any change of what the trace read (a
# scalar's type too: 1, True and 1.0 fold differently) and run no code of the user's (no
# ``__eq__``), and a part replaced by an equal one is the same state.


class _Scale:
    def __init__(self, k):
        self.k = k


class _Plan:
    def __init__(self, name):
        self.n = 1
        self.big = 10**20
        self.dims = [1, 2]
        self.inner = _Scale(2)
        self.tag = "tag"


@functools.lru_cache(8)
def plan(name):
    return _Plan(name)


def reads_the_plan(x):
    p = plan("p")
    return x * p.inner.k + len(p.dims), p.n, p.big, p.tag, p.dims[-1]


class _RecordsEq:
    calls = []

    def __eq__(self, other):
        _RecordsEq.calls.append(other)
        return True

    __hash__ = object.__hash__


#: changes of the cached object, and whether the trace's guard must see them
MUTATIONS = [
    (lambda p: setattr(p, "n", True), True),
    (lambda p: setattr(p, "n", 1.0), True),
    (lambda p: setattr(p, "big", int("1" + "0" * 20)), False),  # an equal int, another object
    (lambda p: p.dims.append(3), True),
    (lambda p: setattr(p.inner, "k", 5), True),
    (lambda p: setattr(p, "inner", _Scale(5)), True),
    (lambda p: setattr(p, "inner", _Scale(2)), False),  # an equal object in its place
    (lambda p: setattr(p, "tag", _RecordsEq()), True),
    (lambda p: setattr(p, "tag", "".join(["ta", "g"])), False),  # another str
]


@pytest.mark.parametrize("change, seen", MUTATIONS)
def test_the_guard_on_a_cached_object_sees_each_change_and_runs_no_user_code(change, seen):
    x = torch.randn(3)
    plan.cache_clear()
    _RecordsEq.calls.clear()
    compiled, counter = compile_counted(reads_the_plan)
    assert_same(compiled(x), reads_the_plan(x))
    change(plan("p"))
    for _ in range(2):
        out = compiled(x)
        assert _RecordsEq.calls == []  # (assert_same compares the tags with ``==``)
        assert_same(out, reads_the_plan(x))
        _RecordsEq.calls.clear()
    # seen: the trace runs again, breaks at the call (the object is not what the body makes)
    # and the rest of the function is one more graph
    assert counter.frame_count == (2 if seen else 1)


def test_a_steady_call_builds_no_state(monkeypatch):
    x = torch.randn(3)
    plan.cache_clear()
    compiled = bytegraph.compile(reads_the_plan)
    compiled(x)
    built = []
    original = functions._state_of
    monkeypatch.setattr(functions, "_state_of", lambda *a: built.append(a) or original(*a))
    assert_same(compiled(x), reads_the_plan(x))
    assert built == []
    plan("p").inner = _Scale(2)  # an equal part, another object: states compared once
    assert_same(compiled(x), reads_the_plan(x))
    assert built != []
    built.clear()
    assert_same(compiled(x), reads_the_plan(x))
    assert built == []


# Objects whose state is not all in their instance dict (a C base's, a function's code) are not
# read by the state the guard compares: they break.


class _Items(list):
    pass


@functools.lru_cache(4)
def items(k):
    return _Items([1, 2])


def counts_items(x):
    return x + len(items("a"))


def _one():
    return 1


def _two():
    return 2


class _Holder:
    pass


@functools.lru_cache(4)
def holds_a_function(k):
    box = _Holder()
    box.fn = _one
    return box


def calls_the_held_function(x):
    return x + holds_a_function("a").fn()


def test_objects_over_a_builtin_type_and_functions_are_not_read_as_dicts():
    x = torch.zeros(1)
    items.cache_clear()
    holds_a_function.cache_clear()
    compiled = bytegraph.compile(counts_items)
    assert_same(compiled(x), counts_items(x))
    items("a").append(3)  # the list's items are no attribute
    assert_same(compiled(x), counts_items(x))
    compiled = bytegraph.compile(calls_the_held_function)
    assert_same(compiled(x), calls_the_held_function(x))
    holds_a_function("a").fn = _two  # another function, with an equal (empty) __dict__
    assert_same(compiled(x), calls_the_held_function(x))
