"""The ``inductor`` backend: hand the graph to torch's own Inductor, for comparison with ``triton``.

``mode``/``options`` mean what they mean to torch.compile: a mode is Inductor's own option set
(``torch._inductor.list_mode_options``), options are Inductor config names, checked against
``torch._inductor.config`` (an unknown name lists the known ones).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
from collections.abc import Mapping
from typing import Any

import torch.fx

from .float_inputs import compile_with_float_tensors, float_positions
from .registry import BackendOptions, register_backend
from .size_inputs import compile_lifted
from .sizes_from_data import compile_with_symbols
from .state_nodes import has_runtime_nodes
from .tensorify_restart import compile_again_on_restart


def _inductor(module: str) -> Any:
    """A ``torch._inductor`` module, imported on first use (it is heavy)."""
    return importlib.import_module(f"torch._inductor{module}")


def _validate(options: Mapping[str, Any]) -> None:
    known = _inductor(".config").get_config_copy()
    for key, value in options.items():
        name = key.replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            guess = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise ValueError(
                f"unknown Inductor option {key!r}; {guess}known options: {', '.join(known)}"
            )
        default = known[name]
        if isinstance(default, (bool, int, float, str)) and not isinstance(value, type(default)):
            raise ValueError(
                f"Inductor option {key!r} takes a {type(default).__name__}, not {value!r}"
            )


def _mode_options(mode: str) -> dict[str, Any]:
    return dict(_inductor("").list_mode_options(mode))


@register_backend("inductor", options=BackendOptions(_validate, _mode_options))
def inductor(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Mapping[str, Any] | None = None
):
    if has_runtime_nodes(gm):  # run-time state nodes (fork_rng, ...): the graph runs as it is
        return gm.forward
    compile_fx = _inductor(".compile_fx").compile_fx
    patches = {k.replace("-", "_"): v for k, v in (options or {}).items()}
    # AOTAutograd's cache checks an entry's guards on the int sizes alone: an entry compiled with
    # a float input specialised to its value (an operand the float can't be a tensor in, such as
    # ``alpha=``) would be taken for any value. Without it, what Inductor caches holds the value.
    floats = float_positions(gm)
    cache = contextlib.nullcontext() if not floats else _no_autograd_cache()

    def compile(gm: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        return compile_with_symbols(
            lambda inputs: compile_with_float_tensors(
                lambda gm, inputs: compile_again_on_restart(
                    lambda: compile_fx(gm, inputs, config_patches=patches)
                ),
                gm,
                inputs,
            ),
            gm,
            inputs,
        )

    with cache:  # views of one input written in place: their size symbols as inputs
        return compile_lifted(compile, gm, example_inputs)


def _no_autograd_cache() -> contextlib.AbstractContextManager[None]:
    return importlib.import_module("torch._functorch.config").patch(enable_autograd_cache=False)
