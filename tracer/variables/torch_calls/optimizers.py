"""torch.optim's wrappers around ``Optimizer.step``/``zero_grad``, traced without their breaks.

- ``torch.autograd.profiler.record_function(name)`` (every ``step`` and ``zero_grad`` runs in
  one): while no profiler is on it records nothing, so it is traced as a context without nodes,
  guarded on the profiler staying off (with a profiler on, the block runs in Python).
- ``_use_grad_for_differentiable``'s wrapper switches grad mode to ``defaults["differentiable"]``
  around ``step`` and calls ``torch._dynamo.graph_break()`` (only so that torch's AOT sees an
  inference graph): traced as a grad-mode block around the call, without the breaks.
- ``torch._disable_dynamo`` wrappers (``zero_grad``, ``state_dict``, ``add_param_group``...):
  the call runs in Python (one break), except for ``Optimizer.zero_grad``, whose body (``p.grad =
  None`` or zeroing the gradients in place) is traced.
Entry points: the ``CALL_HOOKS`` and ``call_rules`` entries registered at import.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.optim.optimizer as optim_optimizer
import torch.utils._foreach_utils as foreach_utils

from ...context_runtime import ContextRecipe
from ...exc import Unsupported
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import ConstantVariable
from ..contexts import state_contexts
from ..contexts.context_trackers import (
    CARRIED_KINDS,
    NONE,
    CarriedKind,
    ContextVariable,
    constant_args,
)
from ..functions.callables import CALL_HOOKS, UserFunctionVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ...translator import Translator
    from ..contexts.context_trackers import CarriedContextVariable

_USE_GRAD_CODE = optim_optimizer._use_grad_for_differentiable(lambda self: None).__code__
_DISABLE_DYNAMO_CODE = torch._disable_dynamo(lambda: None).__code__
#: ``_disable_dynamo``-wrapped functions whose body is traced all the same.
TRACED_DESPITE_DISABLE = frozenset({torch.optim.Optimizer.zero_grad.__wrapped__})


def _profiler_enabled() -> bool:
    return bool(torch.autograd._profiler_enabled())


@dataclass(eq=False)
class RecordFunctionVariable(ContextVariable):
    """``record_function(name)`` with no profiler on: enters and exits without nodes."""

    label: str = ""

    def enter(self, tx: Translator) -> VariableTracker:
        self.record(tx, "enter", key=("record_function", self.label))
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.autograd.profiler.record_function, (self.label,))


#: Functions of the process's build (device lists) that torch.optim asks: folded to constants.
@call_rule(
    foreach_utils._get_fused_kernels_supported_devices,
    foreach_utils._get_foreach_kernels_supported_devices,
)
def _build_constant(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    return tx.fold(fn()) if not args and not kwargs else None


@call_rule(torch.autograd.profiler.record_function)
def _record_function(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The tracker of ``record_function(name)`` while no profiler runs, else None."""
    if _profiler_enabled():
        return None
    values, named = constant_args("record_function", args, kwargs)
    if named or len(values) != 1 or not isinstance(values[0], str):
        return None
    tx.output.assume_state(("profiler",), _profiler_enabled, False)
    return RecordFunctionVariable(log=tx.output.state, label=values[0])


def _carried_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", key=ctx.key)


def _carried_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit")
    return NONE


CARRIED_KINDS["record_function"] = CarriedKind(
    _carried_enter,
    _carried_exit,
    lambda key: ContextRecipe(torch.autograd.profiler.record_function, (key[1],)),
    lambda key, expected: None,
    lambda key: lambda: None,
)


def _use_grad_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``_use_grad(self, ...)``: ``func(self, ...)`` under ``set_grad_enabled(differentiable)``."""
    if vt.self_vt is not None:
        args = [vt.self_vt, *args]
    if not args:
        raise Unsupported("call", "an optimizer step called without self")
    defaults = args[0].var_getattr(tx, "defaults")
    differentiable = dispatch.getitem(tx, defaults, ConstantVariable("differentiable"))
    func = vt.clone(self_vt=None).closure_value(tx, "func")
    grad_mode = state_contexts.set_grad_enabled(tx, torch.set_grad_enabled, [differentiable], {})
    grad_mode.call_method(tx, "__enter__", [], {})
    result = func.call_function(tx, args, kwargs)
    grad_mode.call_method(tx, "__exit__", [NONE, NONE, NONE], {})
    return result


def _disabled_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """A ``torch._disable_dynamo`` wrapper: runs in Python, unless its function is traced anyway."""
    wrapped = vt.fn.__wrapped__
    if wrapped not in TRACED_DESPITE_DISABLE:
        raise Unsupported(
            "disabled",
            f"{wrapped.__qualname__} is marked with torch._disable_dynamo: it runs in Python",
            hint="call it outside the compiled function",
        )
    inner = vt.clone(self_vt=None).closure_value(tx, "fn")
    if vt.self_vt is not None:
        args = [vt.self_vt, *args]
    return inner.call_function(tx, args, kwargs)


def _init_group_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> None:
    """``opt._init_group(group, lists...)``: before it is traced, the real method runs on every
    param group of the real optimizer (with fresh lists), creating the state eager's first step
    would create (``step``, ``exp_avg``...), so that the trace reads that state as inputs and the
    next call hits the cache instead of tracing the state's creation again. Skipped where the real
    objects may not be what the trace sees: the trace already read ``opt.state``, or changed a
    ``.grad`` or a container before this point."""
    opt_vt = vt.self_vt if vt.self_vt is not None else (args[0] if args else None)
    opt = getattr(opt_vt, "value", None)
    if opt_vt is None or opt_vt.source is None or not isinstance(opt, torch.optim.Optimizer):
        return None
    effects = tx.output.side_effects
    if effects.mutated or any(
        isinstance(obj, TensorVariable) for obj, _, _ in effects.attr_stores.values()
    ):
        return None
    if id(opt.state) in tx.output.wrapped or _state_ready(opt):
        return None
    lists = [
        p
        for p in list(inspect.signature(vt.fn).parameters.values())[2:]
        if p.default is inspect.Parameter.empty
    ]
    with torch.set_grad_enabled(bool(opt.defaults.get("differentiable", False))):  # as step's
        for group in opt.param_groups:
            vt.fn(opt, group, *[[] for _ in lists])
    return None


def _state_ready(opt: torch.optim.Optimizer) -> bool:
    """Every parameter with a gradient has its state (the real ``_init_group`` would add none)."""
    return all(
        p in opt.state and opt.state[p]
        for group in opt.param_groups
        for p in group["params"]
        if p.grad is not None
    )


def _optimizer_classes() -> list[type]:
    found, todo = [], [torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("torch.optim."):
            found.append(cls)
    return found


for _cls in _optimizer_classes():
    _init = vars(_cls).get("_init_group")
    _init = getattr(_init, "__wrapped__", _init)  # torch.compile may have wrapped it already
    if isinstance(_init, types.FunctionType):
        CALL_HOOKS[_init.__code__] = _init_group_call
_init_group_call.accepts_bound = True  # type: ignore[attr-defined]
_use_grad_call.accepts_bound = True  # type: ignore[attr-defined]
_disabled_call.accepts_bound = True  # type: ignore[attr-defined]
CALL_HOOKS[_USE_GRAD_CODE] = _use_grad_call
CALL_HOOKS[_DISABLE_DYNAMO_CODE] = _disabled_call


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
