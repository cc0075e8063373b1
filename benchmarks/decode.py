"""Per-call latency of a small decode step (one token through GPT blocks with a KV cache,
``model_zoo.DecodeStep``) with and without CUDA graphs: eager, bytegraph's triton backend plain and
with ``{"triton.cudagraphs": True}`` (``mode="reduce-overhead"``), torch.compile default and
``mode="reduce-overhead"``.

    python -m benchmarks.decode [--calls 300] [--markdown FILE]
    TRITON_INTERPRET=1 python -m benchmarks.decode --smoke    # tiny model on CPU, no graphs

Latency = wall time of ``--calls`` back-to-back calls (one synchronize at the end) / calls: what
bounds token generation when each step's kernels are small. Each system decodes into its own copy
of the KV cache; the logits are compared with eager's. Without a GPU (and without ``--smoke``) it
prints one "no GPU" line and exits 0.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.triton import triton_backend

import bytegraph

from .model_zoo import make_decode


def systems(smoke: bool) -> dict[str, Callable[[torch.nn.Module], tuple[Callable, Any]]]:
    """name -> (model -> (compiled step, what to report about it))."""

    def ours(options: dict[str, bool]) -> Callable:
        def build(model: torch.nn.Module) -> tuple[Callable, Any]:
            counter = CompileCounter(functools.partial(triton_backend, options=options))
            return bytegraph.compile(model, backend=counter), counter

        return build

    found: dict[str, Callable] = {
        "eager": lambda m: (m, None),
        "bytegraph triton": ours({}),
    }
    if not smoke:
        found["bytegraph triton + CUDA graphs"] = ours({"triton.cudagraphs": True})
        found["torch.compile reduce-overhead"] = lambda m: (
            torch.compile(m, mode="reduce-overhead"),
            None,
        )
        found["torch.compile"] = lambda m: (torch.compile(m), None)
    return found


def graph_stats(counter: Any) -> str:
    """Recordings and replays of our CUDA graph runners, or '' when there are none."""
    if counter is None:
        return ""
    runners = [g.runner for c in counter.compiled for g in c.graphs if getattr(g, "runner", None)]
    if not runners:
        return f"{len(counter.compiled)} graph(s), no CUDA graphs"
    records = sum(r.stats["records"] for r in runners)
    replays = sum(r.stats["replays"] for r in runners)
    disabled = [r.disabled for r in runners if r.disabled]
    return f"{records} recording(s), {replays} replays" + (
        f"; disabled: {disabled}" if disabled else ""
    )


def latency(step: Callable[[], Any], calls: int, device: str) -> float:
    """Microseconds per call, over ``calls`` back-to-back calls."""
    for _ in range(5):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


def run(args: argparse.Namespace, device: str) -> list[str]:
    """The table's lines, each also printed as soon as it is measured."""
    lines: list[str] = []

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    torch.manual_seed(0)
    base = make_decode(args.smoke).to(device).eval()
    token = torch.tensor([[7]], device=device)
    pos = torch.tensor([3], device=device)
    emit("| system | us / call | vs eager | max abs diff of logits | notes |")
    emit("|" + " --- |" * 5)
    eager_us, eager_logits = None, None
    with torch.no_grad():
        for name, build in systems(args.smoke).items():
            model = copy.deepcopy(base)
            try:
                fn, info = build(model)
                # A CUDA graph's output lives in its pool and the next replay overwrites it
                # (torch.compile's reduce-overhead refuses to read it then): copy it out first.
                logits = fn(token, pos).float().clone()
                eager_logits = logits if eager_logits is None else eager_logits
                diff = float((logits - eager_logits).abs().max())
                us = latency(lambda fn=fn: fn(token, pos), args.calls, device)
            except Exception as e:  # reported; the other systems still run
                emit(f"| {name} | error | | | `{type(e).__name__}: {e}`"[:300] + " |")
                continue
            eager_us = us if eager_us is None else eager_us
            emit(f"| {name} | {us:.0f} | {eager_us / us:.2f}x | {diff:.1e} | {graph_stats(info)} |")
            bytegraph.reset()
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny model (CPU, TRITON_INTERPRET=1)")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.smoke and os.environ.get("TRITON_INTERPRET") == "1":
        device, args.calls = "cpu", 3
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        print("decode.py: no GPU (torch.cuda.is_available() is False): nothing measured")
        return 0
    lines = run(args, device)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
