"""A ``functools.lru_cache`` wrapper called with constants that returns an object of the user's
(einops' ``_prepare_transformation_recipe`` and its ``TransformRecipe``): its body is traced on the
constants, and where the result escapes the rewritten code calls the wrapper again, which gives
the object eager's call returned (the cached one). Before, the call broke ("not a constant"). A
body with effects, and a trace changing the cached object, still break, and eager's count of body
runs, identities and eviction order are kept."""

import functools
import sys
import types

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
    # the clear: the call misses (eager runs the body), the trace is made again
    assert counter.frame_count == 2
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
        self.axes = {"a": 0, "b": 1, "c": [2]}  # read whole by the guard, not by the trace


class _PlanToo(_Plan):
    pass


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
    (lambda p: p.axes.update(d=3), True),
    (lambda p: p.axes.update(a=p.axes.pop("a")), True),  # the same items in another order
    (lambda p: p.axes.update(a=False), True),
    (lambda p: p.axes.update(c=[2]), False),
    (lambda p: p.axes["c"].append(3), True),
    (lambda p: p.dims.__setitem__(0, True), True),
    (lambda p: setattr(p, "dims", [1, 2]), False),
    (lambda p: setattr(p, "__dict__", dict(vars(p))), False),  # another dict, the same items
    (lambda p: setattr(p, "__dict__", {**vars(p), "n": 2}), True),
    (lambda p: setattr(p, "__class__", _PlanToo), True),
    # not cached: eager's call runs the body (a miss), so does the trace made again
    (lambda p: plan.cache_clear(), True),
    (lambda p: [plan(str(i)) for i in range(8)], True),  # evicted
]


#: calls of the compiled function before the change: the guard's first test is written out for
#: the cached object once a call finds it unchanged (``_CachedObjectGuard.check``)
CALLS_BEFORE = [1, 3]


@pytest.mark.parametrize("calls", CALLS_BEFORE)
@pytest.mark.parametrize("change, seen", MUTATIONS)
def test_the_guard_on_a_cached_object_sees_each_change_and_runs_no_user_code(change, seen, calls):
    x = torch.randn(3)
    plan.cache_clear()
    _RecordsEq.calls.clear()
    compiled, counter = compile_counted(reads_the_plan)
    for _ in range(calls):
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


def test_a_steady_call_compares_no_part_in_a_loop(monkeypatch):
    """From the second call that finds the cached object unchanged, the guard tests it by its
    written-out check: each item by identity, ``_unchanged``'s loops only where one differs (an
    equal scalar in its place: then read again, so later calls test it as written out again)."""
    x = torch.randn(3)
    plan.cache_clear()
    compiled = bytegraph.compile(reads_the_plan)
    for _ in range(3):
        assert_same(compiled(x), reads_the_plan(x))
    looped = []
    original = functions._unchanged
    monkeypatch.setattr(functions, "_unchanged", lambda nodes: looped.append(1) or original(nodes))
    assert_same(compiled(x), reads_the_plan(x))
    assert looped == []
    plan("p").big = int("1" + "0" * 20)
    for _ in range(4):
        assert_same(compiled(x), reads_the_plan(x))
    assert looped == [1, 1]  # the written check failing, then the one call that writes it again
    assert_same(compiled(x), reads_the_plan(x))
    assert looped == [1, 1]


def test_a_scalar_replaced_on_every_call_stays_right():
    """The written-out check fails on each call (an equal scalar, another object): it is written
    again a few times, then the guard keeps testing the object in loops."""
    x = torch.randn(3)
    plan.cache_clear()
    compiled, counter = compile_counted(reads_the_plan)
    for i in range(12):
        plan("p").big = int("1" + "0" * 20)
        plan("p").n = 1 if i < 10 else 2
        assert_same(compiled(x), reads_the_plan(x))
    assert counter.frame_count == 2


def _by_size(x):
    r = recipe("a b c") if x.shape[0] > 4 else recipe("a b")  # one cached object per variant
    return x * r.n


