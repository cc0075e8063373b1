"""``ObjectIdVariable``: ``id(obj)`` of a value the trace has no address for (a constant, a tensor,
a container or object made in the trace).

Its number is unknown at trace time, but what code does with ids mostly needs none: ``id(a) ==
id(b)`` is ``a is b`` (``operations.concrete.compare_ids`` decides it). Given back to Python, it
is rebuilt as ``id(obj)`` on the object the rewritten code holds, which is the object eager code
would have. Ids of real input objects whose identity is guarded are computed instead
(``operations.concrete.evaluate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen


@dataclass(eq=False)
class ObjectIdVariable(VariableTracker):
    """``id(of)``: an int, the same for two trackers exactly when they stand for one object."""

    of: VariableTracker

    def python_type(self) -> type:
        return int

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(id)
        if isinstance(self.of, ConstantVariable):
            # through a cell: the code's constant table would keep one of several equal values
            cg.load_cell_value(f"__bg_id{len(cg.cells)}", self.of.value)
        else:
            self.of.reconstruct(cg)
        cg.call_function(1)

    def __repr__(self) -> str:
        return f"ObjectIdVariable({self.of!r})"
