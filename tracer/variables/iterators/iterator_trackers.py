"""The iterator protocol's trackers: ``IteratorVariable`` walks known items (a list's own item
list, so appends in a loop body are seen; dicts and sets are watched for size changes);
``LazyIteratorVariable`` makes items on demand, and ``GeneratorVariable`` is a suspended generator
frame. CPython's iterators (``zip``, ``enumerate``, ``map``, ``filter``, over lists, dicts, ranges)
are in ``builtin_iterators.py``.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....guards.sources import Source
from ... import polyfills
from ...exc import Unsupported
from ..base import VariableTracker
from ..containers.builtin_containers import BoundMethodVariable
from . import generator_restart

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


@dataclass(eq=False)
class IteratorVariable(VariableTracker):
    """An iterator over already-known items (lists, tuples, dicts, ranges, zip, enumerate...)."""

    items: list[VariableTracker]
    index: int = 0
    source: Source | None = None
    #: the dict or set iterated over: CPython raises if its size changes during the iteration
    watched: VariableTracker | None = None
    watched_len: int = 0

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if tx is not None:
            tx.output.side_effects.before_mutation(self)
        if self.watched is not None and len(self.watched.items) != self.watched_len:
            kind = self.watched.python_type().__name__
            raise Unsupported("python_error", f"RuntimeError: {kind} changed size during iteration")
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        if tx is not None:
            tx.output.side_effects.before_mutation(self)
        rest = self.items[self.index :]
        self.index = len(self.items)
        return rest

    def save_state(self) -> Any:
        """What ``SideEffects.before_mutation`` keeps to roll the position back."""
        return self.index

    def restore_state(self, state: Any) -> None:
        self.index = state

    def python_type(self) -> type:
        return type(iter([]))

    def reconstruct(self, cg: Codegen) -> None:
        cg.build_once(self, lambda: (self.reconstruct_items(cg), cg.add("GET_ITER")))

    def reconstruct_items(self, cg: Codegen) -> None:
        """The remaining items as a tuple (a resume function turns it back into an iterator)."""
        if self.watched is not None:
            raise Unsupported(
                "reconstruct",
                "an iterator over a dict or set cannot be rebuilt",
                hint="a tuple of the remaining keys would not see dict changes",
            )
        for item in self.items[self.index :]:
            item.reconstruct(cg)
        cg.build_tuple(len(self.items) - self.index)


#: A generator yielding more than this many items to ``unpack`` is treated as unbounded.
MAX_YIELDS = 10_000


class Yielded(Exception):  # noqa: N818 (control flow, not an error)
    """Raised by YIELD_VALUE to suspend a generator frame; carries the yielded variable."""

    def __init__(self, value: VariableTracker) -> None:
        self.value = value


def take_items(it: Any, count: int, exhaust: bool) -> None:
    """Runtime helper: take ``count`` items from the iterator ``it`` (then its end, if
    ``exhaust``), as the trace did (a dict iterator or ``itertools`` object cannot be moved any
    other way)."""
    for _ in range(count):
        next(it)
    if exhaust:
        next(it, None)


@dataclass(eq=False)
class LazyIteratorVariable(IteratorVariable):
    """An iterator whose items are made on demand by ``pull()``, as CPython would make them (so a
    loop body's effects are seen by later items). ``items`` holds items already forced."""

    done: bool = False

    def pull(self) -> VariableTracker | None:
        raise NotImplementedError

    def rebuildable(self) -> bool:
        """Can the remaining items be forced now and rebuilt as a tuple (at a graph break)?"""
        return False

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if self.index < len(self.items) or self.done:
            return super().next_item(tx)
        if tx is not None:
            tx.output.side_effects.before_mutation(self)
        item = self.pull()
        if item is None:
            self.done = True
        return item

    def save_state(self) -> Any:
        return self.index, self.done, len(self.items)

    def restore_state(self, state: Any) -> None:
        self.index, self.done, count = state
        del self.items[count:]

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        items: list[VariableTracker] = []
        while (item := self.next_item(tx)) is not None:
            if len(items) >= MAX_YIELDS:
                raise Unsupported(
                    "generator",
                    f"an iterator gave more than {MAX_YIELDS} items",
                    hint="unbounded iterators cannot be unrolled",
                )
            items.append(item)
        return items

    def force(self) -> None:
        """Make every remaining item now (into ``items``) without taking any."""
        start = self.index
        rest = self.unpack(None)
        self.items, self.index = [*self.items[:start], *rest], start

    def reconstruct_items(self, cg: Codegen) -> None:
        if not self.rebuildable():
            raise Unsupported(
                "reconstruct",
                f"{self!r} cannot be rebuilt outside the trace",
                hint="consume the generator inside the compiled function",
            )
        self.items, self.index = self.unpack(None), 0
        super().reconstruct_items(cg)


@dataclass(eq=False)
class GeneratorVariable(LazyIteratorVariable):
    """A generator object made by calling a user generator function: a suspended translator frame
    (``frame``) run lazily, one yield per item."""

    frame: Any = None  #: the Translator of the generator's code, kept between items
    #: a rolled-back instruction had resumed the frame, which cannot be undone: not rebuildable
    spoiled: bool = False
    result: VariableTracker | None = None  #: the frame's return value, once it returned
    #: one given to the trace (``iterator_inputs``: an ``itertools.count``), with a ``source``:
    #: the items its frame gave, taken from the real object afterwards (``replay_log``)
    given: int = 0
    #: the function that made it (``generator_restart``: rebuilt by calling it, if not started)
    maker: Any = None

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if self.source is not None:
            if tx is None:  # items forced outside the trace's steps: never taken again
                raise Unsupported("generator", f"items of {self!r} taken in advance")
            tx.output.side_effects.mark_mutated(self)
        return super().next_item(tx)

    def escapes_as_is(self) -> bool:
        """Does it escape as the object it is, with no need to run it to its end: the caller's
        own object, or an endless ``itertools`` one rebuilt from its state (``_resume``)?"""
        return self.source is not None or getattr(self.frame, "fn", None) in polyfills.RESUME

    def replay_log(self, cg: Codegen) -> bool:
        """An input: take from the real object as many items as the trace took."""
        if self.spoiled:  # a rolled-back instruction resumed the frame: the count is lost
            raise Unsupported("reconstruct", f"{self!r} was resumed by an undone instruction")
        cg.load_const(take_items)
        self.source.reconstruct(cg)
        cg.load_const(self.given)
        cg.load_const(False)
        cg.call_function(3)
        cg.pop_top()
        return True

    def save_state(self) -> Any:
        return None

    def restore_state(self, state: Any) -> None:
        self.spoiled = True

    def pull(self) -> VariableTracker | None:
        try:
            self.result = self.frame.run()  # what ``yield from`` over this generator gives
        except Yielded as y:
            self.given += 1
            return y.value
        return None

    def rebuildable(self) -> bool:
        """Only once all its items are known (``convert`` takes them when the generator escapes)."""
        return self.done and not self.spoiled

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("send", "__next__"):
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"generator.{name} is not traced")

    def reconstruct(self, cg: Codegen) -> None:
        """Escaping: an iterator over the remaining items; a polyfilled ``itertools`` object as
        the C object of its type (``polyfills.REBUILD``)."""
        if self.source is not None:  # the caller's own object
            self.source.reconstruct(cg)
            return None
        if generator_restart.restartable(self):  # not started: made again by its function
            return generator_restart.reconstruct(self, cg)
        fn = getattr(self.frame, "fn", None)
        if fn in polyfills.RESUME and not self.spoiled and self.index >= len(self.items):
            return self._resume(cg, polyfills.RESUME[fn])
        rebuild = polyfills.REBUILD.get(fn)
        if rebuild is None:
            return super().reconstruct(cg)  # a plain iterator (as torch.compile rebuilds it)

        def build() -> None:
            cg.load_const(rebuild)
            self.reconstruct_items(cg)
            cg.call_function(1)

        cg.build_once(self, build)
        return None

    def _resume(self, cg: Codegen, resume: Any) -> None:
        """An endless polyfilled ``itertools`` object (``count``): the C object going on from
        the suspended frame's locals (Python constants only, else it cannot be rebuilt)."""
        state = self.frame.symbolic_locals
        if not all(v.is_python_constant() for v in state.values()):
            raise Unsupported("reconstruct", f"{self!r} holds values that are not constants")
        make, args = resume({k: v.as_python_constant() for k, v in state.items()})

        def build() -> None:
            cg.load_const(make)
            for arg in args:
                cg.load_const(arg)
            cg.call_function(len(args))

        cg.build_once(self, build)

    def python_type(self) -> type:
        """A polyfilled C iterator's type (``itertools.product``): ``type(p)`` in the trace is what
        CPython gives."""
        target = generator_restart.c_function(self)
        if isinstance(target, type):
            return target
        if isinstance(getattr(target, "__self__", None), type):  # ``chain.from_iterable``
            return target.__self__
        return types.GeneratorType

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.frame.code.co_name})"


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
