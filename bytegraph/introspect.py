"""Inspecting compiled functions: their cache entries, generated guard source, and which entry a
call would run and why the others would not.

>>> bytegraph.why(fn, x, 3)
selected: entry 1
entry 0 rejected by: L['n'] == 2
entry 1 speculates on: model.py:12 in fn: 5 hits, 1 misses
    if x.sum() > 0:
"""

from __future__ import annotations

import inspect as _inspect
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from .compiler import state_of
from .guards import cache
from .guards.cache import Variant
from .tracer import driver


@dataclass
class Why(cache.Why):
    """``FunctionCache.why``'s answer, with the branches on tensor data each entry speculated on
    (``speculation.Site``: hit and miss counts as of now, the source line)."""

    speculated: dict[int, list[Any]] = field(default_factory=dict)  #: entry index -> its sites

    def __str__(self) -> str:
        lines = [super().__str__()]
        for index, sites in sorted(self.speculated.items()):
            for site in sites:
                lines.append(f"entry {index} speculates on: {site}")
        return "\n".join(lines)


def cache_entries(fn: Any) -> list[Variant]:
    """The variants (cache entries) of a compiled function, oldest first; each has
    ``.guards.source`` (one condition per line), ``.graphs`` and ``.reason`` (why it was
    compiled)."""
    return list(state_of(fn).cache.variants)


def guard_source(fn: Any) -> str:
    """The generated guard function choosing among ``fn``'s variants, as Python source."""
    return state_of(fn).cache.guard_source


def why(fn: Any, *args: Any, **kwargs: Any) -> Why:
    """Without running ``fn``: the entry these arguments select, for each other entry the first
    guard that rejects them, and for each entry the branches on tensor data it speculated on, with
    their hits and misses so far."""
    state = state_of(fn)
    owner = _bound_to(fn)  # a module's forward, a bound method: its ``self`` comes first
    if owner is not None:
        args = (owner, *args)
    bound = _inspect.signature(state.fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    answer = state.cache.why(dict(bound.arguments))
    sites_of = {id(event.fn): event.speculated for event in state.events if event.speculated}
    speculated = {v.index: sites_of[id(v.fn)] for v in state.cache.variants if id(v.fn) in sites_of}
    return Why(answer.selected, answer.failures, speculated)


def _bound_to(fn: Any) -> Any:
    """The object a compiled module's ``forward`` or a compiled bound method is bound to; None
    for a function."""
    if isinstance(fn, torch.nn.parallel.DistributedDataParallel):
        fn = fn.module
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    return getattr(target, "__self__", None) if isinstance(target, types.MethodType) else None


def stats() -> dict[str, int]:
    """Process-wide counts since the last ``bytegraph.reset()``: ``frames`` (traces started),
    ``break:<kind>`` (graph breaks by reason), ``fallback:<kind>`` (traces that fell back to Python,
    e.g. ``fallback:internal_error``; each is remembered, so the same inputs do not trace again) and
    ``recompile_limit`` (functions that reached it).

    >>> bytegraph.stats()
    {'break:print': 1, 'frames': 2}
    """
    return dict(sorted(driver.COUNTERS.items()))
