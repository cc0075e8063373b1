"""The dispatcher over several variants: which it tries first, and what their guards share.

The newest variant is tried first, and a match moves none (calls alternating between two would
generate the dispatcher at each call); ``why`` tries them in the same order. Equal checks
written by different traces are one condition (the closure values they compare with are named by
value), tested once before the variants branch.
"""

from __future__ import annotations

import torch
from bytegraph.guards import kinds
from bytegraph.guards.cache import FunctionCache, Variant
from bytegraph.guards.sources import LocalSource
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


#: the global state the variants of ``_counting_cache`` are told apart by
_MODE = [0]


def _counting_cache(checks: list[int], modes: tuple[int, ...]) -> FunctionCache:
    """A cache over ``fn(x)`` with one variant per mode (added in ``modes`` order), each guarded
    by ``___mode_M() == M``: a getter that reads ``_MODE`` and appends ``M`` to ``checks``, so
    that ``checks`` lists the variants whose guards ran, in the order they ran."""
    cache = FunctionCache("f", {}, {}, ("x",))
    for mode in modes:

        def getter(mode=mode):
            checks.append(mode)
            return _MODE[0]

        getter.__name__ = f"mode_{mode}"
        guards = [
            kinds.TYPE_MATCH(LocalSource("x"), int),
            kinds.GLOBAL_STATE(None, (("mode", mode), getter, mode)),
        ]
        cache.add(Variant(cache.new_guard_set(guards), lambda x, mode=mode: mode))
    return cache


def _select(cache: FunctionCache, mode: int) -> int:
    _MODE[0] = mode
    return cache.select({"x": 1})(1)


def test_newest_variant_is_tried_first():
    checks: list[int] = []
    cache = _counting_cache(checks, (0, 1, 2))
    assert _select(cache, 2) == 2
    assert checks == [2]  # the newest only: no older variant's guards ran
    assert [v.index for v in cache.order] == [2, 1, 0]
    assert str(cache.why({"x": 1})) == "selected: entry 2"


def test_a_match_moves_no_variant():
    """Calls alternating between two variants (modules sharing a ``forward``, each its own
    variant) keep the order and the dispatcher: nothing is generated again per call."""
    checks: list[int] = []
    cache = _counting_cache(checks, (0, 1))
    generated = cache.counter
    for n in range(6):
        assert _select(cache, n % 2) == n % 2
    assert [v.index for v in cache.order] == [1, 0]
    assert cache.counter == generated
    checks.clear()
    assert _select(cache, 0) == 0
    assert checks == [1, 0]  # the newest's guards, then the older one's
    # why() tries them in the same order, and reports the rejections oldest first
    assert str(cache.why({"x": 1})).splitlines() == [
        "selected: entry 0",
        "entry 1 rejected by: ___mode_1() == 1",
    ]
