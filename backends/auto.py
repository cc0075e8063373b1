"""The default backend: ``triton`` where it can run, ``eager`` elsewhere.

A graph goes to our Triton compiler when its inputs are CUDA tensors and a GPU is usable, or when
``TRITON_INTERPRET=1`` is set (then kernels run on CPU tensors, as CI tests them); graphs on CPU
tensors otherwise run with ``eager``. ``mode``/``options`` are the triton backend's (CUDA graphs,
autotuning); a graph that runs with ``eager`` gives a one-time notice that they have no effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.fx

from .eager import eager
from .registry import MODES, lookup_backend, notice_once, register_backend

#: What each option the modes set does, for the notice on graphs that run with ``eager``.
_WHAT = {"triton.cudagraphs": "CUDA graphs", "max_autotune": "autotuning"}


def validate_triton_options(options: Mapping[str, Any]) -> None:
    """The triton backend's check of ``options`` (``Options.from_dict``); where triton is not
    installed, the names the modes use, each taking a bool."""
    try:
        from .triton.config import Options  # triton may not be installed
    except ImportError:
        Options = None
    if Options is not None:
        Options.from_dict(options)
        return
    known = sorted({name for opts in MODES.values() for name in opts})
    for key, value in options.items():
        if key not in known:
            raise ValueError(f"unknown option {key!r}; known options: {', '.join(known)}")
        if not isinstance(value, bool):
            raise ValueError(f"option {key!r} takes a bool, not {value!r}")


@register_backend("auto", options=validate_triton_options)
def auto(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    options: Mapping[str, Any] | None = None,
):
    try:
        from .triton import is_available_for  # triton may not be installed
    except ImportError:
        return _eager(gm, example_inputs, options, "triton is not installed")
    if is_available_for(example_inputs):
        triton = lookup_backend("triton")
        if options:
            return triton(gm, example_inputs, options=options)
        return triton(gm, example_inputs)
    return _eager(gm, example_inputs, options, "the graph's tensors are not on a CUDA GPU")


def _eager(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    options: Mapping[str, Any] | None,
    why: str,
):
    wanted = [f"{_WHAT.get(k, k)} ({k})" for k, v in (options or {}).items() if v]
    if wanted:
        notice_once(
            "auto:eager:" + ",".join(sorted(wanted)),
            f"{' and '.join(wanted)} have no effect here: {why}, so the graph runs with the "
            "eager backend",
        )
    return eager(gm, example_inputs)
