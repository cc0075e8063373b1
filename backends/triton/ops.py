"""The ``ops`` namespace that IR ``inner_fn``s call, and the op -> Triton template table.

An ``inner_fn(index)`` never builds text itself: it calls ``ops.load(name, expr)``, ``ops.add(a,
b)``, ``ops.to_dtype(x, dtype)`` ... on whatever handler is installed with ``use_handler``: the
dependency recorder (``ir.ReadRecorder``) or the kernel code generator (``kernel.KernelOps``).
``POINTWISE`` maps each elementwise op to a template over its operands (``{0}``, ``{1}``) in core
``triton.language``; ``LIBDEVICE`` gives the more precise CUDA-only form used when not interpreting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

#: op name -> Triton text over operand names ``{0}``, ``{1}``, ``{2}``; only core ``tl`` functions,
#: so every entry also runs under ``TRITON_INTERPRET=1``.
POINTWISE: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "truediv": "{0} / {1}",
    "fmod": "{0} % {1}",  # a float's ``%`` in Triton is C's fmod (the dividend's sign)
    "neg": "-{0}",
    "abs": "tl.abs({0})",
    "exp": "tl.exp({0})",
    "exp2": "tl.exp2({0})",
    "expm1": "(tl.exp({0}) - 1)",
    "log": "tl.log({0})",
    "log2": "tl.log2({0})",
    "log1p": "tl.log(1 + {0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "erf": "tl.erf({0})",
    "floor": "tl.floor({0})",
    "ceil": "tl.ceil({0})",
    "trunc": "tl.where({0} < 0, tl.ceil({0}), tl.floor({0}))",
    "sigmoid": "tl.sigmoid({0})",
    "tanh": "(1 - 2 / (tl.exp(2 * {0}) + 1))",
    "reciprocal": "(1 / {0})",
    "relu": "tl.where({0} < 0, 0, {0})",
    "maximum": "tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})",
    "minimum": "tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})",
    "where": "tl.where({0}, {1}, {2})",
    "eq": "{0} == {1}",
    "ne": "{0} != {1}",
    "lt": "{0} < {1}",
    "le": "{0} <= {1}",
    "gt": "{0} > {1}",
    "ge": "{0} >= {1}",
    "logical_and": "({0} != 0) & ({1} != 0)",
    "logical_or": "({0} != 0) | ({1} != 0)",
    "logical_xor": "({0} != 0) ^ ({1} != 0)",
    "logical_not": "{0} == 0",
    "bitwise_and": "{0} & {1}",
    "bitwise_or": "{0} | {1}",
    "bitwise_xor": "{0} ^ {1}",
    "bitwise_not": "~{0}",
    "isnan": "{0} != {0}",
    "isinf": "tl.abs({0}) == float('inf')",
    "sign": "(({0} > 0).to({dtype}) - ({0} < 0).to({dtype}))",
    "square": "{0} * {0}",
}

#: More precise CUDA forms, used instead of ``POINTWISE`` when kernels run on a GPU.
LIBDEVICE: dict[str, str] = {
    "tanh": "libdevice.tanh({0})",
    "expm1": "libdevice.expm1({0})",
    "log1p": "libdevice.log1p({0})",
    "pow": "libdevice.pow({0}, {1})",
    "atan": "libdevice.atan({0})",
    "tan": "libdevice.tan({0})",
    "asin": "libdevice.asin({0})",
    "acos": "libdevice.acos({0})",
    "sinh": "libdevice.sinh({0})",
    "cosh": "libdevice.cosh({0})",
    "atan2": "libdevice.atan2({0}, {1})",
    "fmod": "libdevice.fmod({0}, {1})",  # exact; LLVM's frem for NVPTX is a - b * trunc(a / b)
}

#: ops whose result is ``torch.bool`` whatever the operand dtype.
BOOL_RESULT = {
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "isnan",
    "isinf",
}

#: ops that only make sense (or only match torch) on floating operands here.
FLOAT_ONLY = {
    "fmod",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "erf",
    "sigmoid",
    "tanh",
    "pow",
    "atan",
    "tan",
    "asin",
    "acos",
    "sinh",
    "cosh",
    "atan2",
    "trunc",
}

TL_DTYPES: dict[torch.dtype, str] = {
    torch.bool: "tl.int1",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float32: "tl.float32",
    torch.float64: "tl.float64",
}


def register_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a value has inside a kernel: fp16/bf16 are computed in fp32."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def has_template(name: str, interpret: bool) -> bool:
    return name in POINTWISE or (not interpret and name in LIBDEVICE)


def template(name: str, interpret: bool) -> str:
    if not interpret and name in LIBDEVICE:
        return LIBDEVICE[name]
    return POINTWISE[name]


_HANDLERS: list[Any] = []


class _OpsNamespace:
    """``ops.load(...)``, ``ops.add(a, b)``: forwards to the innermost installed handler."""

    def __getattr__(self, name: str) -> Any:
        if name in POINTWISE or name in LIBDEVICE:
            return lambda *args: _HANDLERS[-1].pointwise(name, *args)
        return lambda *args, **kwargs: getattr(_HANDLERS[-1], name)(*args, **kwargs)


ops = _OpsNamespace()


@contextlib.contextmanager
def use_handler(handler: Any) -> Iterator[Any]:
    """Install ``handler`` as the target of ``ops.*`` calls for the duration of the block."""
    _HANDLERS.append(handler)
    try:
        yield handler
    finally:
        _HANDLERS.pop()
