"""Context managers the tracer understands: grad-mode switches (``torch.no_grad()`` and friends).

Entering one records ``torch._C._set_grad_enabled(mode)`` in the graph and also switches the real
grad mode while tracing continues (fake tensors then propagate ``requires_grad`` as eager would);
the output graph restores the mode it started with when the trace ends, however it ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ...guards.sources import Source
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


@dataclass(eq=False)
class ContextManagerVariable(VariableTracker):
    """``with torch.no_grad():`` (``mode=False``), ``torch.enable_grad()`` (True),
    ``set_grad_enabled(b)``."""

    mode: bool
    previous: bool | None = None
    applied: bool = False  #: ``set_grad_enabled(b)`` switches when called, not when entered

    def enter(self, tx: Translator) -> VariableTracker:
        if not self.applied:
            self.previous = torch.is_grad_enabled()
            set_grad_mode(tx, self.mode)
        return ConstantVariable(None)

    def exit_method(self) -> VariableTracker:
        return ContextExitVariable(self)

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name == "__enter__":
            return self.enter(tx)
        if name == "__exit__":
            return ContextExitVariable(self).call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"ContextManagerVariable(grad_enabled={self.mode})"


@dataclass(eq=False)
class ContextExitVariable(VariableTracker):
    """The ``__exit__`` that BEFORE_WITH leaves on the stack; rebuilt as a ``GradModeExit`` at a
    break."""

    ctx: ContextManagerVariable
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        assert self.ctx.previous is not None
        set_grad_mode(tx, self.ctx.previous)
        return ConstantVariable(None)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        assert self.ctx.previous is not None
        cg.load_const(GradModeExit(self.ctx.previous))


class GradModeExit:
    """What a resumed ``with torch.no_grad():`` block calls on exit: restores the grad mode it
    had."""

    def __init__(self, previous: bool) -> None:
        self.previous = previous

    def __call__(self, *exc_info: object) -> None:
        torch._C._set_grad_enabled(self.previous)

    def __repr__(self) -> str:
        return f"GradModeExit(restore={self.previous})"


def set_grad_mode(tx: Translator, mode: bool) -> None:
    if torch.is_grad_enabled() == mode:
        return
    tx.output.graph.call_function(torch._C._set_grad_enabled, (mode,))
    torch._C._set_grad_enabled(mode)
