"""Memory bandwidth reached by the kernels ``backend="triton"`` generates, as % of a device-to-
device copy measured in the same run (the practical ceiling of a memory-bound kernel; target 85%).

    python -m benchmarks.kernels [--dtypes fp32,bf16] [--inductor] [--markdown FILE]
    TRITON_INTERPRET=1 python -m benchmarks.kernels --smoke  # tiny sizes on CPU: checks the script

Cases, at sizes far beyond the L2 cache: fused pointwise chains, reductions (row sums, softmax
persistent and looped, layer norm, RMSNorm, a column sum) and their fusions (residual add +
RMSNorm, scaled and masked softmax, layer norm + GELU). Each is compiled with
``bytegraph.compile(fn, backend="triton")`` and timed per call (``triton.testing.do_bench``,
median; wrapper and launches included); bytes = inputs read once + outputs written once, so
GB/s = bytes / time. ``--inductor`` adds ``torch.compile``'s % of the same copy (fp32 cases only,
to keep its compile time short). Without a GPU
(and without ``--smoke``) it prints one "no GPU" line and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.triton import triton_backend

import bytegraph

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def rms_norm(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


def add_rms_norm(x, r, w):
    h = x + r
    return h, rms_norm(h, w)


def cases(smoke: bool) -> dict[str, tuple[Callable, list[tuple[int, ...]]]]:
    """name -> (function, input shapes); large enough to be memory bound."""
    n, rows, cols, long_rows, long = (
        (64, 8, 16, 2, 40) if smoke else (1 << 26, 1 << 16, 1024, 256, 1 << 15)
    )
    return {
        "pointwise relu(x*2+1)": (lambda x: torch.relu(x * 2 + 1), [(n,)]),
        "pointwise gelu(x+b)": (lambda x, b: F.gelu(x + b), [(rows, cols), (cols,)]),
        "pointwise x+y*0.5": (lambda x, y: x + y * 0.5, [(n,), (n,)]),
        "sum over last dim": (lambda x: x.sum(-1), [(rows, cols)]),
        "sum over dim 0": (lambda x: x.sum(0), [(rows, cols)]),
        "softmax (persistent)": (lambda x: torch.softmax(x, -1), [(rows, cols)]),
        "softmax (looped rows)": (lambda x: torch.softmax(x, -1), [(long_rows, long)]),
        "layer norm": (
            lambda x, w, b: F.layer_norm(x, (cols,), w, b),
            [(rows, cols), (cols,), (cols,)],
        ),
        "RMSNorm": (rms_norm, [(rows, cols), (cols,)]),
        "fused: residual add + RMSNorm": (add_rms_norm, [(rows, cols), (rows, cols), (cols,)]),
        "fused: softmax(x*s + mask)": (
            lambda x, m: torch.softmax(x * 0.125 + m, -1),
            [(rows, cols), (1, cols)],
        ),
        "fused: layer norm + GELU": (
            lambda x, w, b: F.gelu(F.layer_norm(x, (cols,), w, b)),
            [(rows, cols), (cols,), (cols,)],
        ),
    }


def bench(fn: Callable[[], object], device: str) -> float:
    """Median seconds per call."""
    if device == "cuda":
        import triton.testing

        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") / 1e3
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[1]


def nbytes(tensors: object) -> int:
    items = tensors if isinstance(tensors, list | tuple) else [tensors]
    return sum(t.numel() * t.element_size() for t in items if isinstance(t, torch.Tensor))


def copy_bandwidth(device: str, smoke: bool) -> float:
    """GB/s of a large device-to-device copy (bytes read + bytes written)."""
    src = torch.randn(16 if smoke else 1 << 28, device=device)
    dst = torch.empty_like(src)
    return 2 * nbytes(src) / bench(lambda: dst.copy_(src), device) / 1e9


def measure(fn: Callable, inputs: list[torch.Tensor], device: str) -> tuple[float, object]:
    """GB/s of ``fn(*inputs)`` and its output."""
    out = fn(*inputs)
    seconds = bench(lambda: fn(*inputs), device)
    return (nbytes(inputs) + nbytes(out)) / seconds / 1e9, out


def run(args: argparse.Namespace, device: str) -> list[str]:
    """The table's lines, each also printed as soon as it is measured."""
    lines: list[str] = []

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    copy_gbs = copy_bandwidth(device, args.smoke)
    head = "| case | dtype | GB/s | % copy | kernels | max abs err |"
    if args.inductor:
        head += " inductor % copy |"
    emit(f"Device-to-device copy: {copy_gbs:.0f} GB/s (bytes read + written).\n")
    emit(head)
    emit("|" + " --- |" * (head.count("|") - 1))
    ours_pct: list[float] = []
    for dtype in args.dtypes:
        for name, (fn, shapes) in cases(args.smoke).items():
            inputs = [torch.randn(s, device=device, dtype=DTYPES[dtype]) for s in shapes]
            counter = CompileCounter(triton_backend)
            compiled = bytegraph.compile(fn, backend=counter)
            gbs, out = measure(compiled, inputs, device)
            err = max_error(out, fn(*inputs))
            kernels = sum(len(c.kernels) for c in counter.compiled)
            pct = 100 * gbs / copy_gbs
            ours_pct.append(pct)
            line = f"| {name} | {dtype} | {gbs:.0f} | {pct:.0f}% | {kernels} | {err:.1e} |"
            if args.inductor and dtype == "fp32":
                theirs, _ = measure(torch.compile(fn), inputs, device)
                line += f" {100 * theirs / copy_gbs:.0f}% |"
            elif args.inductor:
                line += " - |"
            emit(line)
            bytegraph.reset()
    below = sum(p < 85 for p in ours_pct)
    emit(f"\n{below} of {len(ours_pct)} cases below 85% of the copy.")
    return lines


def max_error(actual: object, expected: object) -> float:
    pairs = zip(
        actual if isinstance(actual, tuple) else (actual,),
        expected if isinstance(expected, tuple) else (expected,),
        strict=True,
    )
    return max(float((a.float() - e.float()).abs().max()) for a, e in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CPU, TRITON_INTERPRET=1)")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--inductor", action="store_true", help="also time torch.compile (fp32)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    if args.smoke and os.environ.get("TRITON_INTERPRET") == "1":
        device = "cpu"
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        print("kernel_bandwidth.py: no GPU (torch.cuda.is_available() is False): nothing measured")
        return 0
    lines = run(args, device)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
