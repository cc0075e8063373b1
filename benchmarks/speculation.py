"""Speculation on branches on tensor data: speed over eager of bytegraph (speculating, and not) and
of torch.compile, on code whose branch pattern repeats from call to call.

    python -m benchmarks.speculation [--calls 200] [--backend eager]

Cases: a fixed-grid RK4 solver on the same grid (``while j < len(t) and t1 >= t[j]``, ``if t0 ==
t[0]``), a ``while mask.any():`` loop that converges in the same number of steps, and a
torch.distributions log-likelihood with ``validate_args=True`` that passes. Each engine compiles
with the backend given (``eager`` by default, so the figures measure the Python a call costs: the
guards, the tracer's rewritten code, Dynamo's frames and breaks). For each case the table prints
the graphs and breaks of one call (bytegraph's from its ``explain``, torch.compile's from
``torch._dynamo.explain``), then the median ms per call of eager and each engine and the speedup
over eager. Every compiled result is compared with eager's before timing.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

import bytegraph


def _rk4_step(func: Callable, t: torch.Tensor, dt: float, y: torch.Tensor) -> torch.Tensor:
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def _dynamics(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return -0.5 * y + torch.sin(t) * y.tanh()


def fixed_grid_solve(y0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """A fixed-step solver as ODE libraries write it (interpolating onto the output grid)."""
    dt = 0.05
    solution = torch.empty(len(t), *y0.shape, dtype=y0.dtype)
    j = 0
    t0, y = t[0], y0
    if t0 == t[0]:
        solution[0] = y0
        j = 1
    while j < len(t):
        t1 = t0 + dt
        y1 = _rk4_step(_dynamics, t0, dt, y)
        while j < len(t) and t1 >= t[j]:
            solution[j] = y + (y1 - y) * (t[j] - t0) / dt
            j += 1
        t0, y = t1, y1
    return solution


def halve_until_small(x: torch.Tensor) -> torch.Tensor:
    mask = x.abs() > 1
    while mask.any():
        x = torch.where(mask, x / 2, x)
        mask = x.abs() > 1
    return x


def validated_log_likelihood(loc: torch.Tensor, scale: torch.Tensor, x: torch.Tensor):
    d = torch.distributions.Normal(loc, scale, validate_args=True)
    total = d.log_prob(x).sum()
    if total < -1e4:  # a branch on the data, taken the same way on every call
        total = total / 2
    return total, d.entropy().sum()


CASES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "fixed-grid RK4 (same grid)": (
        fixed_grid_solve,
        lambda: (torch.randn(16), torch.linspace(0.0, 1.0, 11)),
    ),
    "while mask.any() (converges)": (
        halve_until_small,
        lambda: (torch.tensor([300.0, -9.0, 0.5, 40.0]).repeat(8),),
    ),
    "distributions, validate_args": (
        validated_log_likelihood,
        lambda: (torch.zeros(64), torch.ones(64), torch.randn(64)),
    ),
}


def _median_ms(fn: Callable, args: tuple, calls: int) -> float:
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    return torch.allclose(a, b, equal_nan=True)


def _torch_compile_counts(fn: Callable, args: tuple) -> tuple[int, int]:
    import torch._dynamo

    torch._dynamo.reset()
    report = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    return report.graph_count, report.graph_break_count


def run(calls: int, backend: str) -> None:
    header = f"{'case':30} {'engine':22} {'graphs':>6} {'breaks':>6} {'ms/call':>9} {'speedup':>8}"
    print(header)
    print("-" * len(header))
    for name, (fn, make) in CASES.items():
        args = make()
        expected = fn(*args)
        eager_ms = _median_ms(fn, args, calls)
        print(f"{name:30} {'eager':22} {'':>6} {'':>6} {eager_ms:9.3f} {1.0:8.2f}")
        for speculate in (True, False):
            bytegraph.reset()
            with bytegraph.config.patch(speculate=speculate):
                report = bytegraph.explain(fn)(*args)
                compiled = bytegraph.compile(fn, backend=backend)
                assert _same(compiled(*args), expected), f"{name}: bytegraph differs from eager"
                ms = _median_ms(compiled, args, calls)
            engine = f"bytegraph{' speculate' if speculate else ''}"
            counts = f"{report.graph_count:6} {report.graph_break_count:6}"
            print(f"{'':30} {engine:22} {counts} {ms:9.3f} {eager_ms / ms:8.2f}")
        torch._dynamo.reset()
        graphs, breaks = _torch_compile_counts(fn, args)
        compiled = torch.compile(fn, backend=backend)
        assert _same(compiled(*args), expected), f"{name}: torch.compile differs from eager"
        ms = _median_ms(compiled, args, calls)
        print(f"{'':30} {'torch.compile':22} {graphs:6} {breaks:6} {ms:9.3f} {eager_ms / ms:8.2f}")
        torch.distributions.Distribution.set_default_validate_args(True)  # torch.compile clears it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--backend", default="eager")
    options = parser.parse_args()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(options.calls, options.backend)


if __name__ == "__main__":
    main()
