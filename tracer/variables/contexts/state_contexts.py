"""Context managers that switch torch global state: grad mode, inference mode, autocast,
``torch.device``, ``torch.random.fork_rng``, ``contextlib.nullcontext``.

Calls of torch's context callables (``torch.no_grad()``, ``torch.set_grad_enabled(m)``,
``torch.inference_mode()``, ``fork_rng()``) are entries of ``call_rules`` that make the tracker;
``construct(tx, fn, args, kwargs)`` does it for ``torch.autocast`` classes and ``nullcontext``;
``wrap_context_object`` does the same for a real one the code reaches (``@torch.no_grad()`` and
``@torch.autocast(...)`` decorators hold one). Each tracker enters and exits with graph nodes
torch's own tracer uses (``_set_grad_enabled``, ``_enter_autocast``/``_exit_autocast``,
``_enter_inference_mode``...), switching the real state at the same time while tracing.
``torch.device`` contexts have no node: factory calls under them get the device as an explicit
argument (``device_for``). How a resume function starting inside a block traces these contexts is
in ``carried_contexts.py``; traced setters (``set_default_dtype``, ``set_default_device``,
``use_deterministic_algorithms``) and queries of the state are entries of ``call_rules``.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast
from torch.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode
from torch.overrides import _get_current_function_mode_stack
from torch.utils._contextlib import _DecoratorContextManager
from torch.utils._device import DeviceContext, _device_constructors

from ....guards.sources import AttrSource, Source
from ...context_runtime import (
    ContextRecipe,
    apply_state,
    enter_autocast,
    enter_inference_mode,
    exit_autocast,
    exit_inference_mode,
    fork_rng_restore,
    fork_rng_save,
    read_state,
    set_default_dtype,
    set_deterministic,
)
from ...exc import Unsupported
from ...global_state import StateEvent
from .. import call_rules
from ..base import VariableTracker
from ..call_rules import call_rule, call_rules_for
from ..constants.constant import ConstantVariable
from .context_trackers import (
    NONE,
    WITH_CONVERTERS,
    ContextVariable,
    constant_args,
)

if TYPE_CHECKING:
    from ...translator import Translator

_GRAD = frozenset({"grad"})


def _switch_grad(tx: Translator, mode: bool) -> Callable[[], None]:
    """Grad mode ``mode`` from here on, in the graph and for real; returns the real undo."""
    prev = torch.is_grad_enabled()
    tx.output.state_node(torch._C._set_grad_enabled, (mode,))
    torch._C._set_grad_enabled(mode)
    return lambda: torch._C._set_grad_enabled(prev)


@dataclass(eq=False)
class GradModeVariable(ContextVariable):
    """``torch.no_grad()``, ``torch.enable_grad()``, ``torch.set_grad_enabled(mode)`` (which
    switches when built: ``applied``; its exit restores the mode from before it was built)."""

    exit_ignores_exception = True

    mode: bool = False
    factory: Any = None
    applied: bool = False

    @property
    def decorates(self) -> bool:  # type: ignore[override]
        """``@torch.no_grad()``, ``@torch.enable_grad()``; ``set_grad_enabled`` switched already."""
        return not self.applied

    def created(self, tx: Translator) -> GradModeVariable:
        """``torch.set_grad_enabled(mode)`` was called: switch now (a "create" event)."""
        prev = torch.is_grad_enabled()
        undo = _switch_grad(tx, self.mode)
        key = ("grad", self.mode, prev)
        self.record(tx, "create", undo=undo, touches=_GRAD, key=key, data={"prev": prev})
        return self

    def enter(self, tx: Translator) -> VariableTracker:
        if self.applied:
            made = self.log.find(self, "create")
            self.record(tx, "enter", key=made.key, data=made.data)
            return NONE
        prev = torch.is_grad_enabled()
        undo = _switch_grad(tx, self.mode)
        key = ("grad", self.mode, prev)
        self.record(tx, "enter", undo=undo, touches=_GRAD, key=key, data={"prev": prev})
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        prev = self.log.find(self, "enter").data["prev"]
        self.record(tx, "exit", undo=_switch_grad(tx, prev), touches=_GRAD)
        return NONE

    def recipe(self) -> ContextRecipe:
        if self.applied:
            return ContextRecipe(torch.set_grad_enabled, (self.mode,))
        return ContextRecipe(self.factory)

    def __repr__(self) -> str:
        return f"GradModeVariable(grad_enabled={self.mode})"


@dataclass(eq=False)
class InferenceModeVariable(ContextVariable):
    """``torch.inference_mode(mode)``: a ``torch._C._InferenceMode`` guard, which also sets grad
    mode."""

    exit_ignores_exception = True
    decorates = True

    mode: bool = True

    def enter(self, tx: Translator) -> VariableTracker:
        key = ("inference", self.mode, torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        holder = [_enter_inference_mode(self.mode)]
        node = tx.output.state_node(enter_inference_mode, (self.mode,))
        self.record(
            tx,
            "enter",
            undo=lambda: _exit_inference_mode(holder[0]),
            close=lambda g: _state_call(g, exit_inference_mode, (node,)),
            touches=_GRAD,
            key=key,
            data={"node": node, "holder": holder},
        )
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        data = self.log.find(self, "enter").data
        holder = data["holder"]
        _exit_inference_mode(holder[0])
        tx.output.state_node(exit_inference_mode, (data["node"],))

        def undo() -> None:
            holder[0] = _enter_inference_mode(self.mode)

        self.record(tx, "exit", undo=undo, touches=_GRAD)
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.inference_mode, (self.mode,))


@dataclass(eq=False)
class AutocastVariable(ContextVariable):
    """``torch.autocast(device, dtype, enabled, cache_enabled)`` with its arguments resolved as
    torch resolves them (defaults, devices without autocast support)."""

    exit_ignores_exception = True

    device: str = "cpu"
    dtype: Any = None
    enabled: bool = True
    cache: bool = True

    @property
    def args(self) -> tuple:
        return (self.device, self.dtype, self.enabled, self.cache)

    def enter(self, tx: Translator) -> VariableTracker:
        prev = (
            torch.is_autocast_enabled(self.device),
            torch.get_autocast_dtype(self.device),
            torch.is_autocast_cache_enabled(),
        )
        holder = [_enter_autocast(*self.args)]
        node = tx.output.state_node(enter_autocast, self.args)
        self.record(
            tx,
            "enter",
            undo=lambda: _exit_autocast(holder[0]),
            close=lambda g: _state_call(g, exit_autocast, (node,)),
            key=("autocast", *self.args, *prev),
            data={"node": node, "holder": holder},
        )
        return self

    def exit(self, tx: Translator) -> VariableTracker:
        data = self.log.find(self, "enter").data
        holder = data["holder"]
        _exit_autocast(holder[0])
        tx.output.state_node(exit_autocast, (data["node"],))

        def undo() -> None:
            holder[0] = _enter_autocast(*self.args)

        self.record(tx, "exit", undo=undo)
        return ConstantVariable(False)

    def recipe(self) -> ContextRecipe:
        kwargs = (("dtype", self.dtype), ("enabled", self.enabled), ("cache_enabled", self.cache))
        return ContextRecipe(torch.autocast, (self.device,), kwargs)

    def __repr__(self) -> str:
        return f"AutocastVariable({self.device}, {self.dtype}, enabled={self.enabled})"


@dataclass(eq=False)
class DeviceContextVariable(ContextVariable):
    """``with torch.device(d):``: factory calls without a ``device`` get ``d`` (``device_for``)."""

    exit_ignores_exception = True

    device: Any = None

    def enter(self, tx: Translator) -> VariableTracker:
        prev = self.log.default_device() or torch.get_default_device()
        key = ("device", str(self.device), str(prev))
        self.record(tx, "enter", device=self.device, key=key)
        return ConstantVariable(self.device)

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.device, (str(self.device),))


def device_for(tx: Translator, fn: Any, kwargs: dict[str, VariableTracker]) -> Any:
    """The device a ``torch.device`` context of the trace gives the factory call ``fn``, or None."""
    device = tx.output.state.default_device()
    if device is None or fn not in _device_constructors():
        return None
    given = kwargs.get("device")
    if given is not None and not (
        given.is_python_constant() and given.as_python_constant() is None
    ):
        return None
    return device


@dataclass(eq=False)
class ForkRngVariable(ContextVariable):
    """``torch.random.fork_rng(...)``: the RNG states saved by a graph node and restored by another.
    A break inside its block is taken at its ``with`` (re-entering would save the states again)."""

    device_type: str = "cuda"
    devices: tuple[int, ...] = ()

    reenterable = False

    def enter(self, tx: Translator) -> VariableTracker:
        node = tx.output.state_node(fork_rng_save, (self.device_type, self.devices), runtime=True)
        self.record(tx, "enter", data={"node": node})
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        node = self.log.find(self, "enter").data["node"]
        tx.output.state_node(fork_rng_restore, (node, self.device_type, self.devices), runtime=True)
        self.record(tx, "exit")
        return NONE


@dataclass(eq=False)
class NullContextVariable(ContextVariable):
    """``contextlib.nullcontext(value)``: enters as ``value``, changes nothing."""

    exit_ignores_exception = True

    value: VariableTracker = field(default_factory=lambda: NONE)

    def enter(self, tx: Translator) -> VariableTracker:
        self.record(tx, "enter", key=("null",))
        return self.value

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(contextlib.nullcontext)


def _state_call(graph: torch.fx.Graph, fn: Any, args: tuple) -> None:
    node = graph.call_function(fn, args)
    node.meta["bytegraph_state"] = True


# -- state set by calls ----------------------------------------------------------------------------
def _set_state(
    tx: Translator, setter: Callable[..., Any], node_fn: Any, node_args: tuple, aspect: str
) -> VariableTracker:
    """A call switching one absolute aspect of the state (a "set" event): a graph node, the real
    switch now, and the same call again in the rewritten code after the graph."""
    before = read_state()
    try:
        setter()
    except Exception as e:  # noqa: BLE001 (bad arguments: it raises again when run in Python)
        raise Unsupported("torch_effect", f"setting torch state raised {e!r}") from None
    tx.output.state_node(node_fn, node_args, runtime=True)
    event = StateEvent(
        "set",
        call=(node_fn, node_args),
        undo=lambda: apply_state(before),
        touches=frozenset({aspect}),
    )
    tx.output.state.add(event)
    return NONE


@call_rule(torch.set_default_dtype)
def _set_default_dtype(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    (dtype,), _ = constant_args("set_default_dtype", args, kwargs)
    return _set_state(
        tx, lambda: torch.set_default_dtype(dtype), set_default_dtype, (dtype,), "dtype"
    )


@call_rule(torch.use_deterministic_algorithms)
def _use_deterministic(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    values, named = constant_args("use_deterministic_algorithms", args, kwargs)
    if len(values) != 1 or set(named) - {"warn_only"}:
        raise Unsupported("torch_effect", "use_deterministic_algorithms() with bad arguments")
    mode, warn_only = bool(values[0]), bool(named.get("warn_only", False))
    return _set_state(
        tx,
        lambda: torch.use_deterministic_algorithms(mode, warn_only=warn_only),
        set_deterministic,
        (mode, warn_only),
        "deterministic",
    )


@call_rule(torch.set_default_device)
def _set_default_device(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.set_default_device(device)``: in eager it installs a ``DeviceContext`` torch function
    mode (``None`` removes it). The trace does not install it (the mode would run on the tracer's
    own calls): from here on, factory calls get the device as an argument (``device_for``; ``cpu``
    after ``None``), and the rewritten code makes the same call after the graph, which leaves
    torch's state as eager's. Taken only where the device modes are the plain ones (at most the
    global context, as the only ``DeviceContext``, none entered before it): eager's bookkeeping
    when it is mixed with ``with torch.device(...)`` blocks still open is left to Python, as is a
    device whose factories could not run here."""
    (device,), _ = constant_args("set_default_device", args, kwargs)
    log = tx.output.state
    if any(e.device is not None for e in log.open_regions()) or not _plain_device_modes():
        raise Unsupported(
            "torch_effect",
            "set_default_device() while a torch.device block is open",
            hint="set the default device outside the with block",
        )
    try:
        target = torch.device("cpu") if device is None else torch.device(device)
    except Exception as e:  # noqa: BLE001 (bad arguments: it raises again when run in Python)
        raise Unsupported("torch_effect", f"set_default_device() raised {e!r}") from None
    accelerator = torch.accelerator.current_accelerator()
    if target.type not in ("cpu", "meta") and getattr(accelerator, "type", None) != target.type:
        raise Unsupported("torch_effect", f"set_default_device({device!r}): no such device here")
    log.add(StateEvent("set", call=(torch.set_default_device, (device,)), device=target))
    return NONE


