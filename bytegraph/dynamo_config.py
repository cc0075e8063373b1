"""The settings the driver reads at each compile: ``bytegraph.config``, the ``error_on_graph_break``
regions, and ``torch._dynamo.config`` as code written for torch.compile sets it.

``read_settings()`` is installed as ``driver.global_settings``. A ``torch._dynamo.config`` value
changed from torch's default is honoured where bytegraph has the setting (``HONOURED``; a
bytegraph setting changed from its own default wins), taken as already true where bytegraph always
behaves that way (``ALREADY``), and otherwise warned about once as ignored. torch's config module is
only read once something imported it (bytegraph never imports ``torch._dynamo`` itself).
"""

from __future__ import annotations

import contextvars
import operator
import sys
import threading
import warnings
from typing import Any

from . import config
from .tracer.driver import GlobalSettings

#: torch._dynamo.config name -> bytegraph.config name.
HONOURED = {
    "recompile_limit": "recompile_limit",
    "cache_size_limit": "recompile_limit",
    "error_on_recompile": "error_on_recompile",
    "automatic_dynamic_shapes": "automatic_dynamic_shapes",
    "assume_static_by_default": "assume_static_by_default",
}
#: torch._dynamo.config values bytegraph always behaves as: nothing to warn about.
ALREADY = {
    "suppress_errors": True,  # internal errors fall back to Python with a warning
    "capture_scalar_outputs": True,  # t.item() stays in the graph as a symbolic number
}

_warned: set[str] = set()
_lock = threading.Lock()
_regions = (
    threading.local()
)  #: ``.stack``: the values of the enclosing error_on_graph_break regions


def read_settings() -> GlobalSettings:
    """The process-wide settings now (see the module docstring)."""
    values = {name: getattr(config, name) for name in config.DEFAULTS}
    for ours, value in _torch_overrides().items():
        if values[ours] == config.DEFAULTS[ours]:
            values[ours] = value
    return GlobalSettings(
        recompile_limit=values["recompile_limit"],
        error_on_recompile=values["error_on_recompile"],
        error_on_graph_break=error_on_graph_break_now(),
        automatic_dynamic=values["automatic_dynamic_shapes"],
        dynamic_default=None if values["assume_static_by_default"] else True,
        speculate=values["speculate"],
        speculation_miss_limit=values["speculation_miss_limit"],
        speculation_unroll_limit=values["speculation_unroll_limit"],
    )


def error_on_graph_break_now() -> bool:
    """The innermost ``bytegraph.error_on_graph_break(...)`` region's value on this thread, else
    torch's own setting (``torch._dynamo.error_on_graph_break``), else False."""
    stack = getattr(_regions, "stack", None)
    if stack:
        return stack[-1]
    utils = sys.modules.get("torch._dynamo.utils")
    getter = getattr(utils, "_get_error_on_graph_break", None)
    return bool(getter()) if getter is not None else False


def push_region(value: bool) -> None:
    stack = getattr(_regions, "stack", None)
    if stack is None:
        stack = _regions.stack = []
    stack.append(value)


def pop_region() -> None:
    _regions.stack.pop()


def _torch_overrides() -> dict[str, Any]:
    """{bytegraph name: value} for honoured torch settings changed from torch's default; warns
    once about each other changed one. Computed again only when a setting was set or unset since
    the last call (``_set_values``): a full read copies every setting (0.15 ms, twice a compile)."""
    module = sys.modules.get("torch._dynamo.config")
    if module is None:
        return {}
    now = _set_values(module)
    last = _last_read
    if now is not None and last is not None and last[0] is module and _same(last[1], now):
        return last[2]
    changed = _read_overrides(module)
    globals()["_last_read"] = (module, now, changed)
    return changed


#: (torch's config module, its ``_set_values``, the overrides read from them) of the last read
_last_read: tuple[Any, list[Any] | None, dict[str, Any]] | None = None


def _set_values(module: Any) -> list[Any] | None:
    """What each torch setting was set to (torch's unset marker where it was not); None for a
    torch whose config module is laid out otherwise. Values from the environment are read when the
    module loads, so these are all that changes. torch 2.13 and later keep them in a ContextVar per
    setting, earlier releases in an attribute."""
    try:
        entries = module._config.values()
        return [
            value.get() if isinstance(value, contextvars.ContextVar) else value
            for value in (entry.user_override for entry in entries)
        ]
    except (AttributeError, TypeError):
        return None


def _same(before: list[Any], now: list[Any]) -> bool:
    """Element by element identity: a setting patched to an equal but new object counts as a
    change, and no setting's ``==`` runs."""
    return len(before) == len(now) and all(map(operator.is_, before, now))


def _read_overrides(module: Any) -> dict[str, Any]:
    changed: dict[str, Any] = {}
    for name, value in module.get_config_copy().items():
        if not _changed(module, name, value) or ALREADY.get(name, object()) == value:
            continue
        if name in HONOURED:
            changed[HONOURED[name]] = value
        else:
            _warn_ignored(name, value)
    return changed


def _changed(module: Any, name: str, value: Any) -> bool:
    """Whether torch's setting ``name`` differs from its default (aliases, such as
    ``cache_size_limit``, are seen through the setting they write to)."""
    try:
        entry = module._config[name]
    except (AttributeError, KeyError):  # a torch whose config module is laid out otherwise
        return False
    if entry.alias is not None:
        return False
    try:
        return bool(value != entry.default)
    except Exception:  # a value whose == does not give a bool
        return True


def _warn_ignored(name: str, value: Any) -> None:
    with _lock:
        if name in _warned:
            return
        _warned.add(name)
    warnings.warn(
        f"bytegraph: torch._dynamo.config.{name} = {value!r} has no bytegraph equivalent and is "
        "ignored",
        stacklevel=2,
    )
