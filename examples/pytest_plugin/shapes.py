"""A tiny "library" whose functions are compiled by bytegraph; ``test_shapes.py`` checks them with
the bytegraph pytest plugin (no graph breaks, a bounded number of recompiles)."""

from __future__ import annotations

import torch

import bytegraph


@bytegraph.compile
def normalize(x: torch.Tensor) -> torch.Tensor:
    """One graph: nothing here leaves the graph."""
    return (x - x.mean()) / (x.std() + 1e-5)


@bytegraph.compile(dynamic=False)
def scale(x: torch.Tensor, factor: int) -> torch.Tensor:
    """``factor`` is a Python int guarded by value; with ``dynamic=False`` each new value compiles a
    new entry (by default the second value would make it symbolic instead)."""
    return x * factor


@bytegraph.compile
def noisy_normalize(x: torch.Tensor) -> torch.Tensor:
    """A graph break: ``print`` runs in Python between two graphs."""
    y = (x - x.mean()) / (x.std() + 1e-5)
    print("normalized", tuple(y.shape))
    return y.relu()
