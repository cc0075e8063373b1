"""Kernels per model: the triton backend beside Inductor's Triton code generator, without a GPU.

    python -m benchmarks.kernel_counts [--models nanogpt,bert] [--modes infer,train] [--full]

For each model of ``model_zoo`` (smoke sizes unless ``--full``) and mode (inference; a training
step: forward and backward), one step runs, in a process of its own, under:

- ``bytegraph.compile(model, backend="triton")``;
- ``torch.compile(model)`` with ``torch._inductor.config.cpu_backend = "triton"``: Inductor's
  scheduler and Triton code generator (as for a GPU) on CPU tensors.

What is counted is kernel launches in the step (a kernel two layers share counts twice, for both
systems). Neither system's kernels are compiled or run: each compiled kernel is a stand-in whose
``run`` counts the launch (ours: what triton's ``JITFunction.warmup`` hands the launcher;
Inductor's: what its wrapper's ``AsyncCompile.triton`` defines), so outputs are meaningless and
only the counts are reported. The
counts are Inductor's decisions for CPU tensors, which on a GPU differ in details that keep the
count (a linear's bias moves from the matmul into the next kernel there). Exits 1 when a model
needs more of our kernels than Inductor's.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "0"  # code for a GPU; before triton is imported anywhere
# Inductor compiles in this process: its pool of compile workers hung here on torch 2.11 (the
# child waiting on a worker that never answered), and nothing is compiled for a GPU anyway
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402
from bytegraph.backends.triton.compile import compile_triton  # noqa: E402
from torch._inductor.async_compile import AsyncCompile  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

import bytegraph  # noqa: E402
from benchmarks.launch_overhead import StubDriver  # noqa: E402
from benchmarks.model_zoo import MODELS  # noqa: E402
from benchmarks.models_gpu import make_step  # noqa: E402

LAUNCHES = [0]  #: kernel launches so far in this process


class _NoKernel:
    """What a compiled kernel becomes when only its launches matter: ``run`` counts them, every
    other call does nothing."""

    def __getattr__(self, name: str) -> Any:
        if name == "run":
            return _count_launch
        return lambda *args, **kwargs: None


def _count_launch(*args: Any, **kwargs: Any) -> None:
    LAUNCHES[0] += 1


def ours(model: torch.nn.Module, work: Any, inputs: tuple, mode: str) -> int:
    """Kernels of one step under the triton backend."""
    compiled: list[Any] = []

    def backend(gm: torch.fx.GraphModule, example: list[Any]) -> Any:
        compiled.append(compile_triton(gm, example))
        return compiled[-1]

    make_step(bytegraph.compile(model, backend=backend), work, inputs, mode)()
    bytegraph.reset()
    return LAUNCHES[0]


def inductor(model: torch.nn.Module, work: Any, inputs: tuple, mode: str) -> int:
    """Kernels of one step under ``torch.compile`` generating Triton code."""

    def triton_kernel(self: Any, kernel_name: str, source_code: str, *args: Any, **kw: Any) -> Any:
        return _NoKernel()

    torch._dynamo.reset()
    saved = AsyncCompile.triton
    AsyncCompile.triton = triton_kernel
    try:
        with inductor_config.patch(cpu_backend="triton", fx_graph_cache=False):
            make_step(torch.compile(model), work, inputs, mode)()
    finally:
        AsyncCompile.triton = saved
        torch._dynamo.reset()
    return LAUNCHES[0]


SYSTEMS = {"bytegraph": ours, "inductor": inductor}


def count_one(name: str, mode: str, system: str, full: bool) -> int:
    """Kernels of one step of ``name`` in ``mode`` under ``system`` (in this process)."""
    driver.set_active(StubDriver())
    JITFunction.warmup = lambda self, *args, **kwargs: _NoKernel()  # counted, never compiled
    torch.manual_seed(0)
    work = MODELS[name](not full)
    model = work.model.train(mode == "train")
    inputs = work.inputs(torch.device("cpu"), torch.float32)
    return SYSTEMS[system](model, work, inputs, mode)


def count(names: list[str], modes: list[str], full: bool) -> list[tuple[str, str, int, int]]:
    """(model, mode, our kernels, Inductor's) per case, each counted in a fresh process (what
    one compile leaves behind changes what the next one compiles)."""
    rows = []
    for name in names:
        for mode in modes:
            counts = []
            for system in SYSTEMS:
                argv = [sys.executable, "-m", "benchmarks.kernel_counts", "--one", name, mode]
                done = subprocess.run(
                    [*argv, system, *(["--full"] if full else [])],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                )
                counts.append(int(done.stdout.strip().splitlines()[-1]))
            rows.append((name, mode, *counts))
            print(f"| {name} | {mode} | {counts[0]} | {counts[1]} |", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--full", action="store_true", help="the GPU benchmark's sizes")
    parser.add_argument(
        "--one", nargs=3, metavar=("MODEL", "MODE", "SYSTEM"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.one:
        print(count_one(*args.one, args.full))
        return 0
    print("| model | mode | bytegraph kernels | inductor kernels |")
    print("| --- | --- | --- | --- |")
    rows = count(args.models.split(","), args.modes.split(","), args.full)
    more = [r for r in rows if r[2] > r[3]]
    print(f"{len(more)} of {len(rows)} cases need more kernels than Inductor's")
    return 1 if more else 0


if __name__ == "__main__":
    sys.exit(main())
