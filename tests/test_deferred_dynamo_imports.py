"""After bytegraph deferred ``torch._dynamo`` (``tracer/fakes/deferred_dynamo.py``), importing one
of Dynamo's submodules first by name loads each module once: the user's ``from torch._dynamo.utils
import counters`` gets the counters torch.compile itself increments."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import sys
import torch
import bytegraph

def fn(x):
    y = x + 1
    print("break")
    return y * 2

bytegraph.compile(fn, backend="eager")(torch.randn(3))
assert type(sys.modules["torch._dynamo"]).__name__ == "_DeferredPackage"
from torch._dynamo.utils import counters
import torch._dynamo.convert_frame as convert_frame

assert sys.modules["torch._dynamo.utils"].counters is counters
assert convert_frame.counters is counters  # Dynamo's own modules share the one utils module
assert torch._dynamo.utils is sys.modules["torch._dynamo.utils"]
torch.compile(fn, backend="eager")(torch.randn(3))
assert sum(counters["graph_break"].values()) == 1, dict(counters)
assert counters["frames"]["total"] >= 2, dict(counters)  # the function and its resume function
print("ok")
"""


def test_a_submodule_imported_first_is_loaded_once():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "ok"
