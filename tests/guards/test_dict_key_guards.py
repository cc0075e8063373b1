"""Input dicts keyed by strs and ints are guarded key by key: a call that looks up ``d[k]``,
``d.get(k)`` or ``k in d`` guards that key (present or absent) and its value, not the other keys,
so a registry that grows, or a table of which the call uses one entry, serves every later call
without a recompile. Anything that sees all the keys (iterating, ``len``, views, changes) guards
them all, as before.

Each call is compared with eager; recompiles are counted with the counting backend.
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, compile_counted
from torch import nn


def _run(compiled, fn, *args):
    assert_same(compiled(*args), fn(*args))


def read_one(x, table):
    return table["act"](x)


def test_unread_keys_of_an_input_dict_are_not_guarded():
    compiled, counter = compile_counted(read_one)
    table = {"act": torch.sin, "other": torch.cos}
    x = torch.randn(3)
    _run(compiled, read_one, x, table)
    table["added"] = torch.tan  # keys the call never reads come and go
    del table["other"]
    _run(compiled, read_one, x, table)
    assert counter.frame_count == 1
    table["act"] = torch.cos  # the key it reads: a new value, a recompile, the new value used
    _run(compiled, read_one, x, table)
    assert counter.frame_count == 2
    del table["act"]
    with pytest.raises(KeyError):
        read_one(x, table)
    with pytest.raises(KeyError):
        compiled(x, table)


def probe(x, opts):
    x = x.relu()
    if "bias" in opts:
        x = x + opts["bias"]
    scale = opts.get("scale")
    return x if scale is None else x * scale


def test_membership_and_get_guard_the_key_present_or_absent():
    compiled, counter = compile_counted(probe)
    x = torch.randn(3)
    opts = {"unused": torch.ones(3)}
    _run(compiled, probe, x, opts)
    opts["noise"] = torch.zeros(3)
    _run(compiled, probe, x, opts)
    assert counter.frame_count == 1
    opts["bias"] = torch.full((3,), 2.0)  # absent before: its absence was guarded
    _run(compiled, probe, x, opts)
    assert counter.frame_count == 2
    opts["scale"] = torch.full((3,), 3.0)
    _run(compiled, probe, x, opts)
    assert counter.frame_count == 3
    for _ in range(2):  # each state again: no more compiles
        _run(compiled, probe, x, opts)
        _run(compiled, probe, x, {"bias": torch.ones(3)})
    assert counter.frame_count == 3  # {"bias"} alone: the third call's keys (bias, no scale)


def read_int_keys(x, by_layer):
    return by_layer[1](x) + by_layer[0](x)


def test_int_keys_are_read_alone_too():
    compiled, counter = compile_counted(read_int_keys)
    layers = {0: torch.sin, 1: torch.cos, 2: torch.tan}
    x = torch.randn(3)
    _run(compiled, read_int_keys, x, layers)
    layers[7] = torch.exp
    _run(compiled, read_int_keys, x, layers)
    assert counter.frame_count == 1


def looked_up_then_iterated(x, table):
    y = table["act"](x)
    for name in table:
        y = y + len(name)
    return y


def test_iterating_after_a_lookup_guards_every_key():
    compiled, counter = compile_counted(looked_up_then_iterated)
    table = {"act": torch.sin, "b": torch.cos}
    x = torch.randn(3)
    _run(compiled, looked_up_then_iterated, x, table)
    table["longer_name"] = torch.tan
    _run(compiled, looked_up_then_iterated, x, table)
    assert counter.frame_count == 2


def store_after_lookup(x, table):
    act = table["act"]
    table["last"] = act
    table.pop("gone", None)
    return act(x) + len(table)


def test_a_change_after_a_lookup_is_replayed():
    compiled, counter = compile_counted(store_after_lookup)
    x = torch.randn(3)
    for _ in range(2):
        mine = {"act": torch.sin, "gone": torch.cos, "kept": torch.tan}
        theirs = dict(mine)
        assert_same(compiled(x, mine), store_after_lookup(x, theirs))
        assert mine == theirs and list(mine) == list(theirs)
    assert counter.frame_count == 1


def holds_itself(x, table):
    return table["me"]["act"](x)


def test_a_dict_that_holds_itself():
    compiled, _ = compile_counted(holds_itself)
    table = {"act": torch.sin}
    table["me"] = table
    x = torch.randn(3)
    for _ in range(2):
        _run(compiled, holds_itself, x, table)


class Registry(dict):
    """What transformers' ``_CanRecordRegistry`` is: a dict subclass keyed by class names."""

    def get(self, model):
        return super().get(type(model).__name__) or {}


REGISTRY = Registry()


class Block(nn.Module):
    def forward(self, x):
        spec = REGISTRY.get(self)
        return x * 2 if spec.get("double") else x


def test_a_registry_that_grows_does_not_recompile():
    REGISTRY.clear()
    REGISTRY["Block"] = {"double": True}
    block = Block()

    def fn(x):
        return block(x) + 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    _run(compiled, fn, x)
    for i in range(5):  # other models register themselves as they are made
        REGISTRY[f"Model{i}"] = {"double": False}
        _run(compiled, fn, x)
    assert counter.frame_count == 1
    REGISTRY["Block"] = {"double": False}  # the entry the call reads changed
    _run(compiled, fn, x)
    assert counter.frame_count == 2
    REGISTRY.clear()


def pop_option(x, **kwargs):
    double = kwargs.pop("double", False)
    return kwargs["act"](x) * (2 if double else 1)


def test_popping_an_absent_option_changes_nothing():
    """``kwargs.pop(name, default)`` for an option the caller did not pass: its absence guarded,
    the dict given back unchanged (not refilled after the graph), its other keys unguarded."""
    compiled, counter = compile_counted(pop_option)
    x = torch.randn(3)
    for extra in ({}, {"unused": 1}, {"other": torch.cos, "more": 2}):
        assert_same(compiled(x, act=torch.sin, **extra), pop_option(x, act=torch.sin, **extra))
    assert counter.frame_count == 1
    assert_same(compiled(x, act=torch.sin, double=True), pop_option(x, act=torch.sin, double=True))
    assert counter.frame_count == 2


class Defaulting(dict):
    """A dict subclass whose missing keys run Python code (``__missing__``), counted."""

    misses = 0

    def __missing__(self, key):
        type(self).misses += 1
        return torch.cos


def test_guards_never_run_a_dict_subclass_missing():
    def fn(x, table):
        return table["act"](x)

    compiled, counter = compile_counted(fn)
    table = Defaulting(act=torch.sin, other=torch.tan)
    x = torch.randn(3)
    _run(compiled, fn, x, table)
    del table["act"]  # the key read is gone: eager runs __missing__ once a call
    for _ in range(2):
        Defaulting.misses = 0
        expected = fn(x, table)
        eager_misses, Defaulting.misses = Defaulting.misses, 0
        assert_same(compiled(x, table), expected)
        assert Defaulting.misses == eager_misses == 1
