"""Output metadata of matrix products, reductions, softmax, concatenation, attention and
embeddings on static shapes,
without their meta kernels.

These operators' meta kernels are Python (``torch._meta_registrations``, ``torch._refs``,
``torch._decomp``) and check their arguments with ``torch._check``, which imports torch's symbolic
shapes and with them sympy: a quarter of a second at the first trace of a process that needs no
symbol. For the plain cases their outputs are simple (a new contiguous tensor of a computed shape,
or for a reduction with ``keepdim`` the view torch's ``broadcast_in_dim`` makes of one), and
``output`` gives them directly: same floating-point dtype for every tensor, sizes of at least 1,
arguments that fit together. Anything else (mixed dtypes, an ``out_dtype``, sizes that do not match,
empty tensors, a reduction over all dimensions) returns None and runs the kernel, which raises its
own error where the arguments are wrong. ``tests/tracer/test_static_meta.py`` compares each rule
with the fake mode's result on many inputs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

from . import layouts

aten = torch.ops.aten

_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
#: Reductions of these dtypes compute in them (float16/bfloat16 go through float32 and back).
_EXACT_FLOATS = (torch.float32, torch.float64)

Meta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


def output(op: Any, args: tuple, kwargs: dict[str, Any]) -> Meta | tuple[Meta, ...] | None:
    """``(shape, strides, dtype)`` of ``op(*args, **kwargs)`` on plain fake tensors of one device
    (a tuple of them for an operator with several outputs), or None where this module does not
    decide it."""
    rule = RULES.get(op)
    if rule is None:
        return None
    try:
        _signature(rule).bind(*args, **kwargs)
    except TypeError:  # arguments the rule does not take (the kernel raises its own error)
        return None
    return rule(*args, **kwargs)


@functools.cache
def _signature(rule: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(rule)


def _new(shape: tuple[int, ...], dtype: torch.dtype) -> Meta:
    return shape, layouts.contiguous_strides(shape), dtype


def _plain(*tensors: Any, dtypes: tuple = _FLOATS) -> torch.dtype | None:
    """The one dtype of ``tensors`` if all are tensors of it (one of ``dtypes``) with no empty
    dimension."""
    dtype = None
    for t in tensors:
        if not isinstance(t, torch.Tensor) or 0 in t.shape:
            return None
        if dtype is None:
            dtype = t.dtype
        elif t.dtype != dtype:
            return None
    return dtype if dtype in dtypes else None


def _mm(a: Any, b: Any) -> Meta | None:
    dtype = _plain(a, b)
    if dtype is None or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return None
    return _new((a.shape[0], b.shape[1]), dtype)


def _bmm(a: Any, b: Any) -> Meta | None:
    dtype = _plain(a, b)
    if dtype is None or a.dim() != 3 or b.dim() != 3:
        return None
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        return None
    return _new((a.shape[0], a.shape[1], b.shape[2]), dtype)


def _addmm(bias: Any, a: Any, b: Any, *, beta: Any = 1, alpha: Any = 1) -> Meta | None:
    """``beta * bias + alpha * (a @ b)``: contiguous when ``bias`` is a contiguous 1-d or 2-d
    tensor that broadcasts to the product (a linear layer's bias)."""
    if type(beta) not in (int, float) or type(alpha) not in (int, float):
        return None
    product = _mm(a, b)
    if product is None or _plain(bias, a) is None or bias.dim() not in (1, 2):
        return None
    shape = product[0]
    if layouts.broadcast_shape([bias.shape, shape]) != shape:
        return None
    if bias.stride() != layouts.contiguous_strides(bias.shape):
        return None
    return product


def _reduction(
    x: Any, dim: Any, keepdim: bool = False, *, then_divide: bool = False
) -> Meta | None:
    """A reduction over the listed dimensions (torch's ``_refs._reduction``): a contiguous result
    of the kept sizes, viewed back to the input's rank by ``broadcast_in_dim`` where ``keepdim``;
    ``mean`` then divides it, an elementwise step with its own layout."""
    dtype = _plain(x, dtypes=_EXACT_FLOATS)
    if dtype is None or type(keepdim) is not bool or x.dim() == 0:
        return None
    if not isinstance(dim, (list, tuple)) or not dim or any(type(d) is not int for d in dim):
        return None
    ndim = x.dim()
    if any(not -ndim <= d < ndim for d in dim):
        return None
    reduced = {d % ndim for d in dim}
    if len(reduced) != len(dim):
        return None  # a dimension named twice: the kernel raises
    if not keepdim:
        kept = tuple(s for i, s in enumerate(x.shape) if i not in reduced)
        return kept, layouts.contiguous_strides(kept), dtype
    shape, strides = _kept_dims(tuple(x.shape), reduced)
    if then_divide:
        return shape, layouts.elementwise_strides(shape, [strides]), dtype
    return shape, strides, dtype


def _kept_dims(shape: tuple[int, ...], reduced: set[int]) -> tuple[tuple, tuple]:
    """Shape and strides of a ``keepdim`` reduction's result: the contiguous result of the kept
    sizes through ``broadcast_in_dim`` (a reduced dimension gets the stride that would follow the
    kept one after it, or 1 after the last)."""
    kept = [s for i, s in enumerate(shape) if i not in reduced]
    kept_strides = layouts.contiguous_strides(kept)
    out_shape, strides, position = [], [], 0
    for i, size in enumerate(shape):
        if i in reduced:
            out_shape.append(1)
            if position == len(kept):
                strides.append(1)
            else:
                strides.append(kept_strides[position] * kept[position])
        else:
            out_shape.append(size)
            strides.append(kept_strides[position])
            position += 1
    return tuple(out_shape), tuple(strides)


def _layer_norm(x: Any, normalized_shape: Any, weight: Any, bias: Any, eps: Any) -> Any:
    """``native_layer_norm`` of a contiguous input (torch's ``_refs._normalize`` and the affine
    steps after it): the output, and the mean and reciprocal deviation over the normalized
    dimensions, kept as size-1 dimensions."""
    dtype = _plain(x, dtypes=_EXACT_FLOATS)
    if dtype is None or type(eps) is not float or not isinstance(normalized_shape, (list, tuple)):
        return None
    shape, n = tuple(x.shape), len(normalized_shape)
    if n == 0 or n > len(shape) or tuple(normalized_shape) != shape[len(shape) - n :]:
        return None
    if x.stride() != layouts.contiguous_strides(shape):
        return None
    affine = [t for t in (weight, bias) if t is not None]
    for t in affine:
        if _plain(t, x) is None or tuple(t.shape) != shape[len(shape) - n :]:
            return None
        if t.stride() != layouts.contiguous_strides(t.shape):
            return None
    stats_shape, var = _kept_dims(shape, set(range(len(shape) - n, len(shape))))

    step = layouts.elementwise_step
    mean = step((stats_shape, var))  # mean: sum, then divided
    rstd = step(step((stats_shape, var)))  # rsqrt(var + eps)
    out = step(step((shape, x.stride()), mean), rstd)  # (x - mean) * rstd
    for t in affine:
        out = step(out, (tuple(t.shape), t.stride()))
    return (*out, dtype), (*mean, dtype), (*rstd, dtype)


def _sum(x: Any, dim: Any, keepdim: bool = False, *, dtype: Any = None) -> Meta | None:
    return None if dtype is not None else _reduction(x, dim, keepdim)


def _mean(x: Any, dim: Any, keepdim: bool = False, *, dtype: Any = None) -> Meta | None:
    return None if dtype is not None else _reduction(x, dim, keepdim, then_divide=True)


def _amax(x: Any, dim: Any = (), keepdim: bool = False) -> Meta | None:
    return _reduction(x, dim, keepdim)


def _softmax(x: Any, dim: Any, half_to_float: Any) -> Meta | None:
    """A new contiguous tensor of ``x``'s shape and dtype."""
    dtype = _plain(x)
    if dtype is None or half_to_float is not False or type(dim) is not int:
        return None
    if not -max(x.dim(), 1) <= dim < max(x.dim(), 1):
        return None
    return _new(tuple(x.shape), dtype)


def _cat(tensors: Any, dim: Any = 0) -> Meta | None:
    """torch's ``_refs.cat``: the inputs joined along ``dim``, then laid out channels-last where
    every input's strides are channels-last-like, else contiguous."""
    if not isinstance(tensors, (list, tuple)) or not tensors or type(dim) is not int:
        return None
    dtype = _plain(*tensors, dtypes=(*_FLOATS, torch.int64))
    if dtype is None:
        return None
    first = tensors[0]
    ndim = first.dim()
    if ndim == 0 or not -ndim <= dim < ndim:
        return None
    dim %= ndim
    shape = list(first.shape)
    for t in tensors[1:]:
        if t.dim() != ndim or any(t.shape[i] != shape[i] for i in range(ndim) if i != dim):
            return None
        shape[dim] += t.shape[dim]
    out = tuple(shape)
    if all(layouts.strides_like_channels_last(t.shape, t.stride()) for t in tensors):
        return out, layouts.channels_last_strides(out), dtype
    return _new(out, dtype)


def _flash_attention_for_cpu(
    query: Any,
    key: Any,
    value: Any,
    dropout_p: Any = 0.0,
    is_causal: Any = False,
    attn_mask: Any = None,
    *,
    scale: Any = None,
) -> tuple[Meta, Meta] | None:
    """``scaled_dot_product_attention``'s CPU kernel: the attention laid out as the query (torch's
    ``empty_like``), and the log-sum-exp in float32, ``(batch, heads, length)`` with the heads
    innermost. (For float64 torch 2.11 gives the log-sum-exp float32, later releases float64.)"""
    dtype = _plain(query, key, value, dtypes=(torch.float32, torch.float16, torch.bfloat16))
    if dtype is None or query.dim() != 4 or type(is_causal) is not bool:
        return None
    if attn_mask is not None and not isinstance(attn_mask, torch.Tensor):
        return None
    shape = tuple(query.shape)
    attention = shape, layouts.elementwise_strides(shape, [query.stride()]), dtype
    batch, heads, length = shape[:3]
    return attention, ((batch, heads, length), (length * heads, 1, heads), torch.float32)


def _embedding(weight: Any, indices: Any, *flags: Any) -> Meta | None:
    if _plain(weight) is None or weight.dim() != 2:
        return None
    if not isinstance(indices, torch.Tensor) or indices.dtype not in (torch.int64, torch.int32):
        return None
    if 0 in indices.shape or any(type(f) not in (int, bool) for f in flags):
        return None
    return _new((*indices.shape, weight.shape[1]), weight.dtype)


def _arange(*bounds: Any, dtype: Any = None, **factory: Any) -> Meta | None:
    """``arange`` over Python ints: ``len(range(start, end, step))`` values, int64 unless a
    ``dtype`` is given (floats are left to the kernel: its length rounds in double)."""
    if not 1 <= len(bounds) <= 3 or any(type(b) is not int for b in bounds):
        return None
    if dtype is not None and not isinstance(dtype, torch.dtype):
        return None
    start, end, step = {1: (0, *bounds, 1), 2: (*bounds, 1), 3: bounds}[len(bounds)]
    length = len(range(start, end, step)) if step else 0
    if length == 0:
        return None  # empty, or bounds inconsistent with the step: the kernel decides
    return _new((length,), dtype or torch.int64)


#: Operators that make a new tensor from numbers (``fast_meta`` gives them their device).
FACTORIES = frozenset({aten.arange.default, aten.arange.start, aten.arange.start_step})

RULES: dict[Any, Callable[..., Meta | None]] = {
    aten.mm.default: _mm,
    aten.bmm.default: _bmm,
    aten.addmm.default: _addmm,
    aten.sum.dim_IntList: _sum,
    aten.mean.dim: _mean,
    aten.amax.default: _amax,
    aten.embedding.default: _embedding,
    aten.native_layer_norm.default: _layer_norm,
    **dict.fromkeys(FACTORIES, _arange),
    aten._softmax.default: _softmax,
    aten.cat.default: _cat,
    aten._scaled_dot_product_flash_attention_for_cpu.default: _flash_attention_for_cpu,
}
