"""``mode="max-autotune"`` (``Options(max_autotune=True)``): candidate configs, one timing per
kernel and shape, the winner cached on disk and reused by a fresh process.

On CPU the timer is replaced by one that runs the kernel (under the interpreter, so every
candidate config really executes) and reports a made-up time that favours one config; the
picking, the cache file and the reuse are the real autotuner's. A ``gpu`` test times for real.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from bytegraph.backends.triton import Options, autotune, config, launch

pytestmark = pytest.mark.interpreter_only  # the GPU parts are the gpu-marked tests below

MAX_AUTOTUNE = Options(max_autotune=True)


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    """A temporary cache dir and a timer that runs each config and prefers the largest XBLOCK
    (then the most warps); ``tuning.calls`` lists the configs timed."""

    class Timer:
        calls: list[tuple[int, int]] = []

    def fake_benchmark(fn, device):
        fn()
        meta = fake_benchmark.current
        Timer.calls.append(meta)
        return 1.0 / (meta[0] * 100 + meta[1])

    def launch_with_record(self, args, meta):
        fake_benchmark.current = (meta["XBLOCK"], meta["num_warps"])
        original(self, args, meta)

    original = launch.KernelLauncher.launch
    fake_benchmark.current = (0, 0)
    monkeypatch.setattr(config, "autotune_cache_dir", str(tmp_path))
    monkeypatch.setattr(autotune, "benchmark", fake_benchmark)
    monkeypatch.setattr(launch.KernelLauncher, "launch", launch_with_record)
    return Timer


def test_candidates_cover_each_kernel_kind(triton_compile, monkeypatch):
    monkeypatch.setattr(config, "persistent_reduction_max", 8)
    runner = triton_compile(
        lambda x, y: (y.relu(), x.sum(-1), x[:, :6].softmax(-1)), torch.randn(4, 40), torch.randn(9)
    )
    by_kind = {}
    for k in runner.kernels:
        kind = (
            "poi" if not k.kernel.is_reduction else "persistent" if k.kernel.persistent else "loop"
        )
        by_kind[kind] = autotune.candidate_configs(k.kernel, 4096, int(k.kernel.rnumel))
    assert set(by_kind) == {"poi", "persistent", "loop"}
    assert all(c.RBLOCK is None for c in by_kind["poi"]) and len(by_kind["poi"]) >= 4
    assert {c.RBLOCK for c in by_kind["persistent"]} == {8}
    assert all(c.RBLOCK <= 64 for c in by_kind["loop"]) and len(by_kind["loop"]) >= 3
    poi = next(k.kernel for k in runner.kernels if not k.kernel.is_reduction)
    small = autotune.candidate_configs(poi, 3, 1)
    assert all(c.XBLOCK <= 128 for c in small)


def test_each_shape_is_timed_once_and_the_winner_is_used(tuning, triton_compile):
    runner = triton_compile(
        lambda x: ((x * 2).relu(),), torch.randn(6, 5), dynamic=True, options=MAX_AUTOTUNE
    )
    (kernel,) = runner.kernels
    for n in (6, 6, 9, 6, 9):
        x = torch.randn(n, 5)
        torch.testing.assert_close(runner(x)[0], (x * 2).relu())
    timed = {*autotune.candidate_configs(kernel.kernel, 30, 1), kernel.tuner.heuristic}
    assert kernel.tuner.timings == 2 * len(timed)  # two shapes, the heuristic config included
    best = max(timed, key=lambda c: (c.XBLOCK, c.num_warps))  # what the fake timer favours
    assert set(kernel.tuner.chosen.values()) == {best}


def test_cache_on_disk_is_reused_by_a_fresh_compile(tuning, triton_compile, monkeypatch):
    def fn(x):
        return (torch.softmax(x * 3, -1),)

    x = torch.randn(5, 12)
    first = triton_compile(fn, x, options=MAX_AUTOTUNE)
    torch.testing.assert_close(first(x)[0], fn(x)[0])
    (path,) = [
        os.path.join(config.autotune_cache_dir, f) for f in os.listdir(config.autotune_cache_dir)
    ]
    with open(path) as f:
        stored = json.load(f)
    assert list(stored) == ["5,12"] and stored["5,12"]["RBLOCK"] == 16
    tuning.calls.clear()
    second = triton_compile(fn, x, options=MAX_AUTOTUNE)  # a new launcher: memory is empty
    torch.testing.assert_close(second(x)[0], fn(x)[0])
    assert tuning.calls == [] and second.kernels[0].tuner.timings == 0
    assert second.kernels[0].tuner.chosen["5,12"].meta() == stored["5,12"]


def test_atomic_kernels_are_timed_on_copies(tuning, triton_compile):
    def fn(x, i, v):
        return (torch.index_put(x, (i,), v, accumulate=True),)

    x, i, v = torch.randn(5, 3), torch.tensor([0, 2, 0, 4]), torch.randn(4, 3)
    runner = triton_compile(fn, x, i, v, options=MAX_AUTOTUNE)
    torch.testing.assert_close(runner(x, i, v)[0], fn(x, i, v)[0])
    assert runner.kernels[-1].kernel.atomic and runner.kernels[-1].tuner.timings >= 3


def test_without_max_autotune_no_tuner(triton_compile):
    runner = triton_compile(lambda x: (x + 1,), torch.randn(3))
    assert runner.kernels[0].tuner is None


@pytest.mark.gpu
def test_autotuning_times_on_the_gpu(monkeypatch, tmp_path, triton_compile):
    # triton_compile skips this test unless kernels can be compiled for the GPU here
    monkeypatch.setattr(config, "autotune_cache_dir", str(tmp_path))
    x = torch.randn(4096, 1024, device="cuda")
    runner = triton_compile(lambda x: (torch.softmax(x, -1),), x, options=MAX_AUTOTUNE)
    torch.testing.assert_close(runner(x)[0], torch.softmax(x, -1))
    assert runner.kernels[0].tuner.timings >= 3 and os.listdir(tmp_path)
