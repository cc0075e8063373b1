"""The dispatcher is generated at the first call after a change, not at each compile, and after a
run of compiles with no entry reused between them, at the first call that reuses one.

Until then a call is answered entry by entry (``FunctionCache._select_stale``), which selects what
the dispatcher would: every call is compared with eager, compiles are counted, and the number of
dispatchers generated (``FunctionCache.counter``) is asserted.
"""

from __future__ import annotations

import gc
import threading

import pytest
import torch
from bytegraph.guards import kinds
from bytegraph.guards.cache import FunctionCache, Variant
from bytegraph.guards.sources import LocalSource
from bytegraph.tracer import driver
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph

MODES = ("relu", "tanh", "sigmoid", "exp")


def by_mode(x, mode):
    return getattr(torch, mode)(x) + 1


def test_the_call_after_a_first_compile_generates_it():
    compiled, counter = compile_counted(by_mode)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    assert_same(compiled(x, "relu"), by_mode(x, "relu"))
    assert cache.counter == 0  # not at the compile
    for _ in range(3):
        assert_same(compiled(x, "relu"), by_mode(x, "relu"))
    assert counter.frame_count == 1 and cache.counter == 1


def test_compiles_in_a_row_generate_only_the_first_entry_dispatcher():
    compiled, counter = compile_counted(by_mode)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    for mode in MODES:  # each call misses: a new entry each time
        assert_same(compiled(x, mode), by_mode(x, mode))
    assert counter.frame_count == len(MODES) and len(cache.variants) == len(MODES)
    assert cache.counter == 1  # by the second call, which missed; none for the run after it


def test_the_first_call_reusing_an_entry_generates_it_once():
    compiled, counter = compile_counted(by_mode)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    for mode in MODES:
        compiled(x, mode)
    for _ in range(3):
        for mode in reversed(MODES):
            assert_same(compiled(x, mode), by_mode(x, mode))
    assert counter.frame_count == len(MODES)
    assert cache.counter == 2
    assert cache.guard_source.startswith("def __guard_by_mode_2(x, mode):")
    assert cache.guard_source.count("return ___variant_") == len(MODES)


def test_a_recompile_makes_it_stale_and_the_next_call_generates_it_again():
    compiled, counter = compile_counted(by_mode)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    compiled(x, "relu")
    compiled(x, "relu")
    assert cache.counter == 1
    for mode in ("tanh", "exp"):
        assert_same(compiled(x, mode), by_mode(x, mode))  # a miss: compiles
        assert_same(compiled(x, mode), by_mode(x, mode))
        assert_same(compiled(x, "relu"), by_mode(x, "relu"))
    assert counter.frame_count == 3 and cache.counter == 3
    assert "___variant_2" in cache.guard_fn.__guard_source__


def test_why_answers_before_the_dispatcher_is_generated():
    compiled, _ = compile_counted(by_mode)
    x = torch.randn(3)
    compiled(x, "relu")
    compiled(x, "tanh")
    compiled(x, "exp")
    assert bytegraph.state_of(compiled).cache.counter == 1  # over the first entry only
    assert str(bytegraph.why(compiled, x, "tanh")) == (
        "selected: entry 1\nentry 0 rejected by: L['mode'] == 'relu'"
    )
    assert str(bytegraph.why(compiled, x, "sigmoid")).startswith("selected: none (would compile)")


def test_past_the_recompile_limit_misses_run_eagerly_from_the_generated_dispatcher():
    compiled, counter = compile_counted(by_mode, recompile_limit=2)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    with pytest.warns(UserWarning, match="hit recompile_limit"):
        for mode in MODES:
            assert_same(compiled(x, mode), by_mode(x, mode))
    assert counter.frame_count == 2
    assert cache.counter == 2  # the second call's, and the one that selected on_no_match
    assert "return ___no_match" in cache.guard_fn.__guard_source__
    for mode in MODES:
        assert_same(compiled(x, mode), by_mode(x, mode))
    assert counter.frame_count == 2 and cache.counter == 2


def _stages(x, coefficients):
    """A loop with a graph break in its body (a Runge-Kutta step's stages): the resume function
    is entered at each iteration with fewer items left, a new entry each time."""
    for c in coefficients:
        x = x * c
        print("stage")
        x = x + 1
    return x


def test_a_loop_resumed_at_each_iteration_generates_its_dispatcher_when_reused():
    coefficients = [0.5, 1.5, 2.0, 3.0, 0.25, 4.0]
    compiled, counter, _ = check_breaks(
        _stages, lambda: (torch.ones(3), coefficients), graphs=7, breaks=6, calls=3
    )
    assert_no_more_breaks(
        6,
        _stages,
        torch.ones(3),
        coefficients,
        baseline_missing="torch.compile runs a frame whose loop body breaks in Python",
    )
    root = bytegraph.state_of(compiled).serial
    resumes = [s for s in driver.ALL if s.root_serial == root and s.serial != root]
    loop = max(resumes, key=lambda s: len(s.cache.variants))
    assert len(loop.cache.variants) == len(coefficients)
    # by its second call (a miss), then by the second call of _stages: not after each compile
    assert loop.cache.counter == 2


def test_an_entry_that_dies_before_the_dispatcher_is_generated_is_dropped():
    class Thing:
        pass

    cache = FunctionCache("f", {}, {}, ("o",))
    a, b = Thing(), Thing()
    for obj in (a, b):
        guard_set = cache.new_guard_set([kinds.ID_MATCH(LocalSource("o"), obj)])
        ident = id(obj)
        cache.add(Variant(guard_set, lambda ident=ident: ident))
    assert cache.counter == 0
    del a
    gc.collect()
    assert [v.index for v in cache.variants] == [0]
    assert cache.guard_fn(b)() == id(b)
    assert cache.counter == 1
    assert cache.guard_source.count("___variant_") == 1


def test_threads_reusing_a_stale_entry_generate_it_once():
    compiled, counter = compile_counted(by_mode)
    cache = bytegraph.state_of(compiled).cache
    x = torch.randn(3)
    for mode in MODES:
        compiled(x, mode)
    results: dict[tuple[int, int], torch.Tensor] = {}
    start = threading.Barrier(4)

    def call(n: int) -> None:
        start.wait()
        for i, mode in enumerate(MODES * 5):
            results[n, i] = compiled(x, mode)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (_, i), result in results.items():
        assert_same(result, by_mode(x, (MODES * 5)[i]))
    assert len(results) == 4 * 5 * len(MODES)
    assert counter.frame_count == len(MODES) and cache.counter == 2
