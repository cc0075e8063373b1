"""CPU cost of launching one generated kernel, with the driver call stubbed out: no GPU needed.

    python -m benchmarks.launch_overhead [--calls 20000]   # the table
    python -m benchmarks.launch_overhead --check           # exits 1 if a launch path disagrees
    python -m benchmarks.launch_overhead --resources [--cases softmax,layer]  # registers, spills

Kernels are really compiled for an H100 (``sm_90``; triton ships ``ptxas``): a stand-in for
triton's driver (``StubDriver``) answers device and stream queries, "loads" the binary and hands
each compiled kernel a launcher that only records its call. So everything above the driver runs
as it would on the GPU, and what is timed per launch is exactly the Python a launch costs:

- ``bytegraph entry``: the backend's launcher as the wrapper calls it (``KernelLauncher.entry``);
- ``triton JIT``: ``fn[grid](*args, **meta)``, triton's ``JITFunction`` path;
- ``inductor``: Inductor's launcher for the same compiled kernel (``TritonCompileResult
  .make_launcher`` behind ``CachingAutotuner.run``'s fast path), as its wrapper calls it.

Each row is the fewest ns per call over interleaved repeats, and the ratio to Inductor. ``--check``
compares what the bytegraph entry and triton's JIT pass the driver (grid, stream, kernel,
arguments) on static and dynamic sizes, aligned and misaligned pointers. ``--resources`` compiles
the kernels of ``kernel_bandwidth.py``'s cases at their full sizes for sm_90 and prints each one's
registers per thread, spilled bytes (local memory) and shared memory, read from the cubin with
triton's ``cuobjdump``; it exits 1 if a kernel spills.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "0"  # compiled kernels; before triton is imported anywhere

import argparse  # noqa: E402
import functools  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
import torch.fx  # noqa: E402
import triton  # noqa: E402
import triton.backends.nvidia as nvidia_backend  # noqa: E402
from bytegraph.backends.triton.compile import compile_triton  # noqa: E402
from bytegraph.backends.triton.launch import KernelLauncher  # noqa: E402
from torch._inductor.runtime.triton_heuristics import (  # noqa: E402
    CachingAutotuner,
    TritonCompileResult,
)
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

import bytegraph  # noqa: E402
from benchmarks import kernel_bandwidth  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


class RecordingLaunch:
    """What a compiled kernel's ``run`` becomes: launches nothing; while ``RecordingLaunch.calls``
    is a list, appends (itself, its arguments) to it."""

    calls: list[tuple[Any, tuple]] | None = None

    def __init__(self, src: Any, metadata: Any) -> None:
        pass

    def __call__(self, *args: Any) -> None:
        if RecordingLaunch.calls is not None:
            RecordingLaunch.calls.append((self, args))


class _Utils:
    @staticmethod
    def load_binary(name, kernel, shared, device):
        return 1, 1, 64, 0, 1024  # module, function, registers, spills, max threads

    @staticmethod
    def get_device_properties(device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "warpSize": 32}

    @staticmethod
    def unload_module(module):
        pass


class StubDriver:
    """Triton's driver for an H100 that is not there: queries answered, launches recorded."""

    utils = _Utils()
    launcher_cls = RecordingLaunch

    def __init__(self) -> None:
        self.get_current_device = lambda: 0
        self.get_current_stream = lambda device=None: 7

    def get_current_target(self):
        return TARGET

    def get_active_torch_device(self):
        return torch.device("cpu")

    def is_active(self) -> bool:
        return True

    def get_benchmarker(self):
        raise NotImplementedError


def _graphs() -> dict[str, tuple[Callable, list[torch.Tensor]]]:
    """A few graphs whose kernels differ in pointer and size arguments."""
    return {
        "pointwise, 2 pointers": (lambda x: (torch.relu(x * 2 + 1),), [torch.randn(1 << 16)]),
        "pointwise, 4 pointers": (
            lambda x, y, z: (x + y * z,),
            [torch.randn(256, 64), torch.randn(256, 64), torch.randn(64)],
        ),
        "reduction (layer norm)": (
            lambda x, w, b: (torch.nn.functional.layer_norm(x, (64,), w, b),),
            [torch.randn(256, 64), torch.randn(64), torch.randn(64)],
        ),
    }


