"""The dispatcher over several variants: which it tries first, and what their guards share.

Equal checks written by different traces are one condition (the closure values they compare with
are named by value), tested once before the variants branch.
"""

from __future__ import annotations

import torch
from bytegraph.guards import kinds
from difftest import assert_same, compile_counted

import bytegraph


def _scaled(t):
    return t * 2


def test_function_guard_is_shared_by_variants():
    def fn(x, helper, mode):
        y = helper(x)
        return torch.relu(y) if mode == "relu" else torch.tanh(y)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for mode in ("relu", "tanh"):
        assert_same(compiled(x, _scaled, mode), fn(x, _scaled, mode))
    assert counter.frame_count == 2
    source = bytegraph.guard_source(compiled)
    alike = [line for line in source.splitlines() if "___alike_function(helper" in line]
    assert len(alike) == 1, source
    assert "___made_of_1" not in source
    # tested before the variants branch: in the conditions every variant has
    entries = bytegraph.cache_entries(compiled)
    assert all(any("alike_function" in p.code for p in v.guards.parts) for v in entries)
    assert source.index("___alike_function(helper") < source.index("mode == ")


def test_equal_constants_of_two_traces_are_one_name():
    table = kinds.ConstTable()
    assert table.name(tuple(["a", 1])) == table.name(tuple(["a", 1]))
    assert table.name((int, str)) == table.name((int, str))
    # exact types and zero signs tell values apart
    assert table.name((1,)) != table.name((True,)) != table.name((1.0,))
    assert table.name((0.0,)) != table.name((-0.0,))
    # a mutable value is its own object
    assert table.name([1]) != table.name([1])
