"""Lowerings of scans: ``cumsum`` and ``cumprod`` along one dim.

Each becomes a ``ComputedBuffer`` holding a ``Scan`` (iterated like a reduction: the other dims
are rows, the scanned dim is the row) that ``reduction_code.scan`` turns into ``tl.cumsum`` /
``tl.cumprod`` over the row tile, carrying the running value across chunks of long rows. Integer
and bool inputs scan in int64, fp16/bf16 in fp32, as torch does. Their backward uses ``flip``
(``lower_views``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .indexing import Expr, contiguous_strides, product
from .ir import Layout, LazyValue, Scan, TensorValue
from .lowering import LoweringContext, NotLowerable, lowering
from .ops import ops, register_dtype

aten = torch.ops.aten


@lowering(aten.cumsum.default, scan_type="sum")
@lowering(aten.cumprod.default, scan_type="prod")
def cumulative(
    ctx: LoweringContext, x: TensorValue, dim: int, *, dtype: Any = None, scan_type: str
) -> TensorValue:
    """``out[..., k, ...] = x[..., 0, ...] + ... + x[..., k, ...]`` (``*`` for cumprod)."""
    if not isinstance(x, TensorValue):
        raise NotLowerable("scan of a non-tensor")
    val = ctx.val
    acc = register_dtype(val.dtype)
    if product(x.size) == 0:
        raise NotLowerable("empty scan")
    rank = len(x.size)
    dim = dim % rank if rank else 0
    if rank == 0 or x.size[dim] == 1:  # one element per row: the scan is a copy
        return LazyValue(
            x.size,
            val.dtype,
            val.device,
            lambda index: ops.to_dtype(ops.to_dtype(x.load(index), acc), val.dtype),
            ctx.origins(x),
        )

    def inner_fn(index: Sequence[Expr], rindex: Sequence[Expr]) -> Any:
        full = list(index[:dim]) + [rindex[0]] + list(index[dim:])
        return ops.to_dtype(x.load(full), acc)

    kept = [s for d, s in enumerate(x.size) if d != dim]
    data = Scan(kept, x.size[dim], dim, scan_type, inner_fn, acc)
    size = list(x.size)
    layout = Layout(size, contiguous_strides(size), val.dtype, val.device)
    return ctx.graph.add_computed(data, layout, ctx.origins(x))


__all__ = ["cumulative"]
