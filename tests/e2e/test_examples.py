"""Smoke test: every ``examples/*.py`` runs to the end in a fresh interpreter (exit code 0).

An example that needs a GPU says so with a line ``# requires: cuda``; it is skipped without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path: Path):
    if "# requires: cuda" in path.read_text() and not torch.cuda.is_available():
        pytest.skip(f"{path.name} needs a CUDA GPU")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("BYTEGRAPH_LOGS", None)
    if (
        path.name != "triton_fusion.py"
    ):  # the others show the default backend as users get it on CPU
        env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=path.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"{path.name} exited with {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )


def test_quickstart_and_recompile_examples_exist():
    assert {"quickstart.py", "recompile.py"} <= {p.name for p in EXAMPLES}
