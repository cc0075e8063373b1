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

from . import config, distributed, dynamo_config
from .backends.registry import CompilerFn, configure_backend, lookup_backend, reset_backends
from .guards.epoch import unseen_by_dynamo
from .tracer import callees, driver, markers, process
from .tracer.breaks import speculation
from .tracer.entry import make_entry
from .tracer.exc import BytegraphError

driver.global_settings = dynamo_config.read_settings

F = TypeVar("F", bound=Callable[..., Any])


@overload
def compile(
    model: F,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | CompilerFn | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    name: str | None = None,
    recompile_limit: int | None = None,
) -> F: ...
@overload
def compile(
    model: None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | CompilerFn | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    name: str | None = None,
    recompile_limit: int | None = None,
) -> Callable[[F], F]: ...


@unseen_by_dynamo  # called where torch.compile's code runs in Python: bytegraph's, not Dynamo's
def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=None,
    backend=None,
    mode=None,
    options=None,
    disable=False,
    name=None,
    recompile_limit=None,
):
    """Compile ``model`` (a function, bound method, callable object or ``nn.Module``), as
    ``torch.compile`` does; with no ``model``, a decorator.

    - ``backend``: "auto" (default: triton for graphs on CUDA tensors; on CPU tensors, eager for
      small graphs and Inductor where fusing pays, see ``backends/auto.py``), "eager" (the
      fastest first call), "aot_eager", "inductor", "triton", a registered name or any ``(gm,
      example_inputs) -> callable``.
    - ``fullgraph=True`` raises instead of breaking the graph or falling back to Python.
    - ``dynamic``: True traces sizes and ints symbolically from the start, False never, None
      (default) once they change.
    - ``mode``: "default", "reduce-overhead" (CUDA graphs), "max-autotune" (autotuned kernels and
      CUDA graphs) or "max-autotune-no-cudagraphs"; they act in the triton backend (and Inductor).
      Where they cannot (small graphs on CPU tensors, the eager backend) a one-time notice says
      so.
    - ``options``: the backend's options (``{"triton.cudagraphs": True, "max_autotune": True}``);
      an unknown name is an error listing the known ones. ``mode`` and ``options`` exclude each
      other, as in torch.compile.
    - ``disable=True``: check the arguments, then return ``model`` unchanged.
    - ``name``: shown in reports instead of the function's name; ``recompile_limit``: this
      function's own limit (default: ``bytegraph.config.recompile_limit``).

    >>> @bytegraph.compile(mode="reduce-overhead")
    ... def step(x):
    ...     return torch.relu(x) + 1
    """
    if model is None:

        def decorate(model: F) -> F:
            if model is None:
                raise TypeError("bytegraph.compile: the model to compile can't be None")
            return compile(
                model,
                fullgraph=fullgraph,
                dynamic=dynamic,
                backend=backend,
                mode=mode,
                options=options,
                disable=disable,
                name=name,
                recompile_limit=recompile_limit,
            )

        return decorate
    # Backends import parts of torch when first configured: never beside another thread's trace
    # (the imports are circular, and a thread would see a partly imported module).
    with process.COMPILE_LOCK:
        process.prepare_process()
        lookup_backend(backend or config.default_backend)  # an unknown name is a ValueError
        try:
            compiler_fn = configure_backend(backend or config.default_backend, mode, options)
        except ValueError as e:
            raise BytegraphError(f"bytegraph.compile: {e}") from None
    if disable or config.disable:
        if not callable(model):
            raise TypeError(f"bytegraph.compile expects a callable, got {model!r}")
        return model
    settings = driver.Settings(
        compiler_fn,
        fullgraph,
        dynamic,
        recompile_limit,
        name=name,
        mode=mode,
        options=dict(options or {}),
    )
    return _compile(model, settings)


