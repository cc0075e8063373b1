"""The torch canary: the core suites on the newest torch release, in a throwaway virtual env.

    python benchmarks/torch_canary.py             # newest torch (and the triton it requires)
    python benchmarks/torch_canary.py --torch 2.16.0 --python python3.13 -- -x  # pytest args

CI (``./run.sh test``) pins torch per Python in constraints.txt; this checks the release after them
the day it appears, as ``benchmarks/models.py --latest`` does for transformers. Every other package
keeps its pin from constraints.txt. The venv lives in a temporary folder, removed at the end (keep
it with ``--keep``). Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The suites a new torch release most often breaks: tracing, guards, graph breaks, models.
SUITES = ("tests/tracer", "tests/guards", "tests/breaks", "tests/models")
#: Pins a newer torch release must not inherit (it chooses the triton it needs).
UNPINNED = ("torch", "triton")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default="", help="a torch version (default: the newest)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the venv")
    parser.add_argument("--keep", action="store_true", help="keep the venv (its path is printed)")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bytegraph-torch-canary-"))
    try:
        python = _make_venv(folder, args.python, args.torch)
        version = _run(
            [python, "-c", "import torch; print(torch.__version__)"], capture=True
        ).strip()
        print(f"[canary] torch {version} in {folder}", flush=True)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args]
        return subprocess.run([*command, *SUITES], cwd=ROOT, env=env).returncode
    finally:
        if args.keep:
            print(f"[canary] venv kept: {folder}")
        else:
            subprocess.run(["rm", "-rf", str(folder)], check=False)


def _make_venv(folder: Path, interpreter: str, torch_version: str) -> str:
    venv = folder / "venv"
    _run([interpreter, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    constraints = folder / "constraints.txt"
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    constraints.write_text(
        "\n".join(line for line in lines if not line.startswith(tuple(f"{p}==" for p in UNPINNED)))
        + "\n"
    )
    torch = f"torch=={torch_version}" if torch_version else "torch"
    _run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"])
    _run([python, "-m", "pip", "install", "-q", "--upgrade", "-c", str(constraints), torch])
    _run([python, "-m", "pip", "install", "-q", "-c", str(constraints), "-e", f"{ROOT}[test]"])
    return python


def _run(command: list[str], capture: bool = False) -> str:
    done = subprocess.run(command, check=True, text=True, capture_output=capture)
    return done.stdout if capture else ""


if __name__ == "__main__":
    sys.exit(main())
