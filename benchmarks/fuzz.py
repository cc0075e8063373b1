"""Run many random differential programs (``tests/fuzz/programs.py``) with fresh seeds.

    python benchmarks/fuzz.py                 # 50,000 programs from a random starting seed
    python benchmarks/fuzz.py -n 2000 --seed 7

Each failure (a difference from eager, or a fallback caused by an internal error) is minimised and
written to ``benchmarks/fuzz_failures/seed_<n>.py``; turn each into a test in
``tests/fuzz/test_regressions.py``. Prints programs run, fallback rate and failures.
"""

from __future__ import annotations

import argparse
import pathlib
import random
import sys
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "fuzz"))

import programs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    parser.add_argument("--out", default=str(HERE / "fuzz_failures"))
    args = parser.parse_args()
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6, 10**9)
    out = pathlib.Path(args.out)
    start = time.time()

    def on_failure(program, outcome):
        small = programs.minimize(program)
        out.mkdir(exist_ok=True)
        path = out / f"seed_{program.seed}.py"
        path.write_text(f"# {outcome.message or 'internal error fallback'}\n{small.source}")
        print(
            f"seed {program.seed}: {outcome.message or 'internal error fallback'} -> {path}",
            flush=True,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = programs.Summary()
        for lo in range(first, first + args.n, 1000):
            part = programs.run_many(range(lo, min(lo + 1000, first + args.n)), on_failure)
            summary.programs += part.programs
            summary.fallback_programs += part.fallback_programs
            summary.internal += part.internal
            summary.failures += part.failures
            print(
                f"{summary.programs} programs, {len(summary.failures)} failures, "
                f"fallback rate {summary.fallback_rate:.2%}, {time.time() - start:.0f}s",
                flush=True,
            )
    print(
        f"seeds {first}..{first + args.n - 1}: {summary.programs} programs, "
        f"fallback rate {summary.fallback_rate:.2%}, internal-error fallbacks {summary.internal}, "
        f"failures {len(summary.failures)}"
    )
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
