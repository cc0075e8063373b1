"""Reuse of fake-tensor results within one trace: a model whose layers share their code calls the
same ops on tensors of the same metadata once per layer, and each call otherwise runs again on
fake tensors (through every operator it decomposes into).

``FakeResults.key`` describes a recorded call by its target, the metadata of its fake tensor
arguments (shape, stride, dtype, device, ...), its constant arguments and the global state that
decides output metadata (grad mode, inference mode, default dtype; never under a torch function
mode). ``remember`` keeps the metadata of a result that is a new tensor (or a tuple/list of them)
sharing no storage with the arguments or with each other, or notes that the call returned one of
its arguments itself; ``replay`` builds fresh fake tensors with that metadata (or returns that
argument) for a later call of the same key. Anything else (symbolic sizes, constant-valued fakes,
views, results that require grad, effects, autocast) is never keyed or remembered: it runs on fake
tensors. ``remember`` only notes the call and its result's metadata: the result is
described when a call of the same key first comes (a model compiled layer by layer never repeats a
call within one trace), unless an in-place change of its metadata (``unsqueeze_``, ``detach_``)
came between.
What is not here: running a call on fake tensors (``fake_run.run``).
"""

from __future__ import annotations

import operator
import types
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

#: Constant argument types keyed by value (with their type: ``2`` and ``2.0`` differ).
_VALUE_TYPES = (
    bool,
    int,
    str,
    type(None),
    type(Ellipsis),
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)
_SEQUENCE_TYPES = (tuple, list, torch.Size)


class _NoKey(Exception):  # noqa: N818 (control flow: the call is not reusable)
    pass