def compiled_launchers(
    fn: Callable, runs: list[list[torch.Tensor]], dynamic: bool = False
) -> list[list[tuple[KernelLauncher, tuple]]]:
    """Compile ``fn`` with the triton backend for the first inputs of ``runs`` (sizes symbolic with
    ``dynamic``), call it on each, and return per call each kernel's launcher with the arguments
    the wrapper passed it."""
    compiled: list[Any] = []

    def backend(gm: torch.fx.GraphModule, example: list[Any]) -> Any:
        compiled.append(compile_triton(gm, example))
        return compiled[-1]

    run = bytegraph.compile(fn, backend=backend, dynamic=dynamic)
    found = []
    for inputs in runs:
        run(*inputs)  # compiles and prepares the kernels
        calls: dict[int, tuple] = {}
        graphs = compiled[-1].graphs
        for graph in graphs:
            for launcher in graph.kernels:
                graph.call.__globals__[launcher.name] = functools.partial(
                    _record, calls, id(launcher), launcher.entry
                )
        run(*inputs)
        for graph in graphs:
            for launcher in graph.kernels:
                graph.call.__globals__[launcher.name] = launcher.entry
        found.append([(k, calls[id(k)]) for g in graphs for k in g.kernels])
    return found


def _record(calls: dict[int, tuple], key: int, entry: Callable, *args: Any) -> None:
    calls[key] = args
    entry(*args)


def inductor_launcher(launcher: KernelLauncher, args: tuple) -> Callable[..., None]:
    """Inductor's launch path for ``launcher``'s compiled kernel: ``run(*args, stream=)``."""
    (binary,) = launcher.compiled.values()
    meta = dict(launcher.meta)
    num_warps = meta.pop("num_warps")
    cfg = triton.Config(meta, num_warps=num_warps)
    signature = dict(binary.src.signature)
    result = TritonCompileResult(
        binary, cfg, {"constants": dict(meta), "signature": signature}, {"grid_type": "Grid1D"}
    )
    launcher = result.make_launcher()
    tuner = CachingAutotuner.__new__(CachingAutotuner)
    tuner._cached_launcher = launcher
    try:  # CachingAutotuner.run's fast path for a prepared launcher (torch >= 2.13)
        RecordingLaunch.calls = None
        tuner.run(*args, stream=7)
        return tuner.run
    except AttributeError:  # older torch: no fast path, the launcher is the whole hot path
        return launcher


