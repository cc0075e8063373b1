"""End-to-end speed of whole models on one GPU: ``bytegraph.compile(model, backend="triton")`` (the
tracer and our compiler, never ``fx.symbolic_trace``) beside ``torch.compile`` (Inductor), against
eager, same GPU, same run: nanoGPT, a LLaMA block stack, BERT, ViT, a ResNet (``model_zoo``), in
fp32 and bf16, inference (``torch.no_grad``) and a training step (forward, loss, backward, SGD).

    python -m benchmarks.models_gpu [--models nanogpt,bert] [--dtypes fp32,bf16]
        [--modes infer,train] [--budget SECONDS] [--markdown FILE] [--no-inductor]
    TRITON_INTERPRET=1 python -m benchmarks.models_gpu --smoke --models nanogpt  # CPU check

Each model runs in its own process (a crash or a hang costs that model only), all at once: they
compile in parallel (one process per CPU core at most), and take turns on the GPU for the timings
(a file lock), so every measurement runs on a quiet GPU. Cases not done by the end of the time
budget are reported as skipped. Compile times are measured while the other models compile too.
Per case: median step time of eager,
bytegraph and Inductor (``triton.testing.do_bench``), speedups over eager and their geometric
means, compile time (first step minus a steady step), the relative error of the first step's
output (inference: the output; training: the loss) against the same step computed eagerly in fp32,
and our frame, kernel and fallback counts. fp32 matmuls use TF32 in all three (``high``
precision). Without a GPU (and without ``--smoke``) it prints one "no GPU" line and exits 0.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import copy
import fcntl
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
from bytegraph.backends.triton import triton_backend

import bytegraph

from .model_zoo import MODELS, Workload

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
MODES = ("infer", "train")


class Recorder:
    """The triton backend, remembering what it compiled (kernels, fallbacks, eager graphs)."""

    def __init__(self) -> None:
        self.compiled: list[Any] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Any:
        out = triton_backend(gm, example_inputs)
        self.compiled.append(out)
        return out

    def summary(self) -> dict[str, Any]:
        graphs = [g for c in self.compiled for g in getattr(c, "graphs", [])]
        fallbacks: dict[str, int] = {}
        for c in self.compiled:
            for op, n in getattr(c, "fallback_ops", {}).items():
                fallbacks[op] = fallbacks.get(op, 0) + n
        return {
            "frames": len(self.compiled),
            "kernels": sum(len(getattr(c, "kernels", [])) for c in self.compiled),
            "eager_graphs": sum(not hasattr(g, "call") for g in graphs),
            "fallbacks": fallbacks,
        }


def make_step(fn: Callable, work: Workload, inputs: tuple, mode: str) -> Callable[[], Any]:
    """One inference call, or one training step of ``fn``'s module (SGD on its parameters)."""
    if mode == "infer":

        def infer() -> Any:
            with torch.no_grad():
                return fn(*inputs)

        return infer
    module = fn if isinstance(fn, torch.nn.Module) else fn.__self__
    opt = torch.optim.SGD(module.parameters(), lr=1e-4)

    def train() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = work.loss(fn(*inputs), inputs)
        loss.backward()
        opt.step()
        return loss.detach()

    return train


def bench(step: Callable[[], Any], device: str) -> float:
    """Median milliseconds per step."""
    if device == "cuda":
        import triton.testing

        return triton.testing.do_bench(step, warmup=25, rep=150, return_mode="median")
    times = []
    for _ in range(3):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1e3 * sorted(times)[1]


