"""``Guard``: one assumption a trace made about one input, e.g. ``TENSOR_MATCH`` on ``L['x']``.

Guards are frozen and ordered: cheap identity/type checks on shallow sources first, so the generated
function fails fast and reads top-down. ``arg`` is what the check compares against (a type, a value,
a ``TensorSpec``); ``key`` is the hashable form used to deduplicate. Each kind is declared once,
in ``kinds.py`` with ``@guard_kind(order, identity=...)``, into ``KINDS``: its order, whether it
compares identity, and its code. ``global_state_guards()``
snapshots the torch global state a graph depends on (autocast, deterministic algorithms, default
device) for the driver to add.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .sources import Source


@dataclass(frozen=True)
class GuardKind:
    """One kind of guard, declared once in ``kinds.py`` with ``@guard_kind``: where it sorts,
    whether its ``arg`` is an object compared by identity (held as a ``WeakArg``), and its code."""

    name: str  #: UPPER_SNAKE, as ``Guard.kind`` spells it
    #: evaluation order, cheapest and most discriminating first: identity and type checks on shallow
    #: sources, then values and lengths, tensors, and last the checks that almost never fail
    #: (global torch state, ``KEY_ABSENT``/``CLASS_ATTR_ABSENT``: a builtin shadowed, a method
    #: overridden per instance) and symbolic-shape expressions
    order: int
    identity: bool  #: ``arg`` is an object compared by identity: held weakly
    render: Callable[[str, Any, Any], list[str]]  #: ``(expr, arg, consts) -> Python conditions``


#: Every guard kind by name, filled by ``kinds.py`` (imported with this package).
KINDS: dict[str, GuardKind] = {}


def guard_kind(order: int, *, identity: bool = False) -> Callable[[Callable], Callable]:
    """Declare the decorated ``KIND(expr, arg, consts)`` renderer as a guard kind."""

    def register(render: Callable[[str, Any, Any], list[str]]) -> Callable:
        name = render.__name__
        assert name.isupper() and name not in KINDS, name
        KINDS[name] = GuardKind(name, order, identity, render)
        return render

    return register


class WeakArg:
    """A guard's expected object held weakly (strongly only if it cannot be weakly referenced, like
    builtin functions): ``arg()`` is the object, or None once it died."""

    __slots__ = ("_ref", "_strong")

    def __init__(self, obj: Any) -> None:
        try:
            self._ref, self._strong = weakref.ref(obj), None
        except TypeError:
            self._ref, self._strong = None, obj

    def __call__(self) -> Any:
        return self._ref() if self._ref is not None else self._strong


@dataclass(frozen=True)
class Guard:
    """Invariant: a guard never keeps the object it checks alive (identity kinds hold
    ``WeakArg``)."""

    source: Source | None  #: what is checked (None for global torch state)
    kind: str  #: a name in ``KINDS``
    arg: Any = field(default=None, compare=False, hash=False)  #: the expected value / spec
    key: Any = None  #: hashable identity of ``arg``, for deduplication

    def __post_init__(self) -> None:
        if KINDS[self.kind].identity and not isinstance(self.arg, WeakArg):
            object.__setattr__(self, "arg", WeakArg(self.arg))

    def sort_key(self) -> tuple:
        return self._sort_key

    @functools.cached_property
    def _sort_key(self) -> tuple:
        depth = self.source.depth if self.source is not None else 99
        # DUPLICATE_INPUT and DISTINCT_INPUT read a second source: check it first
        if isinstance(self.arg, Source):
            depth = max(depth, self.arg.depth)
        expr = self.source.expr if self.source is not None else ""
        return (depth, KINDS[self.kind].order, expr, repr(self.key))

    def __lt__(self, other: Guard) -> bool:
        return self.sort_key() < other.sort_key()

    @classmethod
    def id_match(cls, source: Source | None, value: Any) -> Guard:
        """``source`` is ``value`` (held weakly)."""
        return cls(source, "ID_MATCH", value, ("id", id(value)))

    @classmethod
    def distinct(cls, source: Source, other: Source) -> Guard:
        """``source is not other``: two inputs the trace found to be different objects."""
        return cls(source, "DISTINCT_INPUT", other, ("distinct", other))

    @classmethod
    def type_match(cls, source: Source | None, value_type: type) -> Guard:
        """``type(source) is value_type``."""
        return cls(source, "TYPE_MATCH", value_type, ("type", id(value_type)))


@dataclass(frozen=True)
class TensorSpec:
    """What ``TENSOR_MATCH`` checks. ``None`` in ``sizes``/``strides`` means "any value" (dynamic
    dim)."""

    type: type
    dtype: Any
    device: Any
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]


def autocast_state() -> tuple:
    """Autocast settings of the devices a CPU/CUDA graph can run on (read only when autocast is
    on)."""
    devices = tuple(
        (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda")
    )
    return devices + (torch.is_autocast_cache_enabled(),)


def default_device_as_set() -> torch.device:
    """The default device as ``set_default_device`` or a ``torch.device`` block set it, as
    ``torch.get_default_device`` finds it but without giving it an index: that creates a tensor on
    it, which raises for a device this machine lacks ("Torch not compiled with CUDA enabled") where
    eager code that makes no tensor there runs."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    for mode in reversed(_get_current_function_mode_stack()):
        if isinstance(mode, DeviceContext):
            return mode.device
    context = getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)
    return context.device if context is not None else torch.device("cpu")


def global_state_guards() -> list[Guard]:
    """Guards on torch global state beyond grad mode and the default dtype (which the output graph
    installs): autocast, deterministic algorithms and the default device (``set_default_device`` or
    any torch function mode), as they are now (call it before tracing)."""
    autocast = autocast_state() if torch._C._is_any_autocast_enabled() else None
    deterministic = torch.are_deterministic_algorithms_enabled()
    device = default_device_as_set() if torch._C._len_torch_function_stack() else None
    return [
        Guard(None, "AUTOCAST", autocast, autocast),
        Guard(None, "DETERMINISTIC", deterministic, deterministic),
        Guard(None, "DEFAULT_DEVICE", device, ("device", str(device))),
    ]
