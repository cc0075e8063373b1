"""The compile report: one HTML page of everything bytegraph compiled in a run.

You will see:
1. a small training step compiled with ``mode="reduce-overhead"`` (CUDA graphs on a GPU; on CPU a
   one-time notice that the mode has no effect), with a ``torch.compiler.disable``d logger (one
   graph break), a data-dependent branch (another) and a recompile when ``lr`` changes;
2. ``bytegraph.report.write_html`` building the page from the functions compiled in this process:
   an index, then per function its entries, breaks with their source lines and hints, graphs,
   guards, the generated guard function, bytecode and timings;
3. (not run here) the same from the command line: ``BYTEGRAPH_TRACE_DIR=trace python train.py``
   records every compile, ``python -m bytegraph.report trace`` writes ``trace/report.html``.
"""

# %%
import tempfile
import warnings
from pathlib import Path

import torch

import bytegraph

warnings.simplefilter("ignore")  # the notice about reduce-overhead on CPU tensors


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 32)
        self.fc2 = torch.nn.Linear(32, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if h.mean() > 0.5:  # data-dependent: a graph break
            h = h * 0.5
        return self.fc2(h)


@torch.compiler.disable(reason="logging stays in Python")
def log_loss(loss):
    print(f"loss {loss.item():.4f}")


@bytegraph.compile(mode="reduce-overhead", name="train_step")
def train_step(model, x, y, lr):
    loss = torch.nn.functional.mse_loss(model(x), y)
    log_loss(loss)
    return loss * lr


model = MLP()
for lr in (0.1, 0.1, 0.01):  # the new lr recompiles the step
    train_step(model, torch.randn(16, 8), torch.randn(16, 1), lr)

# %% The page, built in this process from the compiled functions alive now
out = bytegraph.report.write_html(Path(tempfile.mkdtemp()) / "report.html")
print(f"report: {out} ({out.stat().st_size // 1024} KiB); open it in a browser")
