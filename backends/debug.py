"""Backends for tests and debugging: count and keep every graph they are given.

>>> counter = CompileCounter()
>>> fn = bytegraph.compile(f, backend=counter)
>>> fn(x); counter.frame_count, counter.op_count
(1, 3)

``CompileCounter(triton_backend)`` compiles each graph with that backend instead of running it as
it is, and keeps what the backend returned in ``compiled``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx


class CompileCounter:
    """Counts graphs (``frame_count``) and call nodes (``op_count``), keeps each graph and what
    ``backend`` (default: run the graph as it is) compiled it to."""

    def __init__(self, backend: Callable[[torch.fx.GraphModule, list[Any]], Any] | None = None):
        self.backend = backend
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []
        self.compiled: list[Any] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]):
        self.frame_count += 1
        self.op_count += sum(n.op.startswith("call_") for n in gm.graph.nodes)
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        out = gm.forward if self.backend is None else self.backend(gm, example_inputs)
        self.compiled.append(out)
        return out

    def clear(self) -> None:
        self.__init__(self.backend)
