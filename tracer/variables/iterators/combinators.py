"""CPython's iterator combinators over traced values: ``zip``, ``enumerate``, ``map``,
``filter``, and the C iterators of other builtins (``BuiltinIteratorVariable``). They keep their
position as CPython's do, take items lazily from what they wrap, and are rebuilt at a graph break
as the real objects over what they wrap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import TupleVariable
from .builtin_iterators import DictIteratorVariable, count_taken, note_advance
from .iterator_trackers import MAX_YIELDS, IteratorVariable, LazyIteratorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


# -- zip, map, filter, enumerate -----------------------------------------------------------------
@dataclass(eq=False)
class BuiltinIteratorVariable(LazyIteratorVariable):
    """``zip``/``map``/``filter``/``enumerate`` over iterators (``sources``): items are made one at
    a time by ``pull``, as CPython makes them, so a function with side effects runs in order."""

    sources: list[IteratorVariable] = field(default_factory=list)

    def pull(self) -> VariableTracker | None:
        raise NotImplementedError

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        """Unlike a generator, these never stop for good: each ``next`` asks the sources again
        (a dict iterator below may raise on a later call, a list iterator may see new items)."""
        self._tx = tx
        if self.index < len(self.items):
            return super().next_item(tx)
        note_advance(tx, self)
        return self.pull()

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        items: list[VariableTracker] = []
        while (item := self.next_item(tx)) is not None:
            if len(items) >= MAX_YIELDS:
                raise Unsupported("generator", f"an iterator gave more than {MAX_YIELDS} items")
            items.append(item)
        return items

    def save_state(self) -> Any:
        return super().save_state(), self._extra_state()

    def restore_state(self, state: Any) -> None:
        super().restore_state(state[0])
        self._restore_extra(state[1])

    def _extra_state(self) -> Any:
        return None

    def _restore_extra(self, state: Any) -> None:
        pass

    def _sources_rebuildable(self) -> bool:
        return all(
            s.rebuildable() if isinstance(s, LazyIteratorVariable) else _rebuildable(s)
            for s in self.sources
        )

    def reconstruct(self, cg: Codegen) -> None:
        if self.index < len(
            self.items
        ):  # items taken ahead (never by ``next``): rebuild as a tuple
            return IteratorVariable.reconstruct(self, cg)
        if self.source is not None:  # an input (``iterator_inputs``): the same object
            self.source.reconstruct(cg)
            return None
        cg.build_once(self, lambda: self._build(cg))
        return None

    def _build(self, cg: Codegen) -> None:
        raise NotImplementedError


def _rebuildable(it: IteratorVariable) -> bool:
    return not isinstance(it, DictIteratorVariable)


@dataclass(eq=False)
class ZipVariable(BuiltinIteratorVariable):
    strict: bool = False

    def pull(self) -> VariableTracker | None:
        tx, group = self._tx, []
        for source in self.sources:  # pulls in order and stops at the first exhausted one, like zip
            item = source.next_item(tx)
            if item is None:
                if self.strict and (
                    group or any(s.next_item(tx) is not None for s in self.sources[1:])
                ):
                    raise Unsupported("python_error", "zip() raised ValueError: unequal lengths")
                return None
            group.append(item)
        return TupleVariable(group) if self.sources else None

    def rebuildable(self) -> bool:
        return self._sources_rebuildable()

    def python_type(self) -> type:
        return zip

    def _build(self, cg: Codegen) -> None:
        cg.load_const(zip)
        for source in self.sources:
            source.reconstruct(cg)
        if self.strict:
            cg.load_const(True)
            cg.call_function(len(self.sources) + 1, ("strict",))
        else:
            cg.call_function(len(self.sources))


@dataclass(eq=False)
class EnumerateVariable(BuiltinIteratorVariable):
    """``enumerate(iterator, start)``. One given to the trace (``iterator_inputs``: a source, and
    ``input_count``, its count then) has its count raised afterwards by taking as many items from
    the real object as the trace took through it (``replay_log``): CPython's enumerate has no other
    way to set it."""

    count: int = 0  #: the number the next item gets
    input_count: int | None = None  #: an input's count when the trace got it
    pulled: bool = False  #: an input's: the trace took an item through it

    def pull(self) -> VariableTracker | None:
        sub = self.sources[0]
        if self.source is not None:
            self._check_replayable(sub)
        item = sub.next_item(self._tx)
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def _check_replayable(self, sub: IteratorVariable) -> None:
        """The replay takes the items again from the real iterator, first of all replays (this
        enumerate changed before its iterator): so the trace must not have moved that iterator
        itself before, nor changed the list under it (the items taken again would not be the
        ones the trace counted)."""
        if self._tx is None:  # items forced outside the trace's steps: never counted again
            raise Unsupported("enumerate_input", "an input enumerate's items taken in advance")
        mutated = self._tx.output.side_effects.mutated
        seq = getattr(sub, "seq", None)
        if (not self.pulled and id(sub) in mutated) or (seq is not None and id(seq) in mutated):
            raise Unsupported(
                "enumerate_input",
                "an enumerate given to the trace, over an iterator or list the trace changed",
            )
        self.pulled = True

    def _extra_state(self) -> Any:
        return self.count, self.pulled

    def _restore_extra(self, state: Any) -> None:
        self.count, self.pulled = state

    def replay_log(self, cg: Codegen) -> bool:
        """An input enumerate: count what the trace took (its iterator's own replay, which comes
        after this one, then puts the iterator where the trace left it)."""
        taken = self.count - self.input_count
        if taken:
            cg.load_const(count_taken)
            self.source.reconstruct(cg)
            cg.load_const(taken)
            cg.call_function(2)
            cg.pop_top()
        return True

    def rebuildable(self) -> bool:
        return self._sources_rebuildable()

    def python_type(self) -> type:
        return enumerate

    def _build(self, cg: Codegen) -> None:
        cg.load_const(enumerate)
        self.sources[0].reconstruct(cg)
        cg.load_const(self.count)
        cg.call_function(2)


@dataclass(eq=False)
class MapVariable(BuiltinIteratorVariable):
    fn: VariableTracker | None = None

    def pull(self) -> VariableTracker | None:
        tx, args = self._tx, []
        for source in self.sources:
            item = source.next_item(tx)
            if item is None:
                return None
            args.append(item)
        return dispatch.call(tx, self.fn, args, {})

    def python_type(self) -> type:
        return map

    def _build(self, cg: Codegen) -> None:
        cg.load_const(map)
        self.fn.reconstruct(cg)
        for source in self.sources:
            source.reconstruct(cg)
        cg.call_function(len(self.sources) + 1)


@dataclass(eq=False)
class FilterVariable(BuiltinIteratorVariable):
    fn: VariableTracker | None = None

    def pull(self) -> VariableTracker | None:
        tx = self._tx
        keep_truthy = self.fn.is_python_constant() and self.fn.as_python_constant() is None
        while (item := self.sources[0].next_item(tx)) is not None:
            test = item if keep_truthy else dispatch.call(tx, self.fn, [item], {})
            if dispatch.truth(tx, test):
                return item
        return None

    def python_type(self) -> type:
        return filter

    def _build(self, cg: Codegen) -> None:
        cg.load_const(filter)
        self.fn.reconstruct(cg)
        self.sources[0].reconstruct(cg)
        cg.call_function(2)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
