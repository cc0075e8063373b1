"""The ``eager`` backend: run the traced FX graph as it is (its generated Python ``forward``)."""

from __future__ import annotations

from typing import Any

import torch.fx

from .registry import IGNORED, register_backend


@register_backend("eager", options=IGNORED)
def eager(gm: torch.fx.GraphModule, example_inputs: list[Any]):
    """Return ``gm.forward`` itself: calling it skips ``nn.Module.__call__``, which saves a few µs a
    call."""
    return gm.forward


#: the graph's operators run as they are on the real inputs: whichever inputs share storage in a
#: call, a write into one is seen through the others (the tracer guards no storage sharing)
eager.runs_graph_as_is = True
