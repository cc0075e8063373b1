"""Iterators and generators that behave like CPython's: ``IteratorVariable`` and the iterators
over lists, dicts and sets at their positions (``make_iter``, ``dict_iter``), the combinators
(``zip``, ``enumerate``, ``map``, ``filter``...), ``GeneratorVariable`` (a user generator run
lazily), real iterators reaching the trace as inputs (``wrap_input_iterator``) and generators
rebuilt at a graph break. Registers the ``get_iter`` rules of iterators and dict views.
"""

from __future__ import annotations

import ast
import collections
import gc
import inspect
import itertools
import math
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...codegen.exception_table import covering
from ...guards.sources import ChainedSource, ItemSource, Source
from .. import polyfills
from ..code_reader import parameters
from ..exc import PythonError, TracedException, Unsupported
from ..polyfills.builtins import SEQUENCE_ITERATOR, sequence_iterator_at
from ..polyfills.registry import RESTART
from . import containers, dispatch
from .base import IdentityKey, VariableTracker, walk
from .constants import ConstantVariable
from .containers import (
    BoundMethodVariable,
    DictVariable,
    DictViewVariable,
    LazyListVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
    key_vt,
)
from .live_inputs import ViewedDictSource

if TYPE_CHECKING:
    from ...codegen.emit import Codegen, Emitter
    from ...guards.sources import Source
    from ..translator import Translator


# A generator made in the trace that has not started yet, rebuilt at a graph break as a fresh call.
#
# Until its first item is taken, a generator object is its function and its arguments: eager code
# holding one at the break holds a generator that will run its whole body later, reading whatever
# its arguments and closure cells hold then. Rewritten code therefore makes it again by calling the
# same function on the same (rebuilt) arguments: a generator expression's function on its
# iterator, a user generator function on its arguments, the C ``itertools`` function behind a
# polyfilled one (``itertools.product(...)``, not the polyfill's plain generator). A generator that
# has started cannot be rebuilt so (its frame is half run): ``tracer/breaks/iterator_rollback.py``
# takes the break where it was made instead.

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def made_by(result: VariableTracker, maker: Any) -> VariableTracker:
    """``result`` of calling ``maker`` (a function object, or the tracker of a function made in
    the trace); a generator remembers what made it."""
    if isinstance(result, GeneratorVariable) and result.maker is None:
        result.maker = maker
    return result


def restartable(gen: GeneratorVariable) -> bool:
    """Has ``gen`` not started, and is what made it known?"""
    frame = gen.frame
    if gen.spoiled or gen.done or gen.given or gen.items or frame is None or frame.ip != 0:
        return False
    if c_function(gen) is None and gen.maker is None:
        return False
    return all(name in frame.symbolic_locals for name, _ in parameters(frame.code))


def reconstruct(gen: GeneratorVariable, cg: Codegen) -> None:
    """Emit ``start(function, parameter kinds, arguments)``: the generator made again."""
    frame = gen.frame
    params = parameters(frame.code)
    target = c_function(gen)

    def build() -> None:
        cg.load_const(start)
        if target is not None:
            cg.load_const(target)
        elif isinstance(gen.maker, VariableTracker):
            gen.maker.reconstruct(cg)  # a function made in the trace
        else:
            cg.load_const(gen.maker)  # a function object (its identity is guarded by the trace)
        cg.load_const(tuple(params))
        for name, _ in params:
            frame.symbolic_locals[name].reconstruct(cg)
        cg.build_tuple(len(params))
        # a C function's optional arguments are left out where the polyfill's default stands in
        # for "not given" (itertools.repeat(x) has no times=None)
        cg.load_const(defaults(frame.fn) if target is not None else {})
        cg.call_function(4)

    cg.build_once(gen, build)


def walk_live(values: Any, descend: Any = lambda vt: True) -> list[VariableTracker]:
    """``walk(values, descend)``, and also through what each not-started generator reached is made
    again from at a break (its function and arguments): what rebuilding ``values`` there reads."""
    found: list[VariableTracker] = []
    seen: set[int] = set()
    pending = [values]
    while pending:
        for vt in walk(pending.pop(), descend):
            if id(vt) in seen:
                continue
            seen.add(id(vt))
            found.append(vt)
            if isinstance(vt, GeneratorVariable) and restartable(vt):
                pending.append([vt.maker, *vt.frame.symbolic_locals.values()])
    return found


def start(fn: Any, params: tuple, values: tuple, defaults: dict[str, Any]) -> Any:
    """Runtime helper: call ``fn`` with ``values``, one per parameter of ``params`` (name, kind),
    leaving out optional ones that hold their ``defaults`` (trailing positional, or keyword)."""
    args, kwargs = call_arguments(
        params,
        values,
        lambda name, value: is_default(defaults, name, value),
        lambda value: list(value.items()) if isinstance(value, dict) else list(value),
    )
    return fn(*args, **dict(kwargs))


def call_arguments(
    params: Any,
    values: Any,
    holds_default: Callable[[str, Any], bool],
    spread: Callable[[Any], list],
) -> tuple[list, list[tuple[str, Any]]]:
    """The positional arguments and ``(name, value)`` keyword arguments that call a function with
    parameters ``params`` (name, kind) on ``values``: optional ones are left out where
    ``holds_default(name, value)`` (trailing positional, or keyword); ``spread(value)`` gives the
    items of a ``*args`` value, or the pairs of a ``**kwargs`` one. For real values here, and for
    the trace's (``made_in_resume``)."""
    args: list[Any] = []
    kwargs: list[tuple[str, Any]] = []
    droppable = 0  #: trailing positional arguments that hold their defaults
    for (name, kind), value in zip(params, values, strict=True):
        if kind in _POSITIONAL:
            args.append(value)
            droppable = droppable + 1 if holds_default(name, value) else 0
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            items = spread(value)
            args += items
            droppable = 0 if items else droppable
        elif kind is inspect.Parameter.KEYWORD_ONLY:
            if not holds_default(name, value):
                kwargs.append((name, value))
        else:
            kwargs += spread(value)
    return args[: len(args) - droppable], kwargs


def is_default(defaults: dict[str, Any], name: str, value: Any) -> bool:
    default = defaults.get(name, _NO_DEFAULT)
    return value is default or (type(value) is type(default) and value == default)


_NO_DEFAULT = object()


def defaults(fn: Any) -> dict[str, Any]:
    """The parameter defaults of the Python function ``fn``."""
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def c_function(gen: GeneratorVariable) -> Any:
    """The C function a polyfilled generator stands for (``itertools.product``), if it is one."""
    return RESTART.get(getattr(gen.frame, "fn", None))


# The iterator protocol's trackers: ``IteratorVariable`` walks known items (a list's own item list,
# so appends in a loop body are seen; dicts and sets are watched for size changes);
# ``LazyIteratorVariable`` makes items on demand, and ``GeneratorVariable`` is a suspended generator
# frame. CPython's iterators (``zip``, ``enumerate``, ``map``, ``filter``, over lists, dicts,
# ranges) are below.


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


