"""Triton code for reductions and scans inside a ``TritonKernel``: persistent and looped forms.

Persistent: the row tile ``[XBLOCK, RBLOCK]`` is masked with the reduction's identity and reduced
with ``tl.sum``/``tl.max``/... along axis 1. Looped: a ``[XBLOCK, RBLOCK]`` accumulator is updated
per ``roffset`` chunk and reduced after the loop. max/min propagate NaN and argmax/argmin return the
first index of the extreme value (a NaN counts as extreme), as torch does. ``sumexp`` (the sum of
``exp(v - max)`` over the row, softmax's denominator) keeps a running max beside the sum and
rescales the sum when the max grows, so it needs no earlier pass for the max. Scans (``scan``) use
``tl.cumsum``/``tl.cumprod`` along the row; looped, each chunk starts from the carried last value
of the previous one.
"""

from __future__ import annotations

from typing import Any

import torch

from .ir import Reduction, Scan
from .ops import TL_DTYPES

BIG_INDEX = 2147483647


def identity(rtype: str, dtype: torch.dtype) -> str:
    if rtype in ("sum", "any"):
        return "0"
    if rtype == "prod":
        return "1"
    lowest = rtype in ("max", "argmax")
    if dtype.is_floating_point:
        return "float('-inf')" if lowest else "float('inf')"
    if dtype == torch.bool:
        return "0" if lowest else "1"
    info = torch.iinfo(dtype)
    if lowest and dtype == torch.int64:
        return f"({info.min + 1} - 1)"  # the literal -2**63 would not parse as an int64
    return str(info.min if lowest else info.max)


def reduce(k: Any, data: Reduction, value: Any) -> Any:
    """Emit the reduction of ``value`` (the row elements) and return the per-row result var."""
    rtype = data.reduction_type
    if k.persistent and rtype == "sumexp":
        tile = k.emit(f"tl.where(xmask & rmask, {value}, float('-inf'))", value.dtype)
        top = k.emit(f"tl.max({tile}, 1)[:, None]", value.dtype)
        terms = k.emit(f"tl.where(xmask & rmask, tl.exp({tile} - {top}), 0)", value.dtype)
        return k.emit(f"tl.sum({terms}, 1)[:, None]", value.dtype)
    if k.persistent:
        tile = k.emit(
            f"tl.where(xmask & rmask, {value}, {identity(rtype, value.dtype)})", value.dtype
        )
        if rtype in ("argmax", "argmin"):
            return arg_final(k, tile, "rindex", "xmask & rmask", rtype)
        return final(k, tile, rtype, value.dtype)
    return looped(k, data, value)


def final(k: Any, tile: Any, rtype: str, dtype: torch.dtype) -> Any:
    """Reduce a masked ``[XBLOCK, RBLOCK]`` tile along the row."""
    if rtype == "sum":
        return k.emit(f"tl.sum({tile}, 1)[:, None]", dtype)
    if rtype == "prod":  # ``_prod_combine`` is defined beside the kernel (launch.PRELUDE)
        return k.emit(f"tl.reduce({tile}, 1, _prod_combine)[:, None]", dtype)
    if rtype == "any" or dtype == torch.bool:
        fn = "max" if rtype in ("any", "max") else "min"
        return k.emit(f"tl.{fn}({tile}.to(tl.int8), 1)[:, None] > 0", torch.bool)
    result = k.emit(f"tl.{rtype}({tile}, 1)[:, None]", dtype)
    if not dtype.is_floating_point:
        return result
    has_nan = k.emit(f"tl.max(({tile} != {tile}).to(tl.int8), 1)[:, None] > 0", torch.bool)
    return k.emit(f"tl.where({has_nan}, float('nan'), {result})", dtype)


def arg_final(k: Any, vals: Any, idxs: str, valid: str, rtype: str) -> Any:
    """First row index holding the max (argmax) or min (argmin) of ``vals`` where ``valid``."""
    fn = "max" if rtype == "argmax" else "min"
    ident = identity(rtype, vals.dtype)
    if vals.dtype.is_floating_point:
        isnan = k.emit(f"({vals} != {vals}) & ({valid})", torch.bool)
        any_nan = k.emit(f"tl.max({isnan}.to(tl.int8), 1)[:, None] > 0", torch.bool)
        clean = k.emit(f"tl.where({isnan} | (({valid}) == 0), {ident}, {vals})", vals.dtype)
    else:
        clean = k.emit(f"tl.where({valid}, {vals}, {ident})", vals.dtype)
    best = k.emit(f"tl.{fn}({clean}, 1)[:, None]", vals.dtype)
    hit = k.emit(f"({clean} == {best}) & ({valid})", torch.bool)
    if vals.dtype.is_floating_point:
        hit = k.emit(f"tl.where({any_nan}, {isnan}, {hit})", torch.bool)
    return k.emit(
        f"tl.min(tl.where({hit}, {idxs}, {BIG_INDEX}), 1)[:, None].to(tl.int64)", torch.int64
    )


