"""Closure cells during a trace: ``ClosureCellVariable`` is a real cell (of a function the trace
reached, or one a resume function took as an argument: ``ResumePoint.cell_args``), one tracker per
cell object (``closure_cell``), read through its contents and written as a side effect;
``LocalCellVariable`` is a cell of a frame being traced, whose value lives in the frame's symbolic
locals; ``SavedCellVariable`` is 3.12's saved cell around an inlined comprehension.
``reconstruct_cell`` pushes a cell for rewritten code (a closure made in the trace, a resume call).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....guards.sources import AttrSource, Source
from ...exc import Unsupported
from ..base import VariableTracker

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class ClosureCellVariable(VariableTracker):
    """A real closure cell of a user function; its contents are wrapped (and guarded) when read.
    A cell a resume function takes as an argument (``ResumePoint.cell_args``: the frame's cell,
    shared with closures made before the break) is one too: its code reads and writes
    ``cell_contents``, writes are side effects replayed on the cell."""

    cell: types.CellType
    source: Source | None = None  #: source of the cell *contents*

    def cell_source(self) -> Source | None:
        """Where the cell object itself is found (``f.__closure__[i]``, a resume argument)."""
        source = self.source
        if isinstance(source, AttrSource) and source.attr == "cell_contents":
            return source.base
        return None

    def python_type(self) -> type:
        return types.CellType

    def contents(self, tx: Translator, name: str) -> VariableTracker:
        """What the cell holds now: a value stored in the trace, else its real contents."""
        pending = tx.output.side_effects.load_attr(self, "cell_contents")
        if pending is not None:
            return pending
        try:
            contents = self.cell.cell_contents
        except ValueError:
            raise Unsupported("unbound_local", f"free variable {name!r} is empty") from None
        if self.source is None:  # a cell of a function reached without a source
            return tx.wrap_unsourced(contents, f"free variable {name!r}")
        return tx.wrap(contents, self.source)

    def store(self, tx: Translator, value: VariableTracker) -> None:
        """``cell.cell_contents = value``: replayed on the cell after the graph."""
        if self.cell_source() is None:
            raise Unsupported("closure_store", "a store to a cell that cannot be reached again")
        tx.output.side_effects.store_attr(self, "cell_contents", value)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name != "cell_contents":
            raise Unsupported("getattr", f"cell.{name}")
        return self.contents(tx, "cell_contents")

    def reconstruct(self, cg: Codegen) -> None:
        base = self.cell_source()
        if base is not None:
            base.reconstruct(cg)  # ``f.__closure__[i]`` of this call's ``f``, a resume argument
        else:
            cg.load_cell_value(f"__bg_cell_{id(self.cell)}", self.cell)


def closure_cell(tx: Translator, cell: types.CellType, source: Source | None) -> VariableTracker:
    """The tracker of a real cell, one per cell object in a trace (the cell a resume function took
    as an argument and the same cell in a closure it calls must see the same stores)."""
    known = tx.output.wrapped.get(id(cell))
    if known is not None and known[0] is cell and isinstance(known[1], ClosureCellVariable):
        return known[1]
    vt = ClosureCellVariable(cell, source)
    if source is not None:
        tx.output.wrapped[id(cell)] = (cell, vt)
    return vt


@dataclass(eq=False)
class LocalCellVariable(VariableTracker):
    """A cell of a frame being traced: reads and writes go to ``frame_locals[name]``, the frame's
    symbolic locals while the cell is the frame's current one. A cell the frame replaced (3.12
    comprehensions make a new cell for their variable) is detached: ``frame_locals`` becomes a
    private dict holding its last value. Mutable on purpose, like the cell it stands for."""

    frame_locals: dict[str, VariableTracker]
    name: str

    def detach(self) -> None:
        value = self.frame_locals.get(self.name)
        self.frame_locals = {} if value is None else {self.name: value}


@dataclass(eq=False)
class SavedCellVariable(VariableTracker):
    """3.12: what LOAD_FAST_AND_CLEAR saves for a cell variable around an inlined comprehension: the
    outer cell (if a closure holds it) and the outer value, restored by the matching STORE_FAST."""

    cell: LocalCellVariable | None
    value: VariableTracker | None


def reconstruct_cell(cg: Codegen, cell: VariableTracker) -> None:
    if isinstance(cell, ClosureCellVariable):  # a real cell: the same cell object
        cell.reconstruct(cg)
        return
    if not isinstance(cell, LocalCellVariable):
        raise Unsupported("escaping_closure", f"a closure over {cell}")

    def build() -> None:
        cg.load_const(types.CellType)
        if cell.name in cell.frame_locals:
            cell.frame_locals[cell.name].reconstruct(cg)
            cg.call_function(1)
        else:
            cg.call_function(0)

    cg.build_once(cell, build)