def test_a_variant_failing_its_shape_checks_reads_no_cached_object(monkeypatch):
    """The guard on a cached object calls the wrapper and compares the object part by part (some
    microseconds for an einops recipe), a shape expression compares ints: a variant that cannot
    match fails at its shape checks before asking its cached objects. Before, each call of the
    second variant (dynamic sizes, ``x.shape[0] > 4``) checked the first variant's recipe too."""
    compiled, counter = compile_counted(_by_size, dynamic=True)
    small, big = torch.randn(3, 2), torch.randn(8, 2)
    for x in (small, big):
        assert_same(compiled(x), _by_size(x))
    assert counter.frame_count == 2
    asked = []
    check = functions._CachedObjectGuard.__dict__["check"]  # a slot, read on each call
    monkeypatch.setattr(
        functions._CachedObjectGuard,
        "check",
        property(lambda g: asked.append(g.args) or check.__get__(g), check.__set__),
    )
    assert_same(compiled(big), _by_size(big))
    assert asked == [("a b c",)]
    assert_same(compiled(small), _by_size(small))
    assert asked == [("a b c",), ("a b",)]
    assert counter.frame_count == 2


# A key whose body a trace of this process ran already: a later trace (another function, a resume
# function, the training step after inference) builds the trackers from the cached object while it
# is in the state that trace found, rather than tracing and running the body again.

UNKNOWN = -999999  #: a module constant the body reads, as einops' ``_unknown_axis_length``


class EinopsRecipe:  # the shape of einops' ``TransformRecipe``
    def __init__(self, pattern):
        names = pattern.split()
        self.elementary_axes_lengths = [UNKNOWN] * len(names)
        self.axis_name2elementary_axis = {name: i for i, name in enumerate(names)}
        self.input_composition_known_unknown = [([], [i]) for i in range(len(names))]
        self.axes_permutation = list(reversed(range(len(names))))
        self.first_reduced_axis = len(names)
        self.added_axes = {}
        self.output_composite_axes = [[i] for i in range(len(names))]
        self.first_axis = self.output_composite_axes[0]  # a shared part
        self.known = (1, "a", None, 2.5, b"b")


@functools.lru_cache(256)
def prepare(pattern, ndim=3):
    return EinopsRecipe(pattern)


def _apply(x, pattern):
    r = prepare(pattern, ndim=x.dim())
    return x.permute(*r.axes_permutation) * r.first_reduced_axis + r.axis_name2elementary_axis["b"]


def applies_it(x):
    r = prepare("a b c", ndim=3)
    return _apply(x, "a b c"), r.first_axis is r.output_composite_axes[0], r.known


def applies_it_again(x):
    r = prepare("a b c", ndim=3)
    out = _apply(x, "a b c") + r.elementary_axes_lengths[1] / UNKNOWN
    shared = r.first_axis is r.output_composite_axes[0]
    return out, shared, r, r.output_composite_axes, r.first_axis, r.input_composition_known_unknown


@pytest.fixture
def body_runs(monkeypatch):
    """The keys whose bodies traces ran (``_memo_state``), with a fresh record of verified keys."""
    runs = []
    monkeypatch.setattr(functions, "_VERIFIED", functions.weakref.WeakKeyDictionary())
    original = functions._memo_state
    monkeypatch.setattr(
        functions, "_memo_state", lambda f, a, k: runs.append(a) or original(f, a, k)
    )
    return runs


