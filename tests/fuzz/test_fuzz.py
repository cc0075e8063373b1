"""The random differential programs of ``programs.py`` in CI: fixed seeds in chunks of each family
(``base``; ``branch``: branches on tensor data whose outcome changes between calls, with
speculation on; ``keys``: dict keys, set items and comparison operands of every kind; ``python``:
Python's semantics around breaks). Every program
must give the same observable behaviour compiled as eagerly (0 wrong results, 0 internal errors,
raised or as a fallback); a clean fallback to eager is allowed, counted, and stays under 5% of each
chunk's programs.

Fresh seeds, in parallel, saving each failing program for reproduction::

    python benchmarks/fuzz.py -n 20000 -j 2 [--family new] [--seed S] [--minimize] [--out DIR]
"""

from __future__ import annotations

import warnings

import pytest
from fuzz import programs

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)

#: (family, first seed, programs) per chunk; the branch family's programs make 5 calls, not 3
CHUNKS = [
    ("base", 0, 70),
    ("base", 70, 70),
    ("base", 140, 70),
    ("branch", 0, 35),
    ("branch", 35, 35),
    ("keys", 0, 50),
    ("closures", 0, 40),
    ("python", 0, 40),
]


@pytest.mark.parametrize(("family", "first", "count"), CHUNKS)
def test_random_programs_match_eager_and_rarely_fall_back(family, first, count):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks warn; they are counted instead
        summary = programs.run_many(range(first, first + count), family=family)
    print(f"\nfuzz {family} seeds {first}..{first + count - 1}: {summary.line()}")
    assert not summary.failures, (
        f"wrong results or internal errors (seed, what): {summary.failures}"
    )
    assert summary.fallback_rate < 0.05


def test_generator_updates_inputs_in_place():
    bodies = ["\n".join(programs.generate(seed).body) for seed in range(100)]
    assert sum("out=" in b for b in bodies) >= 5
    assert (
        sum(
            any(f"{t}.{op}_(" in b for t in ("x", "y") for op in ("add", "mul", "sub", "clamp"))
            for b in bodies
        )
        >= 10
    )
    assert sum("v = " in b and "v.mul_(" in b for b in bodies) >= 5  # views of inputs


def _drops_in_place_updates_of_x(fn, **kwargs):
    """A fake compile whose function updates a copy of its first input."""

    def run(x, *args):
        return fn(x.clone(), *args)

    return run


def test_harness_catches_a_dropped_in_place_update(monkeypatch):
    monkeypatch.setattr(programs.bytegraph, "compile", _drops_in_place_updates_of_x)
    outcome = programs.run_program(programs.Program(0, [], ["x.add_(1)", "a = a * 1"]))
    assert not outcome.ok and "['x']" in outcome.message, outcome.message
    outcome = programs.run_program(programs.Program(0, [], ["torch.mul(y, 2, out=x)"]))
    assert not outcome.ok and "['x']" in outcome.message, outcome.message


def test_branch_family_speculates_and_misses():
    """The branch family's conditions read tensor data that changes from call to call: traces
    speculate on them (speculation is on for this family only), and later calls miss."""
    bodies = ["\n".join(programs.generate(seed, "branch").body) for seed in range(100)]
    assert sum("while " in b for b in bodies) >= 10
    assert sum("assert " in b for b in bodies) >= 10
    assert sum(".item()" in b for b in bodies) >= 10
    assert sum("torch._is_all_true(" in b or "torch._is_any_true(" in b for b in bodies) >= 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = programs.run_many(range(200, 206), family="branch")
        assert not summary.failures, summary.failures
        assert summary.speculated[0] > 0
        body = ["if x.sum() > 0:\n    a = a + 1"]  # seed 3: the sum's sign flips between calls
        speculating = programs.run_program(programs.Program(3, [], body, "branch"))
        plain = programs.run_program(programs.Program(3, [], body, "base"))
    sites, hits, misses = speculating.speculation
    assert speculating.ok and speculating.breaks == 0 and sites == 1 and hits and misses
    assert plain.ok and plain.speculation == (0, 0, 0) and plain.breaks > 0


def test_keys_family_draws_from_the_whole_catalogue():
    bodies = "\n".join("\n".join(programs.generate(seed, "keys").body) for seed in range(300))
    unused = [k for k in programs.KEY_EXPRS if k not in bodies]
    assert not unused


def test_harness_compares_keys_of_every_kind_across_namespaces():
    """Classes, functions, objects and NaN as keys of the input dict: equal across the eager and
    compiled namespaces when the same program put them there, and a wrong key is caught."""
    body = ["d[Plain] = 1", "d[PLAIN] = 2", "d[NAN] = 3", "d[math] = 4", "d[Color.RED] = 5"]
    assert programs.run_program(programs.Program(0, [], body, "keys")).ok

    def swaps_a_key(fn, **kwargs):
        def run(x, y, n, lst, d, obj):
            result = fn(x, y, n, lst, d, obj)
            d[fn.__globals__["Keyed"](9)] = d.pop(fn.__globals__["PLAIN"], None)
            return result

        return run

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(programs.bytegraph, "compile", swaps_a_key)
        outcome = programs.run_program(programs.Program(0, [], ["d[PLAIN] = 2"], "keys"))
    assert not outcome.ok and "['d']" in outcome.message, outcome.message


def test_generator_is_deterministic_per_seed():
    assert programs.generate(123).source == programs.generate(123).source
    assert programs.generate(123).source != programs.generate(124).source


def test_recursive_helpers_stay_far_from_the_recursion_limit():
    """Seed 15429334 (python family) called ``gen_walk(lst, j)`` with ``j`` about 1100, and the
    generator delegated to itself ``j`` deep: ``RecursionError`` in every run, raised a few frames
    earlier compiled (resume functions run under the frame they resume), so compiled and eager
    appended to ``G_list`` a different number of times. Where CPython raises it is not part of
    what compiled code keeps, so the helpers' depth is bounded instead."""
    program = programs.generate(15429334, "python")
    ns = programs.load(program)
    walked = list(ns["gen_walk"]([1, 2], 10**6))
    assert len(walked) == 2 + programs.GEN_DEPTH
    outcome = programs.run_program(program)
    assert outcome.ok, outcome.message


def test_programs_that_fall_back_call_their_helpers_compiled(monkeypatch):
    """Each program's function made to fall back (its trace fails at once): its code runs in
    Python, routed (``codegen/route_calls.py``), so the helpers, methods and modules it calls run
    compiled on their own. Same behaviour as eager, and those callees are traced."""
    from bytegraph.tracer import convert, driver

    traced = convert.convert_call

    def failing_at_the_top(fn, *args, **kwargs):
        if fn.__code__.co_name == "f" and fn.__qualname__ == "make.<locals>.f":
            raise KeyError("a trace that fails")
        return traced(fn, *args, **kwargs)

    monkeypatch.setattr(convert, "convert_call", failing_at_the_top)
    callees = 0
    for seed in range(1000, 1080):  # 80 programs: about 34 callees
        before = dict(driver.COUNTERS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = programs.run_program(programs.generate(seed))
        assert outcome.ok, (seed, outcome.message)
        frames = driver.COUNTERS["frames"] - before.get("frames", 0)
        assert (
            driver.COUNTERS["fallback:internal_error"] - before.get("fallback:internal_error", 0)
            == 1
        )
        callees += frames - 1
    assert callees >= 30  # helpers and methods, traced on their own
