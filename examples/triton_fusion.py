"""Fusing a graph into Triton kernels with ``backend="triton"``.

What you will see: the kernels generated for a pointwise chain (one kernel), a softmax (one
reduction kernel holding max, exp, sum and divide), the Python wrapper that launches them, and
the fusion log explaining why two nodes were *not* fused. Runs on a GPU, or on the CPU through
Triton's interpreter (``TRITON_INTERPRET=1`` is set below when there is no GPU).
"""

# %%
# Setup: without a GPU, kernels run in Triton's interpreter on CPU tensors.
import logging
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

from bytegraph.backends.registry import lookup_backend  # noqa: E402

device = "cuda" if torch.cuda.is_available() else "cpu"
compile_triton = lookup_backend("triton")


def show(title: str, runner) -> None:
    print(f"\n===== {title}: {len(runner.kernels)} kernel(s) =====")
    for kernel in runner.kernels:
        print(kernel.source)


# %%
# A pointwise chain: mul, add and relu become one kernel, `triton_poi_fused_mul_add_relu_0`.
def pointwise(x):
    return (torch.relu(x * 2 + 1),)


x = torch.randn(8, 32, device=device)
runner = compile_triton(torch.fx.symbolic_trace(pointwise), [x])
torch.testing.assert_close(runner(x)[0], pointwise(x)[0])
show("relu(x * 2 + 1)", runner)


# %%
# Softmax over the last dim: the decomposition (amax, sub, exp, sum, div) is one persistent
# reduction kernel; the intermediate `exp` never goes to memory.
def softmax(x):
    return (torch.softmax(x, -1),)


runner = compile_triton(torch.fx.symbolic_trace(softmax), [x])
torch.testing.assert_close(runner(x)[0], softmax(x)[0])
show("softmax", runner)
print("wrapper:\n" + runner.graphs[0].source)

# %%
# A rejected fusion: `y.sum(0)` reduces columns while `y` is produced row by row, so fusing them
# would need data from other program instances. The fusion logger says so.
logging.basicConfig(format="%(name)s: %(message)s")
logging.getLogger("bytegraph.fusion").setLevel(logging.DEBUG)


def columns(x):
    y = x.exp()
    return y.sum(0), y + 1


runner = compile_triton(torch.fx.symbolic_trace(columns), [x])
show("exp, then column sums", runner)