def test_a_second_trace_of_a_key_builds_the_result_from_the_cached_object(body_runs):
    x = torch.randn(2, 3, 4)
    prepare.cache_clear()
    first, first_counter = compile_counted(applies_it)
    for _ in range(2):
        assert_same(first(x), applies_it(x))
    assert body_runs == [("a b c",)]
    second, second_counter = compile_counted(applies_it_again)
    for _ in range(2):
        out, shared, r, composite, first_axis, known_unknown = second(x)
        assert_same((out, shared), applies_it_again(x)[:2])
        assert r is prepare("a b c", ndim=3)  # the cached object and its parts, as eager's
        assert composite is r.output_composite_axes and first_axis is r.output_composite_axes[0]
        assert known_unknown is r.input_composition_known_unknown
    assert body_runs == [("a b c",)]  # built from the object: the body neither traced nor run
    assert (first_counter.frame_count, second_counter.frame_count) == (1, 1)
    assert bytegraph.explain(applies_it_again)(x).graph_break_count == 0
    assert dynamo_counts(applies_it_again, x) == (1, 0)


def test_a_built_result_is_frozen_as_a_traced_one(body_runs):
    # the trace may not change the cached object: it breaks and CPython changes it, as eager
    x = torch.randn(3)
    prepare.cache_clear()
    bytegraph.compile(applies_it)(torch.randn(2, 3, 4))

    def grows(x):
        r = prepare("a b c", ndim=3)
        r.added_axes[7] = 1
        return x + len(r.added_axes)

    compiled = bytegraph.compile(grows)
    assert_same(compiled(x), x + 1)
    assert body_runs == [("a b c",)]  # the trace of ``grows`` built the object
    assert_same(compiled(x), x + 1)
    assert prepare("a b c", ndim=3).added_axes == {7: 1}
    kinds = [r.kind for r in bytegraph.explain(grows)(x).break_reasons]
    assert kinds[0] == "memoized_call"


def test_a_cached_object_changed_since_its_body_ran_is_traced_again(body_runs):
    x = torch.randn(2, 3, 4)
    prepare.cache_clear()
    first, first_counter = compile_counted(applies_it)
    assert_same(first(x), applies_it(x))
    prepare("a b c", ndim=3).first_reduced_axis = 5  # not what the body makes now
    second, second_counter = compile_counted(applies_it_again)
    for _ in range(2):
        assert_same(second(x)[:2], applies_it_again(x)[:2])
        assert_same(first(x), applies_it(x))
    # the full path ran the body and broke at the call, as it would have without the record
    assert body_runs and all(args == ("a b c",) for args in body_runs)
    assert "memoized_call" in [r.kind for r in bytegraph.explain(applies_it_again)(x).break_reasons]
    prepare.cache_clear()  # a new object, as the body makes it: both compile again, no break
    assert_same(second(x)[:2], applies_it_again(x)[:2])
    assert_same(first(x), applies_it(x))
    assert bytegraph.explain(applies_it_again)(x).graph_break_count == 0


def test_a_cached_object_changed_after_a_built_trace_fails_its_guard(body_runs):
    x = torch.randn(2, 3, 4)
    prepare.cache_clear()
    bytegraph.compile(applies_it)(x)
    compiled, counter = compile_counted(applies_it_again)
    assert_same(compiled(x)[:2], applies_it_again(x)[:2])
    assert body_runs == [("a b c",)]  # built
    prepare("a b c", ndim=3).axes_permutation[:] = [0, 1, 2]
    for _ in range(2):
        assert_same(compiled(x)[:2], applies_it_again(x)[:2])
    assert counter.frame_count > 1  # the guard saw the change: traced again


_DIES = """
import functools, gc, weakref, torch, bytegraph
from bytegraph.tracer.variables import functions
class Recipe:
    def __init__(self, k):
        self.n = len(k)
def make():
    @functools.lru_cache(4)
    def prepare(k):
        return Recipe(k)
    return prepare
wrapper = make()
def uses(x):
    return x + wrapper("a b").n
print(bytegraph.compile(uses)(torch.zeros(1)).item(), len(functions._VERIFIED))
ref = weakref.ref(wrapper)
del wrapper, uses
bytegraph.reset()
gc.collect()
print(ref() is None, len(functions._VERIFIED))
"""


def test_the_record_dies_with_its_wrapper():
    # in a new interpreter: nothing but the compiled code holds the wrapper there
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", _DIES], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["3.0", "1", "True", "0"]


