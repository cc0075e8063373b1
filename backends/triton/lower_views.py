"""Lowerings of view and data-movement ops: permute, expand, view/reshape, slice, select, squeeze,
unsqueeze, as_strided, broadcast_in_dim, cat, constant_pad_nd, slice_scatter, select_scatter, flip.

A view of a ``BufferView`` stays a ``BufferView`` whenever the result is strided (so extern calls
such as ``mm`` receive ``as_strided`` views, never copies); a view of a ``LazyValue`` re-indexes its
``inner_fn``. Ops that move data (cat, pad, scatters) become ``LazyValue``s whose loads are masked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch

from .indexing import Expr, as_expr, contiguous_strides, product, same, unflatten
from .ir import BufferView, Layout, LazyValue, TensorValue
from .lowering import LoweringContext, NotLowerable, lowering
from .ops import ops, register_dtype

aten = torch.ops.aten
prims = torch.ops.prims


def restride(x: BufferView, size: list[Expr], stride: list[Expr], offset: Expr) -> BufferView:
    layout = Layout(list(size), list(stride), x.dtype, x.device, offset)
    return BufferView(x.buffer, layout)


def reindex(
    ctx: LoweringContext, x: TensorValue, size: list[Expr], fn: Callable[[list[Expr]], list[Expr]]
) -> LazyValue:
    """A LazyValue of ``size`` whose element ``index`` is ``x[fn(index)]``."""
    return LazyValue(size, x.dtype, x.device, lambda index: x.load(fn(list(index))), ctx.origins(x))


def norm_dim(dim: int, rank: int) -> int:
    return dim % rank if rank else 0


@lowering(aten.permute.default)
def permute(ctx: LoweringContext, x: TensorValue, dims: Sequence[int]) -> TensorValue:
    dims = [norm_dim(d, len(x.size)) for d in dims]
    size = [x.size[d] for d in dims]
    if isinstance(x, BufferView):
        return restride(x, size, [x.layout.stride[d] for d in dims], x.layout.offset)

    def fn(index: list[Expr]) -> list[Expr]:
        old = [sympy.Integer(0)] * len(dims)
        for k, d in enumerate(dims):
            old[d] = index[k]
        return old

    return reindex(ctx, x, size, fn)


@lowering(aten.transpose.int)
def transpose(ctx: LoweringContext, x: TensorValue, d0: int, d1: int) -> TensorValue:
    dims = list(range(len(x.size)))
    d0, d1 = norm_dim(d0, len(dims)), norm_dim(d1, len(dims))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(ctx, x, dims)


@lowering(aten.t.default)
def t(ctx: LoweringContext, x: TensorValue) -> TensorValue:
    return permute(ctx, x, list(range(len(x.size)))[::-1])


@lowering(aten.expand.default, aten.expand_copy.default)
def expand(ctx: LoweringContext, x: TensorValue, sizes: Any, implicit: bool = False) -> TensorValue:
    size = ctx.out_size
    lead = len(size) - len(x.size)
    if isinstance(x, BufferView):
        stride = [sympy.Integer(0)] * lead
        for d, (s, st) in enumerate(zip(x.size, x.layout.stride, strict=True)):
            stride.append(sympy.Integer(0) if s == 1 and size[lead + d] != 1 else st)
        return restride(x, size, stride, x.layout.offset)
    from_size = list(x.size)

    def fn(index: list[Expr]) -> list[Expr]:
        return [sympy.Integer(0) if s == 1 else index[lead + d] for d, s in enumerate(from_size)]

    return reindex(ctx, x, size, fn)


@lowering(prims.broadcast_in_dim.default)
def broadcast_in_dim(
    ctx: LoweringContext, x: TensorValue, shape: Any, broadcast_dims: Sequence[int]
) -> TensorValue:
    size = ctx.out_size
    if isinstance(x, BufferView):
        stride = [sympy.Integer(0)] * len(size)
        for k, d in enumerate(broadcast_dims):
            if not (x.size[k] == 1 and size[d] != 1):
                stride[d] = x.layout.stride[k]
        return restride(x, size, stride, x.layout.offset)
    from_size = list(x.size)

    def fn(index: list[Expr]) -> list[Expr]:
        return [
            sympy.Integer(0) if from_size[k] == 1 else index[d]
            for k, d in enumerate(broadcast_dims)
        ]

    return reindex(ctx, x, size, fn)


@lowering(aten.unsqueeze.default)
def unsqueeze(ctx: LoweringContext, x: TensorValue, dim: int) -> TensorValue:
    dim = norm_dim(dim, len(x.size) + 1)
    size = list(x.size)
    size.insert(dim, sympy.Integer(1))
    if isinstance(x, BufferView):
        stride = list(x.layout.stride)
        stride.insert(dim, sympy.Integer(1))
        return restride(x, size, stride, x.layout.offset)
    return reindex(ctx, x, size, lambda index: index[:dim] + index[dim + 1 :])


@lowering(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, prims.squeeze.default)
def squeeze(ctx: LoweringContext, x: TensorValue, dims: Any = None) -> TensorValue:
    rank = len(x.size)
    if dims is None:
        dims = list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    gone = {norm_dim(d, rank) for d in dims if x.size[norm_dim(d, rank)] == 1}
    keep = [d for d in range(rank) if d not in gone]
    size = [x.size[d] for d in keep]
    if isinstance(x, BufferView):
        return restride(x, size, [x.layout.stride[d] for d in keep], x.layout.offset)

    def fn(index: list[Expr]) -> list[Expr]:
        old = [sympy.Integer(0)] * rank
        for k, d in enumerate(keep):
            old[d] = index[k]
        return old

    return reindex(ctx, x, size, fn)


@lowering(
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.view_copy.default,
    prims.reshape.default,
)
def view(ctx: LoweringContext, x: TensorValue, sizes: Any) -> TensorValue:
    if ctx.val.dtype != x.dtype:
        raise NotLowerable("dtype view")
    size = ctx.out_size
    if isinstance(x, BufferView):
        strides = view_strides(x.layout.size, x.layout.stride, size)
        if strides is not None:
            return restride(x, size, strides, x.layout.offset)
    return reindex(ctx, x, size, view_reindexer(list(x.size), size))


def view_strides(old: list[Expr], stride: list[Expr], new: list[Expr]) -> list[Expr] | None:
    """Strides of the ``new`` shape viewing a tensor of shape ``old`` and ``stride``, or None if
    no strides do (as for ``Tensor.view``): each group of dims whose sizes multiply alike must be
    one block in memory in the old layout; its new dims then step through that block row-major.
    A view of the heads of a fused QKV projection's output (a column slice, split into heads) is
    such a view, so attention reads it where the projection wrote it."""
    groups = _view_groups(old, new)
    if groups is None:
        return None
    out: list[Expr] = []
    for old_dims, new_dims in groups:
        dims = [d for d in old_dims if not same(old[d], 1)]
        if any(not same(stride[a], stride[b] * old[b]) for a, b in itertools.pairwise(dims)):
            return None
        step = stride[dims[-1]] if dims else sympy.Integer(1)
        out += [step * s for s in contiguous_strides([new[d] for d in new_dims])]
    return out


def view_reindexer(old: list[Expr], new: list[Expr]) -> Callable[[list[Expr]], list[Expr]]:
    """Map an index of the ``new`` shape to the ``old`` one, group by group of equal products.

    ``[2, 5, 16] -> [10, 16]`` maps ``(n0, n1)`` to ``(n0 // 5, n0 % 5, n1)``; shapes that cannot
    be grouped go through the flat index.
    """
    groups = _view_groups(old, new)
    if groups is None:
        strides = contiguous_strides(new)

        def flat_fn(index: list[Expr]) -> list[Expr]:
            flat = sum((i * st for i, st in zip(index, strides, strict=True)), sympy.Integer(0))
            return unflatten(flat, old)

        return flat_fn

    def fn(index: list[Expr]) -> list[Expr]:
        out: list[Expr] = []
        for old_dims, new_dims in groups:
            sizes = [new[d] for d in new_dims]
            flat = sum(
                (index[d] * st for d, st in zip(new_dims, contiguous_strides(sizes), strict=True)),
                sympy.Integer(0),
            )
            out += unflatten(flat, [old[d] for d in old_dims]) if len(old_dims) > 1 else [flat]
        return out

    return fn


def _view_groups(old: list[Expr], new: list[Expr]) -> list[tuple[list[int], list[int]]] | None:
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(old) or j < len(new):
        a, b = ([i] if i < len(old) else []), ([j] if j < len(new) else [])
        if not a or not b:
            rest_old, rest_new = old[i:], new[j:]
            if any(not same(s, 1) for s in rest_old + rest_new):
                return None
            groups.append((list(range(i, len(old))), list(range(j, len(new)))))
            return groups
        pa, pb = old[i], new[j]
        i, j = i + 1, j + 1
        for _ in range(2 * (len(old) + len(new))):
            if same(pa, pb):
                break
            if not all(isinstance(e, sympy.Integer) for e in (pa, pb)):
                return None
            if pa < pb and i < len(old):
                pa, a, i = pa * old[i], a + [i], i + 1
            elif pb < pa and j < len(new):
                pb, b, j = pb * new[j], b + [j], j + 1
            else:
                return None
        groups.append((a, b))
    return groups


@lowering(aten.slice.Tensor, aten.slice_copy.Tensor)
def slice_(
    ctx: LoweringContext,
    x: TensorValue,
    dim: int = 0,
    start: Any = None,
    end: Any = None,
    step: int = 1,
) -> TensorValue:
    dim = norm_dim(dim, len(x.size))
    start_ = _norm_start(start, x.size[dim])
    size = list(x.size)
    size[dim] = ctx.out_size[dim]
    if isinstance(x, BufferView):
        stride = list(x.layout.stride)
        offset = x.layout.offset + start_ * stride[dim]
        stride[dim] = stride[dim] * step
        return restride(x, size, stride, offset)

    def fn(index: list[Expr]) -> list[Expr]:
        index = list(index)
        index[dim] = start_ + step * index[dim]
        return index

    return reindex(ctx, x, size, fn)


def _norm_start(start: Any, dim_size: Expr) -> Expr:
    if start is None:
        return sympy.Integer(0)
    start = as_expr(start)
    if isinstance(start, sympy.Integer):
        if start < 0:
            start = start + dim_size
        if isinstance(dim_size, sympy.Integer):
            start = min(max(start, sympy.Integer(0)), dim_size)
        elif start < 0:
            raise NotLowerable("negative slice start on a symbolic dim")
    return start


@lowering(aten.select.int, aten.select_copy.int)
def select(ctx: LoweringContext, x: TensorValue, dim: int, index: Any) -> TensorValue:
    dim = norm_dim(dim, len(x.size))
    idx = as_expr(index)
    if isinstance(idx, sympy.Integer) and idx < 0:
        idx = idx + x.size[dim]
    size = x.size[:dim] + x.size[dim + 1 :]
    if isinstance(x, BufferView):
        stride = x.layout.stride[:dim] + x.layout.stride[dim + 1 :]
        return restride(x, size, stride, x.layout.offset + idx * x.layout.stride[dim])
    return reindex(ctx, x, size, lambda index: index[:dim] + [idx] + index[dim:])


@lowering(aten.split_with_sizes.default, aten.split.Tensor)
def split(ctx: LoweringContext, x: TensorValue, sizes: Any, dim: int = 0) -> list[TensorValue]:
    dim = norm_dim(dim, len(x.size))
    vals = ctx.val
    out, start = [], sympy.Integer(0)
    for val in vals:
        length = as_expr(val.shape[dim])
        out.append(_narrow(ctx, x, dim, start, length))
        start = start + length
    return out


@lowering(aten.unbind.int)
def unbind(ctx: LoweringContext, x: TensorValue, dim: int = 0) -> list[TensorValue]:
    dim = norm_dim(dim, len(x.size))
    return [select(ctx, x, dim, k) for k in range(len(ctx.val))]


def _narrow(
    ctx: LoweringContext, x: TensorValue, dim: int, start: Expr, length: Expr
) -> TensorValue:
    size = list(x.size)
    size[dim] = length
    if isinstance(x, BufferView):
        return restride(x, size, x.layout.stride, x.layout.offset + start * x.layout.stride[dim])

    def fn(index: list[Expr]) -> list[Expr]:
        index = list(index)
        index[dim] = index[dim] + start
        return index

    return reindex(ctx, x, size, fn)


@lowering(aten.as_strided.default, aten.as_strided_copy.default)
def as_strided(
    ctx: LoweringContext, x: TensorValue, size: Any, stride: Any, storage_offset: Any = None
) -> BufferView:
    if not isinstance(x, BufferView):
        x = ctx.graph.realize(x)
    offset = x.buffer.layout.offset if storage_offset is None else as_expr(storage_offset)
    return restride(x, [as_expr(s) for s in size], [as_expr(s) for s in stride], offset)


# ---------------------------------------------------------------------------------------------
# data movement


def in_range(i: Expr, lo: Expr, hi: Expr) -> Any:
    """A bool value: ``lo <= i < hi`` (as kernel code)."""
    iv = ops.index_expr(i, torch.int64)
    return ops.logical_and(
        ops.ge(iv, ops.index_expr(lo, torch.int64)), ops.lt(iv, ops.index_expr(hi, torch.int64))
    )


@lowering(aten.cat.default)
def cat(ctx: LoweringContext, tensors: Sequence[TensorValue], dim: int = 0) -> LazyValue:
    val = ctx.val
    parts = [t for t in tensors if not (len(t.size) == 1 and t.size[0] == 0)]
    if len(parts) > 8 or any(p.device != val.device for p in parts):
        raise NotLowerable("cat of many inputs or across devices")
    dim = norm_dim(dim, len(val.shape))
    starts, total = [], sympy.Integer(0)
    for p in parts:
        starts.append(total)
        total = total + p.size[dim]
    dtype = register_dtype(val.dtype)

    def inner_fn(index: list[Expr]) -> Any:
        result = None
        for p, lo in reversed(list(zip(parts, starts, strict=True))):
            shifted = index[:dim] + [index[dim] - lo] + index[dim + 1 :]
            inside = in_range(index[dim], lo, lo + p.size[dim])
            value = ops.masked(inside, lambda p=p, s=shifted: ops.to_dtype(p.load(s), dtype), 0)
            result = value if result is None else ops.where(inside, value, result)
        return ops.to_dtype(result, val.dtype)

    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins(*parts))


@lowering(aten.constant_pad_nd.default)
def constant_pad_nd(
    ctx: LoweringContext, x: TensorValue, pad: Sequence[Any], value: float = 0.0
) -> LazyValue:
    pads = [as_expr(p) for p in pad]
    if any(isinstance(p, sympy.Integer) and p < 0 for p in pads):
        raise NotLowerable("negative padding")
    rank = len(x.size)
    lows = {rank - 1 - k: pads[2 * k] for k in range(len(pads) // 2)}
    val = ctx.val
    dtype = register_dtype(val.dtype)

    def inner_fn(index: list[Expr]) -> Any:
        mask, shifted = None, list(index)
        for d, lo in lows.items():
            shifted[d] = index[d] - lo
            inside = in_range(index[d], lo, lo + x.size[d])
            mask = inside if mask is None else ops.logical_and(mask, inside)
        if mask is None:
            return ops.to_dtype(x.load(shifted), val.dtype)
        loaded = ops.masked(mask, lambda: ops.to_dtype(x.load(shifted), dtype), value)
        return ops.to_dtype(loaded, val.dtype)

    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins(x))


@lowering(aten.slice_scatter.default)
def slice_scatter(
    ctx: LoweringContext,
    base: TensorValue,
    src: TensorValue,
    dim: int = 0,
    start: Any = None,
    end: Any = None,
    step: int = 1,
) -> LazyValue:
    if step != 1:
        raise NotLowerable("slice_scatter with step")
    dim = norm_dim(dim, len(base.size))
    lo = _norm_start(start, base.size[dim])
    hi = lo + src.size[dim]
    return _scatter(
        ctx,
        base,
        src,
        dim,
        lambda i: in_range(i, lo, hi),
        lambda index: index[:dim] + [index[dim] - lo] + index[dim + 1 :],
    )


@lowering(aten.select_scatter.default)
def select_scatter(
    ctx: LoweringContext, base: TensorValue, src: TensorValue, dim: int, index: Any
) -> LazyValue:
    dim = norm_dim(dim, len(base.size))
    idx = as_expr(index)
    if isinstance(idx, sympy.Integer) and idx < 0:
        idx = idx + base.size[dim]
    return _scatter(
        ctx,
        base,
        src,
        dim,
        lambda i: in_range(i, idx, idx + 1),
        lambda index: index[:dim] + index[dim + 1 :],
    )


def _scatter(
    ctx: LoweringContext,
    base: TensorValue,
    src: TensorValue,
    dim: int,
    inside_fn: Callable[[Expr], Any],
    src_index: Callable[[list[Expr]], list[Expr]],
) -> LazyValue:
    val = ctx.val
    dtype = register_dtype(val.dtype)
    if product(src.size) == 0:
        raise NotLowerable("empty scatter source")

    def inner_fn(index: list[Expr]) -> Any:
        inside = inside_fn(index[dim])
        new = ops.masked(inside, lambda: ops.to_dtype(src.load(src_index(index)), dtype), 0)
        old = ops.to_dtype(base.load(index), dtype)
        return ops.to_dtype(ops.where(inside, new, old), val.dtype)

    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins(base, src))


@lowering(aten.flip.default, prims.rev.default)
def flip(ctx: LoweringContext, x: TensorValue, dims: Sequence[int]) -> LazyValue:
    """``x`` read backwards along ``dims``."""
    flipped = {norm_dim(d, len(x.size)) for d in dims}

    def fn(index: list[Expr]) -> list[Expr]:
        return [x.size[d] - 1 - i if d in flipped else i for d, i in enumerate(index)]

    return reindex(ctx, x, list(x.size), fn)
