"""Iterators that behave like CPython's: they keep their position, see their container change, and
escape the trace as the same kind of object at the same position.

``SeqIteratorVariable`` (``iter(list)``, tuples, strings), ``ReversedIteratorVariable``,
``RangeIteratorVariable``, ``DictIteratorVariable`` (dicts, their views and sets: live, with
CPython's "changed size during iteration" check); the lazy ``zip``/``map``/``filter``/
``enumerate`` are in ``combinators.py``. ``make_iter`` is ``iter(value)`` for builtin values (the
entry point ``dispatch.get_iter`` uses). Advancing one records its old position in the undo log
(``save_state``/``restore_state``) so an instruction rolled back at a graph break leaves it where
it was. ``reconstruct`` rebuilds the real iterator (``it = iter(seq); it.__setstate__(i)``);
``reconstruct_items`` (iterators on the stack at a break) passes the remaining items instead.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import (
    DictVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
    key_vt,
)
from ..containers.dict_views import DictViewVariable
from .iterator_trackers import IteratorVariable, take_items

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ....guards.sources import Source
    from ...translator import Translator


def iter_at(seq: Any, index: int) -> Any:
    """Runtime helper of the rewritten code: ``iter(seq)`` moved to ``index`` (nothing read)."""
    it = iter(seq)
    if index:
        it.__setstate__(index)
    return it


def exhausted_iter(seq: Any) -> Any:
    """Runtime helper: an exhausted iterator of ``seq``'s kind (it no longer sees ``seq`` grow)."""
    it = iter(seq)
    for _ in it:
        pass
    return it


def reversed_at(seq: Any, index: int) -> Any:
    """Runtime helper: ``reversed(seq)`` whose next item is ``seq[index]``."""
    it = reversed(seq)
    it.__setstate__(index)
    return it


def advanced(it: Any, count: int) -> Any:
    """Runtime helper: ``it`` after ``count`` items were taken (dict and set iterators have no
    ``__setstate__``; taking their items has no effect)."""
    for _ in range(count):
        next(it)
    return it


def set_position(it: Any, state: int | None) -> None:
    """Runtime helper: move the real iterator ``it`` to ``state`` (None: exhaust it, as taking
    its last item does)."""
    if state is None:
        for _ in it:
            pass
    else:
        it.__setstate__(state)


def count_taken(it: enumerate, taken: int) -> None:
    """Runtime helper: raise the count of the enumerate ``it`` by ``taken``, taking that many
    items from its iterator, which is where the trace first found it (its own replay, after this
    one, puts it where the trace left it)."""
    for _ in range(taken):
        next(it)


def take_to_remaining(it: Any, remaining: int) -> None:
    """Runtime helper: take items from the range iterator ``it`` until ``remaining`` are left.
    (Where it stands is known by its length alone: ``__setstate__`` puts it at an index on 3.11
    but moves it on by as many items since 3.12.)"""
    for _ in range(operator.length_hint(it) - remaining):
        next(it)


def replay_position(cg: Codegen, source: Source, state: int | None) -> None:
    """Emit ``set_position(<source>, state)``: the items the trace took, taken from the real
    iterator."""
    cg.load_const(set_position)
    source.reconstruct(cg)
    cg.load_const(state)
    cg.call_function(2)
    cg.pop_top()


def _iter_type(seq: VariableTracker, make: Any) -> type:
    if isinstance(seq, ConstantVariable):
        return type(make(seq.value))
    return type(make([] if isinstance(seq, ListVariable) else ()))


def note_advance(tx: Translator | None, vt: VariableTracker) -> None:
    """``vt`` is about to advance: saved for a rollback, and, a real input iterator, replayed."""
    if tx is not None:
        tx.output.side_effects.before_mutation(vt)
        if vt.source is not None and hasattr(vt, "replay_log"):  # a real input iterator
            tx.output.side_effects.mark_mutated(vt)


@dataclass(eq=False)
class SeqIteratorVariable(IteratorVariable):
    """``iter(seq)`` of a list, tuple or string: ``items`` is the list tracker's own item list, so
    appends made while iterating are seen, as in CPython."""

    seq: VariableTracker | None = None
    exhausted: bool = False

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        if self.exhausted or self.index >= len(self.items):
            self.exhausted = True
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        note_advance(tx, self)
        rest = [] if self.exhausted else self.items[self.index :]
        self.index, self.exhausted = max(self.index, len(self.items)), True
        return rest

    def save_state(self) -> Any:
        return self.index, self.exhausted

    def restore_state(self, state: Any) -> None:
        self.index, self.exhausted = state

    def python_type(self) -> type:
        return _iter_type(self.seq, iter)

    def replay_log(self, cg: Codegen) -> bool:
        """An input iterator (``iterator_inputs``): take the items the trace took."""
        replay_position(cg, self.source, None if self.exhausted else self.index)
        return True

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # the caller's own iterator
            self.source.reconstruct(cg)
            return

        def build() -> None:
            cg.load_const(exhausted_iter if self.exhausted else iter_at)
            self.seq.reconstruct(cg)
            if self.exhausted:
                cg.call_function(1)
            else:
                cg.load_const(self.index)
                cg.call_function(2)

        cg.build_once(self, build)


@dataclass(eq=False)
class ReversedIteratorVariable(IteratorVariable):
    """``reversed(list)``: walks the list's own items backwards from ``position``."""

    seq: VariableTracker | None = None
    position: int = -1  #: index of the next item; -1 when exhausted

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        if not 0 <= self.position < len(self.items):
            self.position = -1
            return None
        self.position -= 1
        return self.items[self.position + 1]

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        rest = []
        while (item := self.next_item(tx)) is not None:
            rest.append(item)
        return rest

    def reconstruct_items(self, cg: Codegen) -> None:
        rest = [] if self.position < 0 else list(reversed(self.items[: self.position + 1]))
        for item in rest:
            item.reconstruct(cg)
        cg.build_tuple(len(rest))

    def save_state(self) -> Any:
        return self.position

    def restore_state(self, state: Any) -> None:
        self.position = state

    def python_type(self) -> type:
        return _iter_type(self.seq, reversed)

    def replay_log(self, cg: Codegen) -> bool:
        position = self.position if self.position < len(self.items) else -1
        replay_position(cg, self.source, position)
        return True

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        # past the end: exhausted (``__setstate__`` would clamp the position back into the list)
        position = self.position if self.position < len(self.items) else -1

        def build() -> None:
            cg.load_const(reversed_at)
            self.seq.reconstruct(cg)
            cg.load_const(position)
            cg.call_function(2)

        cg.build_once(self, build)


@dataclass(eq=False)
class RangeIteratorVariable(IteratorVariable):
    """``iter(range(...))``: items are computed when taken (a range may be long)."""

    value: range = range(0)

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        if self.index >= len(self.value):
            return None
        self.index += 1
        return ConstantVariable(self.value[self.index - 1])

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        note_advance(tx, self)
        rest = [ConstantVariable(v) for v in self.value[self.index :]]
        self.index = len(self.value)
        return rest

    def save_state(self) -> Any:
        return self.index

    def restore_state(self, state: Any) -> None:
        self.index = state

    def python_type(self) -> type:
        return type(iter(range(0)))

    def reconstruct_items(self, cg: Codegen) -> None:
        cg.load_const(self.value[self.index :])  # the resume function iterates over the range

    def replay_log(self, cg: Codegen) -> bool:
        cg.load_const(take_to_remaining)
        self.source.reconstruct(cg)
        cg.load_const(max(len(self.value) - self.index, 0))
        cg.call_function(2)
        cg.pop_top()
        return True

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.build_once(self, lambda: (cg.load_const(self.value[self.index :]), cg.add("GET_ITER")))


