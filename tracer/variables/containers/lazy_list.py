"""``LazyListVariable``: a list reached from an input whose items are read only when the trace
needs them.

``builder.wrap`` guards a list's type at once but its length and items only when the trace first
reads them (``items``). Until then, ``append`` and ``extend`` are kept as a log and replayed as
``src.extend([...])``: a list that a hook or a callee only appends to (a list of recorded losses, a
log) is not guarded on its length, so the next call, after the list grew, still hits the cache.
Any other use reads the items, adds the guards ``builder`` would have added, and from then on the
list is an ordinary ``ListVariable`` (replayed as ``src[:] = [...]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....guards.sources import ItemSource, Source
from ..base import VariableTracker
from .builtin_containers import ListVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


class LazyListVariable(ListVariable):
    """Invariant: while ``_items`` is None the trace has read nothing of the real list ``_value``
    (no guard on its length or items) and ``appended`` holds what was appended since the call began;
    once read, ``_items`` is the real items (wrapped through ``ItemSource``) followed by them."""

    def __init__(self, tx: Translator, value: list, source: Source) -> None:
        self._tx, self._value = tx, value
        self._items: list[VariableTracker] | None = None
        self.appended: list[VariableTracker] = []
        self.source = source

    @property
    def items(self) -> list[VariableTracker]:  # type: ignore[override]
        if self._items is None:
            tx, value, source = self._tx, self._value, self.source
            tx.output.assume_len(source, len(value))
            wrapped = [tx.wrap(v, ItemSource(source, i)) for i, v in enumerate(value)]
            self._items = wrapped + self.appended
        return self._items

    @items.setter
    def items(self, items: list[VariableTracker]) -> None:
        self._items = items

    @property
    def read(self) -> bool:
        """Has the trace read the items (so the length and items are guarded)?"""
        return self._items is not None

    def append_unread(self, item: VariableTracker) -> None:
        """``append``/``extend`` begun before any read: only the log grows, unless the items were
        read meanwhile (``xs.extend(map(lambda v: len(xs), ...))`` reads them while it appends)."""
        (self.appended if self._items is None else self._items).append(item)

    def clone(self, **changes: Any) -> VariableTracker:
        return ListVariable(**{"items": list(self.items), "source": self.source, **changes})

    def walk_children(self) -> list[VariableTracker]:
        """What ``base.walk`` visits (without reading the real list)."""
        return list(self.items) if self.read else list(self.appended)

    def save_state(self) -> Any:
        return (None if self._items is None else list(self._items), list(self.appended))

    def restore_state(self, state: Any) -> None:
        items, appended = state
        self._items = items
        self.appended[:] = appended

    def replay_log(self, cg: Codegen) -> bool:
        """Emit ``src.extend([appended])`` if the items were never read (True), else nothing."""
        if self.read:
            return False
        self.source.reconstruct(cg)
        cg.load_attr("extend")
        for item in self.appended:
            item.reconstruct(cg)
        cg.build_list(len(self.appended))
        cg.call_function(1)
        cg.pop_top()
        return True

    def __repr__(self) -> str:
        state = f"{len(self._items)} items" if self.read else f"+{len(self.appended)} unread"
        return f"LazyListVariable({state})"
