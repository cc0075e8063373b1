"""What the generated FX code may name: node targets and constant arguments.

FX renders a graph as Python source. A callable from a torch namespace is written as its dotted
path (``torch.nn.functional.relu``), rebuilt from ``__module__``/``__qualname__``; anything else is
bound to a global of the generated module, i.e. referenced by the object itself. A dotted path
that does not lead back to the same object (``torch.autograd.function.apply`` for a user
Function's ``apply``) would raise in the user's call, so ``graph_target`` hands FX a thin wrapper
instead, which FX references by object. Constants are written with ``repr``: ``graph_constant``
admits only values whose ``repr`` FX turns back into an equal value, and raises ``Unsupported``
for the rest (a class, a ``typing`` object, a generator), which then never reach generated code.
In-place operators on anything but a tensor become binary ones (``augmented_target``): FX writes
them as augmented assignments.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from .exc import Unsupported

#: Types whose ``repr`` FX's generated code evaluates back to an equal value (``inf``, ``nan`` and
#: ``device`` are globals of every generated module; ``torch`` is imported there).
_LITERAL_TYPES = (
    int,
    float,
    bool,
    str,
    bytes,
    complex,
    type(None),
    type(Ellipsis),
    range,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)


def graph_target(target: Callable[..., Any]) -> Callable[..., Any]:
    """``target`` if FX's generated code names it correctly, else a wrapper it names by object."""
    if _bound_c_method(target):
        return _by_object(target)
    if not _named_by_path(target):
        return target
    return target if _path_leads_back(target) else _by_object(target)


#: Where the dotted path of each torch callable seen so far starts: its module and the attributes
#: below it (importing each prefix of the path per recorded call is slow). Following them again is
#: cheap, and finds out a namespace patched since.
_PATHS: dict[Any, tuple[types.ModuleType, list[str]]] = {}


def _path_leads_back(target: Any) -> bool:
    try:
        known = _PATHS.get(target)
    except TypeError:  # unhashable
        known = None
    if known is not None and _follow(*known) is target:
        return True
    try:
        module, attrs = _split(torch.fx.node._get_qualified_name(target))
    except Exception:  # noqa: BLE001 (no usable path: reference the object)
        return False
    if _follow(module, attrs) is not target:
        return False
    with contextlib.suppress(TypeError):
        _PATHS[target] = (module, attrs)
    return True


def _follow(module: types.ModuleType, attrs: list[str]) -> Any:
    obj: Any = module
    for attr in attrs:
        obj = getattr(obj, attr, _MISSING)
    return obj


_MISSING = object()


#: In-place operators FX writes as an augmented assignment to the first argument, and their
#: binary forms.
_AUGMENTED = {
    operator.iadd: operator.add,
    operator.iand: operator.and_,
    operator.ifloordiv: operator.floordiv,
    operator.ilshift: operator.lshift,
    operator.imod: operator.mod,
    operator.imul: operator.mul,
    operator.imatmul: operator.matmul,
    operator.ior: operator.or_,
    operator.ipow: operator.pow,
    operator.irshift: operator.rshift,
    operator.isub: operator.sub,
    operator.itruediv: operator.truediv,
    operator.ixor: operator.xor,
}


def augmented_target(target: Any, first_arg: Any) -> Any:
    """The operator a graph node may use for ``target`` applied to ``first_arg`` (a fake value).

    FX writes an in-place operator node as an augmented assignment to its first argument
    (``iadd(a, b)`` becomes ``a += b;  iadd = a``). That means the same as the traced code only when
    the argument is a tensor, changed in place. A Python number is immutable (``n += t`` is
    ``n + t``), and there the statement would be a SyntaxError (``0 += t``, a constant) or rebind a
    graph name every later use reads (a symbolic number): such nodes get the binary operator.
    """
    binary = _AUGMENTED.get(target)
    if binary is None or isinstance(first_arg, torch.Tensor):
        return target
    return binary


#: NumPy scalar types (by name: NumPy need not be installed).
_NUMPY_SCALARS = frozenset(
    """bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64
    longlong ulonglong complex64 complex128""".split()
)


def graph_constant(value: Any) -> Any:
    """``value`` if it can be a constant argument of a graph node, else ``Unsupported``."""
    if type(value).__module__ == "numpy" and type(value).__name__ in _NUMPY_SCALARS:
        # torch treats a NumPy scalar exactly as the Python number (``float64`` and
        # ``complex128`` are subclasses of theirs, which the graph's code cannot name)
        return value.item()
    if isinstance(value, _LITERAL_TYPES) or isinstance(value, enum.Enum):
        return value
    if isinstance(value, slice):
        for part in (value.start, value.stop, value.step):
            graph_constant(part)
        return value
    if isinstance(value, (tuple, list)):  # namedtuples too: FX names their class by object
        for item in value:
            graph_constant(item)
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            graph_constant(key)
            graph_constant(item)
        return value
    raise Unsupported(
        "graph_arg",
        f"{type(value).__name__} object {value!r:.60} cannot be a constant argument of a graph op",
    )


def _bound_c_method(target: Any) -> bool:
    """A C method bound to a class or object, which has no ``__module__`` to name it by (torch
    2.15's ``Function.apply``: ``MyFunction.apply``); FX raises on it."""
    return (
        isinstance(target, types.BuiltinMethodType)
        and not isinstance(getattr(target, "__self__", None), types.ModuleType)
        and getattr(target, "__module__", None) is None
    )


def _named_by_path(target: Any) -> bool:
    """Does FX write ``target`` as a dotted path (torch namespaces, except dynamo's own)?"""
    module = getattr(target, "__module__", None)
    if not isinstance(module, str):
        return False
    if module.startswith(("torch._dynamo.", "torch._inductor.")):
        return False
    return module == "torch" or module.startswith("torch.")


def _split(path: str) -> tuple[types.ModuleType, list[str]]:
    """The longest importable module prefix of a dotted path, and the attributes after it."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):  # imported already (a failed import is slow)
        module = sys.modules.get(".".join(parts[:split]))
        if module is not None:
            return module, parts[split:]
    for split in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:split])), parts[split:]
        except ImportError:
            continue
    raise ImportError(path)


def _by_object(target: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(target, assigned=("__doc__",), updated=())
    def call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    name = getattr(target, "__name__", None) or type(target).__name__
    call.__name__ = call.__qualname__ = name if name.isidentifier() else "op"
    call.__module__ = __name__  # not a torch module: FX binds the object to a global
    call.wrapped_target = target  # type: ignore[attr-defined]  (for reports)
    return call
