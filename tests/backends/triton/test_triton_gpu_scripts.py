"""The GPU scripts stay runnable on CPU: ``benchmarks/gpu.sh`` exits 0 with a "no GPU" line (and
report) where torch sees no GPU, and each benchmark it runs completes its ``--smoke`` run (tiny
sizes under the interpreter)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interpreter_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def run(cmd: list[str], **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "TRITON_INTERPRET": "1", **env}
    return subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=600)


def test_gpu_script_without_a_gpu_says_so_and_exits_zero(tmp_path):
    report = tmp_path / "report.md"
    proc = run(
        ["bash", "benchmarks/gpu.sh", "--out", str(report)],
        PYTHON=sys.executable,
        CUDA_VISIBLE_DEVICES="",
    )
    assert proc.returncode == 0, proc.stderr
    assert "no GPU" in proc.stdout
    assert "no GPU" in report.read_text()


def test_benchmarks_complete_their_smoke_runs():
    commands = {
        "kernels": ["benchmarks.kernel_bandwidth", "--smoke", "--dtypes", "fp32"],
        "decode": ["benchmarks.decode", "--smoke"],
        "models": ["benchmarks.models_gpu", "--smoke", "--models", "nanogpt", "--dtypes", "fp32"]
        + ["--modes", "train"],
    }
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    procs = {  # in parallel: each spends most of its time importing torch
        name: subprocess.Popen(
            [sys.executable, "-m", *cmd],
            cwd=ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for name, cmd in commands.items()
    }
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{name}: {stderr}"
        out[name] = stdout
    assert "| fused: residual add + RMSNorm | fp32 |" in out["kernels"]
    assert "| bytegraph triton |" in out["decode"] and "error" not in out["decode"]
    assert "| nanogpt | fp32 | train |" in out["models"] and "not run" not in out["models"]
    assert "| all |" in out["models"]
