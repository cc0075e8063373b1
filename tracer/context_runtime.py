"""What rewritten code and graphs call at run time for the context managers a trace went through.

``ContextRecipe`` says how to build a real context object again (``torch.autocast("cpu",
dtype=torch.bfloat16)``); ``ContextExit`` holds one built and entered by the rewritten code when a
graph break leaves its ``with`` block open: it is what the block's ``__exit__`` slot holds from then
on, in the code after the graph and in resume functions. A compiled resume function guards the
``key`` of the ``ContextExit`` it receives (what the context is and what it restores), never its
identity, so identical calls hit the cache. ``fork_rng_save``/``fork_rng_restore`` are the graph
nodes of ``torch.random.fork_rng``. Nothing here imports the tracer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx


@dataclass(frozen=True)
class ContextRecipe:
    """``factory(*args, **dict(kwargs))`` builds the context object; hashable (constants only)."""

    factory: Callable[..., Any]
    args: tuple = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def build(self) -> Any:
        return self.factory(*self.args, **dict(self.kwargs))

    def __repr__(self) -> str:
        name = getattr(self.factory, "__qualname__", repr(self.factory))
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{name}({', '.join(parts)})"


class ContextExit:
    """A real context object built from ``recipe`` (building it may already change state, as
    ``torch.set_grad_enabled(False)`` does) and, after ``enter()``, entered. Calling it exits the
    context once, as the ``with`` block's ``__exit__`` would; later calls do nothing."""

    __slots__ = ("ctx", "done", "key")

    def __init__(self, recipe: ContextRecipe, key: tuple) -> None:
        self.ctx = recipe.build()
        self.key = key  #: what a compiled resume function guards (``tracer/variables/contexts.py``)
        self.done = False

    def enter(self) -> None:
        self.done = False
        self.ctx.__enter__()

    def __call__(self, *exc_info: Any) -> Any:
        if self.done:
            return False
        self.done = True
        return self.ctx.__exit__(*(exc_info or (None, None, None)))

    def __repr__(self) -> str:
        return f"ContextExit({self.key!r})"


def exit_with(exit_fn: Callable[..., Any], exc: BaseException) -> Any:
    """A ``with`` block's handler: leave the context with the exception ``exc`` being raised."""
    return exit_fn(type(exc), exc, exc.__traceback__)


@torch.fx.node.has_side_effect
def fork_rng_save(device_type: str, devices: tuple[int, ...]) -> tuple:
    """Graph node entering ``torch.random.fork_rng``: the RNG states it restores on exit."""
    module = torch.get_device_module(device_type)
    return torch.get_rng_state(), [module.get_rng_state(d) for d in devices]


@torch.fx.node.has_side_effect
def fork_rng_restore(saved: tuple, device_type: str, devices: tuple[int, ...]) -> None:
    """Graph node leaving ``torch.random.fork_rng``."""
    cpu_state, device_states = saved
    torch.set_rng_state(cpu_state)
    module = torch.get_device_module(device_type)
    for device, state in zip(devices, device_states, strict=True):
        module.set_rng_state(state, device)


@torch.fx.node.has_side_effect
def set_default_dtype(dtype: torch.dtype) -> None:
    """Graph node of ``torch.set_default_dtype`` (registered as a side effect: never removed)."""
    torch.set_default_dtype(dtype)


@torch.fx.node.has_side_effect
def set_deterministic(mode: bool, warn_only: bool) -> None:
    """Graph node of ``torch.use_deterministic_algorithms``."""
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)