def time_ns(fns: list[Callable[[], None]], calls: int, repeats: int = 7) -> list[float]:
    """Fewest ns per call of each of ``fns`` over ``repeats`` loops of ``calls`` calls; the
    functions take turns, so a busy machine slows them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (time.perf_counter_ns() - start) / calls)
    return best


def measure(calls: int) -> list[tuple[str, float, float, float]]:
    """(kernel, ns per launch: bytegraph entry, triton JIT, inductor) for each kernel."""
    rows = []
    for name, (fn, inputs) in _graphs().items():
        for launcher, args in compiled_launchers(fn, [inputs])[0]:
            ours, jit, meta = launcher.entry, launcher.fn, launcher.meta
            xnumel = args[-2] if launcher.kernel.is_reduction else args[-1]
            grid = (-(-xnumel // meta["XBLOCK"]),)
            inductor = inductor_launcher(launcher, args)
            times = time_ns(
                [
                    lambda: ours(*args),  # noqa: B023
                    lambda: jit[grid](*args, **meta),  # noqa: B023
                    lambda: inductor(*args, stream=7),  # noqa: B023
                ],
                calls,
            )
            rows.append((f"{name}: {launcher.kernel.name}", *times))
    return rows


def resource_usage(binary: Any) -> dict[str, int]:
    """Registers, local (spill) and shared bytes of a compiled kernel, from its cubin."""
    tool = os.path.join(os.path.dirname(nvidia_backend.__file__), "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary.asm["cubin"])
        f.flush()
        text = subprocess.run(
            [tool, "--dump-resource-usage", f.name], capture_output=True, text=True, check=True
        ).stdout
    fields = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", text))
    return {k.lower(): int(v) for k, v in fields.items()}


def resources(names: list[str] | None) -> int:
    """Print each kernel of the bandwidth cases (fp32, bf16) with its resources; 1 if one spills."""
    spills = 0
    print("| case | dtype | kernel | XBLOCK, RBLOCK, warps | registers | spilled bytes | shared |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for dtype_name, dtype in kernel_bandwidth.DTYPES.items():
        for name, (fn, shapes) in kernel_bandwidth.cases(smoke=False).items():
            if names and not any(n in name for n in names):
                continue
            inputs = [torch.empty(shape, dtype=dtype) for shape in shapes]  # never touched
            for launcher, _ in compiled_launchers(fn, [inputs])[0]:
                meta = launcher.meta
                blocks = f"{meta['XBLOCK']}, {meta.get('RBLOCK', '-')}, {meta['num_warps']}"
                for binary in launcher.compiled.values():
                    use = resource_usage(binary)
                    spilled = use.get("local", 0) + use.get("stack", 0)
                    spills += spilled > 0
                    print(
                        f"| {name} | {dtype_name} | {launcher.kernel.name} | {blocks} | "
                        f"{use.get('reg')} | {spilled} | {use.get('shared')} |"
                    )
            bytegraph.reset()
    return 1 if spills else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--resources", action="store_true")
    parser.add_argument("--cases", default="", help="with --resources: case name parts, a,b")
    args = parser.parse_args(argv)
    driver.set_active(StubDriver())
    if args.check:
        return check()
    if args.resources:
        return resources([n for n in args.cases.split(",") if n])
    rows = measure(args.calls)
    print(
        f"ns per launch, driver call stubbed (triton {triton.__version__}, torch "
        f"{torch.__version__}, sm_90 kernels)"
    )
    print(f"{'kernel':<72} {'bytegraph':>9} {'triton JIT':>10} {'inductor':>9} {'ours/ind':>8}")
    for name, ours, jit, ind in rows:
        print(f"{name[:72]:<72} {ours:9.0f} {jit:10.0f} {ind:9.0f} {ours / ind:8.2f}")
    geo = statistics.geometric_mean([r[1] / r[3] for r in rows])
    print(f"geomean bytegraph / inductor: {geo:.2f}")
    return 0


def _driver_call(launch: Callable[[], None]) -> tuple[Any, tuple]:
    """The one driver call ``launch()`` makes: (compiled kernel's launcher, its arguments with
    tensors as addresses, and hooks that would do nothing as None)."""
    RecordingLaunch.calls = []
    try:
        launch()
        ((runner, args),) = RecordingLaunch.calls
    finally:
        RecordingLaunch.calls = None
    grid, stream, function, metadata = args[:3], args[3], args[4], args[5]
    hooks = [h if getattr(h, "calls", True) else None for h in args[7:9]]
    values = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args[9:]]
    return runner, (grid, stream, function, metadata, *hooks, *values)


def check() -> int:
    """The entry and triton's JIT make the same driver call: static sizes, misaligned inputs,
    symbolic sizes whose specialization changes between calls."""
    cases = [(name, fn, [inputs], False) for name, (fn, inputs) in _graphs().items()]
    cases.append(
        (
            "misaligned input",
            lambda x: (x * 3,),
            [[torch.randn(4097)[1:]], [torch.randn(4096)]],
            False,
        )
    )
    cases.append(
        (
            "symbolic sizes",
            lambda x, y: (x.sum(-1) + y,),
            [[torch.randn(n, m), torch.randn(n)] for n, m in ((17, 40), (32, 48), (33, 64))],
            True,
        )
    )
    failures = 0
    for name, fn, runs, dynamic in cases:
        for launchers in compiled_launchers(fn, runs, dynamic):
            for launcher, args in launchers:
                meta = launcher.meta
                xnumel = args[-2] if launcher.kernel.is_reduction else args[-1]
                grid = (-(-xnumel // meta["XBLOCK"]),)
                ours = _driver_call(lambda: launcher.entry(*args))  # noqa: B023
                jit = _driver_call(lambda: launcher.fn[grid](*args, **meta))  # noqa: B023
                same = ours[0] is jit[0] and ours[1] == jit[1]
                failures += not same
                print(f"{'ok  ' if same else 'FAIL'} {name}: {launcher.kernel.name} {grid}")
                if not same:
                    print(f"     entry: {ours[1]}\n     JIT:   {jit[1]}")
        variants = len(launchers[0][0].compiled)
        if variants != len(runs):  # each run of these cases specializes differently
            failures += 1
            print(f"FAIL {name}: {variants} compiled variants for {len(runs)} specializations")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
