"""Slices whose bounds are not Python constants, and tensor indices built from them.

``BUILD_SLICE`` on constants stays a constant ``slice``; with a symbolic number or a tensor among
its bounds it makes a ``SliceVariable``. Indexing a list or tuple needs concrete bounds (a backed
symbol specialises, with a guard; anything else breaks). Indexing a tensor keeps the bounds
symbolic: ``index_for_tensor`` turns tensor bounds into unbacked symbolic ints (what Python's
``__index__`` does eagerly) and rewrites each unbacked bound into the value CPython's slice
semantics give it, ``clamp(b + n if b < 0 else b, 0, n)``, so the graph computes exactly eager's
view for every value and torch's shape checks need no assumption that could fail at run time.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ....guards.sources import Source
from ...exc import Unsupported
from ...shapes import unbacked_symbols
from ..base import VariableTracker
from ..containers.builtin_containers import TupleVariable
from ..tensors.tensor import TensorVariable, to_scalar
from .constant import ConstantVariable
from .symbolic import SymNodeVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class SliceVariable(VariableTracker):
    """``slice(start, stop, step)`` with trackers for bounds (at least one not a constant): a
    symbolic number or a tensor, or any other object (a slice holds what it is given)."""

    start: VariableTracker
    stop: VariableTracker
    step: VariableTracker
    source: Source | None = None

    @property
    def parts(self) -> tuple[VariableTracker, VariableTracker, VariableTracker]:
        return self.start, self.stop, self.step

    def python_type(self) -> type:
        return slice

    def is_python_constant(self) -> bool:
        # a list bound is the list itself: a copy would not be (``slice(xs).start is xs``)
        return all(isinstance(p, ConstantVariable) for p in self.parts)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return getattr(self, name)
        return super().var_getattr(tx, name)

    def as_python_constant(self) -> Any:
        return slice(*(p.as_python_constant() for p in self.parts))

    def reconstruct(self, cg: Codegen) -> None:
        for part in self.parts:
            part.reconstruct(cg)
        cg.build_slice(3)


def make_slice(parts: list[VariableTracker]) -> VariableTracker:
    """What ``BUILD_SLICE`` (or 3.12's slice opcodes) push for these bounds."""
    while len(parts) < 3:
        parts.append(ConstantVariable(None))
    if all(isinstance(p, ConstantVariable) for p in parts):
        return ConstantVariable(slice(*(p.value for p in parts)))
    return SliceVariable(*parts)  # any object is a bound: what reads it decides what it takes


def index_for_tensor(
    tx: Translator, tensor: TensorVariable, key: VariableTracker
) -> VariableTracker:
    """``key`` as a graph argument indexing ``tensor``: tensor bounds become unbacked symbolic ints,
    unbacked bounds are clamped as CPython would. Keys with nothing symbolic are returned as they
    are (torch checks them)."""
    items = list(key.items) if isinstance(key, TupleVariable) else [key]
    if not any(isinstance(i, SliceVariable) for i in items):
        return key
    dims = _dims_of(items, tensor.example.dim())  # a slice's dimension is never None
    rewritten = [
        _clamped_slice(tx, item, tensor, dim) if isinstance(item, SliceVariable) else item
        for item, dim in zip(items, dims, strict=True)
    ]
    return TupleVariable(rewritten) if isinstance(key, TupleVariable) else rewritten[0]


def _dims_of(items: list[VariableTracker], ndim: int) -> list[int | None]:
    """For each index item, the dimension of the tensor it applies to (None: not a slice's)."""
    consuming = [
        not (i.is_python_constant() and i.as_python_constant() in (None, Ellipsis)) for i in items
    ]
    if any(isinstance(i, TensorVariable) for i in items):
        raise Unsupported("slice", "symbolic slice bounds mixed with advanced (tensor) indexing")
    dims, dim = [], 0
    for item, consumes in zip(items, consuming, strict=True):
        if item.is_python_constant() and item.as_python_constant() is Ellipsis:
            dim += ndim - sum(consuming)
        dims.append(dim if isinstance(item, SliceVariable) else None)
        dim += consumes
    return dims


def _clamped_slice(
    tx: Translator, item: SliceVariable, tensor: TensorVariable, dim: int
) -> SliceVariable:
    step = item.step
    if not step.is_python_constant() or (step.as_python_constant() or 1) <= 0:
        raise Unsupported("slice", "a tensor slice needs a constant positive step")
    start, stop = (_bound(tx, part, tensor, dim) for part in (item.start, item.stop))
    return SliceVariable(start, stop, step)


def _bound(tx: Translator, part: VariableTracker, tensor: TensorVariable, dim: int):
    """``part`` as a slice bound of ``tensor``'s dimension ``dim``: unbacked ones clamped."""
    if isinstance(part, TensorVariable):
        part = to_scalar(tx, part, "__index__")
    if not isinstance(part, SymNodeVariable) or not unbacked_symbols(part.value):
        return part
    size = tensor.example.size(dim)
    out = tx.output
    n = (
        ConstantVariable(size)
        if isinstance(size, int)
        else out.call_method("size", (tensor, ConstantVariable(dim)), {})
    )
    is_negative = out.call_function(operator.lt, (part, ConstantVariable(0)), {})
    wrapped = out.call_function(operator.add, (part, n), {})
    normalized = out.call_function(torch.sym_ite, (is_negative, wrapped, part), {})
    at_most_n = out.call_function(torch.sym_min, (normalized, n), {})
    return out.call_function(torch.sym_max, (ConstantVariable(0), at_most_n), {})
