"""A shorter way through the fake mode for the common operators of a forward pass.

Every recorded call runs once on fake tensors. ``FakeTensorMode`` reaches an operator's output
metadata through its generic machinery: the dispatch cache (a key and a validated entry built for
every new set of shapes), Python decompositions of view ops (``view`` becomes ``collapse_view``,
``split_dim`` and ``as_strided``), Python shape rules for elementwise ops, device propagation that
allows CPU scalars among CUDA tensors. On a first call that is about half a millisecond per
operator, most of the tracing time of a transformer layer.

For the operators listed in ``FAST_OPS`` and plain arguments, none of that decides anything: their
``Meta`` kernel (C++ or torch's Python shape function), or for views and copies the one kernel
every backend shares, gives the output's shape, strides, dtype and aliasing, and the device is the
one device of the inputs. ``run`` calls that kernel on the fake tensors' meta storage and wraps the
result as the mode would, in about a twentieth of the time; for elementwise operators
(``elementwise_meta``) and for matrix products, reductions and embeddings (``static_meta``) on
plain static inputs, bytegraph's own shape rules give the metadata without the kernel, which is
Python and imports sympy through ``torch._check``. It gives
up (``NOT_FAST``: the mode runs the operator as usual) on anything else: another operator, a
tensor that is not this mode's plain fake tensor (a constant, a sparse or subclass tensor, a real
tensor), symbolic sizes (shape guards must be recorded), mixed devices, a keyword that names a
device, a symbolic number.
``tests/tracer/test_fast_meta.py`` checks that each listed operator gives the mode's own result,
metadata and aliasing included, and that none of them has an effect the ``EffectProbe`` would
report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, in_kernel_invocation_manager

from . import elementwise_meta, static_meta

aten = torch.ops.aten

#: Operators whose Meta kernel alone decides the output metadata: views, pointwise math and
#: comparisons, reductions over given dims, matrix products, attention, concatenation, dtype
#: conversion. None mutates an argument or reads data (attention's dropout draws random numbers
#: only when it runs: its metadata does not depend on them).
_CANDIDATES = (
    # views
    aten.view.default,
    aten._unsafe_view.default,
    aten.slice.Tensor,
    aten.select.int,
    aten.transpose.int,
    aten.t.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.expand.default,
    aten.permute.default,
    aten.alias.default,
    aten.detach.default,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    aten.unbind.int,
    aten.as_strided.default,
    # pointwise
    aten.add.Tensor,
    aten.sub.Tensor,
    aten.mul.Tensor,
    aten.div.Tensor,
    aten.pow.Tensor_Scalar,
    aten.pow.Tensor_Tensor,
    aten.maximum.default,
    aten.minimum.default,
    aten.neg.default,
    aten.abs.default,
    aten.reciprocal.default,
    aten.rsqrt.default,
    aten.sqrt.default,
    aten.exp.default,
    aten.log.default,
    aten.sin.default,
    aten.cos.default,
    aten.tanh.default,
    aten.sigmoid.default,
    aten.silu.default,
    aten.gelu.default,
    aten.relu.default,
    aten.where.self,
    aten.eq.Tensor,
    aten.ne.Tensor,
    aten.lt.Tensor,
    aten.le.Tensor,
    aten.gt.Tensor,
    aten.ge.Tensor,
    aten.eq.Scalar,
    aten.ne.Scalar,
    aten.lt.Scalar,
    aten.le.Scalar,
    aten.gt.Scalar,
    aten.ge.Scalar,
    aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor,
    aten.logical_not.default,
    # reductions, normalisation
    aten.mean.dim,
    aten.sum.dim_IntList,
    aten.amax.default,
    aten._softmax.default,
    aten._log_softmax.default,
    # matrix products
    aten.mm.default,
    aten.bmm.default,
    aten.addmm.default,
    aten.embedding.default,
    aten.native_layer_norm.default,
    # attention on CPU: output and logsumexp, both on the inputs' device (the CUDA kernels also
    # return RNG state on another device, so they are not listed)
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    # building
    aten.cat.default,
    aten.clone.default,
    aten._to_copy.default,
)


def _runs_on_meta(op: torch._ops.OpOverload) -> bool:
    """A Meta kernel, or one kernel for every backend (views, ``clone``, ``_to_copy``) that calls
    operators which then reach their Meta kernels."""
    return any(
        torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), key)
        for key in ("Meta", "CompositeExplicitAutograd")
    )


#: The candidates this torch build can run on meta tensors.
FAST_OPS = frozenset(op for op in _CANDIDATES if _runs_on_meta(op))

#: Keyword arguments may only select among these; a ``device`` keyword moves the output.
_PLAIN_KWARG_TYPES = (
    bool,
    int,
    float,
    str,
    type(None),
    torch.dtype,
    torch.memory_format,
    torch.layout,
)

#: What ``run`` returns when the operator must go through the fake mode as usual.
NOT_FAST = object()


#: The queries of a fake tensor's metadata (``prim.device``, ``aten.size``, ``aten.stride``,
#: ``aten.storage_offset``) that ``FakeTensorMode.dispatch`` answers before anything else, by these
#: handlers of its own: the C++ argument parser asks a fake tensor's device at most recorded calls,
#: and the mode's way to its handler (its checks, counters and debug log) is most of the cost.
_METADATA_QUERIES: dict[Any, Callable[[Any], Any]] = getattr(
    fake_tensor, "_DISPATCH_META_HANDLERS", {}
)


def run(mode: FakeTensorMode, func: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """The fake result of ``func(*args, **kwargs)`` from its Meta kernel, or ``NOT_FAST``."""
    query = _METADATA_QUERIES.get(func)
    if query is not None:  # as the mode answers it
        return query(args)
    if func in static_meta.FACTORIES:
        return _factory(mode, func, args, kwargs)
    if func not in FAST_OPS:
        return NOT_FAST
    if not _plain_kwargs(kwargs):
        return NOT_FAST
    if not torch.is_inference_mode_enabled() and any(
        isinstance(a, torch.Tensor) and a.is_inference() for a in args
    ):
        return NOT_FAST  # a view of an inference tensor is one: the mode's kernels keep that

    tensor_kwargs = tuple(v for v in kwargs.values() if isinstance(v, torch.Tensor))
    device = _common_device(mode, (*args, *tensor_kwargs))
    if device is None:
        return NOT_FAST
    decided = elementwise_meta.output(func, args, kwargs) or static_meta.output(func, args, kwargs)
    if decided is not None:  # no need for its (Python) meta kernel
        if isinstance(decided[-1], torch.dtype):
            return _new_fake(mode, decided, device)
        return tuple(_new_fake(mode, meta, device) for meta in decided)
    try:
        with in_kernel_invocation_manager(mode):
            out = func(*_meta_aliases(args), **kwargs)
    except Exception:  # invalid arguments: the mode raises its own error for them
        return NOT_FAST
    if isinstance(out, torch.Tensor):
        return FakeTensor(mode, out, device)
    if isinstance(out, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in out):
        return type(out)(FakeTensor(mode, t, device) for t in out)
    return NOT_FAST  # not reached for the listed operators (they return tensors)


def _factory(mode: FakeTensorMode, func: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """A new tensor of a factory (``arange``) on the device it names (the CPU if none: at the
    operator, a default device has already become that keyword), or ``NOT_FAST``."""
    device = kwargs.get("device")
    if device is None:
        device = torch.device("cpu")
    if type(device) is not torch.device or device.type not in ("cpu", "cuda"):
        return NOT_FAST
    if kwargs.get("layout") not in (None, torch.strided) or kwargs.get("pin_memory"):
        return NOT_FAST
    decided = static_meta.output(func, args, kwargs)
    return NOT_FAST if decided is None else _new_fake(mode, decided, device)


def _new_fake(mode: FakeTensorMode, meta: tuple, device: torch.device) -> FakeTensor:
    shape, strides, dtype = meta
    return FakeTensor(mode, torch.empty_strided(shape, strides, dtype=dtype, device="meta"), device)


def _meta_aliases(args: tuple) -> tuple:
    """``args`` with each fake tensor replaced by a plain meta tensor on its storage: the kernel's
    views and copies of a fake tensor are tensors with torch's Python key, whose first return to
    Python imports ``torch.distributed.tensor`` (to ask whether the tensor is a DTensor), a fifth
    of a second of a cold start; a plain meta tensor's are not."""
    return tuple(
        type(arg)(map(_meta_alias, arg)) if isinstance(arg, (tuple, list)) else _meta_alias(arg)
        for arg in args
    )


