"""Custom ``torch.autograd.Function`` subclasses called through ``Function.apply``.

The call becomes one graph node running the real ``apply``, so at run time autograd records the
user's ``backward`` exactly as in eager. Before that node is added, the user's ``forward`` is
inlined once as a check (its nodes are then discarded): a forward that cannot be traced, or that
has side effects the trace would have to replay, makes the call a graph break instead, so the
fake-tensor run of ``apply`` that gives the node its shapes never executes user code with
effects. ``FunctionCtx`` calls made by the forward (``save_for_backward``, attributes set on
``ctx``) only matter to the backward and are accepted as no-ops during the check.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import Source
from ...exc import Unsupported
from ..base import VariableTracker, walk
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import DictVariable, ListVariable, SetVariable, TupleVariable
from ..functions.callables import UserFunctionVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


def is_autograd_function(cls: Any) -> bool:
    return (
        isinstance(cls, type)
        and issubclass(cls, torch.autograd.Function)
        and cls is not torch.autograd.Function
    )


#: torch's ``Function.apply`` as the class stores it: a ``classmethod`` up to torch 2.14, from 2.15
#: ``torch._C._FunctionBase``'s C ``classmethod_descriptor`` (its bound form has no ``__func__``).
_TORCH_APPLY = inspect.getattr_static(torch.autograd.Function, "apply")


def apply_overriders(cls: type) -> list[type]:
    """The classes of ``cls``'s MRO before ``torch.autograd.Function`` (``cls`` first): the ones
    that could define their own ``apply``."""
    mro = cls.__mro__
    return list(mro[: mro.index(torch.autograd.Function)])


def has_torch_apply(cls: type) -> bool:
    """Whether ``cls.apply`` is torch's own (no class of its MRO overrides it)."""
    return inspect.getattr_static(cls, "apply") is _TORCH_APPLY


@dataclass(eq=False)
class AutogradFunctionApplyVariable(VariableTracker):
    """``MyFunction.apply`` (``cls`` is the Function subclass)."""

    cls: type
    cls_source: Source | None = None  #: where the class was read (None: a constant of the trace)
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        _check_forward(tx, self.cls, args, kwargs)
        return tx.output.call_function(self.cls.apply, tuple(args), kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.cls_source is not None:
            self.cls_source.reconstruct(cg)
        else:
            cg.load_const(self.cls)
        cg.load_attr("apply")

    def __repr__(self) -> str:
        return f"AutogradFunctionApplyVariable({self.cls.__qualname__})"


@dataclass(eq=False)
class FunctionCtxVariable(VariableTracker):
    """The ``ctx`` a forward receives during the check: records attributes, ignores the rest."""

    needs_input_grad: tuple[bool, ...]
    attrs: dict[str, VariableTracker] = field(default_factory=dict)
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return TupleVariable([ConstantVariable(v) for v in self.needs_input_grad])
        if name in _CTX_METHODS:
            return _CtxMethodVariable(name)
        raise Unsupported("autograd_function", f"ctx.{name} in an autograd.Function forward")

    def store_attr(self, name: str, value: VariableTracker) -> None:
        self.attrs[name] = value


#: ``ctx`` methods whose effect only concerns the backward pass (the real ``apply`` runs them).
_CTX_METHODS = frozenset(
    {"save_for_backward", "save_for_forward", "mark_non_differentiable", "set_materialize_grads"}
)


@dataclass(eq=False)
class _CtxMethodVariable(VariableTracker):
    name: str
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return ConstantVariable(None)


def _check_forward(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> None:
    """Inline ``cls.forward`` on the arguments and undo it; ``Unsupported`` if it has effects. A
    graph break inside it propagates: the caller then breaks at the ``apply`` call."""
    forward = inspect.getattr_static(cls, "forward")
    if not isinstance(forward, staticmethod) or not inspect.isfunction(forward.__func__):
        raise Unsupported("autograd_function", f"{cls.__qualname__}.forward is not a staticmethod")
    uses_ctx = inspect.getattr_static(cls, "setup_context") is inspect.getattr_static(
        torch.autograd.Function, "setup_context"
    )
    needs = tuple(isinstance(a, TensorVariable) and a.example.requires_grad for a in args)
    forward_args = [FunctionCtxVariable(needs), *args] if uses_ctx else list(args)
    output = tx.output
    checkpoint = output.checkpoint()
    containers = [vt for vt in walk([args, kwargs]) if isinstance(vt, _CONTAINERS)]
    before = [_items(c) for c in containers]
    try:
        UserFunctionVariable(forward.__func__).call_function(tx, forward_args, kwargs)
        mutated = any(_items(c) != items for c, items in zip(containers, before, strict=True))
        if mutated or output.side_effects.changed_since(checkpoint[1]):
            raise Unsupported(
                "autograd_function",
                f"the forward of {cls.__qualname__} has side effects",
                hint="keep autograd.Function forwards free of effects on Python objects",
            )
    finally:
        output.restore(checkpoint)


_CONTAINERS = (ListVariable, DictVariable, SetVariable)


def _items(container: VariableTracker) -> list[tuple[Any, int]]:
    """What identifies a container's contents: its keys (or positions) and item trackers."""
    items = container.items
    if isinstance(items, set):  # of constants
        return sorted((repr(v), 0) for v in items)
    pairs = items.items() if isinstance(items, dict) else enumerate(items)
    return [(k, id(v)) for k, v in pairs]
