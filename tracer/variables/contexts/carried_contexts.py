"""How a compiled resume function traces the contexts it receives open (``contexts.CarriedKind``):
one entry of ``CARRIED_KINDS`` per kind of ``ContextExit`` key (grad mode, inference mode, autocast,
``torch.device``, ``nullcontext``), registered on import.

The rewritten code leaves the real context just before the graph; ``enter`` enters it again at the
start of the graph (no real change: while tracing, the real context is still on), ``exit`` ends that
region where the block ends (and switches the real state, for the rest of the trace), ``leave``
switches the real state to outside it while the backend compiles, ``recipe`` rebuilds it for the
rewritten code after the graph, and ``expects`` says what it makes the state inside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast
from torch.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode

from ...context_runtime import (
    ContextRecipe,
    enter_autocast,
    enter_inference_mode,
    exit_autocast,
    exit_inference_mode,
)
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from .context_trackers import CARRIED_KINDS, NONE, CarriedContextVariable, CarriedKind
from .state_contexts import _GRAD, AutocastVariable, _state_call, _switch_grad

if TYPE_CHECKING:
    from ...translator import Translator


def _grad_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    _, mode, prev = ctx.key
    tx.output.state_node(torch._C._set_grad_enabled, (mode,))
    ctx.record(tx, "enter", touches=_GRAD, key=ctx.key, data={"prev": prev})


def _grad_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit", undo=_switch_grad(tx, ctx.key[2]), touches=_GRAD)
    return NONE


def _grad_leave(key: tuple) -> Callable[[], None]:
    inside = torch.is_grad_enabled()
    torch._C._set_grad_enabled(key[2])
    return lambda: torch._C._set_grad_enabled(inside)


def _grad_expects(key: tuple, expected: dict[str, Any]) -> None:
    expected["grad"] = key[1]


def _inference_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    node = tx.output.state_node(enter_inference_mode, (ctx.key[1],))
    ctx.record(
        tx,
        "enter",
        close=lambda g: _state_call(g, exit_inference_mode, (node,)),
        touches=_GRAD,
        key=ctx.key,
        data={"node": node},
    )


def _inference_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    node = ctx.log.find(ctx, "enter").data["node"]
    tx.output.state_node(exit_inference_mode, (node,))
    ctx.record(tx, "exit", undo=_inference_leave(ctx.key), touches=_GRAD)
    return NONE


def _inference_leave(key: tuple) -> Callable[[], None]:
    """Outside a carried ``inference_mode(mode)`` while its guard stays on: a nested guard with the
    state from before it (``_InferenceMode(prev)`` sets grad mode too: set it back as it was)."""
    _, _mode, prev_grad, prev_inference = key
    grad = torch.is_grad_enabled()
    guard = _enter_inference_mode(prev_inference)
    torch._C._set_grad_enabled(prev_grad)

    def undo() -> None:
        torch._C._set_grad_enabled(grad)
        _exit_inference_mode(guard)

    return undo


def _inference_expects(key: tuple, expected: dict[str, Any]) -> None:
    expected["inference"] = key[1]
    expected["grad"] = not key[1]


def _autocast_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    node = tx.output.state_node(enter_autocast, ctx.key[1:5])
    ctx.record(
        tx,
        "enter",
        close=lambda g: _state_call(g, exit_autocast, (node,)),
        key=ctx.key,
        data={"node": node},
    )


def _autocast_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    node = ctx.log.find(ctx, "enter").data["node"]
    tx.output.state_node(exit_autocast, (node,))
    ctx.record(tx, "exit", undo=_autocast_leave(ctx.key))
    return ConstantVariable(False)


def _autocast_leave(key: tuple) -> Callable[[], None]:
    """Outside a carried autocast while it stays on: a nested one with the settings from before."""
    device, _dtype, _enabled, _cache, prev_enabled, prev_dtype, prev_cache = key[1:]
    mode = _enter_autocast(device, prev_dtype, prev_enabled, prev_cache)
    return lambda: _exit_autocast(mode)


def _autocast_expects(key: tuple, expected: dict[str, Any]) -> None:
    device, dtype, enabled, cache = key[1:5]
    expected[f"autocast:{device}"] = (enabled, dtype)
    expected["autocast_cache"] = cache


def _autocast_recipe(key: tuple) -> ContextRecipe:
    device, dtype, enabled, cache = key[1:5]
    return AutocastVariable(device=device, dtype=dtype, enabled=enabled, cache=cache).recipe()


def _device_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", device=torch.device(ctx.key[1]), key=ctx.key)


def _device_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    # the real one stays on while tracing: what it would give is passed explicitly from here on
    ctx.record(tx, "exit")
    ctx.record(tx, "region", opens=True, device=torch.device(ctx.key[2]))
    return NONE


def _device_expects(key: tuple, expected: dict[str, Any]) -> None:
    """Inside the block, factories get its device, unless the code changed that directly (a
    ``torch.set_default_device`` in the block, run in Python at the break)."""
    expected["device"] = key[1]


def _null_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", key=ctx.key)


def _null_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit")
    return NONE


def _no_expectation(key: tuple, expected: dict[str, Any]) -> None:
    pass


def _stays(key: tuple) -> Callable[[], None]:
    return lambda: None


CARRIED_KINDS.update(
    grad=CarriedKind(
        _grad_enter,
        _grad_exit,
        lambda key: ContextRecipe(torch.set_grad_enabled, (key[1],)),
        _grad_expects,
        _grad_leave,
    ),
    inference=CarriedKind(
        _inference_enter,
        _inference_exit,
        lambda key: ContextRecipe(torch.inference_mode, (key[1],)),
        _inference_expects,
        _inference_leave,
    ),
    autocast=CarriedKind(
        _autocast_enter, _autocast_exit, _autocast_recipe, _autocast_expects, _autocast_leave
    ),
    device=CarriedKind(
        _device_enter,
        _device_exit,
        lambda key: ContextRecipe(torch.device, (key[1],)),
        _device_expects,
        _stays,
    ),
    null=CarriedKind(
        _null_enter,
        _null_exit,
        lambda key: ContextRecipe(contextlib.nullcontext),
        _no_expectation,
        _stays,
    ),
)
