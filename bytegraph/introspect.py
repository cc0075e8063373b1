"""Inspecting compiled functions: their cache entries, generated guard source, and which entry a
call would run and why the others would not.

>>> bytegraph.why(fn, x, 3)
selected: entry 1
entry 0 rejected by: L['n'] == 2
"""

from __future__ import annotations

import inspect as _inspect
from typing import Any

from .compiler import state_of
from .guards.cache import Variant, Why
from .tracer import driver


def cache_entries(fn: Any) -> list[Variant]:
    """The variants (cache entries) of a compiled function, oldest first; each has
    ``.guards.source`` (one condition per line), ``.graphs`` and ``.reason`` (why it was
    compiled)."""
    return list(state_of(fn).cache.variants)


def guard_source(fn: Any) -> str:
    """The generated guard function choosing among ``fn``'s variants, as Python source."""
    return state_of(fn).cache.guard_source


def why(fn: Any, *args: Any, **kwargs: Any) -> Why:
    """Without running ``fn``: the entry these arguments select and, for each other entry, the first
    guard that rejects them."""
    state = state_of(fn)
    bound = _inspect.signature(state.fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    return state.cache.why(dict(bound.arguments))


def stats() -> dict[str, int]:
    """Process-wide counts since the last ``bytegraph.reset()``: ``frames`` (traces started),
    ``break:<kind>`` (graph breaks by reason), ``fallback:<kind>`` (traces that fell back to Python,
    e.g. ``fallback:internal_error``; each is remembered, so the same inputs do not trace again) and
    ``recompile_limit`` (functions that reached it).

    >>> bytegraph.stats()
    {'break:print': 1, 'frames': 2}
    """
    return dict(sorted(driver.COUNTERS.items()))
