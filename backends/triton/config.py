"""Settings of the triton backend: module attributes (tests patch them with ``monkeypatch``) and
``Options``, the per-compile choices ``bytegraph.compile(mode=..., options=...)`` hands over.

``Options.from_dict({"triton.cudagraphs": True, "max_autotune": True})`` validates the names (those
of ``torch.compile``'s options where one exists); ``compile_triton(gm, inputs, options)`` uses it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Largest static row length reduced with the whole row in registers ("persistent" reduction);
#: longer or symbolic rows loop over ``looped_rblock``-sized chunks.
persistent_reduction_max = 1024
looped_rblock = 256

#: A long static reduction with fewer results than ``split_reduction_rows`` is split in two, into
#: chunks of at least ``split_reduction_min_chunk`` elements (a quarter of it for a reduction over
#: a dim other than the last, whose kernel reduces many columns per program): ``lower_reductions``.
split_reduction_rows = 2048
split_reduction_min_chunk = 1024

#: A row reduction (not a column one) is launched with at least this many programs where it has
#: that many rows: two per SM of an H100 (132 SMs), so that a few long rows still fill the GPU.
min_reduction_programs = 264

#: Most buffers one kernel may compute before the scheduler starts a new kernel.
max_fused_nodes = 64

#: Where generated kernel modules are written (keyed by source hash).
cache_dir = os.environ.get(
    "BYTEGRAPH_TRITON_CACHE",
    os.path.join(os.path.expanduser("~"), ".cache", "bytegraph", "kernels"),
)

#: Where autotuning results are kept (one JSON file per kernel source, device and triton version).
autotune_cache_dir = os.path.join(cache_dir, "autotune")

#: CUDA graphs recorded per compiled graph (one per input shape); the least recently used goes.
cudagraph_max_recordings = 8


def interpret() -> bool:
    """True under ``TRITON_INTERPRET=1``: kernels run on CPU tensors in Triton's interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@dataclass(frozen=True)
class Options:
    """What one ``compile_triton`` call should do beyond the defaults.

    >>> Options.from_dict({"triton.cudagraphs": True})
    Options(cudagraphs=True, max_autotune=False)
    """

    #: Record each compiled graph's launches into a CUDA graph and replay it
    #: (``mode="reduce-overhead"``; torch.compile's ``"triton.cudagraphs"``).
    cudagraphs: bool = False
    #: Time a few block-size configurations per kernel and shape, keep the fastest, cache it on
    #: disk (``mode="max-autotune"``; torch.compile's ``"max_autotune"``).
    max_autotune: bool = False

    #: option name as users write it -> field
    NAMES = {"triton.cudagraphs": "cudagraphs", "max_autotune": "max_autotune"}

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | None) -> Options:
        """Options from ``{"triton.cudagraphs": True, ...}``; an unknown name is a ValueError."""
        fields: dict[str, Any] = {}
        for key, value in (options or {}).items():
            if key not in cls.NAMES:
                known = ", ".join(sorted(cls.NAMES))
                raise ValueError(f"unknown triton backend option {key!r}; known options: {known}")
            if not isinstance(value, bool):
                raise ValueError(f"triton backend option {key!r} takes a bool, not {value!r}")
            fields[cls.NAMES[key]] = value
        return cls(**fields)

    def replace(self, **changes: Any) -> Options:
        return dataclasses.replace(self, **changes)
