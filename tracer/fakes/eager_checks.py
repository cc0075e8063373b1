"""Errors eager raises that fake kernels let through, checked before a call is recorded.

A graph that raises when it runs loses what eager did before the failing op (the side effects the
rewritten code replays after the graph), so a call eager would refuse must not enter the graph: it
breaks, and CPython raises the real error at the user's line. Today: matrix products of tensors of
different dtypes outside autocast (CPU and CUDA ``mm``/``mv``/``addmm``/``linear`` raise; their
meta kernels do not check), subtraction with a bool operand, and an operator whose CPU kernel has
no implementation for its operands' dtypes (``7 & float_tensor``, ``(1+2j) < tensor``): that
error is the user's (``PythonError``), raised where the operator is, so the user's ``except``
catches it. Entry point: ``check``.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..exc import PythonError, Unsupported

_PRODUCTS = frozenset(
    {
        operator.matmul,
        torch.matmul,
        torch.mm,
        torch.mv,
        torch.addmm,
        torch.addmv,
        torch.nn.functional.linear,
    }
)
_PRODUCT_METHODS = frozenset({"matmul", "mm", "mv", "addmm", "addmv", "__matmul__", "__rmatmul__"})


def check(op: str, target: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """Raise ``Unsupported`` when eager would refuse ``target(*args, **kwargs)`` (fake values)."""
    _check_bool_subtraction(op, target, args, kwargs)
    _check_kernel_dtypes(op, target, args, kwargs)
    is_product = target in _PRODUCT_METHODS if op == "call_method" else _is_product(target)
    if not is_product:
        return
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) < 2:
        return
    if any(torch.is_autocast_enabled(t.device.type) for t in tensors):
        return  # autocast casts the operands to one dtype
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    raise Unsupported(
        "dtype_mismatch",
        f"{name} of {' and '.join(sorted(str(d) for d in dtypes))} tensors, which eager refuses",
        hint="cast the operands to one dtype",
    )


_SUBTRACTIONS = frozenset({operator.sub, operator.isub, torch.sub, torch.subtract, torch.rsub})
_SUBTRACTION_METHODS = frozenset(
    {"sub", "sub_", "subtract", "subtract_", "__sub__", "__rsub__", "__isub__", "rsub"}
)


def _check_bool_subtraction(op: str, target: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """``-`` with a bool operand (tensor or Python bool): CPU and CUDA kernels refuse it, meta
    kernels do not."""
    if op == "call_method":
        if target not in _SUBTRACTION_METHODS:
            return
    else:
        try:
            if target not in _SUBTRACTIONS:
                return
        except TypeError:  # unhashable
            return
    operands = [*args, *kwargs.values()]
    if not any(isinstance(a, torch.Tensor) for a in operands):
        return  # numbers (a symbolic size minus a bool is an int, as in Python)
    if any(
        (isinstance(a, torch.Tensor) and a.dtype is torch.bool) or type(a) is bool for a in operands
    ):
        raise Unsupported(
            "bool_subtraction",
            "subtraction with a bool operand, which eager refuses",
            hint="use ~ or logical_not() to invert a mask, ^ or logical_xor() for two masks",
        )


def _is_product(target: Any) -> bool:
    try:
        return target in _PRODUCTS
    except TypeError:  # unhashable
        return False


#: (operator, its operands' kinds) -> the exception the CPU kernel raises for them, or None
_KERNEL_ERRORS: dict[tuple, BaseException | None] = {}
_SCALARS = (bool, int, float, complex)


def _check_kernel_dtypes(op: str, target: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """An ``operator`` function on CPU tensors whose kernel refuses its operands' dtypes (fake
    kernels check shapes and type promotion, not whether the CPU kernel implements the dtype):
    raise the kernel's own exception. Found by running the operator once per kinds of operands
    on one-element tensors of ones of the same dtypes and dimensions (0-dim or not: type
    promotion differs), remembered for the process."""
    if op != "call_function" or kwargs or getattr(target, "__module__", None) != "_operator":
        return
    if target in (operator.getitem, operator.setitem, operator.contains):
        return
    kinds = tuple(_operand_kind(a) for a in args)
    if None in kinds or not any(isinstance(k, tuple) for k in kinds):
        return
    key = (target, kinds)
    if key not in _KERNEL_ERRORS:
        _KERNEL_ERRORS[key] = _probe(target, args)
    error = _KERNEL_ERRORS[key]
    if error is not None:
        raise PythonError(type(error)(*error.args))


def _operand_kind(value: Any) -> Any:
    """A CPU tensor's dtype and whether it is 0-dim, a Python number's type; None otherwise."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.layout is not torch.strided:
            return None
        return (value.dtype, value.dim() == 0)
    return type(value) if type(value) in _SCALARS else None


def _probe(target: Any, args: tuple) -> BaseException | None:
    stand_ins = [
        torch.ones((1,) * min(a.dim(), 1), dtype=a.dtype, device="cpu")
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    ]
    try:
        with torch.no_grad():
            target(*stand_ins)
    except NotImplementedError as e:  # the kernel's dispatch found no implementation
        return e
    except Exception:  # noqa: BLE001 (another error: the fake run and the graph decide)
        return None
    return None
