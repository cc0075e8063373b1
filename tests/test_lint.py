"""Lint as a test: ``ruff check`` and ``ruff format --check`` over the package folders, tests,
benchmarks and examples, with the settings of ``pyproject.toml`` (line length 100; E, F, W, I, B,
UP) and the ruff version ``constraints.txt`` pins (another version formats differently)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = [
    "bytegraph",
    "tracer",
    "guards",
    "codegen",
    "backends",
    "tests",
    "benchmarks",
    "examples",
]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def pinned_ruff() -> str:
    pins = (ROOT / "constraints.txt").read_text() + (ROOT / "pyproject.toml").read_text()
    found = re.search(r"^ruff==([\w.]+)|\"ruff==([\w.]+)\"", pins, re.MULTILINE)
    assert found, "neither constraints.txt nor pyproject.toml pins a ruff version"
    pin = found.group(1) or found.group(2)
    version = ruff("--version")
    assert version.returncode == 0, (
        f"ruff is not installed in this environment ({sys.executable}); it is a test dependency: "
        f"pip install ruff=={pin}\n{version.stderr}"
    )
    assert version.stdout.split() == ["ruff", pin], (
        f"{version.stdout.strip()} is installed, the project pins ruff=={pin}"
    )
    return pin


def test_ruff_check_passes(pinned_ruff):
    result = ruff("check", "--no-cache", *FOLDERS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_unchanged(pinned_ruff):
    result = ruff("format", "--check", "--no-cache", *FOLDERS)
    assert result.returncode == 0, result.stdout + result.stderr