def drain(iterator: Any, tx: Translator | None) -> list[VariableTracker]:
    """Every item left of ``iterator`` (a tracker with ``next_item``), in order: its ``unpack``.
    More than ``MAX_YIELDS`` is taken for an endless one: a break."""
    items: list[VariableTracker] = []
    while (item := iterator.next_item(tx)) is not None:
        if len(items) >= MAX_YIELDS:
            raise Unsupported("generator", f"an iterator gave more than {MAX_YIELDS} items")
        items.append(item)
    return items


class Yielded(Exception):  # noqa: N818 (control flow, not an error)
    """Raised by YIELD_VALUE to suspend a generator frame; carries the yielded variable."""

    def __init__(self, value: VariableTracker) -> None:
        self.value = value


def rest_of(items: tuple, result: Any, name: str, qualname: str) -> Any:
    """Runtime helper: a generator named ``name`` (``qualname``) giving ``items``, then
    returning ``result``: one the trace ran to its end, as the caller gets it."""

    def rest() -> Any:
        yield from items
        return result

    made = rest()
    made.__name__, made.__qualname__ = name, qualname
    return made


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
    #: one given to the trace (``wrap_input_iterator``: an ``itertools.count``), with a ``source``:
    #: the items its frame gave, taken from the real object afterwards (``replay_log``)
    given: int = 0
    #: the function that made it (rebuilt by calling it, if not started)
    maker: Any = None
    #: an input moved back to where the trace left it (``polyfills.SEEK``): its position when
    #: given to the trace
    origin: int | None = None
    #: such an input's frame returned in a run that recorded no effect and no graph node: taking
    #: the real object to its end again (``replay_log``) repeats nothing the trace kept
    clean_end: bool = False
    #: the traced code took past its end: the first ``StopIteration`` it got held ``result``,
    #: later ones hold nothing (``result`` is then None), as CPython gives a return value once
    stop_seen: bool = False
    #: escaping the call at its return (``convert``): rebuilt as a generator (``rest_of``)
    escaping: bool = False

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if self.source is not None:
            if tx is None:  # items forced outside the trace's steps: never taken again
                raise Unsupported("generator", f"items of {self!r} taken in advance")
            tx.output.side_effects.mark_mutated(self)
        item = super().next_item(tx)
        if item is None and tx is not None:
            if self.stop_seen:
                self.result = None
            self.stop_seen = True
        return item

    def escapes_as_is(self) -> bool:
        """Does it escape as the object it is, with no need to run it to its end: the caller's
        own object, or a polyfilled C iterator made again from its state (``_resume``: an
        endless ``count``, a sequence iterator), unless an undone instruction resumed it?"""
        if self.source is not None:
            return True
        return getattr(self.frame, "fn", None) in polyfills.RESUME and not self.spoiled

    def replay_log(self, cg: Codegen) -> bool:
        """An input: take from the real object as many items as the trace took, or move it
        there, for a polyfill with a ``seek`` (``polyfills.SEEK``)."""
        seek = polyfills.SEEK.get(getattr(self.frame, "fn", None))
        if seek is not None and self.origin is not None:  # its count is kept across rollbacks
            self._seek(cg, seek)
            return True
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
        return (self.given, self.done, self.clean_end) if self.origin is not None else None

    def restore_state(self, state: Any) -> None:
        self.spoiled = True
        if state is not None:  # what the real object is moved by (``_seek``)
            self.given, self.done, self.clean_end = state

    def pull(self) -> VariableTracker | None:
        output = self.frame.output
        seeks = self.origin is not None
        before = (output.side_effects.snapshot(), len(output.created)) if seeks else None
        try:
            self.result = self.frame.run()  # what ``yield from`` over this generator gives
        except Yielded as y:
            self.given += 1
            return y.value
        except TracedException:  # let out to the frame that resumed it: the generator is over
            self.done = True
            raise
        except Exception:  # a break in its frame: the instruction that resumed it is undone
            self.spoiled = True
            raise
        if before is not None:
            effects, nodes = before
            self.clean_end = not output.side_effects.changed_since(effects) and (
                nodes == len(output.created)
            )
        return None

    def _seek(self, cg: Codegen, seek: Any) -> None:
        """``helper(<the real object>, *args)``: moved to where the trace left it."""
        if not self.given and not self.done:
            return  # where it was
        if self.done and not self.clean_end:
            raise Unsupported(
                "reconstruct",
                f"{self!r} ended in a call with effects, which taking it to its end repeats",
            )
        helper, args = seek(self.origin + self.given, self.done)
        cg.load_const(helper)
        self.source.reconstruct(cg)
        for arg in args:
            cg.load_const(arg)
        cg.call_function(1 + len(args))
        cg.pop_top()

    def rebuildable(self) -> bool:
        """Only once all its items are known (``convert`` takes them when the generator escapes)."""
        return self.done and not self.spoiled

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in _GENERATOR_METHODS:
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"generator.{name} is not traced")

    def reconstruct(self, cg: Codegen) -> None:
        """Escaping: an iterator over the remaining items; a polyfilled ``itertools`` object as
        the C object of its type (``polyfills.REBUILD``)."""
        if self.source is not None:  # the caller's own object
            self.source.reconstruct(cg)
            return None
        if restartable(self):  # not started: made again by its function
            return reconstruct(self, cg)
        fn = getattr(self.frame, "fn", None)
        if fn in polyfills.RESUME and not self.spoiled and self.index >= len(self.items):
            return self._resume(cg, polyfills.RESUME[fn])
        rebuild = polyfills.REBUILD.get(fn)
        if rebuild is None and self.escaping and self.rebuildable():
            return self._rest_of(cg)
        if rebuild is None:
            return super().reconstruct(cg)  # a plain iterator (as torch.compile rebuilds it)

        def build() -> None:
            cg.load_const(rebuild)
            self.reconstruct_items(cg)
            cg.call_function(1)

        cg.build_once(self, build)
        return None

    def _rest_of(self, cg: Codegen) -> None:
        """A generator run to its end in the trace, escaping the call: ``rest_of(items, result,
        name, qualname)``, a generator of the items it had left that then returns what its
        frame returned (unless the traced code took that already), named as the function that
        made it."""
        fn = getattr(self.frame, "fn", None)
        code = self.frame.code
        name = getattr(fn, "__name__", code.co_name)
        qualname = getattr(fn, "__qualname__", getattr(code, "co_qualname", name))

        def build() -> None:
            cg.load_const(rest_of)
            self.reconstruct_items(cg)
            if self.result is None or self.stop_seen:
                cg.load_const(None)
            else:
                self.result.reconstruct(cg)
            cg.load_const(name)
            cg.load_const(qualname)
            cg.call_function(4)

        cg.build_once(self, build)

    def _resume(self, cg: Codegen, resume: Any) -> None:
        """A polyfilled C iterator whose items are not made now (an endless ``count``, a
        sequence iterator): the C object going on from the suspended frame's locals."""
        state = {
            k: v.as_python_constant() if v.is_python_constant() else v
            for k, v in self.frame.symbolic_locals.items()
        }
        made = resume(state)
        if made is None:
            raise Unsupported("reconstruct", f"{self!r} holds values that are not constants")
        make, args = made

        def build() -> None:
            cg.load_const(make)
            for arg in args:
                if isinstance(arg, VariableTracker):
                    arg.reconstruct(cg)
                else:
                    cg.load_const(arg)
            cg.call_function(len(args))

        cg.build_once(self, build)

    def python_type(self) -> type:
        """A polyfilled C iterator's type (``itertools.product``): ``type(p)`` in the trace is what
        CPython gives."""
        kind = polyfills.KINDS.get(getattr(self.frame, "fn", None))
        if kind is not None:  # ``iter``'s own iterators
            return kind
        target = c_function(self)
        if isinstance(target, type):
            return target
        if isinstance(getattr(target, "__self__", None), type):  # ``chain.from_iterable``
            return target.__self__
        return types.GeneratorType

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.frame.code.co_name})"


