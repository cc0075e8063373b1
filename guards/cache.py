"""The variant cache of one compiled function and its single generated dispatcher.

``FunctionCache.variants`` lists the cache entries (``Variant``: guards + the rewritten function). After
each change one guard function is generated over all of them: guard conditions shared by a prefix of
several variants are tested once (a trie), and it returns the entry to run or None. ``why(L)`` answers,
without running anything, which entry these inputs select and the first failing guard of every other.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .build import GuardPart, GuardSet, exec_function
from .kinds import ConstTable


@dataclass(eq=False)
class Variant:
    """One cache entry: when ``guards`` hold, ``fn`` (same signature as the user's function) runs."""

    guards: GuardSet
    fn: Callable[..., Any]
    index: int = 0  #: position in the cache, for reports
    graphs: list[Any] = field(default_factory=list)  #: the FX GraphModules this entry calls
    reason: str = ""  #: why it was compiled ("first call" or the guard that failed)
    dead: bool = False  #: an object it guards by identity died: it can never match again

    def __repr__(self) -> str:
        return f"<Variant {self.index} of {getattr(self.fn, '__name__', '?')}: {len(self.guards.parts)} guards>"


@dataclass
class Why:
    """The answer of ``FunctionCache.why``: the entry selected and why each other entry was rejected."""

    selected: Variant | None
    failures: list[tuple[Variant, GuardPart]]

    def __str__(self) -> str:
        lines = [f"selected: entry {self.selected.index}" if self.selected else "selected: none (would compile)"]
        for variant, part in self.failures:
            lines.append(f"entry {variant.index} rejected by: {part.code}")
        return "\n".join(lines)


class FunctionCache:
    """Variants of one function plus the guard function choosing among them (``guard_fn(L)``)."""

    def __init__(self, name: str, f_globals: dict[str, Any], cells: dict[str, Any]) -> None:
        self.name = name
        self.scope = {"G": f_globals, "C": cells, "B": builtins.__dict__}
        self.consts = ConstTable()
        self.variants: list[Variant] = []
        self.lock = threading.RLock()
        self.counter = 0
        self.guard_fn: Callable[[dict], Any] = _always_miss

    def new_guard_set(self, guards: list) -> GuardSet:
        return GuardSet(guards, self.consts)

    def add(self, variant: Variant) -> None:
        with self.lock:
            variant.index = len(self.variants)
            self.variants.append(variant)
            self._rebuild()

    def drop_dead(self) -> None:
        """Forget entries whose identity-guarded objects died (called from weakref callbacks)."""
        with self.lock:
            alive = [v for v in self.variants if not v.dead]
            if len(alive) != len(self.variants):
                self.variants = alive
                self._rebuild()

    def clear(self) -> None:
        with self.lock:
            self.variants = []
            self.consts = ConstTable()
            self.guard_fn = _always_miss

    def why(self, L: dict[str, Any]) -> Why:
        failures = []
        for variant in self.variants:
            part = variant.guards.first_failure({"L": L, **self.scope})
            if part is None:
                return Why(variant, failures)
            failures.append((variant, part))
        return Why(None, failures)

    def _rebuild(self) -> None:
        self.counter += 1
        name = f"__guard_{self.name}_{self.counter}"
        body = _trie(_shared_first([[p.code for p in v.guards.parts] for v in self.variants]), 2)
        source = f"def {name}(L):\n    try:\n{body}\n    except Exception:\n        return ___slow(L)\n    return None"
        closure = {**self.scope, **self.consts.values, "___slow": self._slow_select}
        closure.update({f"___variant_{i}": v.fn for i, v in enumerate(self.variants)})
        self.guard_fn = exec_function(source, name, closure, f"<bytegraph {name}>")

    def _slow_select(self, L: dict[str, Any]) -> Any:
        selected = self.why(L).selected
        return selected.fn if selected is not None else None

    @property
    def guard_source(self) -> str:
        return getattr(self.guard_fn, "__guard_source__", "")


def _always_miss(L: dict[str, Any]) -> None:
    return None


def _shared_first(conditions: list[list[str]]) -> list[tuple[list[str], int]]:
    """Move the conditions every variant has to the front (in their order), so the trie tests them once."""
    common = set(conditions[0]).intersection(*conditions[1:]) if conditions else set()
    shared = [c for c in conditions[0] if c in common] if conditions else []
    return [(shared + [c for c in conds if c not in common], i) for i, conds in enumerate(conditions)]


def _common_prefix(lists: list[list[str]]) -> list[str]:
    prefix = lists[0]
    for other in lists[1:]:
        n = 0
        while n < min(len(prefix), len(other)) and prefix[n] == other[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def _trie(items: list[tuple[list[str], int]], depth: int) -> str:
    """Nested ``if``s over the variants' condition lists, sharing common prefixes, in variant order."""
    pad = "    " * depth
    lines: list[str] = []
    i = 0
    while i < len(items):
        conds, index = items[i]
        if not conds:
            lines.append(f"{pad}return ___variant_{index}")
            i += 1
            continue
        head = conds[0]
        group = [items[i]]
        while i + len(group) < len(items) and items[i + len(group)][0][:1] == [head]:
            group.append(items[i + len(group)])
        if len(group) == 1:
            lines.append(f"{pad}if {' and '.join(conds)}:")
            lines.append(f"{pad}    return ___variant_{index}")
        else:
            prefix = _common_prefix([c for c, _ in group])
            lines.append(f"{pad}if {' and '.join(prefix)}:")
            lines.append(_trie([(c[len(prefix):], j) for c, j in group], depth + 1))
        i += len(group)
    return "\n".join(lines) if lines else f"{pad}pass"
