"""Guards never run user code: objects whose dunder methods count their calls keep every counter at
0 while the guards of their function are built, evaluated and explained."""

from __future__ import annotations

import torch
from difftest import assert_same, compile_counted
from hostile import CALLS, MARK, Hostile

import bytegraph

HOSTILE_GLOBAL = Hostile()


def fn(x, h, hs, hd, fs):
    if h is None or HOSTILE_GLOBAL is None:
        return x
    return x + len(hs)


def test_hostile_objects_are_never_called_by_guards():
    h = Hostile()
    x = torch.randn(3)
    args = (x, h, [h, 1, Hostile()], {"k": h}, frozenset({1, 2}))
    CALLS.clear()
    compiled, counter = compile_counted(fn)
    for _ in range(3):
        assert_same(compiled(*args), fn(*args))
    assert counter.frame_count == 1
    assert str(bytegraph.why(compiled, *args)) == "selected: entry 0"
    other = (x, Hostile(), [h, 1, Hostile()], {"k": h}, frozenset({1, 2}))
    assert "rejected by" in str(bytegraph.why(compiled, *other))
    assert_same(compiled(*other), fn(*other))
    assert counter.frame_count == 2
    source = bytegraph.guard_source(compiled) + "".join(
        e.guards.source for e in bytegraph.cache_entries(compiled)
    )
    assert MARK not in source  # never a repr, only weak refs
    assert CALLS == {}


def test_frozenset_of_user_objects_is_not_compared_by_value():
    h = Hostile()
    x = torch.randn(2)
    members = frozenset({h})  # hashing h here is the test's own doing
    CALLS.clear()

    def uses(x, s):
        return x * 2

    compiled, _ = compile_counted(uses)
    assert_same(compiled(x, members), uses(x, members))
    assert_same(compiled(x, members), uses(x, members))
    assert not any(
        "== " in line and "L['s']" in line
        for line in bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    )
    assert CALLS == {}
