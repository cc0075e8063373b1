"""The random differential programs of ``programs.py`` in CI: 1,000 fixed seeds in 10 chunks. Every
program must give the same observable behaviour compiled as eagerly (0 wrong results, 0 compiler
crashes); a clean fallback to eager is allowed and counted. ``benchmarks/fuzz.py`` runs 50,000 fresh
seeds and minimises what it finds."""

from __future__ import annotations

import warnings

import pytest
from fuzz import programs

CHUNKS, PER_CHUNK = 10, 100
#: Totals over the chunks that ran, reported by the last test.
TOTALS = programs.Summary()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_match_eager(chunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks warn; they are counted instead
        summary = programs.run_many(range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK))
    TOTALS.programs += summary.programs
    TOTALS.fallback_programs += summary.fallback_programs
    TOTALS.internal += summary.internal
    wrong = [(seed, msg) for seed, msg in summary.failures if msg != "internal error fallback"]
    assert not wrong, f"programs differing from eager (seed, difference): {wrong}"


def test_fallback_rate_is_reported_and_small():
    if TOTALS.programs == 0:
        pytest.skip("no chunk ran in this session")
    print(
        f"\nfuzz: {TOTALS.programs} programs, fallback rate {TOTALS.fallback_rate:.2%}, "
        f"internal-error fallbacks {TOTALS.internal}"
    )
    assert TOTALS.fallback_rate < 0.05


def test_generator_is_deterministic_per_seed():
    assert programs.generate(123).source == programs.generate(123).source
    assert programs.generate(123).source != programs.generate(124).source
