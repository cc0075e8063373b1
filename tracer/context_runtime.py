"""What rewritten code and graphs call at run time for the context managers a trace went through.

``ContextRecipe`` says how to build a real context object again (``torch.autocast("cpu",
dtype=torch.bfloat16)``); ``ContextExit`` holds one built and entered by the rewritten code when a
graph break leaves its ``with`` block open: it is what the block's ``__exit__`` slot holds from then
on, in the code after the graph and in resume functions. A compiled resume function guards the
``key`` of the ``ContextExit`` it receives (what the context is and what it restores), never its
identity, so identical calls hit the cache.

Graph nodes: ``enter_autocast``/``exit_autocast``, ``enter_inference_mode``/``exit_inference_mode``,
``fork_rng_save``/``fork_rng_restore``, ``set_default_dtype``, ``set_deterministic`` (and torch's
``_set_grad_enabled``). The entering ones keep an undo on a per-thread stack while their region is
open, so ``StateSafeGraph`` (what a graph with such nodes is called through) can leave every region
and put the state back if the graph raises half-way, then exit the contexts the graph ran inside of.
Nothing here imports the tracer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast
from torch.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode


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
        #: what a compiled resume function guards (``variables/contexts.py``)
        self.key = key
        self.done = False

    @classmethod
    def around(cls, ctx: Any, key: tuple) -> ContextExit:
        """The one for a context object the compiled function was given (its ``__enter__`` writes
        what its ``__exit__`` reads on the object itself, as eager's would)."""
        made = cls.__new__(cls)
        made.ctx, made.key, made.done = ctx, key, False
        return made

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


def exit_with(exit_fn: Callable[..., Any], exc: BaseException) -> bool:
    """A ``with`` block's handler: leave the context with the exception ``exc`` being raised;
    whether the context swallows it (its ``__exit__`` returns a true value)."""
    return bool(exit_fn(type(exc), exc, exc.__traceback__))


# -- graph nodes -----------------------------------------------------------------------------------
class _Regions(threading.local):
    def __init__(self) -> None:
        self.open: list[tuple[Any, Callable[[], None]]] = []  #: (token, undo) of open regions


_REGIONS = _Regions()


def _opened(token: Any, undo: Callable[[], None]) -> Any:
    _REGIONS.open.append((token, undo))
    return token


def _closed(token: Any) -> None:
    regions = _REGIONS.open
    for i in range(len(regions) - 1, -1, -1):
        if regions[i][0] is token:
            del regions[i]
            return


@torch.fx.node.has_side_effect
def enter_autocast(*args: Any) -> Any:
    """Graph node: enter an autocast region (``torch.amp._enter_autocast``); returns its mode."""
    mode = _enter_autocast(*args)
    return _opened(mode, lambda: _exit_autocast(mode))


@torch.fx.node.has_side_effect
def exit_autocast(mode: Any) -> None:
    _closed(mode)
    _exit_autocast(mode)


@torch.fx.node.has_side_effect
def enter_inference_mode(mode: bool) -> Any:
    """Graph node: enter an inference-mode region; returns its guard."""
    guard = _enter_inference_mode(mode)
    return _opened(guard, lambda: _exit_inference_mode(guard))


@torch.fx.node.has_side_effect
def exit_inference_mode(guard: Any) -> None:
    _closed(guard)
    _exit_inference_mode(guard)


@torch.fx.node.has_side_effect
def fork_rng_save(device_type: str, devices: tuple[int, ...]) -> tuple:
    """Graph node entering ``torch.random.fork_rng``: the RNG states it restores on exit."""
    module = torch.get_device_module(device_type)
    saved = (torch.get_rng_state(), [module.get_rng_state(d) for d in devices])
    return _opened(saved, lambda: _restore_rng(saved, device_type, devices))


@torch.fx.node.has_side_effect
def fork_rng_restore(saved: tuple, device_type: str, devices: tuple[int, ...]) -> None:
    """Graph node leaving ``torch.random.fork_rng``."""
    _closed(saved)
    _restore_rng(saved, device_type, devices)


def _restore_rng(saved: tuple, device_type: str, devices: tuple[int, ...]) -> None:
    cpu_state, device_states = saved
    torch.set_rng_state(cpu_state)
    module = torch.get_device_module(device_type)
    for device, state in zip(devices, device_states, strict=True):
        module.set_rng_state(state, device)


@torch.fx.node.has_side_effect
def set_default_dtype(dtype: torch.dtype) -> None:
    """Graph node of ``torch.set_default_dtype``."""
    torch.set_default_dtype(dtype)


@torch.fx.node.has_side_effect
def set_deterministic(mode: bool, warn_only: bool) -> None:
    """Graph node of ``torch.use_deterministic_algorithms``."""
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)


def read_state() -> dict[str, Any]:
    """The absolute aspects of the state (contexts with objects are undone region by region)."""
    return {
        "grad": torch.is_grad_enabled(),
        "dtype": torch.get_default_dtype(),
        "deterministic": (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
    }


def apply_state(state: dict[str, Any]) -> None:
    torch._C._set_grad_enabled(state["grad"])
    torch.set_default_dtype(state["dtype"])
    mode, warn_only = state["deterministic"]
    now = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    if now != (mode, warn_only):  # setting it imports torch._inductor.config (half a second)
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)


class StateSafeGraph:
    """A compiled graph that changes global state: if it raises half-way, the regions it opened are
    left and the absolute state it was called in is put back, as the ``with`` blocks (and the code
    setting state back) around the failing operation would in eager."""

    __slots__ = ("__name__", "fn")

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self.fn = fn
        self.__name__ = name

    def __call__(self, *args: Any) -> Any:
        regions = _REGIONS.open
        depth = len(regions)
        state = read_state()
        try:
            return self.fn(*args)
        except BaseException:
            while len(regions) > depth:
                regions.pop()[1]()
            apply_state(state)
            raise
