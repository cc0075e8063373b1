"""``Guard``: one assumption a trace made about one input, e.g. ``TENSOR_MATCH`` on ``L['x']``.

Guards are frozen and ordered: cheap identity/type checks on shallow sources first, so the generated
function fails fast and reads top-down. ``arg`` is what the check compares against (a type, a value,
a ``TensorSpec``); ``key`` is the hashable form used to deduplicate. Each ``GuardKind`` is declared
once, in ``kinds.py`` with ``@guard_kind(order, ...)``, into ``KINDS``: its order, whether it
compares identity, its key, its facts for the guard-set optimisations (``Absorb``, ``Fixed``) and
its code. A guard is made by calling its kind: ``kinds.TYPE_MATCH(source, cls)``.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .sources import Source, cached


class Absorb(enum.Enum):
    """Whether a guard on a source inside a module tree moves into that tree's ``MODULE_TREE``
    check (``module_tree.py``), which is re-run only after some module of the tree changed: only
    facts that no change outside a module's members can falsify move."""

    NEVER = "never"  #: stays a guard of its own
    ALWAYS = "always"  #: a type or identity: fixed while the module members are
    VALUE = "value"  #: a value, unless the source holds a mutable ``set``
    PARAMETER = "parameter"  #: a tensor's metadata, for ``nn.Parameter`` only (buffers may change)
    MEMBERS = "members"  #: a container's length or keys, for tuples and module member tables only
    ALIAS = "alias"  #: another source holds the same object, when both are in the same tree


class Fixed(enum.Enum):
    """When a guard on a source reached from a constant of the trace (``ConstSource``) holds by
    construction, every container on the way being immutable."""

    IDENTITY = "identity"  #: always: it checks the object's identity or type, which is fixed
    VALUE = "value"  #: when the value itself is immutable
    NEVER = "never"  #: never: what it checks can change in place (a tensor's metadata)


@dataclass(frozen=True, eq=False)
class GuardKind:
    """One kind of guard, declared once in ``kinds.py`` with ``@guard_kind``: where it sorts,
    whether its ``arg`` is an object compared by identity (held as a ``WeakArg``), its
    deduplication key, what the guard-set optimisations may assume of it, and its code.

    Calling a kind makes a guard: ``kinds.TYPE_MATCH(LocalSource("x"), int)``. Kinds compare by
    identity: ``guard.kind is kinds.TYPE_MATCH``."""

    name: str  #: UPPER_SNAKE, the name it is declared and printed with
    #: evaluation order, cheapest and most discriminating first: identity and type checks on shallow
    #: sources, then values and lengths, tensors, then the checks that almost never fail
    #: (global torch state, ``KEY_ABSENT``/``CLASS_ATTR_ABSENT``: a builtin shadowed, a method
    #: overridden per instance), symbolic-shape expressions, and last the state a Python getter
    #: reads (``GLOBAL_STATE``: a call each)
    order: int
    identity: bool  #: ``arg`` is an object compared by identity: held weakly
    render: Callable[[str, Any, Any], list[str]]  #: ``(expr, arg, consts) -> Python conditions``
    #: maps ``arg`` to the hashable form two guards of this kind on one source are equal by (an
    #: object compared by identity appears only as its ``id``, so no guard keeps it alive)
    key: Callable[[Any], Any]
    absorb: Absorb = Absorb.NEVER  #: whether it can move into a ``MODULE_TREE`` check
    fixed: Fixed = Fixed.VALUE  #: whether it holds by construction on a constant's path

    def __call__(self, source: Source | None, arg: Any = None) -> Guard:
        """The guard of this kind that ``source`` (None for global torch state) matches ``arg``."""
        return Guard(source, self, arg, self.key(arg))

    def __repr__(self) -> str:
        return self.name


#: Every guard kind by name, filled by ``kinds.py`` (imported with this package).
KINDS: dict[str, GuardKind] = {}


def guard_kind(
    order: int,
    *,
    key: Callable[[Any], Any] = lambda arg: arg,
    identity: bool = False,
    absorb: Absorb = Absorb.NEVER,
    fixed: Fixed = Fixed.VALUE,
) -> Callable[[Callable], GuardKind]:
    """Declare the decorated ``KIND(expr, arg, consts)`` renderer as a guard kind: the name it is
    bound to becomes the ``GuardKind``."""

    def register(render: Callable[[str, Any, Any], list[str]]) -> GuardKind:
        name = render.__name__
        assert name.isupper() and name not in KINDS, name
        KINDS[name] = GuardKind(name, order, identity, render, key, absorb, fixed)
        return KINDS[name]

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
    kind: GuardKind  #: what it checks (one of ``kinds.py``)
    arg: Any = field(default=None, compare=False, hash=False)  #: the expected value / spec
    key: Any = None  #: hashable identity of ``arg``, for deduplication (``GuardKind.key``)

    def __post_init__(self) -> None:
        if self.kind.identity and not isinstance(self.arg, WeakArg):
            object.__setattr__(self, "arg", WeakArg(self.arg))

    def sort_key(self) -> tuple:
        return self._sort_key

    @cached
    def _sort_key(self) -> tuple:
        depth = self.source.depth if self.source is not None else 99
        # DUPLICATE_INPUT and DISTINCT_INPUT read a second source: check it first
        if isinstance(self.arg, Source):
            depth = max(depth, self.arg.depth)
        expr = self.source.expr if self.source is not None else ""
        return (depth, self.kind.order, expr, repr(self.key))

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
    #: the conjugate bit (``x.conj()`` of a complex tensor: a lazy view), which the fake and
    #: ``is_conj()`` read and the trace folds
    conj: bool = False
    #: the negative bit (``x.conj().imag``, ``torch._neg_view``), likewise
    neg: bool = False


@dataclass(frozen=True, eq=False)
class FunctionSpec:
    """What ``FUNCTION_MATCH`` checks of a Python function guarded by what it is made of, not by
    identity (its code is guarded apart, by ``ID_MATCH``; its defaults and closure cells as inputs
    of their own, where the trace reads them). Invariant: it never keeps the function alive."""

    ref: weakref.ref  #: the traced function, held weakly with no callback: it passes at once
    globals: dict  #: its ``__globals__``, by identity
    no_defaults: bool  #: it had no ``__defaults__`` (a call binding fewer arguments raised)
    no_kwdefaults: bool  #: it had no ``__kwdefaults__``
    #: whether a function means more than its parts (a user's mark, a call rule of the tracer,
    #: both by identity): such a function passes only as itself
    distinct: Callable[[Any], bool]

    @property
    def key(self) -> tuple:
        return (id(self.globals), self.no_defaults, self.no_kwdefaults, id(self.distinct))


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
