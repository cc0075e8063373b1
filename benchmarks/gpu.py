"""Every GPU check in one command, one Markdown report: the kernel bandwidth table
(``kernel_bandwidth.py``), decode-step latency with and without CUDA graphs (``decode.py``),
whole-model speed against Inductor (``models_gpu.py``), then the GPU test subset (``pytest -m gpu``:
the triton backend's lowering and fusion tests on CUDA in fp32, fp16 and bf16, CUDA graphs,
autotuning).

    python -m benchmarks.gpu [--out gpu_report.md] [--budget 470]    (or benchmarks/gpu.sh)

Benchmarks run first, on a quiet GPU, then the tests (in parallel with pytest-xdist when it is
installed). Each stage runs in a child process with its share of the time budget, and the report
is rewritten after each stage, so a stage that hangs or crashes costs only its own section. On a
machine without a CUDA GPU it writes and prints one "no GPU" line and exits 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (title, command after ``python -m``, share of the budget left when the stage starts)
STAGES = [
    (
        "Kernel bandwidth (% of a device-to-device copy)",
        ["benchmarks.kernel_bandwidth", "--inductor"],
        0.15,
    ),
    ("Decode step latency, with and without CUDA graphs", ["benchmarks.decode"], 0.2),
    ("Whole models: bytegraph vs torch.compile", ["benchmarks.models_gpu", "--profile"], 0.7),
]

#: Every stage compiles kernels for the GPU. Triton fixes interpreter or compiled mode when it is
#: first imported, so a TRITON_INTERPRET=1 left in the environment must not reach them.
#: A wide terminal keeps each failed test's reason on its FAILED line (pytest cuts the line
#: to the terminal's width, and a test id alone can fill 80 columns).
GPU_ENV = {**os.environ, "TRITON_INTERPRET": "0", "COLUMNS": "400"}


def environment() -> str:
    props = torch.cuda.get_device_properties(0)
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    commit = run_text(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    # a lent GPU machine gets the working tree over the checkout's starting commit: say so
    if run_text(["git", "status", "--porcelain", "--untracked-files=no"]):
        commit += " with uncommitted changes"
    return "\n".join(
        [
            f"- GPU: {props.name}, {props.multi_processor_count} SMs, "
            f"{props.total_memory / 2**30:.0f} GiB",
            f"- Python {platform.python_version()}, torch {torch.__version__}, triton "
            f"{triton_version}, CUDA {torch.version.cuda}",
            f"- bytegraph commit {commit}",
        ]
    )


def run_text(cmd: list[str]) -> str:
    try:
        return subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def run_stage(cmd: list[str], timeout: float) -> tuple[str, str]:
    """(stdout, a status line) of ``cmd`` run with ``timeout`` seconds."""
    start = time.time()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=GPU_ENV
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return out, f"stopped after its {timeout:.0f} s share of the budget"
    status = f"took {time.time() - start:.0f} s"
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        status += f", exit status {proc.returncode}:\n\n```\n{tail}\n```"
    return proc.stdout, status


def pytest_command(workers: int) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-rfE"]
    cmd += ["--tb=line", "tests/backends/triton"]
    if workers > 1 and importlib.util.find_spec("xdist") is not None:
        cmd += ["-n", str(workers)]
    return cmd


def summarize_pytest(out: str) -> str:
    """The summary line, then every failed or erroring test with its one-line reason."""
    lines = out.strip().splitlines()
    summary = next((x for x in reversed(lines) if re.search(r"\d+ (passed|failed)", x)), None)
    failures = [x for x in lines if x.startswith(("FAILED", "ERROR"))]
    text = f"`{summary or 'no summary line (see the status above)'}`\n"
    if failures:
        text += "\n" + "\n".join(f"- `{x}`" for x in failures[:200]) + "\n"
    return text


def write(path: str, sections: list[str]) -> None:
    with open(path, "w") as f:
        f.write("\n\n".join(sections) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_report.md", help="the Markdown report")
    parser.add_argument("--budget", type=float, default=470.0, help="seconds for everything")
    parser.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 1))
    parser.add_argument("--skip", default="", help="comma-separated stage numbers to skip (1-4)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        line = "benchmarks/gpu.py: no GPU (torch.cuda.is_available() is False): nothing run"
        print(line)
        write(args.out, ["# bytegraph GPU report", line])
        return 0
    deadline = time.time() + args.budget
    sections = ["# bytegraph GPU report", environment()]
    skip = {int(s) for s in args.skip.split(",") if s}
    for number, (title, module, share) in enumerate(STAGES, start=1):
        if number in skip:
            continue
        left = deadline - time.time()
        extra = ["--budget", str(0.9 * share * left)] if module[0].endswith("models_gpu") else []
        out, status = run_stage([sys.executable, "-m", *module, *extra], share * left)
        sections.append(f"## {number}. {title}\n\n{status}\n\n{out.strip()}")
        write(args.out, sections)
    if 4 not in skip:
        out, status = run_stage(pytest_command(args.workers), max(30, deadline - time.time()))
        sections.append(
            f"## 4. pytest -m gpu (tests/backends/triton)\n\n{status}\n\n{summarize_pytest(out)}"
        )
    write(args.out, sections)
    print("\n\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
