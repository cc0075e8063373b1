"""A cold start loads none of torch.compile's machinery: compiling and running a module and a
function with a graph break (default and eager backends) in a fresh process imports no
``torch._inductor`` and no Dynamo (``torch._dynamo``'s ``__init__`` never runs: only the modules
torch's fake tensors read, ``tracer/fakes/deferred_dynamo.py``; not even ``torch._dynamo.source``,
which imports ``torch._dynamo.utils``), no ``torch.export`` beyond what ``import torch`` loads, and
no ``torch.distributed.tensor``.
torch.compile and ``torch._dynamo.explain`` still work afterwards, and the stand-in for
``torch._dynamo.source`` answers as the real module does before and after it is loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)

SCRIPT = r"""
import json, sys
import torch
before = set(sys.modules)
import bytegraph

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def with_break(x):
    y = x.sin().t().contiguous().t().to(torch.float64) * 2
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
source_loaded = type(sys.modules.get("torch._dynamo.source")).__name__ == "module"
# torch.compile afterwards, on the deferred package: as if nothing had been deferred
compiled = torch.compile(with_break, backend="eager")(x)
assert torch.equal(compiled, with_break(x))
graphs = torch._dynamo.explain(with_break)(x).graph_count
print(json.dumps({"loaded": loaded, "dynamo_ran": dynamo_ran, "source_loaded": source_loaded,
                  "graphs": graphs}))
