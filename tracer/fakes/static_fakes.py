"""Fake tensors for plain static inputs, made without torch's meta converter.

``FakeTensorMode.from_tensor`` describes a real tensor in full (its view chain, storage sharing,
autograd state, ``.grad``, subclass layers) and reads every size through torch's symbolic shapes,
whose import loads sympy: a quarter of a second of a fresh process's first trace, for inputs that
need no symbol. Most inputs of a forward pass are the simplest kind: a dense tensor or parameter
that is the only user of its storage, with no ``.grad``. Its fake is a meta tensor of the same
sizes, strides and dtype on the same device, requiring grad as it does: ``fresh_fake`` builds that
directly and returns None for anything else, which goes through ``from_tensor``.
``tests/tracer/test_static_fakes.py`` compares both kinds of fake on many inputs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._mode_utils import no_dispatch

_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_DEVICES = ("cpu", "cuda")


def fresh_fake(mode: FakeTensorMode, value: torch.Tensor) -> FakeTensor | None:
    """The fake of ``value`` in ``mode`` with static sizes, or None where ``from_tensor`` must
    describe it."""
    if not _plain(value):
        return None
    with no_dispatch():  # a trace's fake mode may be active: this is its own meta tensor
        meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        fake = FakeTensor(mode, meta, value.device)
    if value.requires_grad:
        fake.requires_grad_(True)
    if type(value) is torch.nn.Parameter:
        fake._is_param = True  # what ``from_tensor`` marks: ``isinstance(fake, Parameter)``
    return fake


def _plain(value: Any) -> bool:
    """A dense strided tensor on the CPU or a GPU, at the start of a storage it alone uses and
    fills, that is no view, no inference tensor, no wrapper, a leaf without ``.grad``."""
    if type(value) not in _PLAIN_TYPES or value.layout is not torch.strided:
        return False
    if value.device.type not in _DEVICES or value.dim() == 0 or value.numel() == 0:
        return False
    if value.is_quantized or value.is_nested or value.is_mkldnn:
        return False
    if value._is_view() or value.is_inference() or value.is_conj() or value.is_neg():
        return False
    if torch._C._functorch.is_functorch_wrapped_tensor(value) or any(getattr(value, "names", ())):
        return False
    if not value.is_leaf or value.grad is not None:
        return False
    if value.requires_grad and getattr(value, "grad_dtype", value.dtype) != value.dtype:
        return False
    if value.storage_offset() != 0:
        return False
    storage = value.untyped_storage()
    # 2: the tensor's own reference and ``storage`` here; any other tensor on it would add one
    if torch._C._storage_Use_Count(storage._cdata) != 2:
        return False
    extent = 1 + sum(
        (size - 1) * stride for size, stride in zip(value.shape, value.stride(), strict=True)
    )
    return storage.nbytes() == extent * value.element_size()