@dataclass(eq=False)
class DictIteratorVariable(IteratorVariable):
    """Iteration over a dict, one of its views, or a set: live (values written meanwhile are seen);
    a size change raises CPython's RuntimeError, a key set changed at the same size breaks the graph
    (CPython's behaviour there depends on the hash table)."""

    container: VariableTracker | None = None  #: the DictVariable or SetVariable
    kind: str = "keys"
    keys: tuple = ()  #: the keys (set items) when the iteration started
    exhausted: bool = False  #: it reached the end: it no longer looks at the container
    input_index: int = 0  #: an input's (``iterator_inputs``) position when the trace got it
    #: ``reversed(d)`` (of a dict or a view): ``keys`` are the dict's keys, last first
    reverse: bool = False

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        if self.exhausted:
            return None
        current = self._keys_now()
        if len(current) != len(self.keys):
            what = "set" if self.kind == "set" else "dictionary"
            raise Unsupported("python_error", f"RuntimeError: {what} changed size during iteration")
        if self.index >= len(self.keys):
            self.exhausted = True
            return None
        if current != self.keys:
            if self.reverse:  # CPython's reverse iterator walks the entry table as it is now
                raise Unsupported("iterator", "a dict's keys changed during reversed(dict)")
            raise Unsupported(
                "python_error", "RuntimeError: dictionary keys changed during iteration"
            )
        self.index += 1
        return self._item(self.keys[self.index - 1])

    def _keys_now(self) -> tuple:
        """The container's keys now, in its order (a set's may be known from its mirror)."""
        if isinstance(self.container, SetVariable):
            return tuple(self.container.in_order())
        if self.reverse:
            return tuple(reversed(self.container.items))
        return tuple(self.container.items)

    def _item(self, key: Any) -> VariableTracker:
        if self.kind in ("keys", "set"):
            return key_vt(key)
        value = self.container.items[key]
        return value if self.kind == "values" else TupleVariable([key_vt(key), value])

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        rest = []
        while (item := self.next_item(tx)) is not None:
            rest.append(item)
        return rest

    def save_state(self) -> Any:
        return self.index, self.exhausted

    def restore_state(self, state: Any) -> None:
        self.index, self.exhausted = state

    def python_type(self) -> type:
        if self.kind == "set":
            return type(iter(set()))
        return type((reversed if self.reverse else iter)(getattr({}, self.kind)()))

    def replay_log(self, cg: Codegen) -> bool:
        """An input iterator: take from it the items the trace took (and the end it reached)."""
        cg.load_const(take_items)
        self.source.reconstruct(cg)
        cg.load_const(self.index - self.input_index)
        cg.load_const(self.exhausted)
        cg.call_function(3)
        cg.pop_top()
        return True

    def reconstruct_items(self, cg: Codegen) -> None:
        """At a graph break inside the loop: the remaining items, as torch.compile passes them (the
        resumed loop no longer sees the dict change). Not once the dict changed: CPython raises."""
        if self.exhausted:
            cg.build_tuple(0)
            return
        current = self._keys_now()
        if len(current) != len(self.keys) or current != self.keys:
            raise Unsupported(
                "reconstruct",
                "an iterator over a dict or set that changed cannot be rebuilt at a graph break",
            )
        rest = [self._item(key) for key in self.keys[self.index :]]
        for item in rest:
            item.reconstruct(cg)
        cg.build_tuple(len(rest))

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # the caller's own iterator
            self.source.reconstruct(cg)
            return
        if self.exhausted:
            cg.build_once(self, lambda: self._build_exhausted(cg))
            return
        current = self._keys_now()
        if len(current) != len(self.keys):  # CPython's iterator raises from now on: so does this
            cg.build_once(self, lambda: self._build_spoiled(cg))
            return
        if current != self.keys:
            raise Unsupported("reconstruct", "an iterator over a dict whose keys changed")

        def build() -> None:
            cg.load_const(advanced)
            self.container.reconstruct(cg)
            if self.kind != "set":
                cg.load_attr(self.kind)
                cg.call_function(0)
            self._iterate(cg)
            cg.load_const(self.index)
            cg.call_function(2)

        cg.build_once(self, build)

    def _iterate(self, cg: Codegen) -> None:
        """The container (or view) on the stack -> its iterator, of this one's kind."""
        if self.reverse:
            cg.load_const(reversed)
            cg.add("SWAP", 2)
            cg.call_function(1)
        else:
            cg.add("GET_ITER")

    def _build_exhausted(self, cg: Codegen) -> None:
        cg.load_const(exhausted_iter)
        cg.load_const(set() if self.kind == "set" else getattr({}, self.kind)())
        self._iterate(cg)
        cg.call_function(1)

    def _build_spoiled(self, cg: Codegen) -> None:
        cg.load_const(resized_iter)
        cg.load_const(self.kind)
        cg.load_const(len(self.keys))
        cg.load_const(self.reverse)
        cg.call_function(3)