# Iterators that behave like CPython's: they keep their position, see their container change, and
# escape the trace as the same kind of object at the same position.
#
# ``SeqIteratorVariable`` (``iter(list)``, tuples, strings), ``ReversedIteratorVariable``,
# ``RangeIteratorVariable``, ``DictIteratorVariable`` (dicts, their views and sets: live, with
# CPython's "changed size during iteration" check); the lazy ``zip``/``map``/``filter``/
# ``enumerate`` are below. ``make_iter`` is ``iter(value)`` for builtin values (the
# entry point ``dispatch.get_iter`` uses). Advancing one records its old position in the undo log
# (``save_state``/``restore_state``) so an instruction rolled back at a graph break leaves it where
# it was. ``reconstruct`` rebuilds the real iterator (``it = iter(seq); it.__setstate__(i)``);
# ``reconstruct_items`` (iterators on the stack at a break) passes the remaining items instead.


def iter_at(seq: Any, index: int) -> Any:
    """Runtime helper of the rewritten code: ``iter(seq)`` moved to ``index`` (nothing read; a
    deque's iterator, which has no ``__setstate__``, takes the items before it)."""
    it = iter(seq)
    if index and hasattr(it, "__setstate__"):
        it.__setstate__(index)
    elif index:
        advanced(it, min(index, len(seq)))
    return it


def exhausted_iter(seq: Any) -> Any:
    """Runtime helper: an exhausted iterator of ``seq``'s kind (it no longer sees ``seq`` grow)."""
    it = iter(seq)
    for _ in it:
        pass
    return it


def reversed_at(seq: Any, index: int) -> Any:
    """Runtime helper: ``reversed(seq)`` whose next item is ``seq[index]`` (-1: exhausted; a
    deque's, which has no ``__setstate__``, takes the items after it)."""
    it = reversed(seq)
    if hasattr(it, "__setstate__"):
        it.__setstate__(index)
    else:
        advanced(it, len(seq) - 1 - index if index >= 0 else len(seq))
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
    if isinstance(seq, containers.DequeVariable):
        return type(make(collections.deque()))
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
        """An input iterator (``wrap_input_iterator``): take the items the trace took."""
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


class ListRest:
    """Runtime helper (and what guards read): the items the list iterator ``it`` (or reversed
    list iterator) has yet to give, read in place (``len``, ``rest[k]``): the list and position
    are read from the iterator each time, so a guard reads no more of the list than the items it
    checks."""

    __slots__ = ("seq", "start", "step")

    def __init__(self, it: Any) -> None:
        reduced = it.__reduce__()
        self.seq = reduced[1][0]
        self.step = -1 if type(it) is _LIST_REVERSED else 1
        state = reduced[2] if len(reduced) > 2 else None
        # exhausted: ``iter([])``; ``reversed([])`` (3.13) or ``iter(())`` with no position
        self.start = (0 if self.step == 1 else -1) if state is None else state

    def __len__(self) -> int:
        if self.step == -1:  # CPython's reversed iterator stops once its index is out of the list
            return self.start + 1 if 0 <= self.start < len(self.seq) else 0
        return max(len(self.seq) - self.start, 0)

    def __getitem__(self, k: int) -> Any:
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self.seq[self.start + self.step * k]


@dataclass(frozen=True)
class ListRestSource(ChainedSource):
    """``ListRest(base)``: the items a list iterator has yet to give."""

    def render(self, roots: dict[str, str]) -> str:
        return f"__import__({__name__!r}, fromlist=['_']).ListRest({self.base.render(roots)})"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(ListRest)
        self.base.reconstruct(cg)
        cg.call_function(1)


@dataclass(eq=False)
class ListRestIteratorVariable(SeqIteratorVariable):
    """A real list iterator given to the trace (the loop a resume function continues, a ``zip``
    pulling from one), read from where it stands without guarding where that is: each item when
    the loop takes it, through ``ListRest(it)[k]``, guarded ``len(ListRest(it)) >= k + 1`` (the
    exact length only where the loop ends), the list's type, nothing else of it. So a loop whose
    body breaks at every iteration resumes in one variant for all iterations but the last, where
    guarding the position made one per iteration. The list stays the caller's, read live: the
    trace's items are ``items`` (taken so far), the real iterator is moved on by as many
    (``replay_log``). Once the trace reaches the list some other way (a name, an attribute, another
    iterator over it: ``builder.wrap`` asks ``model_list`` first, through
    ``OutputGraph.read_through``), it is the list's tracker that the iterator walks, as
    ``SeqIteratorVariable``, its position guarded: the loop sees the trace's changes to it."""

    value: Any = None  #: the real iterator
    start: int = 0  #: its position when the trace got it (guarded once the list is modelled)
    rest: ListRest | None = None  #: what it had yet to give then; None once the list is modelled
    #: items the replay of an enumerate over it takes from it before its own (``count_taken``)
    moved: int = 0

    @classmethod
    def make(
        cls, tx: Translator, value: Any, state: int, source: Source
    ) -> ListRestIteratorVariable:
        vt = cls([], index=state, value=value, start=state, rest=ListRest(value), source=source)
        return _read_where_it_stands(tx, vt)

    def model_list(self, tx: Translator) -> None:
        """The list reached another way: from now on this walks its tracker (see the class), from
        the trace's first read of it (a list only held, a live local of the resume function read
        after the loop, leaves the loop unguarded)."""
        _model_list(tx, self)

    def _walk_list(self, tx: Translator) -> None:
        self.rest = None
        tx.output.assume_equal(ReducedSource(self.source, "state"), self.start)
        self.items = self.seq.items

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if self.rest is None:
            return super().next_item(tx)
        note_advance(tx, self)
        reader, k = tx or self._tx, self.index - self.start
        rest_source = ListRestSource(self.source)
        if k < len(self.items):  # taken before a rollback
            self.index += 1
            return self.items[k]
        if self.exhausted or k >= len(self.rest):
            reader.output.assume_len(rest_source, k)
            self.exhausted = True
            return None
        reader.output.assume_len_at_least(rest_source, k + 1)
        self.items.append(reader.wrap(self.rest[k], ItemSource(rest_source, k)))
        self.index += 1
        return self.items[k]

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        if self.rest is None:
            return super().unpack(tx)
        rest = []
        while (item := self.next_item(tx)) is not None:
            rest.append(item)
        return rest

    def python_type(self) -> type:
        return type(self.value)

    def replay_log(self, cg: Codegen) -> bool:
        """The items the trace took, taken from the real iterator (where its position was not
        guarded, as many as the trace took; else moved to where the trace left it)."""
        if self.rest is None:
            return super().replay_log(cg)
        cg.load_const(take_items)
        self.source.reconstruct(cg)
        cg.load_const(self.index - self.start - self.moved)
        cg.load_const(self.exhausted)
        cg.call_function(3)
        cg.pop_top()
        return True