SHARED_AXES = [1]


class _Box:
    pass


@functools.lru_cache(4)
def boxes_a_global(k):
    box = _Box()
    box.items = SHARED_AXES  # a list from before the call: not the body's to rebuild
    box.k = k
    return box


def appends_to_the_global(x):
    box = boxes_a_global("a")
    SHARED_AXES.append(2)
    return x + len(box.items)


def test_a_result_holding_an_object_from_before_the_call_is_traced_each_time(body_runs):
    # rebuilt, ``box.items`` would be a copy the append does not reach
    x = torch.randn(3)
    boxes_a_global.cache_clear()
    SHARED_AXES[:] = [1]
    bytegraph.compile(appends_to_the_global)(x)

    def again(x):
        return appends_to_the_global(x)

    for _ in range(2):
        SHARED_AXES[:] = [1]  # as the first trace found it
        out = bytegraph.compile(again)(x)
        assert SHARED_AXES == [1, 2]
        SHARED_AXES[:] = [1]
        assert_same(out, again(x))
    assert len(body_runs) == 3  # each trace ran the body: nothing recorded


@functools.lru_cache(4)
def inner_recipe(k):
    return EinopsRecipe(k)


class _Outer:
    def __init__(self, k):
        self.inner = inner_recipe(k)  # another cached call's object


@functools.lru_cache(4)
def outer_recipe(k):
    return _Outer(k)


def same_inner(x):
    return x + 1, outer_recipe("a b").inner is inner_recipe("a b")


def test_a_result_holding_another_cached_object_keeps_its_identity(body_runs):
    x = torch.randn(3)
    outer_recipe.cache_clear()
    inner_recipe.cache_clear()
    assert_same(bytegraph.compile(same_inner)(x), same_inner(x))

    def again(x):
        return same_inner(x)

    for _ in range(2):
        assert_same(bytegraph.compile(again)(x), (x + 1, True))


class _Shadowed:
    def __init__(self, k):
        self.n = len(k)


@functools.lru_cache(4)
def shadowed(k):
    return _Shadowed(k)


def reads_n(x):
    return x + shadowed("ab").n


def test_a_class_gaining_a_property_of_a_built_attribute_fails_the_guard(body_runs):
    # a data descriptor on the class is read before the instance dict: eager sees the property
    x = torch.randn(3)
    shadowed.cache_clear()
    assert_same(bytegraph.compile(reads_n)(x), reads_n(x))

    def again(x):
        return reads_n(x)

    compiled = bytegraph.compile(again)
    assert_same(compiled(x), again(x))
    assert body_runs == [("ab",)]  # the second trace built the object
    _Shadowed.n = property(lambda self: 7)
    try:
        assert_same(compiled(x), x + 7)
    finally:
        del _Shadowed.n
    assert_same(compiled(x), again(x))


def test_objects_the_builder_cannot_name_are_traced(body_runs):
    class Nested:  # not a global of its module: its trackers come from the body's trace
        def __init__(self):
            self.n = 2

    @functools.lru_cache(4)
    def nested(k):
        return Nested()

    def uses(x):
        return x + nested("a").n

    x = torch.randn(3)
    for _ in range(2):
        assert_same(bytegraph.compile(lambda x: uses(x))(x), uses(x))
    assert len(body_runs) == 2


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


# A part of a cached object that the function also reaches another way (a global, an input's
# attribute, a module's attribute) is one object: the trace gives it one tracker, frozen as the
# result is, so a change through either name breaks and CPython makes it, and ``is`` holds.
# Where the other name was read before the call, the call breaks (it would need a second
# tracker). torch.compile gives no baseline: it runs the body in the cache's place, so each of
# these reads a new object (wrong values: 2 for 3 in ``appends_then_reads``, False for ``is``).


class _Leaf:
    def __init__(self):
        self.v = [5]


