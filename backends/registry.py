"""Backend registry: a backend is any callable ``(gm: fx.GraphModule, example_inputs) -> callable``.

``@register_backend("name")`` adds one under a name; ``lookup_backend(name_or_callable)`` resolves what the
user passed to ``bytegraph.compile(backend=...)``. Backends import torch (and triton) only: never the
tracer or guards, which sit above this layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx

#: The type every backend has: it receives the traced graph and example inputs (fake or real tensors)
#: and returns the callable that the rewritten bytecode will call with the real inputs.
CompilerFn = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]

_BACKENDS: dict[str, CompilerFn] = {}


def register_backend(name: str) -> Callable[[CompilerFn], CompilerFn]:
    """Register ``fn`` as the backend called ``name``; registering a name twice is an error."""

    def register(fn: CompilerFn) -> CompilerFn:
        if name in _BACKENDS:
            raise ValueError(f"backend {name!r} is already registered")
        _BACKENDS[name] = fn
        return fn

    return register


def lookup_backend(backend: str | CompilerFn) -> CompilerFn:
    """Turn ``backend=`` into a compiler function: a registered name or any callable."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        _load_builtin_backends(backend)
    try:
        return _BACKENDS[backend]
    except KeyError:
        names = ", ".join(sorted(_BACKENDS))
        raise ValueError(f"unknown backend {backend!r}; registered backends: {names}") from None


def list_backends() -> list[str]:
    _load_builtin_backends()
    return sorted(_BACKENDS)


#: Modules of the built-in backends (each registers the backend of its name, some more).
_MODULES = ("eager", "auto", "aot", "inductor", "triton")


def _load_builtin_backends(wanted: str | None = None) -> None:
    """Import the modules whose import registers the built-in backends (lazily: triton is heavy,
    and ``aot`` imports AOTAutograd, over a second). The module named like ``wanted`` first: when
    it registers that backend, the others stay unimported."""
    import importlib

    if wanted in _MODULES:
        try:
            importlib.import_module(f"{__package__}.{wanted}")
        except ImportError:
            pass
        if wanted in _BACKENDS:
            return
    for module in _MODULES:
        try:
            importlib.import_module(f"{__package__}.{module}")
        except ImportError:  # e.g. triton not installed: that backend stays unregistered
            pass