def _read_where_it_stands(tx: Translator, vt: Any) -> Any:
    """``vt`` (a ``ListRestIteratorVariable`` or ``ReversedRestIteratorVariable`` just made) reads
    its list from where it stands until the trace reads the list: registered so that reaching
    the list modells it (``OutputGraph.read_through``), or, the trace holding it already (unread),
    modelled at its first read."""
    seq = vt.rest.seq
    tx.output.assume_type(ReducedSource(vt.source, "arg", 0), list)
    vt._tx = tx
    if id(seq) in tx.output.wrapped:  # held by the trace already, unread
        vt.model_list(tx)
    else:
        tx.output.read_through[id(seq)] = (seq, vt)
    return vt


def _model_list(tx: Translator, vt: Any) -> None:
    """The list under ``vt`` reached: its tracker, which ``vt`` walks (``_walk_list``) from the
    trace's first read of it."""
    if vt.rest is None or vt.seq is not None:
        return
    seq = vt.rest.seq
    tx.output.read_through.pop(id(seq), None)
    vt.seq = tx.wrap(seq, ReducedSource(vt.source, "arg", 0))
    if isinstance(vt.seq, LazyListVariable) and not vt.seq.read:
        vt.seq.before_read = lambda: vt._walk_list(tx)
    else:
        vt._walk_list(tx)


def over_a_list(vt: VariableTracker) -> bool:
    """``iter(xs)`` or ``reversed(xs)`` of a list, or a ``zip``/``enumerate``/``map`` pulling from
    one: it reads the list live (items appended or written later are taken)."""
    if isinstance(vt, (SeqIteratorVariable, ReversedIteratorVariable)):
        return isinstance(vt.seq, ListVariable)
    return isinstance(vt, BuiltinIteratorVariable) and any(map(over_a_list, vt.sources))


@dataclass(eq=False)
class TakenIteratorVariable(IteratorVariable):
    """An iterator whose items ``next_item`` makes one at a time (none listed ahead): ``index``
    items taken, and whether it reached its end."""

    exhausted: bool = False

    def unpack(self, tx: Translator | None) -> list[VariableTracker]:
        rest = []
        while (item := self.next_item(tx)) is not None:
            rest.append(item)
        return rest

    def save_state(self) -> Any:
        return self.index, self.exhausted

    def restore_state(self, state: Any) -> None:
        self.index, self.exhausted = state


@dataclass(eq=False)
class ResumedItemsVariable(TakenIteratorVariable):
    """The loop's iterator a resume function continues with: ``iter(rest)`` of the tuple (or
    range) of remaining items its caller passed (``codegen/resume.py``'s iterator slots, read
    from ``rest_source``). Each item is read when the loop takes it, through ``rest[i]``, and the
    length only as far as the trace reads it: at least ``i + 1`` items for each one taken, exactly
    ``i`` where the loop ends. So a loop whose body breaks at every iteration resumes in one
    variant for all iterations but the last (each guarding the item it takes), where guarding
    the whole rest would make one per number of items left. A range's item is symbolic from the
    first trace (a counter), and a str or bytes item (a dict's key) is guarded by value only
    once the trace reads it (``LazyConstantVariable``), so printing it serves every key. At a
    break the rest travels on as ``rest[i:]``; escaping, it is ``iter(rest[i:])``. It has no
    source of its own: it is an iterator made by the resume function, not the caller's object."""

    rest: Any = ()  #: the real tuple or range
    rest_source: Source | None = None

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        if tx is None:
            raise Unsupported("iterator", "the rest of a resumed loop read outside the trace")
        if self.exhausted or self.index >= len(self.rest):
            tx.output.assume_len(self.rest_source, self.index)
            self.exhausted = True
            return None
        tx.output.assume_len_at_least(self.rest_source, self.index + 1)
        source = ItemSource(self.rest_source, self.index)
        if type(self.rest) is range:  # a counter: each iteration's differs from the last
            tx.output.shapes.policy.foresee(frozenset({source.expr}))
        tx.output.values_guarded_on_use = True  # (a key printed: one variant for every key)
        try:
            item = tx.wrap(self.rest[self.index], source)
        finally:
            tx.output.values_guarded_on_use = False
        self.index += 1
        return item

    def python_type(self) -> type:
        return type(iter(self.rest))

    def reconstruct_items(self, cg: Codegen) -> None:
        self.rest_source.reconstruct(cg)
        cg.load_const(slice(self.index, None))
        cg.subscr()


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
class ReversedRestIteratorVariable(ReversedIteratorVariable):
    """A real ``reversed(list)`` iterator given to the trace (the loop a resume function
    continues), read from where it stands as ``ListRestIteratorVariable`` reads a list iterator:
    item ``ListRest(it)[k]`` (the list's item ``start - k``), guarded ``len(ListRest(it)) >= k +
    1``, the real iterator moved on by the items taken. Once the trace reads the list it walks
    the list's tracker as ``ReversedIteratorVariable``, its position guarded."""

    value: Any = None  #: the real iterator
    start: int = 0  #: its position when the trace got it (guarded once the list is modelled)
    rest: ListRest | None = None  #: what it had yet to give then; None once the list is modelled
    taken: list[VariableTracker] = field(default_factory=list)  #: items taken, unmodelled
    exhausted: bool = False
    moved: int = 0  #: items the replay of an enumerate over it takes from it before its own

    @classmethod
    def make(
        cls, tx: Translator, value: Any, state: int, source: Source
    ) -> ReversedRestIteratorVariable:
        vt = cls([], value=value, start=state, position=state, rest=ListRest(value), source=source)
        return _read_where_it_stands(tx, vt)

    def model_list(self, tx: Translator) -> None:
        _model_list(tx, self)

    def _walk_list(self, tx: Translator) -> None:
        self.rest = None
        tx.output.assume_equal(ReducedSource(self.source, "state"), self.start)
        self.items = self.seq.items
        self.position = -1 if self.exhausted else self.start - len(self.taken)

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if self.rest is None:
            return super().next_item(tx)
        note_advance(tx, self)
        reader, k = tx or self._tx, len(self.taken)
        rest_source = ListRestSource(self.source)
        if self.exhausted or k >= len(self.rest):
            reader.output.assume_len(rest_source, k)
            self.exhausted = True
            return None
        reader.output.assume_len_at_least(rest_source, k + 1)
        self.taken.append(reader.wrap(self.rest[k], ItemSource(rest_source, k)))
        return self.taken[k]

    def save_state(self) -> Any:
        return self.position, len(self.taken), self.exhausted

    def restore_state(self, state: Any) -> None:
        self.position, count, self.exhausted = state
        del self.taken[count:]

    def python_type(self) -> type:
        return type(self.value)

    def replay_log(self, cg: Codegen) -> bool:
        if self.rest is None:
            return super().replay_log(cg)
        cg.load_const(take_items)
        self.source.reconstruct(cg)
        cg.load_const(len(self.taken) - self.moved)
        cg.load_const(self.exhausted)
        cg.call_function(3)
        cg.pop_top()
        return True


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

    def reconstruct(self, cg: Codegen) -> None:
        cg.build_once(self, lambda: (cg.load_const(self.value[self.index :]), cg.add("GET_ITER")))