class _Plan2:
    def __init__(self):
        self.axes = [1, 2]
        self.table = {"k": 1}
        self.inner = _Leaf()


@functools.lru_cache(4)
def planned(name):
    return _Plan2()


PLAN_AXES = PLAN_TABLE = PLAN_LEAF = PLAN_NAMESPACE = None  # of ``planned("a")``: _reset_plan
PLAN_MODULE = types.ModuleType("plan_module")


def _reset_plan():
    """A new cached object as the body makes it, its parts under other names too."""
    global PLAN_AXES, PLAN_TABLE, PLAN_LEAF, PLAN_NAMESPACE
    planned.cache_clear()
    plan = planned("a")
    PLAN_AXES, PLAN_TABLE, PLAN_LEAF = plan.axes, plan.table, plan.inner
    PLAN_NAMESPACE = vars(plan)
    PLAN_MODULE.axes = plan.axes


class _Holder:
    def __init__(self):
        self.axes = planned("a").axes


def appends_then_reads(x):
    PLAN_AXES.append(9)
    return x + len(planned("a").axes)


def reads_appends_reads(x):
    n = len(planned("a").axes)
    PLAN_AXES.append(9)
    return x + n + len(planned("a").axes)


def holds_then_appends(x):
    plan = planned("a")
    PLAN_AXES.append(9)
    return x + len(plan.axes)


def appends_through_an_input(x, holder):
    n = len(planned("a").axes)
    holder.axes.append(9)
    return x + n + len(planned("a").axes)


def appends_through_a_module(x):
    plan = planned("a")
    PLAN_MODULE.axes.append(9)
    return x + len(plan.axes)


def stores_in_the_dict(x):
    plan = planned("a")
    PLAN_TABLE["z"] = 2
    return x + len(plan.table)


def appends_in_the_nested_object(x):
    plan = planned("a")
    PLAN_LEAF.v.append(3)
    return x + len(plan.inner.v)


def replaces_through_the_namespace(x):
    n = len(planned("a").axes)
    PLAN_NAMESPACE["axes"] = [7, 7, 7]
    return x + n + len(planned("a").axes)


def compares_identities(x):
    plan = planned("a")
    return x + 1, plan.axes is PLAN_AXES, PLAN_LEAF is plan.inner, plan.table is PLAN_TABLE


def _plan_state():
    plan = planned("a")
    return list(PLAN_AXES), dict(PLAN_TABLE), list(PLAN_LEAF.v), list(plan.axes), plan.table


def _runs(fn, takes_holder, calls=3):
    """Results and states after each of ``calls`` calls of ``fn`` from a fresh cached object."""
    _reset_plan()
    holder = _Holder()
    x = torch.arange(3.0)
    return [(fn(x, holder) if takes_holder else fn(x), _plan_state()) for _ in range(calls)]


ALIASED = [  # (function, takes a holder, bytegraph's breaks on the first call)
    (appends_then_reads, False, 1),  # the other name read first: the call breaks
    (reads_appends_reads, False, 2),  # the append to a frozen part, then the call in the resume
    (holds_then_appends, False, 1),
    (appends_through_an_input, True, 2),
    (appends_through_a_module, False, 1),
    (stores_in_the_dict, False, 1),
    (appends_in_the_nested_object, False, 1),
    (replaces_through_the_namespace, False, 2),  # ``vars(plan)`` in a global: no tracker
    (compares_identities, False, 0),
]


@pytest.mark.parametrize(
    ("fn", "takes_holder", "breaks"), ALIASED, ids=[case[0].__name__ for case in ALIASED]
)
def test_a_part_reached_another_way_is_the_same_object(body_runs, fn, takes_holder, breaks):
    eager = _runs(fn, takes_holder)
    # the first trace runs the body; a second (of another code object) builds the result
    for compiled in (bytegraph.compile(fn), bytegraph.compile(lambda *a: fn(*a))):
        got = _runs(compiled, takes_holder)
        for (out, state), (e_out, e_state) in zip(got, eager, strict=True):
            assert_same(out, e_out)
            assert_same(state, e_state)
    _reset_plan()
    args = (torch.arange(3.0), _Holder()) if takes_holder else (torch.arange(3.0),)
    report = bytegraph.explain(fn)(*args)
    assert report.graph_break_count == breaks
    assert {r.kind for r in report.break_reasons} <= {"memoized_call"}


