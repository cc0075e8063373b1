"""Real iterators reaching the trace as inputs: a list, tuple, string, range or reversed
list iterator, an iterator over a dict (its keys, values or items), an ``itertools.count``, and
``map``/``zip``/``filter``/``enumerate`` objects over such iterators.

The usual way there is a graph break: a ``map``/``zip`` object or a list iterator made in the trace
and still live is rebuilt as the real object (``reconstruct``) and handed to the resume function,
whose trace meets it as an argument. Read through ``__reduce__`` (the sequence and position of a
sequence iterator, the function and sub-iterators of ``map``...), each becomes the tracker the
trace would have made itself, guarded on what it read: the iterator's type, the sequence (a list
with its usual guards, a string or range by value) and the position. Items the trace takes are
taken from the real object afterwards (``replay_position``), so the caller's iterator ends where
CPython's would; ``reconstruct`` gives back the same object (its source).

An ``enumerate`` over such a sequence or range iterator is read too: its count cannot be set on
the real object, so the items the trace took through it are taken again from the real object,
before its iterator's own replay (``EnumerateVariable.replay_log``).
"""

from __future__ import annotations

import ast
import gc
import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....guards.sources import ChainedSource, Source
from ... import polyfills
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import DictVariable, ListVariable, TupleVariable
from ..functions.callables import UserFunctionVariable
from ..live_inputs import ViewedDictSource
from .builtin_iterators import (
    DictIteratorVariable,
    RangeIteratorVariable,
    ReversedIteratorVariable,
    SeqIteratorVariable,
)
from .combinators import EnumerateVariable, FilterVariable, MapVariable, ZipVariable
from .iterator_trackers import IteratorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Emitter
    from ...translator import Translator

_SEQ_ITERATORS = tuple(
    {type(iter(v)) for v in ([], (), "", "\u00e9", b"")}
)  #: ``iter()`` of a list, tuple, str (ASCII or not), bytes
_RANGE_ITERATORS = (type(iter(range(0))), type(iter(range(2**64))))
_LIST_REVERSED = type(reversed([]))
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
    )


def wrap_input_iterator(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """The tracker for a real iterator read through ``source`` (None: not one of these kinds, or
    over something the trace cannot iterate)."""
    if not is_input_iterator(value):
        return None
    from ..builder import wrap

    cls = type(value)
    tx.output.assume_type(source, cls)
    if cls is enumerate:
        return _wrap_enumerate(tx, value, source)
    if cls in _DICT_ITERATORS or cls in _DICT_REVERSED:
        return _wrap_dict_iterator(tx, value, source)
    if cls is itertools.count:
        return _wrap_count(tx, value, source)
    state_source = ReducedSource(source, "state")
    state = reduced_part(value, "state", 0)
    if cls in _LAZY:
        args = value.__reduce__()[1]
        first = 1 if cls in (map, filter) else 0
        iterators = []
        for k in range(first, len(args)):
            sub = wrap(tx, args[k], ReducedSource(source, "arg", k))
            if not isinstance(sub, IteratorVariable):
                return None
            iterators.append(sub)
        if cls is zip:
            tx.output.assume_equal(state_source, state)
            return ZipVariable([], sources=iterators, strict=bool(state), source=source)
        fn = wrap(tx, args[0], ReducedSource(source, "arg", 0))
        kind = MapVariable if cls is map else FilterVariable
        return kind([], sources=iterators, fn=fn, source=source)
    seq_value = value.__reduce__()[1][0]
    seq = wrap(tx, seq_value, ReducedSource(source, "arg", 0))
    tx.output.assume_equal(state_source, state)
    if cls in _RANGE_ITERATORS:
        return RangeIteratorVariable([], index=state or 0, value=seq_value, source=source)
    if cls is _LIST_REVERSED:
        if not isinstance(seq, ListVariable):  # exhausted: ``iter(())``
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


#: Iterators an input ``enumerate`` may read: taking their items again has no effects.
_POSITIONED = (*_SEQ_ITERATORS, _LIST_REVERSED, *_RANGE_ITERATORS)


def _wrap_enumerate(tx: Translator, value: enumerate, source: Source) -> VariableTracker | None:
    """An ``enumerate`` over a list, tuple, string, range or reversed list iterator (items taken
    again at run time, to count them, must have no effects: not over ``map`` and the like), its
    count guarded."""
    from ..builder import wrap

    sub_value, count = value.__reduce__()[1]
    if type(sub_value) not in _POSITIONED:
        return None
    sub = wrap(tx, sub_value, ReducedSource(source, "arg", 0))
    if not isinstance(sub, (SeqIteratorVariable, RangeIteratorVariable, ReversedIteratorVariable)):
        return None
    count_source = ReducedSource(source, "arg", 1)
    tx.output.assume_type(count_source, int)
    tx.output.assume_equal(count_source, count)
    return EnumerateVariable([], sources=[sub], count=count, input_count=count, source=source)


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
    from ..builder import wrap

    index = dict_iter_position(value)
    if index is None:
        return None
    container = wrap(tx, gc.get_referents(value)[0], ViewedDictSource(source))
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
    fn = UserFunctionVariable(polyfills.lookup(itertools.count))
    generator = fn.call_function(tx, [ConstantVariable(a) for a in args], {})
    generator.source = source  # made just now, for this input only
    return generator
