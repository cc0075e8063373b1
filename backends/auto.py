"""The default backend: ``triton`` where it can run, ``eager`` elsewhere.

A graph goes to our Triton compiler when its inputs are CUDA tensors and a GPU is usable, or when
``TRITON_INTERPRET=1`` is set (then kernels run on CPU tensors, as CI tests them); graphs on CPU
tensors otherwise run with ``eager``.
"""

from __future__ import annotations

from typing import Any

import torch.fx

from .eager import eager
from .registry import lookup_backend, register_backend


@register_backend("auto")
def auto(gm: torch.fx.GraphModule, example_inputs: list[Any]):
    try:
        from .triton import is_available_for  # triton may not be installed
    except ImportError:
        return eager(gm, example_inputs)
    if is_available_for(example_inputs):
        return lookup_backend("triton")(gm, example_inputs)
    return eager(gm, example_inputs)
