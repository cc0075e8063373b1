"""Output metadata of elementwise operators, without their meta kernels.

torch's meta kernels for elementwise operators are Python: type promotion, broadcasting and the
output's memory layout through several layers of reference implementations (or the fake mode's
own rules for ``add``/``sub``/``mul``/``div``), about 0.1 ms per operator, and each call goes
through torch's symbolic shapes (whose import loads sympy). ``output`` gives the same answer from
ints: the tensor arguments share one dtype (floating point, or an integer one for integer
arithmetic with Python ints), the other arguments are Python numbers, and the output has the
broadcast shape, the strides torch's elementwise rule gives the broadcast operands
(``layouts.elementwise_strides``, step by step for an operator whose reference is several steps)
and the inputs' dtype (bool for a comparison). Where the fake mode's own paths lay out otherwise,
it decides only contiguous inputs: ``relu``, ``add``/``sub`` with ``alpha``, float16 and bfloat16
(whose kernels convert the operands on the way in). Anything else (mixed dtypes, empty tensors, a
0-d tensor beside others, shapes that do not broadcast, ``x ** 1``) returns None and runs the
operator's own meta kernel. ``tests/tracer/test_elementwise_meta.py`` compares every listed
operator's output with the fake mode's on inputs of many shapes, dtypes and layouts.
"""

from __future__ import annotations

from typing import Any

import torch

from . import layouts

aten = torch.ops.aten

_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
_LOW_PRECISION = (torch.float16, torch.bfloat16)

#: The elementwise operators ``output`` decides, and whether their output is bool.
ELEMENTWISE: dict[Any, bool] = {
    aten.add.Tensor: False,
    aten.sub.Tensor: False,
    aten.mul.Tensor: False,
    aten.div.Tensor: False,
    aten.maximum.default: False,
    aten.minimum.default: False,
    aten.pow.Tensor_Scalar: False,
    aten.pow.Tensor_Tensor: False,
    aten.neg.default: False,
    aten.abs.default: False,
    aten.reciprocal.default: False,
    aten.rsqrt.default: False,
    aten.sqrt.default: False,
    aten.exp.default: False,
    aten.log.default: False,
    aten.sin.default: False,
    aten.cos.default: False,
    aten.tanh.default: False,
    aten.sigmoid.default: False,
    aten.silu.default: False,
    aten.gelu.default: False,
    aten.relu.default: False,
    aten.eq.Tensor: True,
    aten.ne.Tensor: True,
    aten.lt.Tensor: True,
    aten.le.Tensor: True,
    aten.gt.Tensor: True,
    aten.ge.Tensor: True,
    aten.eq.Scalar: True,
    aten.ne.Scalar: True,
    aten.lt.Scalar: True,
    aten.le.Scalar: True,
    aten.gt.Scalar: True,
    aten.ge.Scalar: True,
}


def _signature(op: Any) -> tuple[bool, ...]:
    """For each positional argument of ``op``, whether it is a tensor (else a number)."""
    return tuple(
        isinstance(a.type, torch.TensorType) for a in op._schema.arguments if not a.kwarg_only
    )


_SIGNATURES = {op: _signature(op) for op in ELEMENTWISE}

#: Operators that take a number where their schema says tensor (``x + 1.0`` dispatches
#: ``add.Tensor(x, 1.0)``); the others raise their own error for it.
_NUMBER_AS_TENSOR = frozenset({aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor})

#: Keywords that leave the output's metadata alone (``alpha`` of add/sub, gelu's approximation).
_NEUTRAL_KWARGS = {"alpha": (int, float), "approximate": (str,)}


def output(op: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """``(shape, strides, dtype)`` of ``op(*args, **kwargs)`` on plain fake tensors of one device,
    or None where this module does not decide it."""
    if op not in ELEMENTWISE:
        return None
    for name, value in kwargs.items():
        if type(value) not in _NEUTRAL_KWARGS.get(name, ()):
            return None
    if len(args) != len(_SIGNATURES[op]):
        return None
    if not isinstance(args[0], torch.Tensor):
        return None
    if op is aten.pow.Tensor_Scalar and (type(args[1]) is bool or args[1] == 1):
        return None  # ``x ** 1`` is a copy of ``x``, in its own layout
    if op is aten.gelu.default and kwargs.get("approximate", "none") != "none":
        return None
    tensors = []
    for arg, is_tensor in zip(args, _SIGNATURES[op], strict=True):
        if is_tensor and isinstance(arg, torch.Tensor):
            tensors.append(arg)
        elif type(arg) not in (int, float, bool) or (is_tensor and op not in _NUMBER_AS_TENSOR):
            return None
    dtype = tensors[0].dtype
    if any(t.dtype != dtype for t in tensors):
        return None
    if dtype not in _DTYPES and not _integer_arithmetic(op, dtype, args, kwargs):
        return None
    if any(0 in t.shape for t in tensors):
        return None  # empty tensors: torch's rules for them are its own
    if dtype in _LOW_PRECISION and not _all_contiguous(tensors):
        return None  # their kernels convert operands on the way in and out: other layouts
    laid_out = _shape_and_strides(op, tensors, kwargs)
    if laid_out is None:
        return None
    return (*laid_out, torch.bool if ELEMENTWISE[op] else dtype)


#: Operators that keep an integer dtype on integer operands (division, powers and the
#: transcendental ones give floats).
_INTEGER_OPS = frozenset(
    {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.neg.default}
    | {op for op, is_bool in ELEMENTWISE.items() if is_bool}
)


def _integer_arithmetic(op: Any, dtype: torch.dtype, args: tuple, kwargs: dict[str, Any]) -> bool:
    """An int64 or int32 tensor with others of its dtype and Python ints (``alpha`` too): the
    result keeps the dtype (a float number would promote it, or be refused)."""
    if dtype not in (torch.int64, torch.int32) or op not in _INTEGER_OPS:
        return False
    numbers = [a for a in args if not isinstance(a, torch.Tensor)] + list(kwargs.values())
    return all(type(a) is int for a in numbers)


def _shape_and_strides(op: Any, tensors: list, kwargs: dict[str, Any]) -> tuple | None:
    """The output's shape and strides, as the operator's meta kernel builds them: its operands
    broadcast to one shape, then each step of its reference (``torch._refs``) laid out by
    ``layouts.elementwise_strides``. A 0-d tensor beside others is left to the kernel (the fake
    mode treats 0-d CPU tensors as numbers, in its own ways)."""
    if len(tensors) > 1 and any(t.dim() == 0 for t in tensors):
        return None
    if op is aten.relu.default or "alpha" in kwargs:
        # the fake mode has layout rules of its own for these, except on contiguous inputs
        return (tuple(tensors[0].shape), tensors[0].stride()) if _all_contiguous(tensors) else None
    laid = layouts.elementwise_step(*((tuple(t.shape), t.stride()) for t in tensors))
    if laid is None or op is not aten.gelu.default:
        return laid  # None: shapes that do not broadcast (the kernel raises its error)
    # gelu: (a * 0.5) * (1 + erf(a * sqrt(1/2))), one elementwise step at a time
    half = laid
    inner = layouts.elementwise_step(layouts.elementwise_step(half))
    return layouts.elementwise_step(half, inner)


def _all_contiguous(tensors: list) -> bool:
    """One shape, contiguous strides, and not channels-last too (where layout rules differ)."""
    shape = tuple(tensors[0].shape)
    strides = layouts.contiguous_strides(shape)
    return all(tuple(t.shape) == shape and t.stride() == strides for t in tensors) and not (
        layouts.is_channels_last(shape, strides)
    )
