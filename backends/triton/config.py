"""Settings of the triton backend (module attributes; tests patch them with ``monkeypatch``)."""

from __future__ import annotations

import os

#: Largest static row length reduced with the whole row in registers ("persistent" reduction);
#: longer or symbolic rows loop over ``looped_rblock``-sized chunks.
persistent_reduction_max = 1024
looped_rblock = 256

#: Benchmark a few block-size configs per kernel and shape (GPU only, via ``triton.autotune``).
autotune = os.environ.get("BYTEGRAPH_TRITON_AUTOTUNE", "0") == "1"

#: Most buffers one kernel may compute before the scheduler starts a new kernel.
max_fused_nodes = 64

#: Where generated kernel modules are written (keyed by source hash).
cache_dir = os.environ.get(
    "BYTEGRAPH_TRITON_CACHE",
    os.path.join(os.path.expanduser("~"), ".cache", "bytegraph", "kernels"),
)


def interpret() -> bool:
    """True under ``TRITON_INTERPRET=1``: kernels run on CPU tensors in Triton's interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"
