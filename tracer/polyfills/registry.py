"""The polyfill registry: ``{C builtin: pure-Python equivalent}`` that the call dispatch consults
before anything else (``lookup``). Tracing a call to a registered builtin inlines its polyfill.

Keys are compared with ``==`` (a classmethod of a C type such as ``dict.fromkeys`` is a new bound
method on every attribute read, equal to the others, never identical).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

POLYFILLS: dict[Any, Callable[..., Any]] = {}
#: polyfill generator function -> ``rebuild(remaining_items)``: the C object of the same type
#: yielding those items, for a polyfilled iterator escaping the trace (others escape as plain
#: iterators over their remaining items)
REBUILD: dict[Callable[..., Any], Callable[[tuple], Any]] = {}


def polyfill(
    *targets: Any, rebuild: Callable[[tuple], Any] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the pure-Python equivalent of each of ``targets``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for target in targets:
            assert target not in POLYFILLS, f"two polyfills for {target!r}"
            POLYFILLS[target] = fn
        if rebuild is not None:
            REBUILD[fn] = rebuild
        return fn

    return register


def lookup(value: Any) -> Callable[..., Any] | None:
    """The polyfill of ``value``, if it has one."""
    try:
        return POLYFILLS.get(value)
    except TypeError:  # unhashable: never registered
        return None