class FakeResults:
    """The reusable fake results of one trace (one fake mode)."""

    def __init__(self, fake_mode: FakeTensorMode) -> None:
        self.fake_mode = fake_mode
        #: key -> result layout: ``("tensor", meta)``, ``(tuple | list, [meta, ...])``,
        #: ``("argument", index)`` or None (not reusable)
        self.results: dict[tuple, tuple | None] = {}
        #: key -> the first call's ``(args, kwargs, result, metadata)``, until a second call
        #: describes it
        self.pending: dict[tuple, tuple] = {}

    def key(self, op: str, target: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
        """A hashable description of the call, or None if its result may not be reused."""
        if not _reusable_target(target) or torch._C._is_any_autocast_enabled():
            return None
        if torch._C._len_torch_function_stack():  # a mode (``torch.device``...) may change results
            return None
        try:
            return (
                op,
                target,
                torch.is_grad_enabled(),
                torch.is_inference_mode_enabled(),
                torch.get_default_dtype(),
                self._key_of(args),
                tuple((name, self._key_of(kwargs[name])) for name in sorted(kwargs)),
            )
        except (_NoKey, TypeError):  # TypeError: an unhashable target
            return None

    def replay(self, key: tuple, args: tuple) -> Any:
        """Fresh fake tensors shaped like the remembered result of ``key`` (or the argument the
        call returns itself, as ``t.contiguous()`` does), or None."""
        if key in self.pending:
            self.results[key] = self._layout(*self.pending.pop(key))
        layout = self.results.get(key)
        if layout is None:
            return None
        kind, metas = layout
        if kind == "tensor":
            return self._fresh(metas)
        if kind == "argument":
            return args[metas]
        return kind(self._fresh(meta) for meta in metas)

    def remember(self, key: tuple, args: tuple, kwargs: dict[str, Any], result: Any) -> None:
        """Note the call of ``key`` that gave ``result`` (described if the key comes again)."""
        if key not in self.results:
            self.pending[key] = (args, kwargs, result, self._metadata(result))

    def _metadata(self, result: Any) -> tuple | None:
        tensors = _tensors(result)
        if not all(isinstance(t, FakeTensor) for t in tensors):
            return None
        try:
            return tuple(self._tensor_key(t) for t in tensors) if tensors else None
        except _NoKey:
            return None

    def _layout(self, args: tuple, kwargs: dict[str, Any], result: Any, meta: Any) -> tuple | None:
        """``result``'s layout, if fresh tensors can stand for it and its metadata is what the
        call gave."""
        if meta is None or self._metadata(result) != meta:
            return None
        same = [i for i, a in enumerate(args) if a is result]
        if same and isinstance(result, torch.Tensor):
            return ("argument", same[0])  # what it returns follows from the key
        outputs = [result] if isinstance(result, torch.Tensor) else result
        if not isinstance(result, torch.Tensor) and type(result) not in (tuple, list):
            return None
        if not outputs or not all(isinstance(t, torch.Tensor) for t in outputs):
            return None
        taken = {_storage(t) for t in _tensors((args, tuple(kwargs.values())))}
        metas = []
        for t in outputs:
            meta = self._fresh_meta(t)
            if meta is None or _storage(t) in taken:
                return None
            taken.add(_storage(t))
            metas.append(meta)
        return ("tensor", metas[0]) if outputs is not result else (type(result), metas)

    # -- keys ----------------------------------------------------------------------------------
    def _key_of(self, value: Any) -> Any:
        kind = type(value)
        if isinstance(value, FakeTensor):
            return self._tensor_key(value)
        if kind in _VALUE_TYPES:
            return (kind, value)
        if kind is float:
            return (kind, repr(value))  # ``0.0`` and ``-0.0`` are equal but give other results
        if kind in _SEQUENCE_TYPES:
            return (kind, *(self._key_of(v) for v in value))
        if kind is slice:
            return (
                kind,
                self._key_of(value.start),
                self._key_of(value.stop),
                self._key_of(value.step),
            )
        raise _NoKey

    def _tensor_key(self, t: FakeTensor) -> tuple:
        if t.fake_mode is not self.fake_mode or t.constant is not None or t.layout != torch.strided:
            raise _NoKey
        shape, stride, offset = tuple(t.shape), t.stride(), t.storage_offset()
        if not _all_ints(shape) or not _all_ints(stride) or type(offset) is not int:
            raise _NoKey  # symbolic sizes: running the call may add shape guards
        return (
            type(t),
            shape,
            stride,
            offset,
            t.dtype,
            t.device,
            t.requires_grad,
            t.is_conj(),
            t.is_neg(),
            t.is_inference(),
        )

    # -- results -------------------------------------------------------------------------------
    def _fresh(self, meta: tuple) -> FakeTensor:
        shape, stride, dtype, device = meta[:4]
        elem = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        return FakeTensor(self.fake_mode, elem, device)

    def _fresh_meta(self, t: torch.Tensor) -> tuple | None:
        """The metadata a fresh tensor reproduces ``t`` from, if a fresh tensor equals it in every
        property that is not its data (else None)."""
        if not isinstance(t, FakeTensor) or t.fake_mode is not self.fake_mode:
            return None
        if t.constant is not None or t.pytype is not None or t.dispatch_keys is not None:
            return None
        if t.real_tensor is not None or t.requires_grad or t._is_view():
            return None
        try:
            key = self._tensor_key(t)
        except _NoKey:
            return None
        meta = (key[1], key[2], t.dtype, t.device)
        fresh = self._fresh(meta)
        same = (
            self._tensor_key(fresh) == key
            and fresh.untyped_storage().nbytes() == t.untyped_storage().nbytes()
            and not fresh.requires_grad
        )
        return meta if same else None


def _reusable_target(target: Any) -> bool:
    """Tensor methods (by name), ATen operators, ``operator`` functions and functions of torch's
    namespaces: what they compute depends on their arguments alone."""
    if isinstance(target, str):
        return True
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    if not isinstance(target, (types.BuiltinFunctionType, types.FunctionType)):
        return False
    module = getattr(target, "__module__", None) or ""
    return (
        module == "torch"
        or module.startswith(("torch.", "torch._C"))
        or getattr(operator, getattr(target, "__name__", ""), None) is target
    )


def _all_ints(values: tuple) -> bool:
    return all(type(v) is int for v in values)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata
