"""Per-call overhead of bytegraph and ``torch.compile(backend="eager")`` on tiny functions.

Overhead is what a compiled call costs beyond the plain eager call: guard evaluation, dispatch and
the call into the graph. Tensors are tiny (4 elements) so the tensor work itself is as small as it
gets. Each case is compiled by both systems in this one process and warmed up; then eager, bytegraph
and torch.compile are timed in interleaved rounds (``timeit``, ``--number`` calls per sample),
keeping the minimum per-call time of each (the least disturbed by other processes).

Run::

    python benchmarks/overhead.py           # the table, then the ratio bytegraph / torch.compile
    python benchmarks/overhead.py --quick       # fewer iterations (a smoke run)

A case is ``Case(name, fn, make_args, compile_kwargs)``: dynamic-shape cases (issue 4) add entries
to ``CASES`` with ``compile_kwargs={"dynamic": True}`` and arguments whose sizes vary per call.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import bytegraph


def add1(a):
    return a + 1


def add2(a, b):
    return a + b


def add4(a, b, c, d):
    return (a + b) * (c - d)


def add6(a, b, c, d, e, f):
    return (a + b) * (c - d) + e * f


def scale(a, n):
    return a * n + a.shape[0]


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple]  #: fresh arguments (same metadata every call: no recompiles)
    compile_kwargs: dict[str, Any] = field(default_factory=dict)  #: for both compilers


def tensors(n: int) -> Callable[[], tuple]:
    return lambda: tuple(torch.randn(4) for _ in range(n))


CASES = [
    Case("1 tensor", add1, tensors(1)),
    Case("2 tensors", add2, tensors(2)),
    Case("4 tensors", add4, tensors(4)),
    Case("6 tensors", add6, tensors(6)),
    # dynamic shapes: sizes and ints traced symbolically (guards include shape expressions)
    Case("2 dyn", add2, tensors(2), {"dynamic": True}),
    Case("6 dyn", add6, tensors(6), {"dynamic": True}),
    Case("int dyn", scale, lambda: (torch.randn(4), 3), {"dynamic": True}),
]


def per_call_us(fn: Callable[..., Any], args: tuple, number: int) -> float:
    """Microseconds per call of one timing sample of ``number`` calls."""
    return timeit.timeit(lambda: fn(*args), number=number) / number * 1e6


def measure(case: Case, number: int, repeat: int) -> dict[str, float]:
    """Minimum per-call time (us) of eager, bytegraph and torch.compile, timed in interleaved
    rounds."""
    args = case.make_args()
    torch._dynamo.reset()
    runners = {
        "eager": case.fn,
        "bytegraph": bytegraph.compile(case.fn, backend="eager", **case.compile_kwargs),
        "torch.compile": torch.compile(case.fn, backend="eager", **case.compile_kwargs),
    }
    expected = case.fn(*args)
    for name, run in runners.items():
        for _ in range(3):  # compile, then settle caches
            torch.testing.assert_close(run(*args), expected, msg=f"{name} differs from eager")
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for name, run in runners.items():
            best[name] = min(best[name], per_call_us(run, args, number))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=5000, help="calls per timing sample")
    parser.add_argument("--repeat", type=int, default=15, help="samples per system (min kept)")
    parser.add_argument("--quick", action="store_true", help="--number 200 --repeat 3")
    opts = parser.parse_args()
    number, repeat = (200, 3) if opts.quick else (opts.number, opts.repeat)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {number} calls x {repeat} samples, min per call (us)")
    header = (
        f"{'case':<10} {'eager':>8} {'bytegraph':>10} {'torch.compile':>14} "
        f"{'bg overhead':>12} {'tc overhead':>12} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for case in CASES:
        t = measure(case, number, repeat)
        bg, tc = t["bytegraph"] - t["eager"], t["torch.compile"] - t["eager"]
        ratio = bg / tc if tc > 0 else float("nan")
        ratios.append(ratio)
        print(
            f"{case.name:<10} {t['eager']:8.2f} {t['bytegraph']:10.2f} "
            f"{t['torch.compile']:14.2f} {bg:12.2f} {tc:12.2f} {ratio:6.2f}"
        )
    print(
        f"\nbytegraph overhead / torch.compile overhead: max {max(ratios):.2f}, "
        f"mean {sum(ratios) / len(ratios):.2f} (target <= 0.5)"
    )


if __name__ == "__main__":
    main()
