"""Lowerings that read at indices taken from another tensor: ``embedding``, ``gather`` and
advanced indexing (``aten.index``).

The index tensor is loaded like any operand, then ``ops.indirect_indexing`` turns the loaded value
into a symbol of the data tensor's index expression (``tmp3 * 768 + x1``). Such reads never join
their producer's kernel (the scheduler only fuses reads of the element the same program wrote).

Out-of-range indices, which eager rejects, fail a device assert only where Triton runs asserts
(``TRITON_DEBUG=1`` on a GPU; the interpreter ignores them); otherwise the read is masked off and
gives 0, never memory outside the tensor. Inductor has the same behaviour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .indexing import Expr
from .ir import LazyValue, TensorValue
from .lowering import LoweringContext, NotLowerable, lowering
from .ops import ops

aten = torch.ops.aten


def index_tensor(value: Any) -> TensorValue:
    if not isinstance(value, TensorValue) or value.dtype not in (torch.int64, torch.int32):
        raise NotLowerable("indices must be an int32/int64 tensor")
    return value


@lowering(aten.embedding.default)
def embedding(
    ctx: LoweringContext, weight: TensorValue, indices: Any, padding_idx: int = -1, *_: Any
) -> LazyValue:
    """``out[*i, d] = weight[indices[*i], d]`` (``padding_idx`` only matters for the gradient)."""
    indices = index_tensor(indices)
    if len(weight.size) != 2:
        raise NotLowerable("embedding of a weight that is not 2-d")
    rows = weight.size[0]
    nidx = len(indices.size)

    def inner_fn(index: Sequence[Expr]) -> Any:
        row = ops.indirect_indexing(indices.load(list(index[:nidx])), rows)
        return weight.load([row, index[nidx]])

    val = ctx.val
    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins(weight, indices))


@lowering(aten.gather.default)
def gather(
    ctx: LoweringContext, x: TensorValue, dim: int, index: Any, sparse_grad: bool = False
) -> LazyValue:
    """``out[..., j, ...] = x[..., index[..., j, ...], ...]`` along ``dim``."""
    index = index_tensor(index)
    if not isinstance(x, TensorValue) or len(x.size) != len(index.size) or len(x.size) == 0:
        raise NotLowerable("gather of a 0-d tensor or of different ranks")
    dim = dim % len(x.size)
    extent = x.size[dim]

    def inner_fn(idx: Sequence[Expr]) -> Any:
        at = ops.indirect_indexing(index.load(list(idx)), extent)
        return x.load([at if d == dim else i for d, i in enumerate(idx)])

    val = ctx.val
    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins(x, index))


def _wrapped(value: Any, size: Expr) -> Any:
    """A loaded index with Python's negative indices counted from the end (``x[-1]``)."""
    dtype = torch.int64
    value = ops.to_dtype(value, dtype)
    return ops.where(
        ops.lt(value, ops.constant(0, dtype)), ops.add(value, ops.index_expr(size, dtype)), value
    )


def _broadcast_shape(shapes: Sequence[Sequence[Expr]]) -> list[Expr]:
    rank = max(len(s) for s in shapes)
    out: list[Expr] = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        wide = [d for d in dims if d != 1]
        out.append(wide[0] if wide else dims[0])
    return out


def index_plan(
    x: TensorValue, indices: Sequence[Any]
) -> tuple[list[Expr], Callable[[Sequence[Expr]], list[Any]]]:
    """Where ``x[..., idx0, idx1, ...]`` reads: the result's shape and ``fn(result index) -> index
    into x`` (which loads the index tensors, so call it inside an inner_fn). Integer index tensors
    broadcast together; adjacent ones put their broadcast dims where they stand, separated ones put
    them first (NumPy's rule). Negative indices count from the end."""
    if not isinstance(x, TensorValue):
        raise NotLowerable("index of a non-tensor")
    picks = {d: index_tensor(t) for d, t in enumerate(indices) if t is not None}
    if not picks:
        raise NotLowerable("index without index tensors")
    dims = sorted(picks)
    shape = _broadcast_shape([picks[d].size for d in dims])
    front = dims != list(range(dims[0], dims[-1] + 1))  # separated: broadcast dims go first
    at = 0 if front else dims[0]
    rest = [d for d in range(len(x.size)) if d not in picks]
    rest_size = [x.size[d] for d in rest]
    size = rest_size[:at] + shape + rest_size[at:]

    def source_index(idx: Sequence[Expr]) -> list[Any]:
        idx = list(idx)
        bidx, kept = idx[at : at + len(shape)], idx[:at] + idx[at + len(shape) :]
        full: dict[int, Any] = dict(zip(rest, kept, strict=True))
        for d in dims:
            t = picks[d]
            own = [
                0 if t.size[k] == 1 else i for k, i in enumerate(bidx[len(bidx) - len(t.size) :])
            ]
            full[d] = ops.indirect_indexing(_wrapped(t.load(own), x.size[d]), x.size[d])
        return [full[d] for d in range(len(x.size))]

    return size, source_index


@lowering(aten.index.Tensor)
def index(ctx: LoweringContext, x: TensorValue, indices: Sequence[Any]) -> LazyValue:
    """``x[..., idx0, idx1, ...]`` with integer index tensors (see ``index_plan``). Boolean masks
    (data-dependent sizes) are not lowered."""
    size, source_index = index_plan(x, indices)
    if len(size) != len(ctx.out_size):
        raise NotLowerable("unexpected index result rank")
    val = ctx.val
    picked = [t for t in indices if isinstance(t, TensorValue)]
    return LazyValue(
        ctx.out_size,
        val.dtype,
        val.device,
        lambda idx: x.load(source_index(idx)),
        ctx.origins(x, *picked),
    )


__all__ = ["embedding", "gather", "index", "index_plan", "index_tensor"]
