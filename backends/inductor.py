"""The ``inductor`` backend: hand the graph to torch's own Inductor, for comparison with ``triton``."""

from __future__ import annotations

from typing import Any

import torch.fx

from .registry import register_backend
from .state_nodes import has_runtime_nodes


@register_backend("inductor")
def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]):
    from torch._inductor.compile_fx import compile_fx  # heavy: imported when the backend is chosen

    if has_runtime_nodes(gm):
        return gm.forward
    return compile_fx(gm, example_inputs)
