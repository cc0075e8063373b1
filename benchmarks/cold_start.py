"""Cold start: the CPU a whole fresh process spends, bytegraph beside torch.compile and eager.

    python benchmarks/cold_start.py                    # all cases, 5 paired runs, backend eager
    python benchmarks/cold_start.py --cases mlp --repeat 7 --backend inductor

Each run is one child process (user + sys CPU of the child, ``resource.getrusage``) that imports
torch, builds the case, and (bytegraph, torch.compile) compiles it and calls it once; the three
modes run in turn, paired, and each figure is a median. The children write bytecode caches (as a
user's Python does; a first run writes them) and use one thread. Printed per case: bytegraph's and
torch.compile's CPU beyond eager, and their ratio (bytegraph's added CPU as a fraction of
torch.compile's with the same backend), twice: over whole processes, and inside them (each child
also times, with ``time.process_time``, what its mode adds after the case is built: the import of
bytegraph, compiling and the first call, against eager's first call). The whole-process figures
carry the spread of ``import torch`` (half a second of CPU from one run to the next with torch
2.15), which the in-process ones do not. Also: the CPU ``import bytegraph`` adds to ``import torch``
(timed inside the process, ``import_cpu``).
Cases: a small MLP, a function with a graph break, a 2-layer LLaMA from a tiny transformers config.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

CASES = {
    "mlp": """
import torch
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
args = (torch.randn(4, 64),)
""",
    "break": """
import torch
def model(x):
    y = torch.relu(x @ x.T).sum(0)
    print("break", end="")
    return (y * 2).softmax(-1)
args = (torch.randn(8, 8),)
""",
    "llama": """
import torch
from transformers import LlamaConfig, LlamaForCausalLM
config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval()
args = (torch.randint(0, 128, (1, 16)),)
""",
}

RUN = {
    "eager": "out = model(*args)",
    "bytegraph": "import bytegraph\nout = bytegraph.compile(model, backend={backend!r})(*args)",
    "torch.compile": "out = torch.compile(model, backend={backend!r})(*args)",
}
#: Around each mode's code: the CPU it takes inside the process, printed as the last line.
TIMED = (
    'import time\n_start = time.process_time()\n{run}\nprint("\\n", time.process_time() - _start)\n'
)


def child_cpu(code: str) -> tuple[float, str]:
    """User + sys CPU seconds of a fresh process running ``code``, and the last line it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, env=_child_env(), capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, (done.stdout.strip().splitlines() or [""])[-1]


def import_cpu() -> float:
    """CPU seconds of ``import bytegraph`` after ``import torch``, timed inside a fresh process: the
    difference of two whole processes is lost in the spread of ``import torch`` itself (three or
    more seconds of CPU with torch 2.15, half a second apart from one run to the next)."""
    code = "import time, torch\nstart = time.process_time()\nimport bytegraph\n"
    code += "print(time.process_time() - start)"
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, env=_child_env(), capture_output=True
    )
    return float(done.stdout.decode().split()[-1])


def _child_env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's modules have their bytecode caches
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", default="eager")
    args = parser.parse_args()
    for code in ("import torch, bytegraph", "import torch, transformers"):  # write the caches
        child_cpu(code)
    added = statistics.median(import_cpu() for _ in range(args.repeat))
    print(f"import bytegraph adds {added:.2f} s CPU to import torch (median of {args.repeat})")
    print(
        f"{'case':8} {'measured':>9} {'eager s':>8} {'bytegraph +s':>13} "
        f"{'torch.compile +s':>17} {'ratio':>6}"
    )
    for case in args.cases.split(","):
        whole: dict[str, list[float]] = {mode: [] for mode in RUN}
        inside: dict[str, list[float]] = {mode: [] for mode in RUN}
        for _ in range(args.repeat):
            for mode, run in RUN.items():  # paired: the three modes in turn
                code = CASES[case] + TIMED.format(run=run.format(backend=args.backend))
                cpu, last = child_cpu(code)
                whole[mode].append(cpu)
                inside[mode].append(float(last))
        for measured, cpu in (("process", whole), ("inside", inside)):
            eager = statistics.median(cpu["eager"])
            ours = statistics.median(cpu["bytegraph"]) - eager
            theirs = statistics.median(cpu["torch.compile"]) - eager
            ratio = ours / theirs if theirs > 0 else float("nan")
            print(
                f"{case:8} {measured:>9} {eager:8.2f} {ours:13.2f} {theirs:17.2f} {ratio:5.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
