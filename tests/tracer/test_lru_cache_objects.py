"""A ``functools.lru_cache`` wrapper called with constants that returns an object of the user's
(einops' ``_prepare_transformation_recipe`` and its ``TransformRecipe``): its body is traced on the
constants, and where the result escapes the rewritten code calls the wrapper again, which gives
the object eager's call returned (the cached one). Before, the call broke ("not a constant"). A
body with effects, and a trace changing the cached object, still break, and eager's count of body
runs, identities and eviction order are kept."""

import functools

import torch
from difftest import compile_counted
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