def range_rest(it: Any) -> range:
    """Runtime helper (and what guards read): the items the range iterator ``it`` has yet to
    give, as a range (its ``__reduce__`` gives the whole range and the position, or, since 3.12,
    the range left and no position)."""
    reduced = it.__reduce__()
    seq = reduced[1][0]
    return seq[reduced[2] :] if len(reduced) > 2 and reduced[2] else seq


@dataclass(frozen=True)
class RangeRestSource(ChainedSource):
    """``range_rest(base)``: the items a range iterator has yet to give."""

    def render(self, roots: dict[str, str]) -> str:
        return f"__import__({__name__!r}, fromlist=['_']).range_rest({self.base.render(roots)})"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(range_rest)
        self.base.reconstruct(cg)
        cg.call_function(1)


@dataclass(eq=False)
class RangeRestIteratorVariable(TakenIteratorVariable):
    """A real range iterator given to the trace (a ``zip`` of a list and a range that a resume
    function continues), read from where it stands without guarding where that is: each item
    when taken, through ``range_rest(it)[k]`` (an int read like any other: constant in the first
    variant, symbolic once it changed), guarded ``len(range_rest(it)) >= k + 1`` (the exact
    length where it ends). So a loop breaking at every iteration resumes in a few variants, where
    guarding the position made one per iteration. The real iterator is moved on by the items
    taken (``replay_log``), less those an ``enumerate`` over it took first (``moved``)."""

    value: Any = None  #: the real iterator
    rest: range = range(0)  #: what it had yet to give when the trace got it
    moved: int = 0  #: items the replay of an enumerate over it takes from it before its own

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        note_advance(tx, self)
        reader = tx or getattr(self, "_tx", None)
        if reader is None:
            raise Unsupported("iterator", "a range iterator's rest read outside the trace")
        rest_source = RangeRestSource(self.source)
        if self.exhausted or self.index >= len(self.rest):
            reader.output.assume_len(rest_source, self.index)
            self.exhausted = True
            return None
        reader.output.assume_len_at_least(rest_source, self.index + 1)
        item = reader.wrap(self.rest[self.index], ItemSource(rest_source, self.index))
        self.index += 1
        return item

    def python_type(self) -> type:
        return type(self.value)

    def replay_log(self, cg: Codegen) -> bool:
        cg.load_const(take_items)
        self.source.reconstruct(cg)
        cg.load_const(self.index - self.moved)
        cg.load_const(self.exhausted)
        cg.call_function(3)
        cg.pop_top()
        return True

    def reconstruct(self, cg: Codegen) -> None:
        self.source.reconstruct(cg)  # the caller's own iterator, moved by the replay


@dataclass(eq=False)
class DictIteratorVariable(TakenIteratorVariable):
    """Iteration over a dict, one of its views, or a set: live (values written meanwhile are seen);
    a size change raises CPython's RuntimeError, a key set changed at the same size breaks the graph
    (CPython's behaviour there depends on the hash table)."""

    container: VariableTracker | None = None  #: the DictVariable or SetVariable
    kind: str = "keys"
    keys: tuple = ()  #: the keys (set items) when the iteration started (``exhausted``: it
    #: reached the end, and no longer looks at the container)
    input_index: int = 0  #: an input's (``wrap_input_iterator``) position when the trace got it
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


# CPython's iterator combinators over traced values: ``zip``, ``enumerate``, ``map``,
# ``filter``, and the C iterators of other builtins (``BuiltinIteratorVariable``). They keep their
# position as CPython's do, take items lazily from what they wrap, and are rebuilt at a graph break
# as the real objects over what they wrap.


# -- zip, map, filter, enumerate -------------------------------------------------------------------
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
        return drain(self, tx)

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
        if self.source is not None:  # an input (``wrap_input_iterator``): the same object
            self.source.reconstruct(cg)
            return None
        cg.build_once(self, lambda: self._build(cg))
        return None

    def _build(self, cg: Codegen) -> None:
        raise NotImplementedError


def _rebuildable(it: IteratorVariable) -> bool:
    return not isinstance(it, DictIteratorVariable)


def _zip_strict_check(tx: Translator, sources: list[IteratorVariable], index: int) -> None:
    """``zip(..., strict=True)`` once argument ``index`` ended: CPython's ValueError if it is
    shorter than those before it, or, where the first ended, if a later one still yields (taking
    items up to the first that does, as CPython does)."""
    if index == 0:
        index = next((i for i, s in enumerate(sources[1:], 1) if s.next_item(tx) is not None), 0)
        relation = "longer"
    else:
        relation = "shorter"
    if index:
        span = " 1" if index == 1 else f"s 1-{index}"
        message = f"zip() argument {index + 1} is {relation} than argument{span}"
        raise PythonError(ValueError(message))


