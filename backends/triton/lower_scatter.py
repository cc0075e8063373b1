"""Lowerings that write at indices taken from another tensor: ``index_put`` (the backward of
indexing and of embedding, KV-cache writes), ``scatter``, ``scatter_add``, ``scatter_reduce(sum)``.

Each becomes two buffers: a copy of the base tensor (a pointwise kernel, fused like any other),
then a ``Scatter`` over the index tensor's shape that stores into that copy's storage (or adds
with ``tl.atomic_add`` when accumulating, so duplicate indices add up). Out-of-range indices
are masked off (and fail a device assert in Triton's debug mode), as for indexed loads. A boolean
mask with one value (``x[mask] = v``) is a pointwise ``where``, no scatter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import config
from .indexing import Expr, contiguous_strides, product, same
from .ir import BufferView, ComputedBuffer, Layout, LazyValue, Pointwise, Scatter, TensorValue
from .lower_indexing import index_plan, index_tensor
from .lowering import LoweringContext, NotLowerable, load_operand, lowering
from .ops import ops, register_dtype

aten = torch.ops.aten

#: dtypes ``tl.atomic_add`` accumulates (bf16 needs a GPU: Triton's interpreter lacks it).
ATOMIC_DTYPES = {
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.int32,
    torch.int64,
}


def check_atomic(dtype: torch.dtype) -> None:
    if dtype not in ATOMIC_DTYPES or (dtype == torch.bfloat16 and config.interpret()):
        raise NotLowerable(f"no atomic add for {dtype} here")
    if dtype.is_floating_point and torch.are_deterministic_algorithms_enabled():
        raise NotLowerable("atomic float adds are not deterministic")


def scatter_into(
    ctx: LoweringContext,
    base: TensorValue,
    ranges: list[Expr],
    target: Callable[[Sequence[Expr]], list[Any]],
    value: Callable[[Sequence[Expr]], Any],
    accumulate: bool,
    reads: Sequence[Any],
) -> BufferView:
    """A copy of ``base`` with ``value(i)`` written (or added) at ``target(i)`` for each ``i`` of
    ``ranges``; ``reads`` are the tensors ``target`` and ``value`` read (for kernel names)."""
    val = ctx.val
    if product(ranges) == 0 or product(base.size) == 0:
        raise NotLowerable("empty scatter")
    if accumulate:
        check_atomic(val.dtype)
    graph = ctx.graph
    layout = Layout(list(base.size), contiguous_strides(base.size), val.dtype, val.device)
    copy = graph.add_computed(
        Pointwise(base.size, lambda i: ops.to_dtype(base.load(i), val.dtype), val.dtype),
        layout,
        ctx.origins(base),
    )

    def inner_fn(index: Sequence[Expr]) -> tuple[Expr, Any]:
        offset = layout.index(target(index))
        return offset, ops.to_dtype(value(index), val.dtype)

    data = Scatter(list(ranges), inner_fn, val.dtype, "atomic_add" if accumulate else None)
    buf = ComputedBuffer(
        graph.new_name(), layout, data, ctx.origins(base, *reads), mutates=copy.buffer.name
    )
    graph.buffers.append(buf)
    return BufferView(buf)


@lowering(aten.index_put.default, aten._unsafe_index_put.default)
def index_put(
    ctx: LoweringContext,
    x: TensorValue,
    indices: Sequence[Any],
    values: Any,
    accumulate: bool = False,
) -> TensorValue:
    """``x.clone()[indices] = values`` (``+=`` with ``accumulate``), ``values`` broadcast to the
    shape of ``x[indices]``."""
    if not isinstance(x, TensorValue) or not isinstance(values, TensorValue):
        raise NotLowerable("index_put of non-tensors")
    if any(isinstance(t, TensorValue) and t.dtype == torch.bool for t in indices):
        return _masked_put(ctx, x, indices, values, accumulate)
    size, source_index = index_plan(x, indices)
    if len(values.size) > len(size):
        raise NotLowerable("index_put values of higher rank than the indexed result")
    dtype = register_dtype(ctx.val.dtype)
    picked = [t for t in indices if t is not None]
    return scatter_into(
        ctx,
        x,
        size,
        source_index,
        lambda i: load_operand(values, size, i, dtype),
        accumulate,
        [values, *picked],
    )


def _masked_put(
    ctx: LoweringContext, x: TensorValue, indices: Sequence[Any], values: TensorValue, acc: bool
) -> Any:
    """``x[mask] = v`` (or ``+=``) for a mask over leading dims and a single value: a ``where``."""
    mask = indices[0] if len(indices) == 1 else None
    if (
        not isinstance(mask, TensorValue)
        or len(mask.size) > len(x.size)
        or not all(same(a, b) for a, b in zip(mask.size, x.size, strict=False))
    ):
        raise NotLowerable("boolean index_put other than x[mask] with a mask of x's leading dims")
    if product(values.size) != 1:
        raise NotLowerable("boolean index_put of more than one value")
    k = len(mask.size)
    val = ctx.val
    dtype = register_dtype(val.dtype)

    def inner_fn(index: Sequence[Expr]) -> Any:
        hit = ops.to_dtype(mask.load(list(index[:k])), torch.bool)
        old = ops.to_dtype(x.load(list(index)), dtype)
        new = ops.to_dtype(values.load([0] * len(values.size)), dtype)
        if acc:
            new = ops.add(old, new)
        return ops.to_dtype(ops.where(hit, new, old), val.dtype)

    return LazyValue(x.size, val.dtype, val.device, inner_fn, ctx.origins(x, mask, values))


@lowering(aten.scatter.src, aten.scatter.value, aten.scatter.reduce, aten.scatter.value_reduce)
@lowering(aten.scatter_add.default, adds=True)
def scatter(
    ctx: LoweringContext,
    x: TensorValue,
    dim: int,
    index: Any,
    src: Any,
    reduce: str | None = None,
    *,
    adds: bool = False,
) -> Any:
    """``out[..., index[i], ...] = src[i]`` along ``dim`` (``+=`` for scatter_add and
    ``reduce="add"``)."""
    if reduce not in (None, "add"):
        raise NotLowerable(f"scatter with reduce={reduce!r}")
    accumulate = reduce == "add" or adds
    return _scatter_dim(ctx, x, dim, index, src, accumulate)


@lowering(aten.scatter_reduce.two)
def scatter_reduce(
    ctx: LoweringContext,
    x: TensorValue,
    dim: int,
    index: Any,
    src: Any,
    reduce: str,
    include_self: bool = True,
) -> Any:
    if reduce != "sum" or not include_self:
        raise NotLowerable(f"scatter_reduce {reduce!r} (include_self={include_self})")
    return _scatter_dim(ctx, x, dim, index, src, True)


def _scatter_dim(
    ctx: LoweringContext, x: TensorValue, dim: int, index: Any, src: Any, accumulate: bool
) -> Any:
    index = index_tensor(index)
    rank = len(x.size)
    if rank == 0 or len(index.size) != rank:
        raise NotLowerable("scatter of a 0-d tensor or with an index of another rank")
    dim %= rank
    dtype = register_dtype(ctx.val.dtype)

    def target(i: Sequence[Expr]) -> list[Any]:
        at = ops.indirect_indexing(index.load(list(i)), x.size[dim])
        return [at if d == dim else v for d, v in enumerate(i)]

    def value(i: Sequence[Expr]) -> Any:
        if isinstance(src, TensorValue):
            return ops.to_dtype(src.load(list(i)), dtype)
        return load_operand(src, [], [], dtype)

    return scatter_into(ctx, x, list(index.size), target, value, accumulate, [index, src])


__all__ = ["index_put", "scatter", "scatter_reduce"]