def _compile(fn: Any, settings: driver.Settings) -> Any:
    if isinstance(fn, torch.nn.parallel.DistributedDataParallel):
        # As torch.compile: DDP's own forward (the reducer's bookkeeping) runs in Python and calls
        # the module it wraps, which is compiled; gradient hooks and buckets fire as in eager.
        _compile(fn.module, settings)
        return fn
    if isinstance(fn, torch.nn.Module):
        fn.forward = _module_forward(fn, settings)
        return fn
    if isinstance(fn, types.MethodType):
        return types.MethodType(_compile(fn.__func__, settings), fn.__self__)
    if hasattr(fn, "__bytegraph__"):
        return fn  # already compiled
    if markers.is_disabled(fn):
        return fn  # bytegraph.disable / torch.compiler.disable: never traced
    if isinstance(fn, functools.partial):
        return functools.partial(_compile(fn.func, settings), *fn.args, **fn.keywords)
    call = getattr(type(fn), "__call__", None)  # noqa: B004 (the class's own __call__)
    if not isinstance(fn, (type, types.FunctionType)) and isinstance(call, types.FunctionType):
        return _compile(types.MethodType(call, fn), settings)
    if isinstance(fn, types.FunctionType) and fn.__code__.co_flags & _SUSPENDING:
        # Generators and coroutines suspend: a trace of one call cannot stand for them.
        kind = "generator or coroutine"
        if settings.fullgraph:
            raise driver.BytegraphError(
                f"{fn.__qualname__} is a {kind} function, which bytegraph does not compile"
            )
        warnings.warn(
            f"bytegraph: running {fn.__qualname__} in Python: it is a {kind} function", stacklevel=3
        )
        return fn
    if not isinstance(fn, types.FunctionType):
        raise TypeError(
            f"bytegraph.compile expects a Python function, bound method or nn.Module, "
            f"got {type(fn).__name__}: {fn!r}"
        )
    state = driver.CompiledCode(fn, settings)
    entry = make_entry(fn, state)
    entry.__signature__ = inspect.signature(fn, follow_wrapped=False)
    return entry


#: Compiled ``forward`` functions shared by the modules of one class: ``{forward function:
#: {settings key: compiled}}``, held by the modules using them (the last one gone, its cache goes).
_SHARED_FORWARDS: weakref.WeakKeyDictionary[Any, weakref.WeakValueDictionary[tuple, Any]] = (
    weakref.WeakKeyDictionary()
)


def _module_forward(module: torch.nn.Module, settings: driver.Settings) -> Any:
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
        return _compile(forward, settings)
    try:
        key = _settings_key(settings)
        shared = _SHARED_FORWARDS.setdefault(func, weakref.WeakValueDictionary())
        compiled = shared.get(key)
    except TypeError:  # an unhashable backend: nothing to share it by
        return _compile(forward, settings)
    if compiled is None:
        compiled = _compile(func, settings)
        shared[key] = compiled
    return types.MethodType(compiled, module)


def _settings_key(settings: driver.Settings) -> tuple:
    """What makes two ``compile`` calls equal (a configured backend is a new partial each time)."""
    backend = settings.backend
    if isinstance(backend, functools.partial):
        backend = (backend.func, backend.args, repr(sorted(backend.keywords.items())))
    options = repr(sorted(settings.options.items()))
    return (
        backend,
        settings.fullgraph,
        settings.dynamic,
        settings.recompile_limit,
        settings.name,
        settings.mode,
        options,
    )


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
    callees.reset()
    speculation.reset()  # hit and miss counts, and the branches no longer speculated on
    distributed.reset()
    reset_backends()  # e.g. CUDA graphs recorded by the triton backend


def state_of(fn: Any) -> driver.CompiledCode:
    """The compile state behind a compiled function (or bound method / module)."""
    if isinstance(fn, torch.nn.parallel.DistributedDataParallel):
        fn = fn.module
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    target = getattr(target, "__func__", target)
    state = getattr(target, "__bytegraph__", None)
    if state is None:
        raise TypeError(f"{fn!r} is not a function compiled by bytegraph")
    return state