@dataclass(eq=False)
class ZipVariable(BuiltinIteratorVariable):
    strict: bool = False

    def pull(self) -> VariableTracker | None:
        tx, group = self._tx, []
        for source in self.sources:  # pulls in order and stops at the first exhausted one, like zip
            item = source.next_item(tx)
            if item is None:
                if self.strict:
                    _zip_strict_check(tx, self.sources, len(group))
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
    """``enumerate(iterator, start)``. One given to the trace (``wrap_input_iterator``: a source,
    and ``input_count``, its count then) has its count raised afterwards by taking as many items
    from the real object as the trace took through it (``replay_log``): CPython's enumerate has no
    other way to set it."""

    count: int = 0  #: the number the next item gets
    input_count: int | None = None  #: an input's count when the trace got it
    pulled: bool = False  #: an input's: the trace took an item through it
    #: an input's count as read from it (over a list read from where it stands: the count is
    #: wrapped as a number, not guarded equal, so the numbers given are ``count_vt + i``)
    count_vt: VariableTracker | None = None

    def pull(self) -> VariableTracker | None:
        sub = self.sources[0]
        if self.source is not None:
            self._check_replayable(sub)
        item = sub.next_item(self._tx)
        if item is None:
            return None
        self.count += 1
        if self.count_vt is None:
            return TupleVariable([ConstantVariable(self.count - 1), item])
        step = ConstantVariable(self.count - 1 - self.input_count)
        number = dispatch.call_operator(self._tx, operator.add, [self.count_vt, step])
        return TupleVariable([number, item])

    def _check_replayable(self, sub: IteratorVariable) -> None:
        """The replay takes the items again from the real iterator, first of all replays (this
        enumerate changed before its iterator): so the trace must not have moved that iterator
        itself before, nor changed the list under it (the items taken again would not be the
        ones the trace counted)."""
        if self._tx is None:  # items forced outside the trace's steps: never counted again
            raise Unsupported("enumerate_input", "an input enumerate's items taken in advance")
        mutated = self._tx.output.side_effects.mutated
        leaves = _leaves(sub)
        seqs = [seq for leaf in leaves if (seq := getattr(leaf, "seq", None)) is not None]
        moved = any(id(leaf) in mutated for leaf in leaves)
        if (not self.pulled and moved) or any(id(seq) in mutated for seq in seqs):
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
        for leaf in _leaves(self.sources[0]):  # moved by as many (a rest's replay is relative)
            if isinstance(leaf, _RELATIVE):
                leaf.moved = taken
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


# Real iterators reaching the trace as inputs: a list, tuple, string, range or reversed
# list iterator, an iterator over a dict (its keys, values or items), an ``itertools.count``, and
# ``map``/``zip``/``filter``/``enumerate`` objects over such iterators.
#
# The usual way there is a graph break: a ``map``/``zip`` object or a list iterator made in the
# trace and still live is rebuilt as the real object (``reconstruct``) and handed to the resume
# function, whose trace meets it as an argument. Read through ``__reduce__`` (the sequence and
# position of a sequence iterator, the function and sub-iterators of ``map``...), each becomes the
# tracker the trace would have made itself, guarded on what it read: the iterator's type, the
# sequence (a list with its usual guards, a string or range by value) and the position. Items the
# trace takes are taken from the real object afterwards (``replay_position``), so the caller's
# iterator ends where CPython's would; ``reconstruct`` gives back the same object (its source).
#
# An ``enumerate`` over such a sequence or range iterator is read too: its count cannot be set on
# the real object, so the items the trace took through it are taken again from the real object,
# before its iterator's own replay (``EnumerateVariable.replay_log``).

_SEQ_ITERATORS = tuple(
    {type(iter(v)) for v in ([], (), "", "\u00e9", b"")}
)  #: ``iter()`` of a list, tuple, str (ASCII or not), bytes
_RANGE_ITERATORS = (type(iter(range(0))), type(iter(range(2**64))))
_LIST_REVERSED = type(reversed([]))
_LIST_ITERATOR = type(iter([]))
_LAZY = (map, zip, filter)
_DICT_ITERATORS = {type(iter(getattr({}, kind)())): kind for kind in ("keys", "values", "items")}
#: ``reversed`` of a dict or of its views
_DICT_REVERSED = {type(reversed(getattr({}, kind)())): kind for kind in ("keys", "values", "items")}


def reduced_part(obj: Any, part: str, position: int) -> Any:
    """Runtime helper (and what guards render): a part of ``obj.__reduce__()``: ``"arg"``, the
    ``position``-th constructor argument; ``"state"``, the state (None when there is none)."""
    reduced = obj.__reduce__()
    if part == "arg":
        return reduced[1][position]
    return reduced[2] if len(reduced) > 2 else None


@dataclass(frozen=True)
class ReducedSource(ChainedSource):
    """A part of ``base.__reduce__()`` (see ``reduced_part``): how an iterator's sequence, position
    and sub-iterators are read."""

    part: str
    position: int = 0

    def render(self, roots: dict[str, str]) -> str:
        base = self.base.render(roots)
        if self.part == "arg":
            return f"{base}.__reduce__()[1][{self.position}]"
        return f"({base}.__reduce__() + (None,))[2]"

    def reconstruct(self, cg: Emitter) -> None:
        cg.load_const(reduced_part)
        self.base.reconstruct(cg)
        cg.load_const(self.part)
        cg.load_const(self.position)
        cg.call_function(3)


def is_input_iterator(value: Any) -> bool:
    cls = type(value)
    return (
        cls in _SEQ_ITERATORS
        or cls in _RANGE_ITERATORS
        or cls is _LIST_REVERSED
        or cls in _LAZY
        or cls is enumerate
        or cls in _DICT_ITERATORS
        or cls in _DICT_REVERSED
        or cls is itertools.count
        or cls is SEQUENCE_ITERATOR
    )


