"""Lowerings of reductions: sum, prod, amax/amin, max/min (values and indices), argmax/argmin,
any/all, ``prims.var`` (two passes: mean, then squared deviations), mean, softmax and log-softmax
(the row max and an online ``sumexp`` reduced in one pass over the row, then one write).

Every reduction is realized as a ``ComputedBuffer`` holding a ``Reduction`` whose ``inner_fn(index,
rindex)`` reads the (possibly lazy) input; the scheduler later fuses its producers and consumers.
A reduction over one element becomes a pointwise copy; fp16/bf16 sums accumulate in fp32.

A long reduction with few results is split in two (``split_factor``), as Inductor does: otherwise
its kernel has too few programs to keep a GPU busy (a full sum would run on one of its SMs, a
column sum on a few). The first reduction computes ``split`` partial results per output element
over contiguous chunks of the reduced elements, in the accumulation dtype; the second combines
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
import torch

from . import config
from .indexing import Expr, contiguous_strides, product, unflatten
from .ir import Layout, LazyValue, Reduction, TensorValue
from .lowering import LoweringContext, NotLowerable, lowering
from .ops import ops, register_dtype

aten = torch.ops.aten
prims = torch.ops.prims


def reduce(
    ctx: LoweringContext,
    x: TensorValue,
    dims: Sequence[int] | None,
    keepdim: bool,
    rtype: str,
    dtype: torch.dtype,
    split: bool = True,
) -> TensorValue:
    """Reduce ``x`` over ``dims`` (None or [] = all) with ``rtype``; the result has ``dtype``.
    With ``split``, a long reduction with few results may become two (``split_factor``)."""
    rank = len(x.size)
    dims = sorted({d % rank for d in dims} if dims else set(range(rank))) if rank else []
    kept = [d for d in range(rank) if d not in dims]
    rranges = [x.size[d] for d in dims]
    size = (
        [sympy.Integer(1) if d in dims else x.size[d] for d in range(rank)]
        if keepdim
        else [x.size[d] for d in kept]
    )
    numel = product(rranges)
    if numel == 0 or product(size) == 0:
        raise NotLowerable("empty reduction")
    src_dtype = register_dtype(x.dtype)
    acc = register_dtype(dtype) if rtype in ("sum", "prod") else src_dtype

    def full_index(index: Sequence[Expr], rindex: Sequence[Expr]) -> list[Expr]:
        full: list[Expr] = [sympy.Integer(0)] * rank
        for k, d in enumerate(kept):
            full[d] = index[d] if keepdim else index[k]
        for k, d in enumerate(dims):
            full[d] = rindex[k]
        return full

    if numel == 1:
        return _single_element(ctx, x, size, full_index, rtype, dtype)
    value_dtype = torch.bool if rtype == "any" else acc

    def inner_fn(index: Sequence[Expr], rindex: Sequence[Expr]) -> Any:
        return ops.to_dtype(x.load(full_index(index, rindex)), value_dtype)

    split = split_factor(numel, product(size), rtype, inner=rank - 1 in dims) if split else 1
    if split > 1:
        chunk = numel // split

        def chunk_fn(index: Sequence[Expr], rindex: Sequence[Expr]) -> Any:
            # index = (chunk number, *output index); rindex = (position in the chunk,)
            return inner_fn(index[1:], unflatten(index[0] * chunk + rindex[0], rranges))

        parts = [sympy.Integer(split), *size]
        chunks = [sympy.Integer(chunk)]
        partial = _computed(ctx, parts, chunks, rtype, chunk_fn, value_dtype, value_dtype, x)
        return _computed(
            ctx,
            size,
            [sympy.Integer(split)],
            rtype,
            lambda index, rindex: partial.load([rindex[0], *index]),
            value_dtype,
            dtype,
            partial,
        )
    return _computed(ctx, size, rranges, rtype, inner_fn, value_dtype, dtype, x)


def _computed(
    ctx: LoweringContext,
    size: list[Expr],
    rranges: list[Expr],
    rtype: str,
    inner_fn: Any,
    src_dtype: torch.dtype,
    dtype: torch.dtype,
    source: TensorValue,
) -> TensorValue:
    layout = Layout(size, contiguous_strides(size), dtype, source.device)
    data = Reduction(size, rranges, rtype, inner_fn, src_dtype, dtype)
    return ctx.graph.add_computed(data, layout, ctx.origins(source))


#: Reductions that can be done in two steps with the same operation (arg-reductions cannot).
SPLITTABLE = ("sum", "prod", "max", "min", "any")


def split_factor(numel: Expr, outputs: Expr, rtype: str, inner: bool) -> int:
    """Into how many chunks to split a reduction of ``numel`` elements into each of ``outputs``
    results (1: not split). Only static sizes split, into a power of two dividing ``numel``, so
    that the first kernel has about ``config.split_reduction_rows`` rows to reduce (a row per
    program when the reduced dim is the last; a column reduction's kernel covers many columns per
    program, so it wants many more) while each chunk stays long enough to stream."""
    if rtype not in SPLITTABLE or not (numel.is_Integer and outputs.is_Integer):
        return 1
    numel, outputs = int(numel), int(outputs)
    rows = config.split_reduction_rows * (1 if inner else 16)
    min_chunk = max(2, config.split_reduction_min_chunk // (1 if inner else 4))
    split = 1
    while outputs * split * 2 <= rows and numel % (split * 2) == 0:
        if numel // (split * 2) < min_chunk:
            break
        split *= 2
    return split if split >= 4 else 1


def _single_element(
    ctx: LoweringContext,
    x: TensorValue,
    size: list[Expr],
    full_index: Any,
    rtype: str,
    dtype: torch.dtype,
) -> LazyValue:
    def inner_fn(index: Sequence[Expr]) -> Any:
        if rtype in ("argmax", "argmin"):
            return ops.constant(0, dtype)
        value = ops.to_dtype(x.load(full_index(index, [sympy.Integer(0)] * 8)), dtype)
        if rtype == "sumexp":  # exp(x - max) of the one element: 1, NaN where x is +-inf or NaN
            return ops.exp(ops.sub(value, value))
        return value

    return LazyValue(size, dtype, x.device, inner_fn, ctx.origins(x))


def _dims_arg(dim: Any) -> list[int] | None:
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


@lowering(aten.sum.dim_IntList, aten.sum.default, prims.sum.default)
def sum_(
    ctx: LoweringContext,
    x: TensorValue,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
    output_dtype: Any = None,
) -> TensorValue:
    return reduce(ctx, x, _dims_arg(dim), keepdim, "sum", ctx.val.dtype)


@lowering(aten.prod.dim_int, aten.prod.default)
def prod(
    ctx: LoweringContext,
    x: TensorValue,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Any:
    return reduce(ctx, x, _dims_arg(dim), keepdim, "prod", ctx.val.dtype)


@lowering(aten.mean.dim, aten.mean.default)
def mean(
    ctx: LoweringContext,
    x: TensorValue,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Any:
    out = ctx.val.dtype
    total = reduce(ctx, x, _dims_arg(dim), keepdim, "sum", out)
    n = product(x.size) / product(total.size) if dim else product(x.size)
    return _scale(ctx, total, n, out)


def _scale(ctx: LoweringContext, x: TensorValue, divisor: Expr, dtype: torch.dtype) -> LazyValue:
    def inner_fn(index: Sequence[Expr]) -> Any:
        v = ops.to_dtype(x.load(index), register_dtype(dtype))
        d = (
            ops.to_dtype(ops.index_expr(divisor, torch.int64), register_dtype(dtype))
            if not divisor.is_number
            else ops.constant(float(divisor), register_dtype(dtype))
        )
        return ops.to_dtype(ops.truediv(v, d), dtype)

    return LazyValue(x.size, dtype, x.device, inner_fn, ctx.origins(x))


@lowering(aten.amax.default, rtype="max")
@lowering(aten.amin.default, rtype="min")
def amax(
    ctx: LoweringContext, x: TensorValue, dim: Any = (), keepdim: bool = False, *, rtype: str
) -> TensorValue:
    return reduce(ctx, x, _dims_arg(dim), keepdim, rtype, ctx.val.dtype)


@lowering(aten.max.default, rtype="max")
@lowering(aten.min.default, rtype="min")
def max_all(ctx: LoweringContext, x: TensorValue, *, rtype: str) -> TensorValue:
    return reduce(ctx, x, None, False, rtype, ctx.val.dtype)


@lowering(aten.max.dim, rtype="max")
@lowering(aten.min.dim, rtype="min")
def max_dim(
    ctx: LoweringContext, x: TensorValue, dim: int, keepdim: bool = False, *, rtype: str
) -> tuple[TensorValue, TensorValue]:
    values = reduce(ctx, x, [dim], keepdim, rtype, x.dtype)
    indices = reduce(ctx, x, [dim], keepdim, "arg" + rtype, torch.int64)
    return values, indices


@lowering(aten.argmax.default, rtype="argmax")
@lowering(aten.argmin.default, rtype="argmin")
def argmax(
    ctx: LoweringContext, x: TensorValue, dim: Any = None, keepdim: bool = False, *, rtype: str
) -> TensorValue:
    if dim is None and keepdim:
        raise NotLowerable("argmax over all dims with keepdim")
    return reduce(ctx, x, _dims_arg(dim), keepdim, rtype, torch.int64)


@lowering(aten.any.dim, aten.any.dims, aten.any.default)
def any_(
    ctx: LoweringContext, x: TensorValue, dim: Any = None, keepdim: bool = False
) -> TensorValue:
    return reduce(ctx, x, _dims_arg(dim), keepdim, "any", torch.bool)


@lowering(prims.var.default)
def var(
    ctx: LoweringContext,
    x: TensorValue,
    dims: Sequence[int],
    correction: float = 1.0,
    *,
    output_dtype: Any = None,
) -> TensorValue:
    """Two passes: ``mean = sum(x)/n``, then ``sum((x - mean)**2) / (n - correction)``."""
    out = ctx.val.dtype
    acc = register_dtype(out)
    dims = _dims_arg(dims) or list(range(len(x.size)))
    rank = len(x.size)
    n = product([x.size[d % rank] for d in dims])
    total = reduce(ctx, x, dims, True, "sum", acc)
    avg = _scale(ctx, total, n, acc)

    def deviation(index: Sequence[Expr]) -> Any:
        m_index = [
            sympy.Integer(0) if d % rank in [e % rank for e in dims] else i
            for d, i in enumerate(index)
        ]
        diff = ops.sub(ops.to_dtype(x.load(index), acc), avg.load(m_index))
        return ops.mul(diff, diff)

    squares = LazyValue(x.size, acc, x.device, deviation, ctx.origins(x))
    summed = reduce(ctx, squares, dims, False, "sum", acc)
    corr = (
        sympy.Integer(int(correction))
        if float(correction).is_integer()
        else sympy.Float(correction)
    )
    return _scale(ctx, summed, n - corr, out)


@lowering(aten._softmax.default, log=False)
@lowering(aten._log_softmax.default, log=True)
def softmax(
    ctx: LoweringContext, x: TensorValue, dim: int, half_to_float: bool, *, log: bool
) -> TensorValue:
    """``exp(x - m) / s`` (log: ``x - m - log(s)``) with ``m`` the row max and ``s`` the row's
    ``sumexp`` (the sum of ``exp(x - m)``, kept online against a running max): both reduce the
    same row in one pass, so a long row is read twice (once for both, once for the result) and
    written once. Computed in fp32 for fp16/bf16 as eager does; never split, which would
    materialise partial results between kernels."""
    out = ctx.val.dtype
    acc = register_dtype(out)
    rank = len(x.size)
    d = dim % rank if rank else 0

    def upcast(index: Sequence[Expr]) -> Any:
        return ops.to_dtype(x.load(index), acc)

    values = LazyValue(x.size, acc, x.device, upcast, ctx.origins(x))
    dims = [d] if rank else None
    row_max = reduce(ctx, values, dims, True, "max", acc, split=False)
    row_sum = reduce(ctx, values, dims, True, "sumexp", acc, split=False)

    def result(index: Sequence[Expr]) -> Any:
        row = [sympy.Integer(0) if i == d else e for i, e in enumerate(index)]
        shifted = ops.sub(upcast(index), row_max.load(row))
        total = row_sum.load(row)
        value = ops.sub(shifted, ops.log(total)) if log else ops.truediv(ops.exp(shifted), total)
        return ops.to_dtype(value, out)

    return LazyValue(x.size, out, x.device, result, ctx.origins(x))
