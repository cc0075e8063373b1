"""First-call latency of a LLaMA model, whole-model and regional compilation, bytegraph against
torch.compile (backend ``eager`` for both), for 12 and 32 decoder layers.

    python benchmarks/first_call.py [--layers 12,32] [--repeat N]

*Whole model*: ``bytegraph.compile(model)`` / ``torch.compile(model)``. *Regional*: the recipe for
models made of repeated blocks, compiling each decoder layer (``for layer in model.model.layers:
bytegraph.compile(layer)`` / ``layer.compile()``); both trace the layer's code once and reuse it for
every layer. Each measurement runs in a fresh process (no warm caches; bytegraph is never imported
where torch.compile runs) that builds the model, runs it once eagerly (lazy initialisation is not
compile time), then times the first compiled call (inference, ``no_grad``) and checks its logits
against eager. Prints seconds per configuration and bytegraph's time as a fraction of
torch.compile's (the target is at most 0.25).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings

MODES = ("whole", "regional")


def measure(engine: str, layers: int, mode: str) -> dict:
    """One measurement (run in a worker process): seconds of the first compiled call."""
    warnings.filterwarnings("ignore")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)  # no thread barriers: stalls of a shared CPU stay out of the times
    config = transformers.LlamaConfig(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1024,
        max_position_embeddings=256,
        use_cache=False,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 1024, (1, 32))
    with torch.no_grad():
        expected = model(input_ids=ids).logits
        compile_fn = _compiler(engine)
        if mode == "whole":
            model = compile_fn(model)
        else:
            for layer in model.model.layers:
                compile_fn(layer)
        start = time.perf_counter()
        out = model(input_ids=ids).logits
        seconds = time.perf_counter() - start
    same = bool(torch.allclose(out, expected, atol=1e-5, rtol=1e-5))
    return {"seconds": seconds, "same": same}


def _compiler(engine: str):
    if engine == "bytegraph":
        import bytegraph

        return lambda m: bytegraph.compile(m, backend="eager")
    import torch

    def tc(m):
        if isinstance(m, torch.nn.Module) and not hasattr(m, "model"):
            m.compile(backend="eager")  # a layer: torch.compile's regional recipe
            return m
        return torch.compile(m, backend="eager")

    return tc


def _run(engine: str, layers: int, mode: str) -> dict:
    command = [sys.executable, __file__, "--worker", json.dumps([engine, layers, mode])]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="12,32")
    parser.add_argument("--repeat", type=int, default=1, help="median of this many runs each")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(measure(*json.loads(opts.worker))))
        return 0
    import torch
    import transformers

    print(
        f"LLaMA first call (inference), backend eager; torch {torch.__version__}, "
        f"transformers {transformers.__version__}; median of {opts.repeat}"
    )
    print(f"{'layers':>6} {'mode':<9} {'bytegraph s':>12} {'torch.compile s':>16} {'ratio':>7}")
    ok = True
    for layers in (int(n) for n in opts.layers.split(",")):
        for mode in MODES:
            times = {}
            for engine in ("bytegraph", "torch.compile"):
                runs = [_run(engine, layers, mode) for _ in range(opts.repeat)]
                ok = ok and all(r["same"] for r in runs if engine == "bytegraph")
                times[engine] = statistics.median(r["seconds"] for r in runs)
            ratio = times["bytegraph"] / times["torch.compile"]
            print(
                f"{layers:>6} {mode:<9} {times['bytegraph']:>12.2f} "
                f"{times['torch.compile']:>16.2f} {ratio:>7.2f}",
                flush=True,
            )
    if not ok:
        print("bytegraph's logits differ from eager")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