def looped(k: Any, data: Reduction, value: Any) -> Any:
    """Accumulate ``value`` chunk by chunk in the open loop; reduce after it."""
    rtype = data.reduction_type
    dtype = torch.int8 if value.dtype == torch.bool else value.dtype
    acc = f"_acc{k.counter}"
    k.counter += 1
    if rtype == "sumexp":
        return _looped_sumexp(k, acc, str(value), dtype)
    full = f"tl.full([XBLOCK, RBLOCK], {identity(rtype, dtype)}, {TL_DTYPES[dtype]})"
    k.loop.init.append(f"{acc} = {full}")
    v = f"{value}.to(tl.int8)" if value.dtype == torch.bool else str(value)
    mask = "xmask & rmask"
    if rtype in ("sum", "prod"):
        op = "+" if rtype == "sum" else "*"
        k.lines.append(f"{acc} = tl.where({mask}, {acc} {op} {v}, {acc})")
    elif rtype in ("max", "min", "any"):
        cmp = "<" if rtype == "min" else ">"
        nan = f" | ({v} != {v})" if dtype.is_floating_point else ""
        k.lines.append(f"{acc} = tl.where({mask} & (({v} {cmp} {acc}){nan}), {v}, {acc})")
    else:
        return _looped_arg(k, acc, v, dtype, rtype)
    with_post(k)
    tile = k.emit(acc, dtype)
    result = final(
        k,
        tile,
        "any" if value.dtype == torch.bool and rtype == "max" else rtype,
        value.dtype if value.dtype != torch.bool else torch.bool,
    )
    k.lines = k.loop.body
    return result


def _looped_sumexp(k: Any, acc: str, v: str, dtype: torch.dtype) -> Any:
    """Per lane of the chunk: a running max ``{acc}_max`` and the sum of ``exp(v - {acc}_max)``,
    rescaled whenever the max grows; after the loop the lanes are brought to the row's max. A
    lane that has seen only ``-inf`` holds 0 (its terms are all ``exp(-inf)``); NaN and ``+inf``
    make the sum NaN, as they make eager's."""
    top, new = f"{acc}_max", f"{acc}_next"
    tl_dtype = TL_DTYPES[dtype]
    k.loop.init.append(f"{acc} = tl.full([XBLOCK, RBLOCK], 0, {tl_dtype})")
    k.loop.init.append(f"{top} = tl.full([XBLOCK, RBLOCK], float('-inf'), {tl_dtype})")
    mask = "xmask & rmask"
    k.lines += [
        f"{new} = tl.where({mask}, tl.maximum({top}, {v}), {top})",
        f"{acc} = {acc} * tl.where({new} == float('-inf'), 0, tl.exp({top} - {new})) + "
        f"tl.where({mask} & ({new} != float('-inf')), tl.exp({v} - {new}), 0)",
        f"{top} = {new}",
    ]
    with_post(k)
    row_max = k.emit(f"tl.max({top}, 1)[:, None]", dtype)
    lanes = k.emit(f"tl.where({top} == float('-inf'), 0, {acc} * tl.exp({top} - {row_max}))", dtype)
    result = k.emit(f"tl.sum({lanes}, 1)[:, None]", dtype)
    k.lines = k.loop.body
    return result


def _looped_arg(k: Any, acc: str, v: str, dtype: torch.dtype, rtype: str) -> Any:
    idx = f"{acc}_idx"
    k.loop.init.append(f"{idx} = tl.full([XBLOCK, RBLOCK], {BIG_INDEX}, tl.int32)")
    cmp = ">" if rtype == "argmax" else "<"
    nan = f" | (({v} != {v}) & ({acc} == {acc}))" if dtype.is_floating_point else ""
    take = f"xmask & rmask & (({idx} == {BIG_INDEX}) | ({v} {cmp} {acc}){nan})"
    k.lines.append(f"{acc}_take = {take}")
    k.lines.append(f"{acc} = tl.where({acc}_take, {v}, {acc})")
    k.lines.append(f"{idx} = tl.where({acc}_take, rindex + 0 * xindex, {idx})")
    with_post(k)
    vals = k.emit(acc, dtype)
    result = arg_final(k, vals, idx, f"{idx} != {BIG_INDEX}", rtype)
    k.lines = k.loop.body
    return result


def with_post(k: Any) -> None:
    """Send the following emits to the code after the loop (values valid there and later)."""
    k.lines = k.loop.post


def scan(k: Any, data: Scan, value: Any) -> Any:
    """Emit the inclusive scan of the row tile ``value``; returns the per-element result var."""
    ident = "0" if data.scan_type == "sum" else "1"
    fn = {"sum": "tl.cumsum", "prod": "tl.cumprod"}[data.scan_type]
    tile = k.emit(f"tl.where(xmask & rmask, {value}, {ident})", value.dtype)
    if k.persistent:
        return k.emit(f"{fn}({tile}, 1)", value.dtype)
    carry = f"_carry{k.counter}"
    k.counter += 1
    k.loop.init.append(f"{carry} = tl.full([XBLOCK, 1], {ident}, {TL_DTYPES[value.dtype]})")
    op = "+" if data.scan_type == "sum" else "*"
    result = k.emit(f"{fn}({tile}, 1) {op} {carry}", value.dtype)
    # masked-off tail elements hold the identity, so the chunk's last column is the running value
    k.lines.append(f"{carry} = tl.sum(tl.where(rbase == RBLOCK - 1, {result}, 0), 1)[:, None]")
    return result
