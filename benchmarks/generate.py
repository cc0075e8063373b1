"""Per-token latency of ``model.generate()`` (greedy) with the forward compiled by bytegraph,
against eager and against torch.compile (backend ``eager`` for both), with the default
``DynamicCache`` and with ``cache_implementation="static"``, for the tiny GPT-2, LLaMA, Qwen2,
Mistral and Gemma configs of ``tests/models/zoo.py``.

    python benchmarks/generate.py [-k NAMES] [--tokens N] [--runs R]

Each engine runs in its own process (bytegraph is never imported where torch.compile or eager
runs). A first ``generate`` compiles; then ``R`` timed ``generate`` calls of ``N`` new tokens each,
a logits processor stamping the time of every step: the per-token latency is the median interval
between steps after the first (the prefill). Also printed: whether the tokens equal eager's, and
graphs, breaks and traces of bytegraph's first ``generate`` (torch.compile: its graphs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("gpt2", "llama", "qwen2", "mistral", "gemma")
ENGINES = ("eager", "bytegraph", "torch.compile")


def measure(engine: str, name: str, cache: str, tokens: int, runs: int) -> dict:
    """One engine, model and cache (in a worker process)."""
    warnings.filterwarnings("ignore")
    sys.path[0] = str(ROOT / "tests")
    import torch
    import transformers
    from models import zoo

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)  # no thread barriers: stalls of a shared CPU stay out of the times
    base = zoo.BY_NAME[name]
    arch = zoo.Arch(
        base.name, base.family, base.head, base.inputs, dict(base.config, use_cache=True)
    )
    model = zoo.build(arch).eval()
    torch.manual_seed(3)
    ids = torch.randint(3, 128, (1, 8))
    stamps: list[float] = []

    class Stamp(transformers.LogitsProcessor):
        def __call__(self, input_ids, scores):
            stamps.append(time.perf_counter())
            return scores

    kwargs = dict(
        attention_mask=torch.ones_like(ids),
        max_new_tokens=tokens,
        min_new_tokens=tokens,
        do_sample=False,
        logits_processor=transformers.LogitsProcessorList([Stamp()]),
    )
    if cache == "static":
        kwargs["cache_implementation"] = "static"
    counts = _compile(engine, model)
    with torch.no_grad():
        first = model.generate(ids, **kwargs)
        counted = counts()
        latencies = []
        for _ in range(runs):
            stamps.clear()
            model.generate(ids, **kwargs)
            latencies += [b - a for a, b in zip(stamps[1:], stamps[2:], strict=False)]
    return {"tokens": first.tolist(), "ms": 1000 * statistics.median(latencies), **counted}


def _compile(engine: str, model):
    """Compile ``model``'s forward; returns what counts the compiled work of the first generate."""
    if engine == "bytegraph":
        import bytegraph
        from bytegraph.explain import Recorder, Report

        recorder = Recorder().__enter__()
        bytegraph.compile(model, backend="eager")

        def counts():
            recorder.__exit__(None, None, None)
            report = Report(recorder.records)
            return {
                "graphs": report.graph_count,
                "breaks": report.graph_break_count,
                "traces": len(recorder.records),
            }

        return counts
    if engine == "torch.compile":
        import torch

        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        model.forward = torch.compile(model.forward, backend=backend)
        return lambda: {"graphs": len(graphs)}
    return dict


def _run(engine: str, name: str, cache: str, tokens: int, runs: int) -> dict:
    job = json.dumps([engine, name, cache, tokens, runs])
    out = subprocess.run(
        [sys.executable, __file__, "--worker", job], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default=",".join(MODELS))
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(measure(*json.loads(opts.worker))))
        return 0
    import torch
    import transformers

    print(
        f"generate(): {opts.tokens} new tokens, greedy, per-token latency (median ms per decode "
        f"step, {opts.runs} runs after a compiling one); torch {torch.__version__}, "
        f"transformers {transformers.__version__}, backend eager"
    )
    print(
        f"{'model':<9}{'cache':<9}{'eager':>8}{'bytegraph':>11}{'torch.compile':>15}"
        f"{'bg/eager':>10}{'bg/tc':>8}  bytegraph graphs/breaks/traces, tc graphs, tokens"
    )
    ok = True
    for name in opts.k.split(","):
        for cache in ("dynamic", "static"):
            r = {e: _run(e, name, cache, opts.tokens, opts.runs) for e in ENGINES}
            bg, tc, eager = r["bytegraph"], r["torch.compile"], r["eager"]
            same = bg["tokens"] == eager["tokens"]
            ok = ok and same and bg["breaks"] == 0
            print(
                f"{name:<9}{cache:<9}{eager['ms']:>8.2f}{bg['ms']:>11.2f}{tc['ms']:>15.2f}"
                f"{bg['ms'] / eager['ms']:>10.2f}{bg['ms'] / tc['ms']:>8.2f}  "
                f"{bg['graphs']}/{bg['breaks']}/{bg['traces']}, {tc['graphs']}, "
                f"{'same' if same else 'DIFFERENT'}",
                flush=True,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
