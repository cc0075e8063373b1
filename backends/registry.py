"""Backend registry: a backend is any callable ``(gm: fx.GraphModule, example_inputs) -> callable``.

``@register_backend("name", options=...)`` adds one under a name, declaring how it takes
``compile(mode=..., options=...)``; ``lookup_backend(name_or_callable)`` resolves what the user
passed to ``bytegraph.compile(backend=...)``; ``configure_backend(backend, mode, options)``
validates mode and options (at ``compile`` time, as torch.compile does) and returns the compiler
function the driver calls. Backends import torch (and triton) only: never the tracer or guards,
which sit above this layer.
"""

from __future__ import annotations

import functools
import importlib
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch.fx

#: The type every backend has: it receives the traced graph and example inputs (fake or real
#: tensors) and returns the callable that the rewritten bytecode will call with the real inputs.
CompilerFn = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]

#: ``compile(mode=...)`` -> the options it stands for, with torch.compile's option names.
MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


@dataclass(frozen=True)
class BackendOptions:
    """How a registered backend takes ``compile(mode=..., options=...)``.

    ``validate(options)`` raises ``ValueError`` naming the known options when a name (or value) is
    wrong; the backend is then called with ``options=<the dict>``. ``modes`` turns a mode into an
    options dict (default: ``MODES``). A backend whose options are ``IGNORED`` takes none: a mode
    gives a one-time notice that it changes nothing there, and options are an error.
    """

    validate: Callable[[Mapping[str, Any]], object]
    modes: Callable[[str], dict[str, Any]] = MODES.__getitem__
    ignored: bool = False


def _no_options(options: Mapping[str, Any]) -> None:
    if options:
        raise ValueError(f"this backend takes no options (got {', '.join(map(repr, options))})")


#: For backends that run the graph as it is (``eager``, ``aot_eager``): there is nothing to tune.
IGNORED = BackendOptions(_no_options, lambda mode: {}, ignored=True)

_BACKENDS: dict[str, CompilerFn] = {}
_OPTIONS: dict[str, BackendOptions] = {}
_NOTICED: set[str] = set()
_NOTICE_LOCK = threading.Lock()


def register_backend(
    name: str, *, options: BackendOptions | Callable[[Mapping[str, Any]], object] | None = None
) -> Callable[[CompilerFn], CompilerFn]:
    """Register ``fn`` as the backend called ``name``; registering a name twice is an error.

    ``options``: a ``BackendOptions`` or just its ``validate`` function. A backend registered
    without it receives torch.compile's keywords unvalidated (``mode="..."`` and ``options={...}``,
    each only when given), as torch.compile passes them to custom backends.
    """

    def register(fn: CompilerFn) -> CompilerFn:
        if name in _BACKENDS:
            raise ValueError(f"backend {name!r} is already registered")
        _BACKENDS[name] = fn
        if options is not None:
            spec = options if isinstance(options, BackendOptions) else BackendOptions(options)
            _OPTIONS[name] = spec
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


def configure_backend(
    backend: str | CompilerFn, mode: str | None = None, options: Mapping[str, Any] | None = None
) -> CompilerFn:
    """The compiler function for ``compile(backend=, mode=, options=)``, after validating them.

    Raises ``ValueError`` for an unknown mode, for both a mode and options (as torch.compile
    does), and for options the backend does not know (the message lists those it does).

    >>> configure_backend("triton", mode="reduce-overhead")
    functools.partial(<function triton_backend ...>, options={'triton.cudagraphs': True})
    """
    fn = lookup_backend(backend)
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; should be one of: {', '.join(MODES)}")
    if mode is not None and options is not None:
        raise ValueError(
            "either mode or options can be specified, but both can't be specified at the same time"
        )
    spec = _OPTIONS.get(backend) if isinstance(backend, str) else None
    if spec is None:  # a custom backend: torch.compile's keyword arguments, as they are
        kwargs: dict[str, Any] = {}
        if mode not in (None, "default"):
            kwargs["mode"] = mode
        if options:
            kwargs["options"] = dict(options)
        return functools.partial(fn, **kwargs) if kwargs else fn
    if spec.ignored and mode not in (None, "default"):
        notice_once(
            f"mode:{backend}:{mode}",
            f"mode={mode!r} has no effect with backend={backend!r}, which runs the graphs as "
            "they are (CUDA graphs and autotuning belong to the triton backend)",
        )
    chosen = spec.modes(mode) if mode is not None else dict(options or {})
    try:
        spec.validate(chosen)
    except ValueError as e:
        raise ValueError(f"backend {backend!r}: {e}") from None
    return functools.partial(fn, options=chosen) if chosen else fn


def notice_once(key: str, message: str) -> None:
    """Warn ``message`` (a ``UserWarning`` starting with ``bytegraph:``) once per process and
    key."""
    with _NOTICE_LOCK:
        if key in _NOTICED:
            return
        _NOTICED.add(key)
    warnings.warn(f"bytegraph: {message}", stacklevel=2)


#: What ``bytegraph.reset()`` also drops in the backends (e.g. recorded CUDA graphs).
_RESET_HOOKS: list[Callable[[], None]] = []


def on_reset(hook: Callable[[], None]) -> Callable[[], None]:
    """Register ``hook`` to run at every ``bytegraph.reset()`` (a decorator)."""
    _RESET_HOOKS.append(hook)
    return hook


def reset_backends() -> None:
    for hook in list(_RESET_HOOKS):
        hook()


def list_backends() -> list[str]:
    _load_builtin_backends()
    return sorted(_BACKENDS)


#: Modules of the built-in backends (each registers the backend of its name, some more).
_MODULES = ("eager", "auto", "aot", "inductor", "triton")


def _load_builtin_backends(wanted: str | None = None) -> None:
    """Import the modules whose import registers the built-in backends (lazily: triton is heavy,
    and ``aot`` imports AOTAutograd, over a second). The module named like ``wanted`` first: when
    it registers that backend, the others stay unimported."""
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
