"""Autotuning for ``mode="max-autotune"``: a few block-size configs per kernel, timed once per
shape, the fastest kept on disk.

``candidate_configs(kernel, xnumel, rnumel)`` lists the configs worth timing (always including the
heuristic one of ``launch.block_sizes``); ``Autotuner.pick(launch, args)`` returns the config for
these sizes: from memory, else from the JSON file ``config.autotune_cache_dir/<key>.json`` (key:
kernel source, device name, triton version), else by timing each candidate with ``benchmark``
and writing the winner there. Kernels that accumulate in place (atomic scatters) are timed on
copies of what they write. What launches a kernel and computes heuristics lives in ``launch.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from . import config
from .kernel import GeneratedKernel

try:
    import triton
    import triton.testing
except ImportError:  # the package must import without triton
    triton = None

log = logging.getLogger("bytegraph.autotune")


@dataclass(frozen=True)
class Config:
    """Block sizes and warps of one launch."""

    XBLOCK: int
    RBLOCK: int | None = None  #: reductions and scans only
    num_warps: int = 4

    def meta(self) -> dict[str, int]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def candidate_configs(kernel: GeneratedKernel, xnumel: int, rnumel: int) -> list[Config]:
    """The configs timed for a kernel at these sizes (no duplicates; small blocks for small
    sizes)."""
    xcap = next_power_of_2(max(1, xnumel))
    if not kernel.is_reduction:
        pairs = ((256, 4), (512, 4), (1024, 4), (1024, 8), (2048, 8))
        found = [Config(min(x, max(xcap, 128)), None, w) for x, w in pairs]
    elif kernel.persistent:
        rblock = next_power_of_2(rnumel)
        found = [
            Config(min(x, xcap), rblock, w)
            for x, w in ((1, 4), (2, 4), (4, 8), (8, 8), (16, 8))
            if x * rblock <= 16384
        ]
    else:
        rcap = next_power_of_2(max(1, rnumel))
        found = [
            Config(min(x, xcap), min(r, rcap), w)
            for x, r, w in (
                (1, 2048, 8),
                (1, 1024, 4),
                (4, 512, 8),
                (8, 256, 4),
                (64, 64, 8),
                (64, 8, 4),
                (128, 8, 8),
            )
        ]
    return list(dict.fromkeys(found))


def benchmark(fn: Callable[[], None], device: torch.device) -> float:
    """Median seconds of ``fn()`` (CUDA events on a GPU; one wall-clock run elsewhere)."""
    if device.type == "cuda":
        return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median") / 1e3
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


class Autotuner:
    """Chooses and remembers one ``Config`` per size tuple for one kernel."""

    def __init__(self, kernel: GeneratedKernel, source: str, heuristic: dict[str, int]) -> None:
        self.kernel = kernel
        self.source = source
        self.heuristic = Config(**heuristic)
        self.chosen: dict[str, Config] = {}
        self.timings = 0  #: how many configs this tuner timed (tests read it)

    def cache_path(self, device: torch.device) -> str:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
        version = getattr(triton, "__version__", "none")
        key = hashlib.sha256(f"{self.source}\n{name}\n{version}".encode()).hexdigest()[:32]
        return os.path.join(config.autotune_cache_dir, f"{key}.json")

    def pick(
        self,
        launch: Callable[[Sequence[Any], dict[str, int]], None],
        args: Sequence[Any],
        sizes: tuple[int, ...],
    ) -> Config:
        """The config for these sizes; times the candidates the first time (``launch(args,
        meta)`` runs the kernel)."""
        key = ",".join(map(str, sizes))
        hit = self.chosen.get(key)
        if hit is not None:
            return hit
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        path = self.cache_path(device)
        stored = _read(path)
        if key in stored:
            hit = Config(**stored[key])
        else:
            hit = self.tune(launch, args, sizes, device)
            stored = _read(path)  # another process may have added sizes meanwhile
            stored[key] = asdict(hit)
            _write(path, stored)
        self.chosen[key] = hit
        return hit

    def tune(
        self,
        launch: Callable[[Sequence[Any], dict[str, int]], None],
        args: Sequence[Any],
        sizes: tuple[int, ...],
        device: torch.device,
    ) -> Config:
        xnumel = sizes[-2] if self.kernel.is_reduction else sizes[-1]
        rnumel = sizes[-1] if self.kernel.is_reduction else 1
        candidates = candidate_configs(self.kernel, xnumel, rnumel)
        if self.heuristic not in candidates:
            candidates.append(self.heuristic)
        timed_args = list(args)
        if self.kernel.atomic:  # accumulating kernels must not add up their timing runs
            stored = set(self.kernel.stored)
            for i, name in enumerate(self.kernel.pointer_args):
                if name in stored:
                    timed_args[i] = args[i].clone()
        times = {}
        for cfg in candidates:
            times[cfg] = benchmark(lambda cfg=cfg: launch(timed_args, cfg.meta()), device)
            self.timings += 1
        best = min(candidates, key=times.__getitem__)
        log.info(
            "%s %s: %s (%.1f us; heuristic %.1f us)",
            self.kernel.name,
            sizes,
            best,
            times[best] * 1e6,
            times[self.heuristic] * 1e6,
        )
        return best


def _read(path: str) -> dict[str, dict[str, int]]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: str, data: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