def resized_iter(kind: str, size: int, reverse: bool = False) -> Any:
    """Runtime helper: an iterator of ``kind`` (``reversed`` if ``reverse``) whose container
    changed size after it was made (every ``next`` raises CPython's RuntimeError)."""
    container: Any = set(range(size)) if kind == "set" else dict.fromkeys(range(size))
    seq = container if kind in ("keys", "set") else getattr(container, kind)()
    it = reversed(seq) if reverse else iter(seq)
    if kind == "set":
        container.add(size)
    else:
        container[size] = None
    return it


def dict_iter(container: VariableTracker, kind: str) -> DictIteratorVariable:
    return DictIteratorVariable([], container=container, kind=kind, keys=tuple(container.items))


def make_iter(tx: Translator, value: VariableTracker) -> IteratorVariable | None:
    """``iter(value)`` for lists, tuples, strings, ranges, dicts and sets (None otherwise)."""
    if isinstance(value, (ListVariable, TupleVariable)):
        return SeqIteratorVariable(value.items, seq=value)
    if isinstance(value, DictVariable):
        return dict_iter(value, "keys")
    if isinstance(value, SetVariable):  # a break where its order is unknown
        return DictIteratorVariable([], container=value, kind="set", keys=tuple(value.in_order()))
    if isinstance(value, ConstantVariable):
        if isinstance(value.value, range):
            return RangeIteratorVariable([], value=value.value)
        if isinstance(value.value, (str, bytes, tuple)):
            return SeqIteratorVariable(value.unpack(tx), seq=value)
        if isinstance(value.value, frozenset):  # CPython's set_iterator, over that frozenset
            return dict_iter(_FrozensetItems(value), "set")
    return None


@dataclass(eq=False)
class _FrozensetItems(VariableTracker):
    """A constant frozenset as the container a set iterator walks: its items in the frozenset's
    own order (``DictIteratorVariable.keys``), rebuilt as that frozenset."""

    constant: ConstantVariable

    @property
    def items(self) -> frozenset:
        return self.constant.value

    def python_type(self) -> type:
        return frozenset

    def reconstruct(self, cg: Codegen) -> None:
        self.constant.reconstruct(cg)


def make_reversed(tx: Translator, value: VariableTracker) -> IteratorVariable | None:
    """``reversed(value)`` for lists, ranges, dicts and their views (None otherwise)."""
    if isinstance(value, DictVariable) and value.python_type().__reversed__ is dict.__reversed__:
        return _dict_reversed(value, "keys")
    if isinstance(value, DictViewVariable) and value.python_type() is _view_type(value.kind):
        return _dict_reversed(value.dict_vt, value.kind)
    if isinstance(value, ListVariable):
        return ReversedIteratorVariable(value.items, seq=value, position=len(value.items) - 1)
    if isinstance(value, ConstantVariable) and isinstance(value.value, range):
        return RangeIteratorVariable([], value=value.value[::-1])
    return None


def _view_type(kind: str) -> type:
    return type(getattr({}, kind)())


def _dict_reversed(container: DictVariable, kind: str) -> DictIteratorVariable:
    keys = tuple(reversed(container.items))
    return DictIteratorVariable([], container=container, kind=kind, keys=keys, reverse=True)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
