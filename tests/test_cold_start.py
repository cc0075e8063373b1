"""A cold start loads none of torch.compile's machinery: compiling and running a module and a
function with a graph break (default and eager backends) in a fresh process imports no
``torch._inductor`` and no Dynamo (``torch._dynamo``'s ``__init__`` never runs: only the modules
torch's fake tensors read, ``tracer/deferred_dynamo.py``), and no ``torch.export`` beyond what
``import torch`` loads. torch.compile and ``torch._dynamo.explain`` still work afterwards."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
import torch
before = set(sys.modules)
import bytegraph

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def with_break(x):
    y = x.sin() * 2
    print("break")
    return y.cos() + 1

x = torch.randn(3, 4)
outs = [
    bytegraph.compile(model, backend=BACKEND)(x),
    bytegraph.compile(with_break, backend=BACKEND)(x),
]
assert torch.equal(outs[0], model(x)) and torch.equal(outs[1], with_break(x))
loaded = sorted(set(sys.modules) - before)
dynamo_ran = type(sys.modules.get("torch._dynamo")).__name__ == "module"
# torch.compile afterwards, on the deferred package: as if nothing had been deferred
compiled = torch.compile(with_break, backend="eager")(x)
assert torch.equal(compiled, with_break(x))
graphs = torch._dynamo.explain(with_break)(x).graph_count
print(json.dumps({"loaded": loaded, "dynamo_ran": dynamo_ran, "graphs": graphs}))
"""

#: Dynamo proper: its tracer and entry points (``__init__`` imports them all).
DYNAMO = (
    "torch._dynamo.eval_frame",
    "torch._dynamo.convert_frame",
    "torch._dynamo.symbolic_convert",
)


@pytest.mark.parametrize("backend", ["auto", "eager"])
def test_compile_imports_no_dynamo_inductor_or_export(backend):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("BACKEND", repr(backend))],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    loaded = result["loaded"]
    assert not [m for m in loaded if m == "torch._inductor" or m.startswith("torch._inductor.")]
    assert not [m for m in loaded if m == "torch.export" or m.startswith("torch.export.")]
    assert not [m for m in loaded if m in DYNAMO or m.startswith("torch._dynamo.variables")]
    assert not result["dynamo_ran"]
    assert result["graphs"] == 2