def wrap_input_iterator(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """The tracker for a real iterator read through ``source`` (None: not one of these kinds, or
    over something the trace cannot iterate)."""
    if not is_input_iterator(value):
        return None
    cls = type(value)
    tx.output.assume_type(source, cls)
    if cls is enumerate:
        return _wrap_enumerate(tx, value, source)
    if cls in _DICT_ITERATORS or cls in _DICT_REVERSED:
        return _wrap_dict_iterator(tx, value, source)
    if cls is itertools.count:
        return _wrap_count(tx, value, source)
    if cls is SEQUENCE_ITERATOR:
        return _wrap_sequence_iterator(tx, value, source)
    state_source = ReducedSource(source, "state")
    state = reduced_part(value, "state", 0)
    if cls in _LAZY:
        args = value.__reduce__()[1]
        first = 1 if cls in (map, filter) else 0
        iterators = []
        for k in range(first, len(args)):
            sub = tx.wrap(args[k], ReducedSource(source, "arg", k))
            if not isinstance(sub, IteratorVariable):
                return None
            iterators.append(sub)
        if cls is zip:
            tx.output.assume_equal(state_source, state)
            return ZipVariable([], sources=iterators, strict=bool(state), source=source)
        fn = tx.wrap(args[0], ReducedSource(source, "arg", 0))
        kind = MapVariable if cls is map else FilterVariable
        return kind([], sources=iterators, fn=fn, source=source)
    seq_value = value.__reduce__()[1][0]
    if state is not None and _unread_list(tx, seq_value):
        if cls is _LIST_ITERATOR:
            return ListRestIteratorVariable.make(tx, value, state, source)
        if cls is _LIST_REVERSED:
            return ReversedRestIteratorVariable.make(tx, value, state, source)
    if cls in _RANGE_ITERATORS:  # read from where it stands
        vt = RangeRestIteratorVariable([], value=value, rest=range_rest(value), source=source)
        vt._tx = tx
        return vt
    seq = tx.wrap(seq_value, ReducedSource(source, "arg", 0))
    tx.output.assume_equal(state_source, state)
    if cls is _LIST_REVERSED:
        # NOTE(3.13): exhausted, it reduces to ``reversed([])`` with no state; 3.11/3.12 give
        # ``iter(())`` (once the list shrank below it) or the list and -1
        if not isinstance(seq, ListVariable) or state is None:
            return ReversedIteratorVariable([], seq=seq, position=-1, source=source)
        return ReversedIteratorVariable(seq.items, seq=seq, position=state, source=source)
    if isinstance(seq, (ListVariable, TupleVariable)):
        items = seq.items
    elif isinstance(seq, ConstantVariable) and isinstance(seq.value, (str, bytes)):
        items = seq.unpack(tx)
    else:
        return None
    if state is None:  # exhausted (its sequence let go): stays so
        return SeqIteratorVariable(items, index=len(items), seq=seq, exhausted=True, source=source)
    return SeqIteratorVariable(items, index=state, seq=seq, source=source)


def _unread_list(tx: Translator, seq: Any) -> bool:
    """Is ``seq`` a plain list the trace has not read (not reached yet, or only held: an unread
    ``LazyListVariable`` it has not appended to), nor read through an iterator?"""
    if type(seq) is not list or id(seq) in tx.output.read_through:
        return False
    known = tx.output.wrapped.get(id(seq))
    if known is None:
        return True
    vt = known[1]
    return (
        known[0] is seq
        and isinstance(vt, LazyListVariable)
        and not (vt.read or vt.appended or vt.before_read)
    )


#: Iterators an input ``enumerate`` may read: taking their items again has no effects.
_POSITIONED = (*_SEQ_ITERATORS, _LIST_REVERSED, *_RANGE_ITERATORS)
#: Trackers of iterators read from where they stand, whose replay is relative
_RELATIVE = (ListRestIteratorVariable, ReversedRestIteratorVariable, RangeRestIteratorVariable)
#: Their trackers (and a ``zip`` of them)
_REPLAYABLE_VTS = (
    SeqIteratorVariable,
    RangeRestIteratorVariable,
    ReversedIteratorVariable,
    ZipVariable,
)


def _wrap_enumerate(tx: Translator, value: enumerate, source: Source) -> VariableTracker | None:
    """An ``enumerate`` over a list, tuple, string, range or reversed list iterator, or a ``zip``
    of such (items taken again at run time, to count them, must have no effects: not over
    ``map`` and the like). Its count is guarded, or, where every iterator below is read from
    where it stands (``_rest_leaves``), read as a number like any int input."""
    sub_value, count = value.__reduce__()[1]
    if not _replayable(sub_value):
        return None
    sub = tx.wrap(sub_value, ReducedSource(source, "arg", 0))
    if not isinstance(sub, _REPLAYABLE_VTS):
        return None
    count_source = ReducedSource(source, "arg", 1)
    count_vt = None
    if _rest_leaves(sub) is not None:
        count_vt = tx.wrap(count, count_source)  # a number like any other (automatic dynamic)
    else:
        tx.output.assume_type(count_source, int)
        tx.output.assume_equal(count_source, count)
    return EnumerateVariable(
        [], sources=[sub], count=count, input_count=count, source=source, count_vt=count_vt
    )


def _replayable(it: Any) -> bool:
    """Can items be taken again from the real iterator ``it`` with no effects (a positioned
    iterator)? Not a ``zip`` of them: an ``enumerate`` over a zip whose body breaks and reads
    its count as a constant (an index: torchdiffeq's Runge-Kutta stages) would compile a resume
    function per iteration up to the recompile limit, each call then taking a break per
    iteration (torchdiffeq's dopri5: 9 breaks to 14, 1.41x eager to 0.33x); its loop runs in
    Python from its first break."""
    return type(it) in _POSITIONED


def _rest_leaves(vt: VariableTracker) -> list[IteratorVariable] | None:
    """The iterators read from where they stand that ``vt`` (one, or a ``zip`` of them) pulls
    from; None where one of them has its position guarded."""
    if isinstance(vt, ZipVariable):
        leaves = [_rest_leaves(sub) for sub in vt.sources]
        return None if None in leaves else [leaf for part in leaves for leaf in part]
    if isinstance(vt, RangeRestIteratorVariable) or (
        isinstance(vt, (ListRestIteratorVariable, ReversedRestIteratorVariable))
        and vt.rest is not None
    ):
        return [vt]
    return None


def _leaves(vt: VariableTracker) -> list[IteratorVariable]:
    """The iterators ``vt`` (one, or a ``zip`` of them) pulls from."""
    if isinstance(vt, ZipVariable):
        return [leaf for sub in vt.sources for leaf in _leaves(sub)]
    return [vt]


def dict_iter_position(it: Any) -> int | None:
    """Runtime helper (and what guards render): how many items the dict iterator ``it`` gave, if
    its dict is as it was made over (None: exhausted, or the dict changed: its next item raises,
    or comes from the hash table's order rather than the keys')."""
    owner = gc.get_referents(it)
    if not owner or not isinstance(owner[0], dict):  # exhausted: it let go of its dict
        return None
    try:
        rest = it.__reduce__()[1][0]  # what a copy of it would give
    except RuntimeError:  # the dict changed size
        return None
    d, reverse = owner[0], type(it) in _DICT_REVERSED
    kind = (_DICT_REVERSED if reverse else _DICT_ITERATORS)[type(it)]
    start = len(d) - len(rest)
    if start < 0:
        return None
    tail = list((reversed if reverse else iter)(getattr(d, kind)()))[start:]
    if kind == "items":
        same = all(a[0] is b[0] and a[1] is b[1] for a, b in zip(tail, rest, strict=True))
    else:
        same = all(a is b for a, b in zip(tail, rest, strict=True))
    return start if same else None


@dataclass(frozen=True)
class DictIterPositionSource(ChainedSource):
    """``dict_iter_position(base)``, read by guards."""

    def render(self, roots: dict[str, str]) -> str:
        helper = f"__import__({__name__!r}, fromlist=['_']).dict_iter_position"
        return f"{helper}({self.base.render(roots)})"


def _wrap_dict_iterator(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """An iterator over a dict's keys, values or items, forwards or reversed (not exhausted, its
    dict unchanged since it was made): a ``DictIteratorVariable`` over the dict's tracker, guarded
    on its position (which also tells a dict changed under it)."""
    index = dict_iter_position(value)
    if index is None:
        return None
    container = tx.wrap(gc.get_referents(value)[0], ViewedDictSource(source))
    if not isinstance(container, DictVariable):
        return None
    position = DictIterPositionSource(source)
    tx.output.assume_type(position, int)
    tx.output.assume_equal(position, index)
    reverse = type(value) in _DICT_REVERSED
    keys = tuple(reversed(container.items)) if reverse else tuple(container.items)
    return DictIteratorVariable(
        [],
        container=container,
        kind=(_DICT_REVERSED if reverse else _DICT_ITERATORS)[type(value)],
        keys=keys,
        index=index,
        input_index=index,
        source=source,
        reverse=reverse,
    )


@dataclass(frozen=True)
class ReprSource(ChainedSource):
    """``repr(base)``, read by guards (an ``itertools.count`` shows its state only there)."""

    def render(self, roots: dict[str, str]) -> str:
        return f"repr({self.base.render(roots)})"


def _wrap_count(tx: Translator, value: itertools.count, source: Source) -> VariableTracker | None:
    """An ``itertools.count`` of ints or floats: its polyfill's generator started from the count's
    state (``count(3, 2)`` as its repr shows it, guarded), the items the trace takes taken from
    the real object afterwards (``GeneratorVariable.replay_log``)."""
    text = repr(value)
    args = ast.literal_eval(text[len("count") :])
    args = args if isinstance(args, tuple) else (args,)
    if not all(type(a) in (int, float) and math.isfinite(a) for a in args):
        return None
    shown = ReprSource(source)
    tx.output.assume_type(shown, str)
    tx.output.assume_equal(shown, text)
    fn = tx.wrap_static(polyfills.lookup(itertools.count))
    generator = fn.call_function(tx, [ConstantVariable(a) for a in args], {})
    generator.source = source  # made just now, for this input only
    return generator


def _wrap_sequence_iterator(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """CPython's sequence iterator (``iter(obj)`` of a class with only ``__getitem__``) that has
    not ended: its polyfill's generator from the iterator's position (guarded), its items read
    when taken, the real object moved where the trace left it afterwards (``replay_log``)."""
    state = reduced_part(value, "state", 0)
    if state is None:  # ended: its sequence let go
        return None
    seq = tx.wrap(value.__reduce__()[1][0], ReducedSource(source, "arg", 0))
    tx.output.assume_equal(ReducedSource(source, "state"), state)
    fn = tx.wrap_static(polyfills.lookup(sequence_iterator_at))
    generator = fn.call_function(tx, [seq, ConstantVariable(state)], {})
    generator.source, generator.origin = source, state  # made just now, for this input only
    return generator


# -- methods of generators, in the container method table ------------------------------------------
_NONE = ConstantVariable(None)


def _generator_next(tx, obj, value=_NONE):
    """``next(g)`` and ``g.send(value)``: the value sent is what the suspended ``yield`` gives
    (``YIELD_VALUE`` left None there for ``next``)."""
    if not (value.is_python_constant() and value.as_python_constant() is None):
        send_into(obj, value)
    item = obj.next_item(tx)
    if item is None:
        raise stop_iteration(obj)
    return item


def stop_iteration(obj: VariableTracker) -> PythonError:
    """The ``StopIteration`` that taking an item from the ended iterator ``obj`` raises: a
    generator's holds what its frame returned (``e.value``, ``e.args``; none for None), kept as
    its tracker, a tensor included."""
    result = obj.result if isinstance(obj, GeneratorVariable) else None
    if result is None or (result.is_python_constant() and result.as_python_constant() is None):
        return PythonError(StopIteration())
    return PythonError(StopIteration(IdentityKey(result, result)))


def send_into(obj: GeneratorVariable, value: VariableTracker) -> None:
    """Put ``value`` where the generator's frame, suspended at a ``yield``, takes what it is sent.
    A generator not started yet raises CPython's TypeError; one that ended ignores it. Only a
    generator made in the trace whose next item is not made yet is sent to: an input's items are
    taken from the real object afterwards, and an item made in advance was sent None."""
    if obj.done and obj.index >= len(obj.items):
        return  # ``send`` on an ended generator raises StopIteration, as ``next`` does
    if obj.source is not None or obj.index < len(obj.items) or obj.frame is None:
        raise Unsupported("generator", f"a value sent into {obj!r} (`.send(x)`)")
    if not obj.given:
        message = "can't send non-None value to a just-started generator"
        raise PythonError(TypeError(message))
    obj.frame.stack[-1] = value


def _generator_close(tx, obj):
    """``g.close()`` of a generator made in the trace: one not started, or ended, just ends; one
    suspended at a ``yield`` no handler of its frame covers (but the implicit one turning a
    StopIteration into a RuntimeError) ends with no code run, as the GeneratorExit leaves its
    frame at once. At a ``yield`` inside a try or with block CPython runs the block's cleanup:
    not traced (a break)."""
    if obj.source is not None or obj.index < len(obj.items):
        raise Unsupported("generator", f"closing {obj!r} given to the trace or read ahead")
    frame = obj.frame
    if frame is not None and obj.given and not obj.done and not _bare_yield(frame):
        raise Unsupported("generator", f"closing {obj!r} at a yield inside a try or with block")
    obj.done, obj.stop_seen, obj.result = True, True, None
    return _NONE


def _bare_yield(frame: Any) -> bool:
    """Is the generator frame ``frame`` suspended at a ``yield`` no handler covers (the
    generator's implicit StopIteration handler aside)?"""
    entry = covering(frame.code)[frame.ip - 1]
    if entry is None:
        return True
    handler = frame.instructions[entry.target]
    intrinsic = getattr(getattr(handler, "arg", None), "name", "")  # an ``Intrinsic1Op``
    return intrinsic == "INTRINSIC_STOPITERATION_ERROR"


_GENERATOR_METHODS = {
    "send": (False, _generator_next),
    "__next__": (False, _generator_next),
    "close": (True, _generator_close),
}

containers.METHODS[GeneratorVariable] = _GENERATOR_METHODS


# -- ``iter()`` of an iterator and of a dict view --------------------------------------------------
@dispatch.rule("get_iter", IteratorVariable)
def _iterator_itself(tx: Translator, value: IteratorVariable) -> IteratorVariable:
    return value


@dispatch.rule("get_iter", containers.DictViewVariable)
def _view_iterator(tx: Translator, value: containers.DictViewVariable) -> IteratorVariable:
    return dict_iter(value.dict_vt, value.kind)


@dispatch.rule("get_iter", containers.MappingProxyVariable)
def _namespace_iterator(tx: Translator, value: containers.MappingProxyVariable) -> IteratorVariable:
    return dict_iter(value.mapping, "keys")
