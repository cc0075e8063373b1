"""torch.compiler's decorators, for bytegraph: ``disable``, ``allow_in_graph``,
``assume_constant_result``, ``substitute_in_graph`` and ``error_on_graph_break``.

Each marks a function for the tracer (``tracer/variables/markers.py`` holds the registries and
reads torch's own marks too, so ``torch.compiler.disable`` and friends work unchanged)::

    @bytegraph.disable(reason="talks to the logger")
    def log_stats(x): ...                 # called from compiled code: one break, run in Python

    @bytegraph.allow_in_graph
    def fused(x, y): ...                  # one graph node; its body is not traced

    with bytegraph.error_on_graph_break():
        step(x)                           # a graph break while compiling step raises
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from . import dynamo_config
from .tracer.variables import markers

F = TypeVar("F", bound=Callable[..., Any])


def disable(
    fn: F | None = None, recursive: bool = True, *, reason: str | None = None
) -> F | Callable[[F], F]:
    """Never trace ``fn``: called from compiled code it runs in Python, as one graph break.

    Like ``torch.compiler.disable``, usable bare or as ``@disable(reason="...")``; ``reason`` is the
    hint the break shows. ``fn`` compiled by bytegraph is disabled as its original function. With
    ``recursive=False`` torch still compiles the functions ``fn`` calls, through its frame hook;
    bytegraph has no hook, so they run in Python unless they are compiled themselves.
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if isinstance(fn, torch.nn.Module):
        fn.forward = disable(fn.forward, recursive, reason=reason)
        return fn
    if not callable(fn):
        raise TypeError(f"bytegraph.disable expects a callable, got {fn!r}")
    state = getattr(fn, "__bytegraph__", None)
    original = state.fn if state is not None else fn

    @functools.wraps(original)
    def disabled(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    setattr(disabled, markers.DISABLED_ATTR, markers.Disabled(original, recursive, reason))
    return disabled  # type: ignore[return-value]


def allow_in_graph(fn: F) -> F:
    """Put calls of ``fn`` in the graph as one node instead of tracing its body (it runs on fake
    tensors while tracing, for its output's shapes). As ``torch.compiler.allow_in_graph``: ``fn``
    must be pure and take and return tensors; a list or tuple of functions marks each."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]  # type: ignore[return-value]
    if not callable(fn):
        raise TypeError(f"bytegraph.allow_in_graph expects a callable, got {fn!r}")
    markers.ALLOWED.add(fn)
    return fn


def assume_constant_result(fn: F) -> F:
    """Call ``fn`` while tracing (on constant arguments) and use its result as a constant of the
    graph, without a guard: as ``torch.compiler.assume_constant_result``, it must not change."""
    if not callable(fn):
        raise TypeError(f"bytegraph.assume_constant_result expects a callable, got {fn!r}")
    markers.CONSTANT_RESULT.add(fn)
    return fn


class error_on_graph_break:  # noqa: N801 (a function-like context manager, as torch names it)
    """Make graph breaks errors (``value=True``) or allowed again (``False``) while compiling.

    A context manager around calls (compiles that happen inside raise ``BytegraphError`` at a
    graph break) and a decorator: a decorated function called from compiled code marks the breaks
    in its body. The innermost region wins; ``fullgraph=True`` always raises. As
    ``torch._dynamo.error_on_graph_break``, it is a compile-time setting: variants compiled
    before are kept.
    """

    def __init__(self, value: bool = True) -> None:
        self.value = bool(value)

    def __enter__(self) -> None:
        dynamo_config.push_region(self.value)

    def __exit__(self, *exc: Any) -> None:
        dynamo_config.pop_region()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def in_region(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        setattr(in_region, markers.REGION_ATTR, (self.value, fn))
        return in_region  # type: ignore[return-value]
