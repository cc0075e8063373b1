"""``Guard``: one assumption a trace made about one input, e.g. ``TENSOR_MATCH`` on ``L['x']``.

Guards are frozen and ordered: cheap identity/type checks on shallow sources first, so the generated
function fails fast and reads top-down. ``arg`` is what the check compares against (a type, a value,
a ``TensorSpec``); ``key`` is the hashable form used to deduplicate. ``global_state_guards()``
snapshots the torch global state a graph depends on (autocast, deterministic algorithms, default
device) for the driver to add.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from .sources import Source

#: Evaluation order of guard kinds (cheapest and most discriminating first). Guards on global torch
#: state have no source and come last: they are cheap but almost never fail (so do the absence
#: checks ``KEY_ABSENT``/``CLASS_ATTR_ABSENT``: a builtin shadowed, a method overridden per
#: instance).
KIND_ORDER = {
    "TYPE_MATCH": 0,
    "ID_MATCH": 1,
    "NONE_MATCH": 1,
    "EQUALS_MATCH": 2,
    "LEN_MATCH": 2,
    "DICT_KEYS": 3,
    "KEY_ABSENT": 5,
    "CLASS_ATTR_ABSENT": 5,
    "ATTR_ABSENT": 4,
    "TENSOR_MATCH": 4,
    "DUPLICATE_INPUT": 5,
    "GRAD_MODE": 5,
    "DEFAULT_DTYPE": 5,
    "DEFAULT_DEVICE": 5,
    "GLOBAL_STATE": 5,
    "AUTOCAST": 5,
    "DETERMINISTIC": 5,
    "SHAPE_EXPR": 6,
    "MODULE_TREE": 1,
}


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


#: Kinds whose ``arg`` is an object compared by identity: held as a ``WeakArg``.
IDENTITY_KINDS = ("ID_MATCH", "TYPE_MATCH")


@dataclass(frozen=True)
class Guard:
    """Invariant: a guard never keeps the object it checks alive (identity kinds hold
    ``WeakArg``)."""

    source: Source | None  #: what is checked (None for global torch state)
    kind: str  #: one of ``KIND_ORDER``
    arg: Any = field(default=None, compare=False, hash=False)  #: the expected value / spec
    key: Any = None  #: hashable identity of ``arg``, for deduplication

    def __post_init__(self) -> None:
        if self.kind in IDENTITY_KINDS and not isinstance(self.arg, WeakArg):
            object.__setattr__(self, "arg", WeakArg(self.arg))

    def sort_key(self) -> tuple:
        return self._sort_key

    @functools.cached_property
    def _sort_key(self) -> tuple:
        depth = self.source.depth if self.source is not None else 99
        if isinstance(self.arg, Source):  # DUPLICATE_INPUT reads a second source: check it first
            depth = max(depth, self.arg.depth)
        expr = self.source.expr if self.source is not None else ""
        return (depth, KIND_ORDER[self.kind], expr, repr(self.key))

    def __lt__(self, other: Guard) -> bool:
        return self.sort_key() < other.sort_key()


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


def global_state_guards() -> list[Guard]:
    """Guards on torch global state beyond grad mode and the default dtype (which the output graph
    installs): autocast, deterministic algorithms and the default device (``set_default_device`` or
    any torch function mode), as they are now (call it before tracing)."""
    autocast = autocast_state() if torch._C._is_any_autocast_enabled() else None
    deterministic = torch.are_deterministic_algorithms_enabled()
    device = torch.get_default_device() if torch._C._len_torch_function_stack() else None
    return [
        Guard(None, "AUTOCAST", autocast, autocast),
        Guard(None, "DETERMINISTIC", deterministic, deterministic),
        Guard(None, "DEFAULT_DEVICE", device, ("device", str(device))),
    ]
