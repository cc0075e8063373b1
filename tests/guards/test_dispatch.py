"""The generated dispatcher: argument passing for every kind of signature, the slow path taken when
a guard raises, and a trie that picks the right entry among many."""

from __future__ import annotations

import torch
from bytegraph.guards import kinds
from bytegraph.guards.cache import FunctionCache, Variant
from bytegraph.guards.sources import ItemSource, LocalSource
from difftest import assert_same, compile_counted

import bytegraph


def test_varargs_kwonly_and_kwargs_are_guarded():
    def fn(x, /, y=2, *args, z, **kw):
        return x * y + sum(args) + z + kw.get("w", 0)

    compiled, counter = compile_counted(fn)
    x = torch.ones(2)
    calls = [((x,), {"z": 1}), ((x, 3, 4, 5), {"z": 1, "w": 7}), ((x,), {"z": 1})]
    for args, kwargs in calls:
        assert_same(compiled(*args, **kwargs), fn(*args, **kwargs))
    assert counter.frame_count == 2
    header = bytegraph.guard_source(compiled).splitlines()[0]
    assert header == "def __guard_fn_2(x, y, args, z, kw):"
    assert (
        str(bytegraph.why(compiled, x, 3, 4, 5, z=1, w=7))
        == "selected: entry 1"  # the newest, tried first
    )


def test_guard_that_raises_takes_the_slow_path():
    cache = FunctionCache("f", {}, {}, ("xs",))
    item = ItemSource(LocalSource("xs"), 1)
    guards = cache.new_guard_set([kinds.TYPE_MATCH(item, int), kinds.EQUALS_MATCH(item, 5)])
    cache.add(Variant(guards, lambda xs: "entry 0"))
    assert cache.guard_fn([0, 5]) is not None
    assert cache.guard_fn([0]) is None  # IndexError inside the guards: no entry, no crash
    assert cache.select({"xs": [0, 5]})([]) == "entry 0"


def test_many_entries_each_selected_by_its_own_inputs():
    def fn(x, mode, flag):
        y = x * len(mode) if flag else x - len(mode)
        return torch.relu(y) if mode == "relu" else y

    compiled, counter = compile_counted(fn)
    inputs = [
        (torch.randn(2), mode, flag) for mode in ("relu", "id", "other") for flag in (True, False)
    ]
    inputs += [(torch.randn(2, dtype=torch.float64), "id", False)]
    for args in inputs:
        assert_same(compiled(*args), fn(*args))
    assert counter.frame_count == len(inputs)
    for args in inputs:  # second round: every call hits its own entry
        assert_same(compiled(*args), fn(*args))
    assert counter.frame_count == len(inputs)
    entries = bytegraph.cache_entries(compiled)
    for i, args in enumerate(inputs):
        assert bytegraph.why(compiled, *args).selected is entries[i]
