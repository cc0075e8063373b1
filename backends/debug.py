"""Backends for tests and debugging: count and keep every graph they are given.

>>> counter = CompileCounter()
>>> fn = bytegraph.compile(f, backend=counter)
>>> fn(x); counter.frame_count, counter.op_count
(1, 3)
"""

from __future__ import annotations

from typing import Any

import torch.fx


class CompileCounter:
    """Counts graphs (``frame_count``) and call nodes (``op_count``) and keeps each graph, then runs it."""

    def __init__(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]):
        self.frame_count += 1
        self.op_count += sum(n.op.startswith("call_") for n in gm.graph.nodes)
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        return gm.forward

    def clear(self) -> None:
        self.__init__()