def _meta_alias(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    alias = torch.empty(0, dtype=value.dtype, device="meta")
    return alias.set_(value.untyped_storage(), value.storage_offset(), value.size(), value.stride())


def _common_device(mode: FakeTensorMode, args: tuple) -> torch.device | None:
    """The device every tensor argument is on, if all are plain static fake tensors of ``mode`` and
    the other arguments plain numbers (or sequences of them); else None."""
    device = None
    for arg in args:
        for item in arg if isinstance(arg, (tuple, list)) else (arg,):
            if isinstance(item, torch.Tensor):
                if not _plain_fake(mode, item):
                    return None
                if device is None:
                    device = item.fake_device
                elif item.fake_device != device:
                    return None
            elif type(item) not in (bool, int, float) and item is not None:
                return None  # a symbolic number, a nested sequence, ...
    return device


def _plain_fake(mode: FakeTensorMode, t: torch.Tensor) -> bool:
    return (
        type(t) is FakeTensor
        and t.fake_mode is mode
        and t.constant is None
        and t.layout == torch.strided
        and t.pytype is None
        and t.dispatch_keys is None
        and not t._has_symbolic_sizes_strides
    )


def _plain_kwargs(kwargs: dict[str, Any]) -> bool:
    """Keywords are plain values (or tensors, checked with the arguments), none naming a
    device."""
    return all(
        (type(value) in _PLAIN_KWARG_TYPES or isinstance(value, torch.Tensor))
        and (name != "device" or value is None)
        for name, value in kwargs.items()
    )
