"""The random differential programs of ``programs.py`` in CI: 300 fixed seeds in 3 chunks. Every
program must give the same observable behaviour compiled as eagerly (0 wrong results, 0 internal
errors, raised or as a fallback); a clean fallback to eager is allowed, counted, and stays under 5%
of each chunk's programs.

Fresh seeds, in parallel, saving each failing program for reproduction::

    python benchmarks/fuzz.py -n 20000 -j 2 [--seed S] [--minimize] [--out DIR]
"""

from __future__ import annotations

import warnings

import pytest
from fuzz import programs

CHUNKS, PER_CHUNK = 3, 100


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_match_eager_and_rarely_fall_back(chunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks warn; they are counted instead
        summary = programs.run_many(range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK))
    print(f"\nfuzz chunk {chunk}: {summary.line()}")
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


def test_generator_is_deterministic_per_seed():
    assert programs.generate(123).source == programs.generate(123).source
    assert programs.generate(123).source != programs.generate(124).source


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
