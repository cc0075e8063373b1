"""``associative_scan(combine_fn, xs, dim, combine_mode="generic")`` without ``torch.vmap`` where
that computes the same thing.

torch's generic mode runs ``combine_fn`` under ``torch.vmap`` over the scan dimension, at every
level of its odd/even recursion; on CPU that wrapping costs five times the scan itself (1.9 ms
against 0.38 ms for one scan of Mamba's tiny config), and transformers' Mamba takes this path
whenever a compiler traces it. When ``combine_fn`` is *elementwise* and every leaf of ``xs`` has
the same shape, calling it on the whole batch is what vmap computes slice by slice, so
``elementwise_scan`` runs torch's own recursion (``generic_associative_scan``) on the unwrapped
function: the same operations in the same order, with equal results.

*Elementwise* is decided by running ``combine_fn`` once on probes, stand-ins for its tensors that
allow only the arithmetic operators, with each other and with Python numbers: indexing, iterating,
``@`` or anything else fails, and so does an output that is not one probe per leaf in the input's
structure. ``higher_order.py`` has already allowed only functions made of locals, constants,
operators and packing; the in-place operators (``a += b`` writes into the slices it is given) are
refused from the bytecode. Everything else goes to torch's ``associative_scan`` unchanged.
"""

from __future__ import annotations

import dis
import functools
import types
import weakref
from typing import Any

import torch
import torch.utils._pytree as pytree

try:
    from torch._higher_order_ops.associative_scan import (
        associative_scan,
        generic_associative_scan,
        wrap_combine_fn_flat,
    )
except ImportError:  # a torch without them: ``faster`` keeps the function it is given
    associative_scan = None


class _Probe:
    """Stands for one tensor leaf while ``combine_fn`` runs once: arithmetic operators only."""

    __slots__ = ()


def _operator(self: _Probe, other: Any) -> Any:
    if isinstance(other, (_Probe, bool, int, float)):
        return _Probe()
    return NotImplemented


def _unary(self: _Probe) -> _Probe:
    return _Probe()


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    setattr(_Probe, f"__{_name}__", _operator)
    setattr(_Probe, f"__r{_name}__", _operator)
for _name in ("lshift", "rshift"):
    setattr(_Probe, f"__{_name}__", _operator)
    setattr(_Probe, f"__r{_name}__", _operator)
_Probe.__neg__ = _Probe.__invert__ = _unary


def faster(fn: Any) -> Any:
    """The implementation a graph node runs for the higher-order function ``fn``."""
    if associative_scan is not None and fn is associative_scan:
        return elementwise_scan
    return fn


def elementwise_scan(
    combine_fn: Any, xs: Any, dim: int, reverse: bool = False, combine_mode: str = "pointwise"
) -> Any:
    """``associative_scan`` with the same arguments; without vmap where that is equal."""
    leaves, spec = pytree.tree_flatten(xs)
    if not (_plain(leaves, dim, reverse, combine_mode) and _elementwise(combine_fn, spec)):
        return associative_scan(combine_fn, xs, dim, reverse=reverse, combine_mode=combine_mode)
    dim %= leaves[0].ndim
    moved = [torch.movedim(leaf, dim, 0) for leaf in leaves]
    if reverse:
        moved = [leaf.flip([0]) for leaf in moved]
    flat = functools.partial(
        wrap_combine_fn_flat, combine_fn=combine_fn, spec=spec, num_leaves=len(leaves)
    )
    out = generic_associative_scan(flat, moved)
    if reverse:
        out = [leaf.flip([0]) for leaf in out]
    return pytree.tree_unflatten([torch.movedim(leaf, 0, dim) for leaf in out], spec)


def _plain(leaves: list[Any], dim: Any, reverse: Any, combine_mode: Any) -> bool:
    """Arguments torch accepts, in generic mode, with dense leaves of one shape."""
    if combine_mode != "generic" or type(dim) is not int or type(reverse) is not bool:
        return False
    if not leaves or not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return False
    shape = leaves[0].shape
    return (
        all(leaf.layout == torch.strided and leaf.shape == shape for leaf in leaves)
        and -len(shape) <= dim < len(shape)
        and shape[dim] > 0
    )


#: Per function, per input structure: whether it is elementwise (decided once).
_DECIDED: weakref.WeakKeyDictionary[types.FunctionType, dict[pytree.TreeSpec, bool]] = (
    weakref.WeakKeyDictionary()
)


def _elementwise(combine_fn: Any, spec: pytree.TreeSpec) -> bool:
    if not isinstance(combine_fn, types.FunctionType):
        return False
    decided = _DECIDED.setdefault(combine_fn, {})
    if spec not in decided:
        decided[spec] = _probe(combine_fn, spec)
    return decided[spec]


def _probe(combine_fn: types.FunctionType, spec: pytree.TreeSpec) -> bool:
    if _writes_in_place(combine_fn.__code__):
        return False
    count = spec.num_leaves
    left = pytree.tree_unflatten([_Probe() for _ in range(count)], spec)
    right = pytree.tree_unflatten([_Probe() for _ in range(count)], spec)
    try:
        out = combine_fn(left, right)
    except Exception:  # noqa: BLE001 (it did something probes do not allow: not elementwise)
        return False
    out_leaves, out_spec = pytree.tree_flatten(out)
    return out_spec == spec and all(isinstance(leaf, _Probe) for leaf in out_leaves)


def _writes_in_place(code: types.CodeType) -> bool:
    return any(
        i.opname == "BINARY_OP" and i.argrepr.endswith("=") for i in dis.get_instructions(code)
    )
