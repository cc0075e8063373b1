"""torch's type checks in pure Python: ``torch.is_tensor`` and ``torch.jit.isinstance`` are Python
functions of torch's namespace, which the tracer would otherwise record as graph operations (and
fail on an argument that is no tensor: a distribution, a list); traced as ``isinstance``, they are
decided at trace time like any ``isinstance``."""

from __future__ import annotations

import collections.abc
import types
import typing
import warnings

import torch

from .registry import polyfill


@polyfill(torch.is_tensor)
def is_tensor(obj):
    """``torch.is_tensor``: ``isinstance(obj, torch.Tensor)``."""
    return isinstance(obj, torch.Tensor)


@polyfill(torch.jit.isinstance)
def jit_isinstance(obj, target_type):
    """``torch.jit.isinstance`` outside TorchScript (``torch._jit_internal._isinstance``): a type,
    a tuple of types, or a typing container checked item by item (``List[torch.Tensor]``)."""
    if isinstance(target_type, collections.abc.Container):
        if not isinstance(target_type, tuple):
            raise RuntimeError(
                "The second argument to `torch.jit.isinstance` must be a type or a tuple of types"
            )
        for t in target_type:
            if jit_isinstance(obj, t):
                return True
        return False
    if typing.get_origin(target_type):
        return _container_matches(obj, target_type)
    _check_contained_type(target_type)
    return isinstance(obj, target_type)


def _container_matches(obj, target_type):
    """``torch._jit_internal.container_checker``: lists, dicts and tuples item by item (nested
    containers recursively); a union (``Optional``) holds None, or is decided by its first member
    that is a container, or else by any class among its members."""
    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    _check_contained_type(target_type)
    if origin is list or origin is dict or origin is tuple:
        if isinstance(obj, (list, dict, tuple)) and not obj:  # torch: ``obj == []`` or ...
            warnings.warn(_EMPTY_CONTAINER, stacklevel=3)
        if not isinstance(obj, origin):
            return False
        if origin is tuple and len(obj) != len(args):
            return False
        if origin is dict:
            pairs = [pair for k, v in obj.items() for pair in ((k, args[0]), (v, args[1]))]
        elif origin is list:
            pairs = [(item, args[0]) for item in obj]
        else:
            pairs = list(zip(obj, args, strict=True))
        return all(
            _container_matches(item, t) if typing.get_origin(t) else isinstance(item, t)
            for item, t in pairs
        )
    if origin is typing.Union or origin is types.UnionType:
        if obj is None:
            return True
        for t in args:
            if typing.get_origin(t):
                return _container_matches(obj, t)
            if isinstance(obj, t):
                return True
    return False


def _check_contained_type(target_type):
    """torch's ``check_args_exist``: a bare container type (``list``, ``List``, ``Optional``) is
    an error."""
    for raw, name in _RAW_CONTAINERS:
        if target_type is raw and name.endswith("ict"):
            raise RuntimeError(
                f"Attempted to use {name} without contained types. Please add contained type, "
                f"e.g. {name}[int, int]"
            )
        if target_type is raw:
            raise RuntimeError(
                f"Attempted to use {name} without a contained type. Please add a contained type, "
                f"e.g. {name}[int]"
            )


#: the bare container types torch rejects, each with the name its error message gives
_RAW_CONTAINERS = (
    (dict, "dict"),
    (list, "list"),
    (tuple, "tuple"),
    (typing.Dict, "Dict"),  # noqa: UP006
    (typing.List, "List"),  # noqa: UP006
    (typing.Optional, "Optional"),
    (typing.Tuple, "Tuple"),  # noqa: UP006
)

_EMPTY_CONTAINER = (
    "The inner type of a container is lost when calling torch.jit.isinstance in eager mode. For "
    "example, List[int] would become list and therefore falsely return True for List[float] or "
    "List[str]."
)
