"""The settings the driver reads at each compile: ``bytegraph.config``, the ``error_on_graph_break``
regions, and ``torch._dynamo.config`` as code written for torch.compile sets it.

``read_settings()`` is installed as ``driver.global_settings``. A ``torch._dynamo.config`` value
changed from torch's default is honoured where bytegraph has the setting (``HONOURED``; a
bytegraph setting changed from its own default wins), taken as already true where bytegraph always
behaves that way (``ALREADY``), and otherwise warned about once as ignored. torch's config module is
only read once something imported it (bytegraph never imports ``torch._dynamo`` itself).
"""

from __future__ import annotations

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
    once about each other changed one."""
    module = sys.modules.get("torch._dynamo.config")
    if module is None:
        return {}
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
