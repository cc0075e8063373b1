"""Side effects recorded during a trace and replayed by the rewritten code.

Mutations of objects that existed before the call (reached through a source) are kept here: attribute
stores on user objects and modules, global stores, closure-cell stores, and in-place changes to input
lists/dicts/sets. Reads during the trace see earlier pending writes (``load_attr``/``load_global``). The
rewritten code applies the final state in program order of first write (``codegen``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .variables.base import VariableTracker

if TYPE_CHECKING:
    from ..codegen.emit import Codegen


class SideEffects:
    def __init__(self) -> None:
        #: (object VT, attribute) -> new value, in order of first write
        self.attr_stores: dict[tuple[int, str], tuple[VariableTracker, str, VariableTracker]] = {}
        self.global_stores: dict[str, VariableTracker] = {}
        self.cell_stores: dict[str, VariableTracker] = {}
        self.mutated: dict[int, VariableTracker] = {}  #: input containers changed in place
        #: (container, its items before a change): undone, newest first, by ``restore``
        self.undo: list[tuple[VariableTracker, Any]] = []
        self._saved: set[int] = set()  #: containers saved in ``undo`` since the last snapshot

    def __bool__(self) -> bool:
        return bool(self.attr_stores or self.global_stores or self.cell_stores or self.mutated)

    def snapshot(self) -> tuple:
        self._saved = set()
        return (
            dict(self.attr_stores),
            dict(self.global_stores),
            dict(self.cell_stores),
            dict(self.mutated),
            len(self.undo),
        )

    def restore(self, snapshot: tuple) -> None:
        *stores, undo_len = snapshot
        self.attr_stores, self.global_stores, self.cell_stores, self.mutated = (
            dict(s) for s in stores
        )
        for container, items in reversed(self.undo[undo_len:]):
            _set_items(container.items, items)
        del self.undo[undo_len:]
        self._saved = set()

    def changed_since(self, snapshot: tuple) -> bool:
        """Was a store or a mutation of an input container recorded after ``snapshot``?"""
        *stores, _ = snapshot
        current = (self.attr_stores, self.global_stores, self.cell_stores, self.mutated)
        return any(
            now.keys() != then.keys() or any(now[k] is not then[k] for k in now)
            for now, then in zip(current, stores, strict=True)
        )

    def commit(self) -> None:
        """No checkpoint taken so far will be restored: drop the saved items."""
        self.undo.clear()

    def before_mutation(self, container: VariableTracker) -> None:
        """``container`` (a list, dict or set tracker) is about to change in place: keep its items
        so that rolling back a partly run instruction (a call that broke inside the callee) also
        undoes what the callee did to it."""
        if id(container) not in self._saved:
            self._saved.add(id(container))
            self.undo.append((container, _copy_items(container.items)))

    def store_attr(self, obj: VariableTracker, name: str, value: VariableTracker) -> None:
        self.attr_stores[(id(obj), name)] = (obj, name, value)

    def load_attr(self, obj: VariableTracker, name: str) -> VariableTracker | None:
        entry = self.attr_stores.get((id(obj), name))
        return entry[2] if entry else None

    def mark_mutated(self, container: VariableTracker) -> None:
        if container.source is not None:
            self.mutated[id(container)] = container

    def codegen(self, cg: Codegen) -> None:
        """Emit the replay: container contents, attributes, globals, cells."""
        for container in self.mutated.values():
            _replay_container(cg, container)
        for obj, name, value in self.attr_stores.values():
            value.reconstruct(cg)
            obj.reconstruct(cg)
            cg.store_attr(name)
        for name, value in self.global_stores.items():
            value.reconstruct(cg)
            cg.store_global(name)
        for name, value in self.cell_stores.items():
            value.reconstruct(cg)
            cg.store_deref(name)


def _replay_container(cg: Codegen, container: VariableTracker) -> None:
    """``src[:] = [items]`` for lists; ``new = {...}; src.clear(); src.update(new)`` for dicts and sets."""
    source = container.source
    kind = container.python_type()
    if kind is list:
        cg.extend(_items_list(cg, container))
        source.reconstruct(cg)
        cg.load_const(slice(None))
        cg.store_subscr()
        return
    # The new contents may read the old ones (``src['a']``): build them before clearing.
    plain = type(container).__new__(type(container))
    plain.__dict__.update(container.__dict__, source=None)
    plain.reconstruct(cg)
    cg.store_local("__bg_contents")
    source.reconstruct(cg)
    cg.load_attr("clear")
    cg.call_function(0)
    cg.pop_top()
    source.reconstruct(cg)
    cg.load_attr("update")
    cg.load_local("__bg_contents")
    cg.call_function(1)
    cg.pop_top()


def _items_list(cg: Codegen, container: VariableTracker) -> list:
    sub = type(cg)(cg.lineno, cg.output_var)
    sub.graph_outputs = cg.graph_outputs
    for item in container.items:
        item.reconstruct(sub)
    sub.build_list(len(container.items))
    return sub.instrs


def _copy_items(items: Any) -> Any:
    return type(items)(items)  # list, dict or set of trackers


def _set_items(items: Any, saved: Any) -> None:
    """Put ``saved`` back into ``items`` in place (iterators may share the same list)."""
    if isinstance(items, list):
        items[:] = saved
    else:
        items.clear()
        items.update(saved)
