"""torch.compiler's decorators, for bytegraph: ``disable``, ``allow_in_graph``,
``assume_constant_result``, ``substitute_in_graph`` and ``error_on_graph_break``.

Each marks a function for the tracer (``tracer/markers.py`` holds the registries and
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
import inspect
import types
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from . import dynamo_config
from .tracer import markers

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


def substitute_in_graph(
    original_fn: Callable[..., Any],
    *,
    can_constant_fold_through: bool = False,
    skip_signature_check: bool = False,
) -> Callable[[F], F]:
    """Trace the decorated Python function wherever compiled code calls ``original_fn`` (usually a
    C function that blocks tracing), as ``torch.compiler.substitute_in_graph`` does. The returned
    function calls ``original_fn`` when run in Python. ``can_constant_fold_through``: a call with
    constant arguments calls ``original_fn`` while tracing and folds the result. The signatures
    must match (parameter names, keyword-only names, defaults) unless one takes ``*args,
    **kwargs`` or ``skip_signature_check`` is set; one substitute per function.

    >>> @bytegraph.substitute_in_graph(operator.indexOf)
    ... def index_of(a, b, /):
    ...     for i, item in enumerate(a):
    ...         if item is b or item == b:
    ...             return i
    ...     raise ValueError("sequence.index(x): x not in sequence")
    """
    if not callable(original_fn) or isinstance(original_fn, type):
        raise TypeError(f"substitute_in_graph expects a function, got {original_fn!r}")

    def register(polyfill: F) -> F:
        if not isinstance(polyfill, types.FunctionType):
            raise TypeError(f"@substitute_in_graph(...) expects a function, got {polyfill!r}")
        if not skip_signature_check:
            _check_signatures(original_fn, polyfill)
        if id(original_fn) in markers.SUBSTITUTES:
            raise ValueError(f"{original_fn!r} already has a substitute")

        @functools.wraps(polyfill)
        def substituted(*args: Any, **kwargs: Any) -> Any:
            return original_fn(*args, **kwargs)

        for fn in (original_fn, substituted):  # the registry holds both: their ids stay theirs
            entry = markers.Substitute(fn, polyfill, can_constant_fold_through)
            markers.SUBSTITUTES[id(fn)] = entry
        return substituted  # type: ignore[return-value]

    return register


def _check_signatures(original: Any, polyfill: Any) -> None:
    try:
        expected = _signature_shape(inspect.signature(original))
    except ValueError:  # a C function without a text signature: nothing to compare
        return
    got = _signature_shape(inspect.signature(polyfill))
    anything = _signature_shape(inspect.signature(lambda *args, **kwargs: None))
    if expected != got and anything not in (expected, got):
        raise TypeError(
            f"signature mismatch between {original!r} {inspect.signature(original)} and its "
            f"substitute {polyfill.__qualname__}{inspect.signature(polyfill)}"
        )


def _signature_shape(sig: inspect.Signature) -> tuple:
    """Positional names, keyword-only names and defaults (annotations and ``*args`` names aside)."""
    params = sig.parameters.values()
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    return (
        tuple(p.name for p in params if p.kind not in (*variadic, keyword_only)),
        frozenset(p.name for p in params if p.kind == keyword_only),
        tuple((p.name, repr(p.default)) for p in params if p.kind not in variadic),
    )


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
