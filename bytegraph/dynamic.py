"""Marking tensor dimensions dynamic or static before compiling, as ``torch._dynamo`` does.

>>> x = torch.randn(8, 3)
>>> bytegraph.mark_dynamic(x, 0)      # a symbol from the first call: no static first graph
>>> fn(x)                             # guards: 2 <= L['x'].size()[0]

``maybe_mark_dynamic`` is the same hint without insisting; ``mark_static`` keeps a dimension static
even when it changes between calls (each new size recompiles). Marks live on the tensor object.
"""

from __future__ import annotations

import torch

from .tracer.fakes.shapes import DYNAMIC_ATTRS, MAYBE_DYNAMIC_ATTRS, STATIC_ATTRS


def _mark(t: torch.Tensor, dims: int | list[int] | tuple[int, ...], attr: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(t).__name__}")
    for dim in [dims] if isinstance(dims, int) else list(dims):
        if not -t.dim() <= dim < max(t.dim(), 1):
            raise IndexError(f"dimension {dim} out of range for a {t.dim()}-d tensor")
        marks = getattr(t, attr, None)
        if marks is None:
            marks = set()
            setattr(t, attr, marks)
        marks.add(dim % t.dim())


def mark_dynamic(t: torch.Tensor, dims: int | list[int] | tuple[int, ...]) -> None:
    """Trace ``t``'s dimension(s) ``dims`` symbolically from the first compile."""
    _mark(t, dims, DYNAMIC_ATTRS[0])


def maybe_mark_dynamic(t: torch.Tensor, dims: int | list[int] | tuple[int, ...]) -> None:
    """Like ``mark_dynamic``, as a hint (bytegraph treats both the same way)."""
    _mark(t, dims, MAYBE_DYNAMIC_ATTRS[0])


def mark_static(t: torch.Tensor, dims: int | list[int] | tuple[int, ...]) -> None:
    """Keep ``t``'s dimension(s) ``dims`` static even if they change between calls."""
    _mark(t, dims, STATIC_ATTRS[0])