"""

#: Dynamo proper: its tracer and entry points (``__init__`` imports them all).
DYNAMO = (
    "torch._dynamo.eval_frame",
    "torch._dynamo.convert_frame",
    "torch._dynamo.symbolic_convert",
)


def _last_line(script: str) -> str:
    """The last line ``script`` prints in a fresh process (which must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


@pytest.mark.parametrize("backend", ["auto", "eager"])
def test_compile_imports_no_dynamo_inductor_or_export(backend):
    result = json.loads(_last_line(SCRIPT.replace("BACKEND", repr(backend))))
    loaded = result["loaded"]
    assert not [m for m in loaded if m == "torch._inductor" or m.startswith("torch._inductor.")]
    assert not [m for m in loaded if m == "torch.export" or m.startswith("torch.export.")]
    assert not [m for m in loaded if m in DYNAMO or m.startswith("torch._dynamo.variables")]
    assert "torch._dynamo.utils" not in loaded
    # the fake tensors' views and copies, made from plain meta tensors (``fast_meta._meta_aliases``)
    assert "torch.distributed.tensor" not in loaded
    assert not result["dynamo_ran"] and not result["source_loaded"]
    assert result["graphs"] == 2


STAND_IN = r"""
import sys
import torch
import bytegraph
bytegraph.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
from torch._dynamo.source import AttrSource, RandomValueSource   # the stand-in's classes
assert not isinstance(object(), RandomValueSource) and not issubclass(int, AttrSource)
assert "torch._dynamo.utils" not in sys.modules
source = AttrSource(RandomValueSource(0), "x")       # calling one loads the real module alone
real = sys.modules["torch._dynamo.source"]
assert type(real).__name__ == "module" and type(source) is real.AttrSource
assert isinstance(source, AttrSource) and not isinstance(source, RandomValueSource)
assert issubclass(real.AttrSource, AttrSource) and AttrSource.__name__ == "AttrSource"
assert type(sys.modules["torch._dynamo"]).__name__ != "module"  # Dynamo itself still deferred
from torch._dynamo.source import AttrSource as again
assert again is real.AttrSource
doubled = torch.compile(lambda x: x * 2, backend="eager")(torch.ones(2))
assert torch.equal(doubled, torch.full((2,), 2.0))
assert sys.modules["torch._dynamo"].source is real
print("ok")
"""


def test_source_stand_in_answers_as_the_real_module():
    assert _last_line(STAND_IN) == "ok"


IMPORT_ONLY = r"""
import json, sys
import torch
before = set(sys.modules)
import bytegraph
print(json.dumps(sorted(set(sys.modules) - before)))
"""

#: What ``import bytegraph`` leaves to the first trace that needs it: NumPy tracing's
#: ``torch._numpy``, the functional collectives (imported by the code that calls them), Dynamo.
NOT_ON_IMPORT = ("torch._numpy", "torch.distributed._functional_collectives", "torch._dynamo")
#: bytegraph's own tracer: the translator, its opcode handlers and the trackers load at the first
#: compile (``driver._compile``), not with the package (two thirds of what the import took).
TRACER = ("bytegraph.tracer.translator", "bytegraph.tracer.convert", "bytegraph.tracer.opcodes")


def test_import_alone_loads_no_tracing_dependencies():
    loaded = json.loads(_last_line(IMPORT_ONLY))
    assert not [m for m in loaded if m in NOT_ON_IMPORT], loaded
    tracer = [m for m in loaded if m in TRACER or m.startswith("bytegraph.tracer.variables")]
    assert not tracer, tracer


FIRST_COMPILE = r"""
import sys
import torch
import bytegraph

@bytegraph.compile(backend="eager")
def f(x):
    return x + 1

assert "bytegraph.tracer.translator" not in sys.modules  # decorating traces nothing
assert torch.equal(f(torch.ones(2)), torch.full((2,), 2.0))
assert "bytegraph.tracer.translator" in sys.modules
print(len(bytegraph.state_of(f).events))
"""


def test_the_tracer_loads_at_the_first_compile():
    assert _last_line(FIRST_COMPILE) == "1"


STATIC_SCRIPT = r"""
import json, sys
import torch
import bytegraph

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def with_break(x):
    y = torch.relu(x @ x.T).sum(0)
    print("break")
    return (y * 2).softmax(-1) + x.mean(-1, keepdim=True).t()

class TinyGPT(torch.nn.Module):  # embeddings, layer norms, causal attention, an MLP
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(50, d), torch.nn.Embedding(8, d)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = [t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v)]
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))

x = torch.randn(3, 4)
assert torch.equal(bytegraph.compile(model, backend="eager", fullgraph=True)(x), model(x))
assert torch.equal(bytegraph.compile(with_break, backend="eager")(x), with_break(x))
gpt, idx = TinyGPT().eval(), torch.randint(0, 50, (2, 8))
with torch.no_grad():
    assert torch.equal(bytegraph.compile(gpt, backend="eager", fullgraph=True)(idx), gpt(idx))
static = "sympy" in sys.modules
assert bytegraph.explain(with_break)(x).graph_count == 2  # traced, not run in Python
grown = bytegraph.compile(lambda t: t * 2, dynamic=True, backend="eager")
assert torch.equal(grown(x), x * 2)
print(json.dumps({"static": static, "dynamic": "sympy" in sys.modules}))
"""


def test_static_traces_load_no_sympy():
    # Plain inputs get their fakes from ``static_fakes`` and these operators their metadata from
    # bytegraph's shape rules; torch's symbolic shapes (and sympy) load with the first symbol.
    # (Backend "eager": Inductor, which "auto" may pick for a CPU graph, needs sympy itself.)
    result = json.loads(_last_line(STATIC_SCRIPT))
    assert result == {"static": False, "dynamic": True}


SCALAR_SCRIPT = r"""
import json, sys
import torch

def scalar_break(x):
    y = x * 2
    n = int(y.sum().item())
    return y + n

x = torch.randn(4)
result = {}
if WITH_BYTEGRAPH:
    import bytegraph
    out = bytegraph.compile(scalar_break, backend="eager")(x)
    expected = scalar_break(x)
    assert torch.equal(out, expected) and out.dtype == expected.dtype, (out, expected)
    result["dynamo_ran"] = type(sys.modules["torch._dynamo"]).__name__ == "module"
    result["dynamo_loaded"] = sorted(m for m in DYNAMO if m in sys.modules)
compiled = torch.compile(scalar_break, backend="eager")(x)
assert torch.equal(compiled, scalar_break(x))
from torch._dynamo.utils import counters
import torch._dynamo.convert_frame as convert_frame
assert convert_frame.counters is counters and torch._dynamo.exc.counters is counters
report = torch._dynamo.explain(scalar_break)(x)
result["counts"] = [report.graph_count, report.graph_break_count]
result["breaks"] = sum(counters["graph_break"].values())
print(json.dumps(result))
"""


def test_a_number_from_tensor_data_runs_no_dynamo():
    # The first ``.item()`` makes a ShapeEnv, which imports ``torch.fx.experimental.validator``
    # and so ``torch._dynamo.exc`` and ``torch._dynamo.utils``: those load on their own, not
    # Dynamo. torch.compile afterwards compiles and counts as in a process without bytegraph.
    script = SCALAR_SCRIPT.replace("DYNAMO", repr(DYNAMO))
    ours = json.loads(_last_line(script.replace("WITH_BYTEGRAPH", "True")))
    alone = json.loads(_last_line(script.replace("WITH_BYTEGRAPH", "False")))
    assert not ours.pop("dynamo_ran") and ours.pop("dynamo_loaded") == []
    assert ours == alone