def test_a_part_reached_another_way_pins_the_cached_object(body_runs):
    global PLAN_AXES
    x = torch.arange(3.0)
    _reset_plan()
    bytegraph.compile(compares_identities)(x)  # the body traced (and recorded)

    def again(x):
        return compares_identities(x)

    compiled, counter = compile_counted(again)
    _reset_plan()
    assert_same(compiled(x), (x + 1, True, True, True))
    assert body_runs == [("a",)]  # the second trace built the result from the object
    assert_same(compiled(x), (x + 1, True, True, True))
    assert counter.frame_count == 1
    planned.cache_clear()  # a new object alike: the names still hold the old one's parts
    assert_same(compiled(x), again(x))
    assert again(x)[1:] == (False, False, False)
    assert counter.frame_count == 2
    _reset_plan()
    PLAN_AXES = [1, 2]  # an equal list, no part of the cached object
    assert_same(compiled(x), again(x))
    assert again(x)[1:] == (False, True, True)
    assert counter.frame_count == 3


class _Twins:
    def __init__(self):
        self.a = self.b = [1]


@functools.lru_cache(4)
def twins(k):
    return _Twins()


class _Pair:
    def __init__(self):
        self.a, self.b = [1], [1]


@functools.lru_cache(4)
def pair(k):
    return _Pair()


def shares(x):
    t, p = twins("a"), pair("a")
    return x + len(t.a) + len(p.b), t.a is t.b, p.a is p.b


def test_parts_shared_otherwise_than_the_body_shares_them_are_read_as_they_are(body_runs):
    # the states compared (the guard's, the recorded one) tell one part from two equal ones
    x = torch.arange(3.0)
    for fn, traced in ((shares, 2), (lambda x: shares(x), 0)):  # the bodies traced, then built
        twins.cache_clear()
        pair.cache_clear()
        compiled = bytegraph.compile(fn)
        del body_runs[:]
        assert_same(compiled(x), (x + 2, True, False))
        assert len(body_runs) == traced
        twins("a").b = [1]  # equal, no longer the same list
        pair("a").b = pair("a").a  # now the same list
        assert_same(compiled(x), shares(x))
        assert shares(x)[1:] == (False, True)


class _Cycle:
    def __init__(self):
        self.me = self
        self.items = [1]


@functools.lru_cache(4)
def cycle(k):
    return _Cycle()


def reads_the_cycle(x):
    c = cycle("a")
    return x + len(c.me.items), c.me is c, c.me.items is c.items


def test_a_cached_object_holding_itself_is_traced_and_built(body_runs):
    x = torch.arange(3.0)
    for fn, traced in ((reads_the_cycle, 1), (lambda x: reads_the_cycle(x), 0)):
        cycle.cache_clear()
        del body_runs[:]
        compiled, counter = compile_counted(fn)
        for _ in range(2):
            assert_same(compiled(x), (x + 1, True, True))
        assert (len(body_runs), counter.frame_count) == (traced, 1)
        assert bytegraph.explain(fn)(x).graph_break_count == 0


FLAGGED_LOG = []
LOUD = False


class _Flagged:
    def __init__(self, k):
        self.n = len(k)


@functools.lru_cache(4)
def flagged(k):
    if LOUD:
        FLAGGED_LOG.append("body")
    return _Flagged(k)


def logs_then_calls(x):
    FLAGGED_LOG.append("before")
    return x + flagged("ab").n


def _logged(fn, x):
    del FLAGGED_LOG[:]
    out = fn(x)
    return out, list(FLAGGED_LOG)