def _plain_device_modes() -> bool:
    """The ``DeviceContext`` modes on the real stack are none, or exactly the global one of
    ``torch.set_default_device`` (which it replaces), itself entered outside any other."""
    modes = [m for m in _get_current_function_mode_stack() if isinstance(m, DeviceContext)]
    current = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    if current is None:
        return not modes
    return len(modes) == 1 and modes[0] is current and current.prev_mode is None


#: Queries of state the trace switches for real and the guards check at its start (autocast and
#: deterministic algorithms: ``guards.kinds.global_state_guards``): answered as constants.
call_rules_for(
    torch.is_autocast_enabled,
    torch.get_autocast_dtype,
    torch.is_autocast_cache_enabled,
    torch.are_deterministic_algorithms_enabled,
    torch.is_deterministic_algorithms_warn_only_enabled,
    owner=__name__,
    fold=True,
)


@call_rule(torch.is_inference_mode_enabled)
def _inference_mode_query(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.is_inference_mode_enabled()``: the state while tracing, guarded at the start."""
    start = tx.output.state.start_inference
    tx.output.assume_state(("inference",), torch.is_inference_mode_enabled, start)
    return ConstantVariable(torch.is_inference_mode_enabled())


# -- building trackers ---------------------------------------------------------------------------
@call_rule(torch.no_grad, torch.enable_grad)
def _grad_mode(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    constant_args(fn.__name__, args, kwargs)
    return GradModeVariable(log=tx.output.state, mode=fn is torch.enable_grad, factory=fn)


@call_rule(torch.set_grad_enabled, torch._C._set_grad_enabled)
def set_grad_enabled(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.set_grad_enabled(mode)`` switches at once and is a context too;
    ``torch._C._set_grad_enabled(mode)`` only switches."""
    (mode,), _ = constant_args("set_grad_enabled", args, kwargs)
    ctx = GradModeVariable(log=tx.output.state, mode=bool(mode), applied=True).created(tx)
    return ctx if fn is torch.set_grad_enabled else NONE


@call_rule(torch.inference_mode)
def _inference_mode(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    values, named = constant_args("inference_mode", args, kwargs)
    mode = named.get("mode", values[0] if values else True)
    if not isinstance(mode, bool):
        return None  # ``inference_mode(fn)``: the decorator form, made outside the trace
    return InferenceModeVariable(log=tx.output.state, mode=mode)


@call_rule(torch.random.fork_rng)
def _fork_rng_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    return _fork_rng(tx, *constant_args("fork_rng", args, kwargs))


def construct(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The tracker for ``fn(*args, **kwargs)`` if ``fn`` is ``torch.autocast`` or a subclass of
    it, or ``contextlib.nullcontext``, else None (torch's other context callables are the call
    rules above)."""
    if isinstance(fn, type) and issubclass(fn, torch.autocast):
        values, named = constant_args("autocast", args, kwargs)
        try:
            real = fn(*values, **named)
        except Exception as e:  # noqa: BLE001 (it raises again when the call runs in Python)
            raise Unsupported("context_manager", f"torch.autocast(...) raised {e!r}") from None
        return _autocast_from(tx, real)
    if fn is contextlib.nullcontext:
        if kwargs or len(args) > 1:
            raise Unsupported("context_manager", "nullcontext() with bad arguments")
        return NullContextVariable(log=tx.output.state, value=args[0] if args else NONE)
    return None


def _autocast_from(tx: Translator, real: torch.autocast, source: Source | None = None) -> Any:
    """An autocast tracker with the settings of the real object ``real`` (built at trace time, which
    resolves the defaults and checks as torch does, warnings included)."""
    if source is not None:
        for name in ("device", "fast_dtype", "_enabled", "_cache_enabled"):
            tx.wrap(getattr(real, name), AttrSource(source, name))
    return AutocastVariable(
        log=tx.output.state,
        source=source,
        device=real.device,
        dtype=real.fast_dtype,
        enabled=real._enabled,
        cache=real._cache_enabled,
    )


def _fork_rng(tx: Translator, values: list[Any], named: dict[str, Any]) -> ContextVariable:
    """``fork_rng(devices=None, enabled=True, _caller=..., _devices_kw=..., device_type=None)``,
    resolved as torch resolves it (the default device type is the current accelerator's)."""
    names = ("devices", "enabled", "_caller", "_devices_kw", "device_type")
    bound = {
        "devices": None,
        "enabled": True,
        "device_type": None,
        **dict(zip(names, values, strict=False)),
    }
    bound.update(named)
    device_type = bound["device_type"]
    if device_type == "meta" or not bound["enabled"]:
        return NullContextVariable(log=tx.output.state)
    if device_type is None:
        accelerator = torch.accelerator.current_accelerator()
        device_type = accelerator.type if accelerator is not None else "cuda"
    module = torch.get_device_module(device_type)
    devices = bound["devices"]
    devices = tuple(range(module.device_count())) if devices is None else tuple(devices)
    return ForkRngVariable(log=tx.output.state, device_type=device_type, devices=devices)


def _make_context(tx: Translator, cls: type, args: list[VariableTracker]) -> VariableTracker:
    """A new context of one of the ``_INSTANCE_KINDS``, as a call of ``cls`` in the trace makes
    it (its entry in ``call_rules``)."""
    ctx = call_rules.CALL_RULES[cls].handler(tx, cls, args, {})
    assert ctx is not None
    return ctx


#: Real context classes whose instances the code may hold (decorators keep one): class -> tracker.
_INSTANCE_KINDS = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode)


def wrap_context_object(
    tx: Translator, value: Any, source: Source | None
) -> VariableTracker | None:
    """A real context object (or the bound ``clone`` of one, which torch's context decorators call
    on each call), guarded by identity and the settings read from it; None for anything else."""
    if isinstance(value, types.MethodType) and isinstance(value.__self__, _DecoratorContextManager):
        if value.__func__.__name__ != "clone" or type(value.__self__) not in _INSTANCE_KINDS:
            return None
        _guard_identity(tx, value, source)
        self_source = AttrSource(source, "__self__") if source is not None else None
        args = _instance_args(tx, value.__self__, self_source)
        return ContextFactoryVariable(type(value.__self__), args)
    if type(value) in _INSTANCE_KINDS:
        if type(value) is torch.set_grad_enabled:  # it switched when made; only its exit is left
            raise Unsupported("context_manager", "entering a set_grad_enabled object made earlier")
        _guard_identity(tx, value, source)
        ctx = _make_context(tx, type(value), _instance_args(tx, value, source))
        return ctx.clone(source=source)
    if isinstance(value, torch.autocast):
        _guard_identity(tx, value, source)
        return _autocast_from(tx, value, source)
    return None


def _guard_identity(tx: Translator, value: Any, source: Source | None) -> None:
    if source is not None:
        tx.output.assume_identity(source, value)


def _instance_args(tx: Translator, value: Any, source: Source | None) -> list[VariableTracker]:
    if type(value) in (torch.no_grad, torch.enable_grad):
        return []
    mode_source = AttrSource(source, "mode") if source is not None else None
    return [tx.wrap(value.mode, mode_source) if mode_source else ConstantVariable(value.mode)]


@dataclass(eq=False)
class ContextFactoryVariable(VariableTracker):
    """The bound ``clone`` of a torch context decorator's object: each call makes a new context."""

    cls: type
    args: list[VariableTracker]
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("context_manager", "clone() takes no arguments")
        return _make_context(tx, self.cls, list(self.args))


def _device_context(tx: Translator, vt: VariableTracker) -> ContextVariable | None:
    """``with torch.device("meta"):`` (the device folded to a constant)."""
    if vt.is_python_constant() and isinstance(vt.as_python_constant(), torch.device):
        return DeviceContextVariable(log=tx.output.state, device=vt.as_python_constant())
    return None


WITH_CONVERTERS.append(_device_context)
