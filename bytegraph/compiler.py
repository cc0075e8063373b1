"""``bytegraph.compile`` and ``bytegraph.reset``: the decorator users put on their functions.

Definition → example → what you see::

    @bytegraph.compile
    def fn(x, y):
        return torch.relu(x) + y

    fn(torch.randn(3), torch.randn(3))   # first call: traced into an FX graph, compiled, cached
    fn.cache_entries                      # [<Variant 0 of fn: 14 guards>]
    print(fn.guard_source)                # the generated guard function, as Python
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, overload

import torch

from . import config
from .backends.registry import CompilerFn, lookup_backend
from .tracer import driver

F = TypeVar("F", bound=Callable[..., Any])


@overload
def compile(
    fn: F,
    *,
    backend: str | CompilerFn | None = None,
    fullgraph: bool = False,
    dynamic: bool | None = None,
) -> F: ...
@overload
def compile(
    fn: None = None,
    *,
    backend: str | CompilerFn | None = None,
    fullgraph: bool = False,
    dynamic: bool | None = None,
) -> Callable[[F], F]: ...


def compile(fn=None, *, backend=None, fullgraph=False, dynamic=None):
    """Compile ``fn`` (a function, bound method or lambda) with ``backend`` ("eager", "inductor",
    "triton" or any ``(gm, example_inputs) -> callable``). ``fullgraph=True`` raises instead of falling
    back to Python; ``dynamic`` is accepted for torch.compile compatibility."""
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    settings = driver.Settings(
        lookup_backend(backend or config.default_backend),
        fullgraph,
        dynamic,
        config.recompile_limit,
    )
    if isinstance(fn, torch.nn.Module):
        fn.forward = _module_forward(fn, backend, fullgraph, dynamic)
        return fn
    if isinstance(fn, types.MethodType):
        compiled = compile(fn.__func__, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
        return types.MethodType(compiled, fn.__self__)
    if hasattr(fn, "__bytegraph__"):
        return fn  # already compiled
    if isinstance(fn, functools.partial):
        return functools.partial(
            compile(fn.func, backend=backend, fullgraph=fullgraph, dynamic=dynamic),
            *fn.args,
            **fn.keywords,
        )
    call = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (type, types.FunctionType)) and isinstance(call, types.FunctionType):
        return compile(
            types.MethodType(call, fn), backend=backend, fullgraph=fullgraph, dynamic=dynamic
        )
    if isinstance(fn, types.FunctionType) and fn.__code__.co_flags & _SUSPENDING:
        # Generators and coroutines suspend: a trace of one call cannot stand for them.
        kind = "generator or coroutine"
        if fullgraph:
            raise driver.BytegraphError(
                f"{fn.__qualname__} is a {kind} function, which bytegraph does not compile"
            )
        warnings.warn(
            f"bytegraph: running {fn.__qualname__} in Python: it is a {kind} function", stacklevel=2
        )
        return fn
    if not isinstance(fn, types.FunctionType):
        raise TypeError(
            f"bytegraph.compile expects a Python function, bound method or nn.Module, "
            f"got {type(fn).__name__}: {fn!r}"
        )
    state = driver.CompiledCode(fn, settings)
    entry = driver.make_entry(fn, state)
    functools.update_wrapper(entry, fn)
    entry.__bytegraph__ = state
    entry.__signature__ = inspect.signature(fn, follow_wrapped=False)
    return entry


#: Compiled ``forward`` functions shared by the modules of one class: ``{forward function:
#: {(backend, fullgraph, dynamic): compiled}}``.
_SHARED_FORWARDS: weakref.WeakKeyDictionary[Any, dict[tuple, Any]] = weakref.WeakKeyDictionary()


def _module_forward(module: torch.nn.Module, backend: Any, fullgraph: bool, dynamic: Any) -> Any:
    """``module.forward`` compiled. The modules of one class compiled with the same settings share
    one compiled ``forward`` (one cache of variants), as torch.compile shares its cache per code
    object: regional compilation (``for layer in model.layers: bytegraph.compile(layer)``) traces
    the layer's code once and every layer of the same structure passes that variant's guards."""
    forward = module.forward
    func = getattr(forward, "__func__", None)
    if (
        not isinstance(forward, types.MethodType)
        or forward.__self__ is not module
        or not isinstance(func, types.FunctionType)
    ):
        return compile(forward, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    try:
        key = (backend, fullgraph, dynamic)
        shared = _SHARED_FORWARDS.setdefault(func, {})
        compiled = shared.get(key)
    except TypeError:  # an unhashable backend: nothing to share it by
        return compile(forward, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if compiled is None:
        compiled = shared[key] = compile(
            func, backend=backend, fullgraph=fullgraph, dynamic=dynamic
        )
    return types.MethodType(compiled, module)


#: Code flags of functions whose calls suspend (generators, coroutines, async generators).
_SUSPENDING = (
    inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
    | inspect.CO_ITERABLE_COROUTINE
)


def reset() -> None:
    """Forget every compiled variant of every function (they recompile on their next call)."""
    for state in list(driver.ALL):
        state.reset()
    driver.COUNTERS.clear()


def state_of(fn: Any) -> driver.CompiledCode:
    """The compile state behind a compiled function (or bound method / module)."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    target = getattr(target, "__func__", target)
    state = getattr(target, "__bytegraph__", None)
    if state is None:
        raise TypeError(f"{fn!r} is not a function compiled by bytegraph")
    return state