def test_a_body_changing_a_list_the_frame_changed_before_has_effects(monkeypatch):
    # the body's append to a list already appended to is an effect: the call breaks (a hit in
    # eager runs nothing; the trace ran the body, and replayed its append)
    monkeypatch.setattr(sys.modules[__name__], "LOUD", True)
    x = torch.zeros(1)
    flagged.cache_clear()
    flagged("ab")  # a hit from now on
    compiled = bytegraph.compile(logs_then_calls)
    for _ in range(2):
        assert_same(_logged(compiled, x), _logged(logs_then_calls, x))
    flagged.cache_clear()  # a miss: the body runs where eager runs it, after "before"
    got = _logged(compiled, x)
    flagged.cache_clear()
    assert_same(got, _logged(logs_then_calls, x))
    assert "memoized_call" in [r.kind for r in bytegraph.explain(logs_then_calls)(x).break_reasons]


def test_a_built_result_keeps_the_guards_of_the_globals_its_body_read(body_runs, monkeypatch):
    # the body, effect-free while LOUD is False, has an effect once it is True: a variant built
    # from the object must see the flag as the traced one does, else on a miss its guard runs
    # the body (the effect before "before")
    x = torch.zeros(1)
    flagged.cache_clear()
    bytegraph.compile(logs_then_calls)(x)  # the body traced

    def again(x):
        return logs_then_calls(x)

    compiled = bytegraph.compile(again)
    assert_same(_logged(compiled, x), (x + 2, ["before"]))
    assert body_runs == [("ab",)]  # built
    monkeypatch.setattr(sys.modules[__name__], "LOUD", True)
    assert_same(_logged(compiled, x), _logged(again, x))  # a hit: traced again, breaks
    flagged.cache_clear()
    got = _logged(compiled, x)
    flagged.cache_clear()
    assert_same(got, _logged(again, x))
    assert got[1] == ["before", "body"]


# A cached object given to another ``lru_cache`` wrapper (einops: ``_reconstruct_from_shape(recipe,
# tensor.shape, axes)`` after ``_prepare_transformation_recipe(pattern)``): the call is made
# through that wrapper's cache, keyed by the very object eager's call gives it.


@functools.lru_cache(16)
def cooked(r, shape, axes):
    return [shape[i] for i in range(r.n)], {"n": r.n + len(axes)}


def _cooks(x, pattern):
    shapes, info = cooked(recipe(pattern), x.shape, ())
    return x.reshape(shapes) * info["n"]


def cooks_twice(x):
    return _cooks(x, "a b c") + _cooks(x, "a b c")


def test_a_cached_object_given_to_a_cached_call_goes_through_its_cache():
    # the second wrapper's cache holds the key eager's call made (it was traced without the
    # cache: eager's key was never made, its body traced at every call)
    x = torch.randn(2, 3, 4)
    expected = cooks_twice(x)
    recipe.cache_clear()
    cooked.cache_clear()
    compiled, counter = compile_counted(cooks_twice)
    for _ in range(2):
        assert_same(compiled(x), expected)
    assert (cooked.cache_info().misses, cooked.cache_info().currsize) == (1, 1)  # eager's
    assert counter.frame_count == 1
    assert bytegraph.explain(cooks_twice)(x).graph_break_count == 0
    assert dynamo_counts(cooks_twice, x) == (1, 0)


def test_a_cached_object_made_again_is_a_new_key_as_in_eager():
    # recipe's cache cleared: eager's call gets a new object, so a new key of cooked's; the
    # variant keyed by the old object is not taken for it (the object's identity is guarded)
    x = torch.randn(2, 3, 4)
    expected = cooks_twice(x)
    recipe.cache_clear()
    cooked.cache_clear()
    compiled, counter = compile_counted(cooks_twice)
    assert_same(compiled(x), expected)
    old = recipe("a b c")
    recipe.cache_clear()
    assert_same(compiled(x), expected)
    assert recipe("a b c") is not old
    assert cooked.cache_info().currsize == 2  # keyed by the old object and by the new one
    assert counter.frame_count == 2


