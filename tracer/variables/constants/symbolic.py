"""``SymNodeVariable``: an int/float/bool that is symbolic (a ``torch.SymInt`` and friends), with
the FX node computing it.

Sizes of dynamic dimensions and ints traced as dynamic are symbolic: arithmetic on them is recorded
in the graph; branching on them evaluates the condition through torch's ``ShapeEnv``, which records
a guard (e.g. ``2*s0 < 16``) that the output graph later renders as Python over the inputs. Using
one as a plain Python value (``range(n)``, a list index) specialises it to its current value, with a
guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from ....guards.sources import Source
from ...exc import Unsupported
from ...shapes import unbacked_symbols
from ..base import VariableTracker

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
_PYTHON_TYPE = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


@dataclass(eq=False)
class SymNodeVariable(VariableTracker):
    node: torch.fx.Node
    value: Any  #: the SymInt/SymFloat/SymBool (its hint is the value seen while tracing)
    source: Source | None = None

    def python_type(self) -> type:
        return _PYTHON_TYPE[type(self.value)]

    @property
    def unbacked(self) -> bool:
        """Computed from tensor data (``t.item()``): no value is known while tracing."""
        return bool(unbacked_symbols(self.value))

    def is_python_constant(self) -> bool:
        """Yes, by specialising: code that needs a plain value (``range(n)``, a dict key) gets the
        current one and the trace is guarded on it. Operators, branches and tensor ops check for
        ``SymNodeVariable`` first and stay symbolic. Unbacked numbers have no value to specialise
        to."""
        return not self.unbacked

    def as_python_constant(self) -> Any:
        """Specialise: the value it has now, guarded to stay so."""
        if self.unbacked:
            raise Unsupported(
                "data_dependent",
                "a number computed from tensor data is used as a Python value",
                hint="keep it in tensor operations, or move this use out of the compiled function",
            )
        return self.python_type()(self.value)

    def evaluate(self) -> Any:
        return self.as_python_constant()

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        return tx.fold(getattr(self.as_python_constant(), name))

    def reconstruct(self, cg: Codegen) -> None:
        if self.node in cg.graph_outputs:
            cg.load_graph_output(self.node)
        elif self.source is not None:
            self.source.reconstruct(cg)
        else:
            cg.load_const(self.as_python_constant())

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}: {self.value})"
