"""``copy.deepcopy`` in pure Python for builtin containers and atomic values.

CPython's ``copy.deepcopy`` keeps a memo keyed by ``id()`` of each object copied; this one keeps
the pairs (original, copy) and finds an original by identity, so copies of containers of
constants, classes, functions and tensors kept as they are trace without ids. Any other value
(an object with ``__deepcopy__`` or ``__reduce_ex__``, a tensor, a dict subclass) is copied by
the real ``copy.deepcopy``, run in Python: a graph break at the call (and so is a copy with a
``memo`` given).
"""

from __future__ import annotations

import copy
import enum
import types
import weakref

import torch

from .. import markers
from .registry import polyfill

#: the types ``copy.deepcopy`` gives back as they are (its ``_deepcopy_atomic``, and more)
_ATOMIC = frozenset(
    {
        type(None),
        type(Ellipsis),
        type(NotImplemented),
        int,
        float,
        bool,
        complex,
        bytes,
        str,
        types.CodeType,
        type,
        range,
        types.BuiltinFunctionType,
        types.FunctionType,
        weakref.ref,
        property,
        # torch's singletons, whose ``__reduce_ex__`` names them: copy gives them back
        torch.dtype,
        torch.layout,
        torch.memory_format,
    }
)


@polyfill(copy.deepcopy)
def deepcopy(x, memo=None):
    """``copy.deepcopy``: builtin containers copied item by item (shared items stay shared,
    a tuple whose items all come back as they are is itself), atomic values as they are."""
    if memo is not None or not _copied_here(x, []):
        return _in_python(x, memo)
    return _copy(x, [])


def _atomic(x):
    cls = type(x)
    if cls in _ATOMIC or issubclass(cls, type):
        return True
    return isinstance(x, enum.Enum) and cls.__deepcopy__ is enum.Enum.__deepcopy__


def _copied_here(x, seen):
    """Whether every value ``x`` holds is atomic or a builtin container (else the whole copy
    runs in Python, which keeps the sharing of the items)."""
    if _atomic(x):
        return True
    cls = type(x)
    if cls not in (list, dict, tuple, set, frozenset):
        return False
    for visited in seen:
        if visited is x:
            return True
    seen.append(x)
    items = [*x.keys(), *x.values()] if cls is dict else x
    return all(_copied_here(item, seen) for item in items)


def _copy(x, pairs):
    for original, made in pairs:
        if original is x:
            return made
    cls = type(x)
    if _atomic(x):
        return x
    if cls is list:
        y = []
        pairs.append((x, y))
        for item in x:
            y.append(_copy(item, pairs))
        return y
    if cls is dict:
        y = {}
        pairs.append((x, y))
        for key, value in x.items():
            y[_copy(key, pairs)] = _copy(value, pairs)
        return y
    if cls is tuple:
        items = [_copy(item, pairs) for item in x]
        for original, made in pairs:  # the tuple reached again through its items
            if original is x:
                return made
        if all(a is b for a, b in zip(x, items, strict=True)):
            return x
        y = tuple(items)
        pairs.append((x, y))
        return y
    if cls is set or cls is frozenset:  # CPython rebuilds them from a copy of their items
        y = cls(_copy(list(x), pairs))
        pairs.append((x, y))
        return y
    raise AssertionError(f"{cls.__name__} is not copied here")  # ``_copied_here`` said no


def _in_python(x, memo):
    """The real ``copy.deepcopy`` (never traced)."""
    return copy.deepcopy(x, memo)


setattr(
    _in_python,
    markers.DISABLED_ATTR,
    markers.Disabled(_in_python, reason="copy.deepcopy of this value runs in Python"),
)