# Issue 37: einops' ``_reconstruct_from_shape(recipe, shape, ...)`` is keyed by the recipe object
# another cached call made, and its result holds a part of that recipe (``axes_permutation``); the
# recipe's body reads a class through two names (``ParsedExpression`` in two modules: an alias
# guard). Each of those kept the body from being recorded, so every compile and resume function
# traced it again (~13% of a vit-pytorch trace).
class _Axes:
    def __init__(self, pattern):
        self.names = pattern.split()


Axes = _Axes  # the body reads the class through both names


class Layout:
    def __init__(self, pattern):
        assert Axes is _Axes
        names = _Axes(pattern).names
        self.n = len(names)
        self.order = list(reversed(range(len(names))))
        self.lengths = {name: i + 2 for i, name in enumerate(names)}


@functools.lru_cache(16)
def layout(pattern):
    return Layout(pattern)


@functools.lru_cache(64)
def cook(p, shape):  # keyed by the layout object; its result holds the layout's list
    return [shape[i] for i in p.order], p.order, p.n


def _cooked(x, pattern):
    sizes, order, n = cook(layout(pattern), x.shape)
    return x.permute(*order).reshape(sizes) * n + len(order)


def cooks_once(x):
    return _cooked(x, "a b c") + 1


def cooks_again(x):
    return _cooked(x, "a b c") * 2


def cooks_after_a_break(x):
    y = x.sin()
    bytegraph.graph_break()
    return _cooked(y, "a b c"), layout("a b c").order


def _cook_runs(body_runs):
    return [args for args in body_runs if isinstance(args[0], Layout)]


def test_a_cached_call_keyed_by_a_cached_object_is_recorded(body_runs):
    # each body is traced once: the other compiles and the resume function build its result
    x = torch.randn(2, 3, 4)
    layout.cache_clear()
    cook.cache_clear()
    for fn in (cooks_once, cooks_again, cooks_after_a_break):
        compiled = bytegraph.compile(fn)
        for _ in range(2):
            assert_same(compiled(x), fn(x))
    assert [args for args in body_runs if args == ("a b c",)] == [("a b c",)]
    assert len(_cook_runs(body_runs)) == 1  # before: once per trace (3)
    out, order = bytegraph.compile(cooks_after_a_break)(x)
    assert order is layout("a b c").order  # the cached object's part itself, as eager's
    assert (layout.cache_info().misses, cook.cache_info().misses) == (1, 1)  # eager's keys
    assert bytegraph.explain(cooks_again)(x).graph_break_count == 0
    assert dynamo_counts(cooks_again, x) == (1, 0)


def test_a_recorded_cached_call_sees_its_key_changed_or_made_again(body_runs):
    # the layout changed in place between calls, then made again (cache_clear): each call of the
    # compiled functions gives eager's values, the new layout a new key of cook's cache as in eager
    x = torch.randn(2, 3, 4)
    layout.cache_clear()
    cook.cache_clear()
    once, again = bytegraph.compile(cooks_once), bytegraph.compile(cooks_again)
    assert_same(once(x), cooks_once(x))
    assert_same(again(x), cooks_again(x))
    layout("a b c").order[:] = [2, 0, 1]  # cook's cached result holds it: eager reads it too
    assert_same(once(x), cooks_once(x))
    assert_same(again(x), cooks_again(x))
    layout("a b c").n = 5  # cook's cached n stays 3 (a constant of its result), as in eager
    assert_same(again(x), cooks_again(x))
    layout.cache_clear()  # a new layout: a new key of cook's, its body run again by eager
    assert_same(once(x), cooks_once(x))
    assert_same(again(x), cooks_again(x))
    assert (cook.cache_info().misses, cook.cache_info().currsize) == (2, 2)  # eager's
    assert len(_cook_runs(body_runs)) >= 2  # the new layout's key is not the recorded one
