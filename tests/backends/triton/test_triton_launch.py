"""Kernel launchers: the compiled-mode entry generated per kernel, and the launch benchmark.

The entry's text is checked here (it is plain Python); that it makes the very driver call
triton's ``JITFunction`` makes, for static and symbolic sizes and misaligned inputs, is checked by
``benchmarks/launch_overhead.py --check`` in a fresh process: kernels compiled for sm_90 with a
stand-in driver that records launches (kernels cannot be compiled for a GPU in a process whose
triton runs the interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sympy
from bytegraph.backends.triton.kernel import GeneratedKernel
from bytegraph.backends.triton.launch import entry_source

pytestmark = pytest.mark.interpreter_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def kernel(pointers: list[str], numel, rnumel=1, size_args=()) -> GeneratedKernel:
    return GeneratedKernel(
        "triton_poi_fused_k_0",
        "",
        pointers,
        pointers[-1:],
        list(size_args),
        sympy.sympify(numel),
        sympy.sympify(rnumel),
        False,
        [],
    )


def test_static_sizes_are_written_in_and_only_unknown_pointers_are_read():
    text = entry_source(kernel(["arg0_1", "buf0"], 4096), {"XBLOCK": 1024}, False, {"buf0"})
    assert text == (
        "def launch(p0, p1, s0):\n"
        "    a0 = p0.data_ptr()\n"
        "    key = (a0) & 15 and (a0 & 15 == 0,)\n"
        "    variant = variants.get(key)\n"
        "    if variant is None:\n"
        "        variant = variants[key] = prepare(key, (p0, p1, s0,))\n"
        "    variant[0](4, 1, 1, stream(device), variant[1], variant[2], None, None, None, "
        "a0, p1, 4096, 1024)\n"
    )


def test_symbolic_sizes_join_the_key_and_the_grid_and_empty_launches_return():
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    k = kernel(["buf0", "buf1"], s0, 7 * s0, size_args=[("ks0", 7 * s0)])
    k.rnumel = 7 * s0
    text = entry_source(k, {"XBLOCK": 8, "RBLOCK": 64}, True, {"buf0", "buf1"})
    assert text == (
        "def launch(p0, p1, s0, s1, s2):\n"
        "    if s1 <= 0 or s2 <= 0:\n"
        "        return\n"
        "    if hooks[0] or hooks[1]:\n"
        "        return traced(p0, p1, s0, s1, s2)\n"
        "    key = (0, (s0 == 1, s0 % 16 == 0, -2147483648 <= s0 <= 2147483647), "
        "(s1 == 1, s1 % 16 == 0, -2147483648 <= s1 <= 2147483647), "
        "(s2 == 1, s2 % 16 == 0, -2147483648 <= s2 <= 2147483647))\n"
        "    variant = variants.get(key)\n"
        "    if variant is None:\n"
        "        variant = variants[key] = prepare(key, (p0, p1, s0, s1, s2,))\n"
        "    variant[0](-(-s1 // 8), 1, 1, stream(device), variant[1], variant[2], None, None, "
        "None, p0, p1, s0, s1, s2, 8, 64)\n"
    )


def test_a_static_empty_launch_does_nothing():
    text = entry_source(kernel(["buf0"], 0), {"XBLOCK": 1024}, False, {"buf0"})
    assert text == "def launch(p0, s0):\n    return\n"


def test_entry_makes_the_driver_call_triton_makes():
    env = {**os.environ, "TRITON_INTERPRET": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.launch_overhead", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") >= 8 and "FAIL" not in done.stdout


def test_benchmark_prints_each_path():
    env = {**os.environ, "TRITON_INTERPRET": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.launch_overhead", "--calls", "50"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "geomean bytegraph / inductor" in done.stdout