def first_output(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


def rel_error(a: torch.Tensor, e: torch.Tensor) -> float:
    a, e = a.detach().double(), e.detach().double()
    return float((a - e).norm() / e.norm().clamp_min(1e-30))


def timed_first(step: Callable[[], Any], device: str) -> tuple[Any, float]:
    sync(device)
    start = time.perf_counter()
    out = step()
    sync(device)
    return out, time.perf_counter() - start


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def gpu_turn(lock_path: str | None):
    """Hold the GPU alone (against the other model processes) while timing."""
    if not lock_path:
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def error_text(e: Exception) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"


def first_step(system: str, work: Workload, model, inputs, mode, device) -> dict[str, Any]:
    """Compile (unless eager) and run the first step; never raises. The result keeps the step
    for ``time_steady``."""
    rec = Recorder()
    try:
        if system == "bytegraph":
            fn = bytegraph.compile(model, backend=rec)
        elif system == "inductor":
            fn = torch.compile(model)
        else:
            fn = model
        step = make_step(fn, work, inputs, mode)
        out, first = timed_first(step, device)
    except Exception as e:  # reported in the table; the other systems still run
        return {"error": error_text(e)}
    result = {"step": step, "first_s": first, "out": first_output(out)}
    if system == "bytegraph":
        result.update(rec.summary())
    return result


def time_steady(res: dict[str, Any], device: str) -> None:
    """Replace ``res``'s step by its median time and the compile time it implies."""
    step, first = res.pop("step", None), res.pop("first_s", 0.0)
    if step is None:
        return
    try:
        res["ms"] = bench(step, device)
    except Exception as e:
        res["error"] = error_text(e)
        return
    res["compile_s"] = max(0.0, first - res["ms"] / 1e3)


def run_case(name: str, dtype: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One model, dtype and mode on every system: first steps (compiling) in parallel with the
    other models, then the steady-state timings on the GPU alone. Errors are against the fp32
    computation."""
    device = "cpu" if args.smoke else "cuda"
    torch.manual_seed(0)
    work = MODELS[name](args.smoke)
    model = work.model.to(device=device, dtype=DTYPES[dtype])
    model.train(mode == "train")
    inputs = work.inputs(torch.device(device), DTYPES[dtype])
    reference = fp32_reference(work, model, inputs, mode)
    systems = ["eager", "bytegraph"] + (["inductor"] if args.inductor else [])
    copies = {s: copy.deepcopy(model) for s in systems}
    row: dict[str, Any] = {"model": name, "dtype": dtype, "mode": mode, "note": work.note}
    for system in systems:
        res = first_step(system, work, copies[system], inputs, mode, device)
        out = res.pop("out", None)
        if out is not None:
            res["rel_err"] = rel_error(first_output(out), reference)
        row[system] = res
    with gpu_turn(args.gpu_lock):
        for system in systems:
            if args.profile and device == "cuda" and (dtype, mode) == ("fp32", "infer"):
                profile(row[system])
            time_steady(row[system], device)
    return row


def profile(res: dict[str, Any], calls: int = 5, top: int = 8) -> None:
    """Add to ``res`` its step's GPU kernels taking the most time: (name, us per step, launches
    per step), from ``torch.profiler`` over ``calls`` steps."""
    step = res.get("step")
    if step is None:
        return
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    try:
        step()
        torch.cuda.synchronize()
        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                step()
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    except Exception as e:  # a profile is extra: the timings still run
        res["profile"] = [(f"profiler failed: {error_text(e)}", 0.0, 0)]
        return
    events.sort(key=lambda e: -e.self_device_time_total)
    res["profile"] = [
        (e.key[:70], e.self_device_time_total / calls, e.count / calls) for e in events[:top]
    ]


def fp32_reference(work: Workload, model: torch.nn.Module, inputs: tuple, mode: str) -> Any:
    """The first step's output computed eagerly in fp32 from the same parameters and inputs."""
    model32 = copy.deepcopy(model).float()
    inputs32 = tuple(t.float() if t.is_floating_point() else t for t in inputs)
    return first_output(make_step(model32, work, inputs32, mode)())


def worker(args: argparse.Namespace) -> None:
    """Run the cases of ``args.models`` (one model), printing one ``RESULT {json}`` line each."""
    if not args.smoke:
        torch.set_float32_matmul_precision("high")
    for name in args.models:  # inference first: when time runs out, training goes
        for mode, dtype in itertools.product(args.modes, args.dtypes):
            if time.time() > args.deadline:
                row = {"model": name, "dtype": dtype, "mode": mode, "skipped": "time budget"}
            else:
                row = run_case(name, dtype, mode, args)
            print("RESULT " + json.dumps(row), flush=True)
            bytegraph.reset()
            torch._dynamo.reset()


def run_model(name: str, args: argparse.Namespace, deadline: float) -> list[dict[str, Any]]:
    """One model's cases in a child process (isolates crashes and hangs)."""
    cmd = [sys.executable, "-m", "benchmarks.models_gpu", "--worker", "--models", name]
    cmd += ["--dtypes", ",".join(args.dtypes), "--modes", ",".join(args.modes)]
    cmd += ["--deadline", str(deadline)] + (["--smoke"] if args.smoke else [])
    cmd += ["--gpu-lock", args.gpu_lock] if args.gpu_lock else []
    cmd += ["--profile"] if args.profile else []
    cmd += [] if args.inductor else ["--no-inductor"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows: list[dict[str, Any]] = []
    if time.time() + 10 > deadline:  # not even time to start a process
        return [
            {"model": name, "dtype": d, "mode": m, "skipped": "time budget"}
            for d in args.dtypes
            for m in args.modes
        ]
    try:
        proc = subprocess.run(
            cmd, cwd=root, capture_output=True, text=True, timeout=max(5, deadline - time.time())
        )
        stdout, problem = proc.stdout, None if proc.returncode == 0 else proc.stderr
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        problem = "timed out"
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            rows.append(json.loads(line[len("RESULT ") :]))
    done = {(r["dtype"], r["mode"]) for r in rows}
    reason = (problem or "").strip().splitlines()[-1:] or ["no result"]
    for dtype in args.dtypes:
        for mode in args.modes:
            if (dtype, mode) not in done:
                rows.append({"model": name, "dtype": dtype, "mode": mode, "skipped": reason[0]})
    return rows


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def cell(res: dict[str, Any] | None, eager_ms: float, key: str) -> str:
    if not res:
        return "-"
    if "error" in res:
        return "error"
    if key == "speedup":
        return f"{eager_ms / res['ms']:.2f}x"
    if key == "compile":
        return f"{res['compile_s']:.1f}"
    return f"{res.get('rel_err', float('nan')):.1e}"


def markdown(rows: list[dict[str, Any]]) -> str:
    head = (
        "| model | dtype | mode | eager ms | bytegraph | inductor | compile s (ours / ind.) "
        "| error vs fp32 (eager / ours / ind.) | frames | kernels | fallback ops |\n|"
        + " --- |"
        * 11
    )
    lines, errors = [head], []
    speed: dict[str, list[tuple[float, float | None]]] = {}
    for r in rows:
        key = f"{r['dtype']} {r['mode']}"
        if "skipped" in r or "error" in r.get("eager", {}):
            why = r.get("skipped") or r["eager"]["error"]
            lines.append(
                f"| {r['model']} | {r['dtype']} | {r['mode']} | not run: {why} |" + " |" * 6
            )
            continue
        eager_ms, ours, ind = r["eager"]["ms"], r.get("bytegraph"), r.get("inductor")
        for system, res in (("bytegraph", ours), ("inductor", ind)):
            if res and "error" in res:
                errors.append(f"- {r['model']} {key} {system}: `{res['error']}`")
        if ours and "ms" in ours:
            theirs = eager_ms / ind["ms"] if ind and "ms" in ind else None
            speed.setdefault(key, []).append((eager_ms / ours["ms"], theirs))
        fallbacks = sum((ours or {}).get("fallbacks", {}).values()) if ours else "-"
        lines.append(
            f"| {r['model']} | {r['dtype']} | {r['mode']} | {eager_ms:.2f} "
            f"| {cell(ours, eager_ms, 'speedup')} | {cell(ind, eager_ms, 'speedup')} "
            f"| {cell(ours, eager_ms, 'compile')} / {cell(ind, eager_ms, 'compile')} "
            f"| {cell(r['eager'], eager_ms, 'err')} / {cell(ours, eager_ms, 'err')} / "
            f"{cell(ind, eager_ms, 'err')} "
            f"| {(ours or {}).get('frames', '-')} | {(ours or {}).get('kernels', '-')} "
            f"| {fallbacks} |"
        )
    lines += [
        "",
        "| geomean speedup over eager | bytegraph | inductor | cases |",
        "|" + " --- |" * 4,
    ]
    every = [p for ps in speed.values() for p in ps]
    for key, pairs in sorted(speed.items()) + [("all", every)]:
        ind = [t for _, t in pairs if t is not None]
        ind_text = f"{geomean(ind):.2f}x" if ind else "-"
        lines.append(
            f"| {key} | {geomean([o for o, _ in pairs]):.2f}x | {ind_text} | {len(pairs)} |"
        )
    notes = {f"- {r['model']}: {r['note']}" for r in rows if r.get("note")}
    text = "\n".join(lines + [""] + sorted(notes) + ([""] + errors if errors else [])) + "\n"
    return text + profiles(rows)


def profiles(rows: list[dict[str, Any]]) -> str:
    """The GPU kernels that take the most time per fp32 inference step, per model and system."""
    out = []
    for r in rows:
        for system in ("bytegraph", "inductor"):
            kernels = (r.get(system) or {}).get("profile")
            if kernels:
                total = sum(us for _, us, _ in kernels)
                out.append(f"\n{r['model']} {system} (top {len(kernels)}: {total:.0f} us):\n")
                out += [f"- `{name}`: {us:.0f} us, {n:g}x" for name, us, n in kernels]
    if not out:
        return ""
    return "\nTop GPU kernels per fp32 inference step (torch.profiler):\n" + "\n".join(out) + "\n"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--budget", type=float, default=420.0, help="seconds for all models")
    p.add_argument("--markdown", help="also write the table to this file")
    p.add_argument("--smoke", action="store_true", help="tiny models on CPU (TRITON_INTERPRET=1)")
    p.add_argument("--no-inductor", dest="inductor", action="store_false")
    p.add_argument("--profile", action="store_true", help="top GPU kernels of fp32 inference")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--gpu-lock", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.models, args.dtypes, args.modes = (
        [s for s in v.split(",") if s] for v in (args.models, args.dtypes, args.modes)
    )
    if args.smoke and "--inductor" not in (argv or sys.argv):
        args.inductor = False  # Inductor's CPU compile would dominate a smoke run
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.smoke and os.environ.get("TRITON_INTERPRET") != "1":
        print("models_gpu.py --smoke needs TRITON_INTERPRET=1 (kernels run on the CPU)")
        return 2
    if not args.smoke and not torch.cuda.is_available():
        print("models_gpu.py: no GPU (torch.cuda.is_available() is False): nothing measured")
        return 0
    if args.worker:
        worker(args)
        return 0
    deadline = time.time() + args.budget
    with tempfile.TemporaryDirectory() as tmp:
        args.gpu_lock = os.path.join(tmp, "gpu.lock")
        parallel = max(1, min(len(args.models), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            runs = [pool.submit(run_model, name, args, deadline) for name in args.models]
            rows = [row for run in runs for row in run.result()]
    text = markdown(rows)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
