"""One function per guard kind: ``KIND(expr, arg, consts) -> list of Python boolean expressions``.

``expr`` is the source's expression (``L['x']``). Only exact builtin literals (ints, strings, finite
floats, bools, None) are written into code; every other value goes through ``consts``, a table of
closure names, so no user object's repr ever becomes code. Identity guards hold weak references where
the object allows it, so guards never keep user objects alive.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import torch

from .guard import TensorSpec

_LITERAL_TYPES = (int, str, bool, type(None))


class ConstTable:
    """Closure values of a generated function, deduplicated (by value for types, dtypes and devices,
    else by identity) and given readable names: ``___int``, ``___torch_float32``, ``___device_cpu``."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self._names: dict[Any, str] = {}
        self.weakrefs: list[weakref.ref] = []

    def name(self, value: Any, prefix: str = "c") -> str:
        key = _dedup_key(value)
        if key in self._names:
            return self._names[key]
        base = f"___{_readable(value, prefix)}"
        name, n = base, 1
        while name in self.values:
            name, n = f"{base}_{n}", n + 1
        self.values[name] = value
        self._names[key] = name
        return name

    def ref(self, obj: Any) -> str:
        """An expression evaluating to ``obj`` while it lives and to None after (a weakref call)."""
        try:
            ref = weakref.ref(obj)
        except TypeError:
            return self.name(obj, "o")
        self.weakrefs.append(ref)
        return self.name(ref, "r") + "()"


def _dedup_key(value: Any) -> Any:
    if isinstance(value, (type, torch.dtype, torch.device)):
        return (type(value), str(value), id(value) if isinstance(value, type) else 0)
    return ("id", id(value))


def _readable(value: Any, prefix: str) -> str:
    """A short identifier describing ``value`` (never its repr: only names of types and torch enums)."""
    if isinstance(value, type):
        text = value.__name__
    elif isinstance(value, torch.dtype):
        text = str(value).replace(".", "_")
    elif isinstance(value, torch.device):
        text = f"device_{value.type}" + (f"{value.index}" if value.index is not None else "")
    elif callable(value) and getattr(value, "__name__", "").isidentifier():
        text = value.__name__
    else:
        text = prefix
    return "".join(c if c.isalnum() or c == "_" else "_" for c in text)


def literal(value: Any, consts: ConstTable) -> str:
    """Python source for ``value``: its repr for exact builtin literals, else a closure name."""
    if type(value) in _LITERAL_TYPES:
        return repr(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return consts.name(value)


def TYPE_MATCH(expr: str, arg: type, consts: ConstTable) -> list[str]:
    return [f"type({expr}) is {consts.name(arg)}"]


def ID_MATCH(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    return [f"{expr} is {consts.ref(arg)}"]


def NONE_MATCH(expr: str, arg: None, consts: ConstTable) -> list[str]:
    return [f"{expr} is None"]


def EQUALS_MATCH(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    if type(arg) is float and math.isnan(arg):
        return [f"{expr} != {expr}"]
    return [f"{expr} == {literal(arg, consts)}"]


def LEN_MATCH(expr: str, arg: int, consts: ConstTable) -> list[str]:
    return [f"len({expr}) == {arg}"]


def DICT_KEYS(expr: str, arg: tuple, consts: ConstTable) -> list[str]:
    return [f"tuple({expr}) == {consts.name(arg, 'k')}"]


def TENSOR_MATCH(expr: str, spec: TensorSpec, consts: ConstTable) -> list[str]:
    parts = [f"type({expr}) is {consts.name(spec.type)}"]
    parts.append(f"{expr}.dtype is {consts.name(spec.dtype)}")
    parts.append(f"{expr}.device == {consts.name(spec.device)}")
    parts.append(f"{expr}.requires_grad is {spec.requires_grad}")
    parts += _dims_check(f"{expr}.shape", spec.sizes, expr)
    parts += _dims_check(f"{expr}.stride()", spec.strides, expr)
    return parts


def _dims_check(what: str, dims: tuple[int | None, ...], expr: str) -> list[str]:
    if all(d is not None for d in dims):
        return [f"{what} == {tuple(dims)!r}"]
    parts = [f"len({what}) == {len(dims)}"] if what.endswith("shape") else []
    return parts + [f"{what}[{i}] == {d}" for i, d in enumerate(dims) if d is not None]


def GRAD_MODE(expr: str, arg: bool, consts: ConstTable) -> list[str]:
    return [f"{consts.name(torch.is_grad_enabled)}() is {arg}"]


def DEFAULT_DTYPE(expr: str, arg: Any, consts: ConstTable) -> list[str]:
    return [f"{consts.name(torch.get_default_dtype)}() is {consts.name(arg)}"]


def GLOBAL_STATE(expr: str, arg: tuple[Callable[[], Any], Any], consts: ConstTable) -> list[str]:
    getter, value = arg
    return [f"{consts.name(getter)}() == {literal(value, consts)}"]


def SHAPE_EXPR(expr: str, arg: str, consts: ConstTable) -> list[str]:
    return [arg]


KINDS: dict[str, Callable[[str, Any, ConstTable], list[str]]] = {
    fn.__name__: fn
    for fn in (TYPE_MATCH, ID_MATCH, NONE_MATCH, EQUALS_MATCH, LEN_MATCH, DICT_KEYS, TENSOR_MATCH,
               GRAD_MODE, DEFAULT_DTYPE, GLOBAL_STATE, SHAPE_EXPR)
}
