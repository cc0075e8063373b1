"""Identity guards hold their objects weakly: they never keep them alive, an entry whose guarded
object died is dropped, and a new object that reuses the dead one's id is not mistaken for it."""

from __future__ import annotations

import gc
import weakref

import torch
from bytegraph.guards import kinds
from bytegraph.guards.build import GuardSet
from bytegraph.guards.cache import FunctionCache, Variant
from bytegraph.guards.sources import LocalSource
from difftest import assert_same, compile_counted

import bytegraph


class Thing:
    pass


class Slotted:
    """No instance dict: on 3.13 an instance with a dict is sized by its class's inline values (the
    first instance apart from the rest): a freed one's block is not reliably handed to the next."""

    __slots__ = ("__weakref__",)


def object_with_id(target: int, make, keep: list):
    """Allocate objects (kept in ``keep``) until one has id ``target``; None if none does."""
    for _ in range(10_000):
        obj = make()
        if id(obj) == target:
            return obj
        keep.append(obj)
    return None


def _tagged_function():
    """A new function of one code at each call, with an attribute of its own: guarded by
    identity."""
    fn = lambda t: t + 1  # noqa: E731
    fn.tag = "own"
    return fn


def _plain_function():
    return lambda t: t + 1  # a new function of one code at each call, made of nothing else


def test_function_guarded_by_what_it_is_made_of_is_not_kept_alive():
    def fn(x, act):
        return act(x)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    act = _plain_function()
    assert_same(compiled(x, act), fn(x, act))
    dead = weakref.ref(act)
    del act
    gc.collect()
    assert dead() is None
    assert len(bytegraph.cache_entries(compiled)) == 1  # it serves any function made so
    act = _plain_function()
    assert_same(compiled(x, act), fn(x, act))
    assert counter.frame_count == 1


def test_guard_does_not_keep_function_argument_alive():
    def fn(x, act):
        return act(x)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    act = _tagged_function()
    assert_same(compiled(x, act), fn(x, act))
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "L['act'] is ___lambda_()" in guards
    dead = weakref.ref(act)
    del act
    gc.collect()
    assert dead() is None
    assert bytegraph.cache_entries(compiled) == []  # the entry was dropped with its object


def test_new_function_with_reused_id_recompiles():
    def fn(x, act):
        return act(x)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    keep_alive = lambda t: t * 3  # noqa: E731  (a second entry that stays)
    assert_same(compiled(x, keep_alive), fn(x, keep_alive))
    keep: list = []
    k = 0

    def make():
        nonlocal k
        k += 1
        return _tagged_function()  # the freed one's code and attribute: only its identity differs

    # Another object may take the freed block before any lambda does (about one run in eight):
    # then free another function and try again.
    for attempt in range(5):  # noqa: B007 (read after the loop)
        act = _tagged_function()
        assert_same(compiled(x, act), fn(x, act))
        old_id = id(act)
        del act
        gc.collect()
        assert len(bytegraph.cache_entries(compiled)) == 1
        reused = object_with_id(old_id, make, keep)
        if reused is not None:
            break
    assert reused is not None, "CPython did not reuse a freed id in 5 tries"
    frames = counter.frame_count
    assert frames == attempt + 2  # keep_alive, then one entry per function freed
    assert_same(compiled(x, reused), fn(x, reused))  # a different function: no false match
    assert counter.frame_count == frames + 1
    assert_same(compiled(x, keep_alive), fn(x, keep_alive))
    assert counter.frame_count == frames + 1


def test_guard_set_rejects_object_with_reused_id():
    obj = Slotted()
    guards = GuardSet([kinds.ID_MATCH(LocalSource("o"), obj)])
    scope = {"G": {}, "C": {}, "B": {}}
    assert guards.first_failure({"L": {"o": obj}, **scope}) is None
    old_id = id(obj)
    del obj
    gc.collect()
    keep: list = []
    reused = object_with_id(old_id, Slotted, keep)
    assert reused is not None, "CPython did not reuse the freed id"
    failing = guards.first_failure({"L": {"o": reused}, **scope})
    assert failing is not None and failing.code == "L['o'] is ___o()"


def test_dead_entry_dropped_and_dispatcher_rebuilt():
    cache = FunctionCache("f", {}, {}, ("o",))
    a, b = Thing(), Thing()
    for obj in (a, b):
        guard_set = cache.new_guard_set([kinds.ID_MATCH(LocalSource("o"), obj)])
        ident = id(obj)
        cache.add(Variant(guard_set, lambda ident=ident: ident))
    assert cache.guard_fn(b)() == id(b)
    del a
    gc.collect()
    assert [v.index for v in cache.variants] == [0]
    assert cache.guard_fn(b)() == id(b)
    assert cache.guard_source.count("___variant_") == 1


def test_guard_on_class_does_not_keep_class_alive():
    def fn(x, obj):
        return x + 1

    compiled, _ = compile_counted(fn)

    class Local:
        pass

    x = torch.randn(2)
    assert_same(compiled(x, Local()), fn(x, Local()))
    dead = weakref.ref(Local)
    del Local
    gc.collect()
    assert dead() is None
    assert bytegraph.cache_entries(compiled) == []
