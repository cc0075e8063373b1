"""``backend="triton"``: our Inductor-like compiler from FX graphs to fused Triton kernels.

Pipeline (one module each): ``compile`` (aot_autograd, decompositions; ``float_scalars``: float
inputs at their float64 value) -> ``graph`` + ``lowering``/``lower_*`` (ATen -> ``ir``) ->
``scheduler`` (fusion) -> ``kernel`` + ``reduction_code`` + ``ops`` (Triton source) -> ``launch``
(hash-keyed cache, grid, call) -> ``wrapper`` (the Python that allocates and launches);
``cudagraphs`` (``mode="reduce-overhead"``) and ``autotune``
(``mode="max-autotune"``) as ``config.Options`` say. Entry points: the registered backend
(``options=`` a dict or an ``Options``) and ``is_available_for(example_inputs)``; on inputs it
cannot run (CPU tensors without ``TRITON_INTERPRET=1``, no GPU, no triton) the backend returns
the graph's own eager ``forward``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

import torch
import torch.fx

from ..registry import register_backend
from . import config
from .config import Options

__all__ = [
    "Options",
    "TritonCompiledFunction",
    "compile_triton",
    "is_available_for",
    "triton_backend",
]


def __getattr__(name: str) -> Any:
    """``compile_triton`` and ``TritonCompiledFunction``, imported on first use: ``compile``
    imports AOTAutograd, which imports all of ``torch._dynamo``, and the default backend imports
    this package on every graph only to ask ``is_available_for`` (CPU graphs never compile)."""
    if name in ("compile_triton", "TritonCompiledFunction"):
        return getattr(importlib.import_module(f"{__name__}.compile"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_available_for(example_inputs: list[Any]) -> bool:
    """Whether generated kernels can run on these inputs.

    True under ``TRITON_INTERPRET=1`` (any device; kernels run on the CPU), else when triton is
    importable, a CUDA GPU is present and every tensor input lives on it.
    """
    if not config.interpret():
        tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
        # the inputs first: looking for triton walks the import path (a CPU graph never needs it)
        if not tensors or any(t.device.type != "cuda" for t in tensors):
            return False
        if not torch.cuda.is_available():
            return False
    return importlib.util.find_spec("triton") is not None


@register_backend("triton", options=Options.from_dict)
def triton_backend(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    options: Options | Mapping[str, Any] | None = None,
):
    """Compile ``gm`` to Triton kernels, or return ``gm.forward`` where they cannot run.

    ``options``: an ``Options`` or its dict form (``{"triton.cudagraphs": True, "max_autotune":
    True}``; an unknown name is a ValueError)."""
    if not isinstance(options, Options):
        options = Options.from_dict(options)
    if not is_available_for(example_inputs):
        return gm.forward
    return __getattr__("compile_triton")(gm, example_inputs, options)
