"""The ``collections`` module's containers made during the trace.

``DequeVariable`` is a ``collections.deque`` (a list tracker with a ``maxlen``); ``defaultdict``,
``OrderedDict`` and ``Counter`` are ``DictVariable``s whose ``cls`` says which (``construct`` builds
them). Their own methods are the tables ``DEQUE_METHODS`` and ``DICT_SUBCLASS_METHODS`` that
``container_methods.call_method`` consults; everything else is a dict's or a list's method.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from .builtin_containers import DictVariable, ListVariable, TupleVariable, hash_key, key_vt

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

NONE = ConstantVariable(None)


@dataclass(eq=False)
class DequeVariable(ListVariable):
    """A ``collections.deque`` made in the trace; ``items`` in order, at most ``maxlen`` of them."""

    maxlen: int | None = None

    def python_type(self) -> type:
        return collections.deque

    def reconstruct(self, cg: Codegen) -> None:
        def build() -> None:
            cg.load_const(collections.deque)
            self._reconstruct_items(cg)
            cg.build_list(len(self.items))
            cg.load_const(self.maxlen)
            cg.call_function(2)

        cg.build_once(self, build)

    def trim(self, from_left: bool) -> None:
        """Drop items past ``maxlen`` from the other end, as a bounded deque does."""
        while self.maxlen is not None and len(self.items) > self.maxlen:
            self.items.pop(0 if from_left else -1)

    def __repr__(self) -> str:
        return f"DequeVariable({self.items!r})"


#: The classes ``construct`` makes.
CLASSES = frozenset(
    {collections.deque, collections.defaultdict, collections.OrderedDict, collections.Counter}
)


def construct(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``deque(...)``, ``defaultdict(...)``, ``OrderedDict(...)``, ``Counter(...)``; None for
    other classes."""
    if cls is collections.deque:
        return _deque(tx, *args, **kwargs)
    if cls is collections.defaultdict:
        factory = args[0] if args else NONE
        items = _dict_items(tx, args[1:], kwargs)
        return DictVariable(items, cls=cls, default_factory=factory)
    if cls is collections.OrderedDict:
        return DictVariable(_dict_items(tx, args, kwargs), cls=cls)
    if cls is collections.Counter:
        counter = DictVariable({}, cls=cls)
        _counter_update(tx, counter, *args, **kwargs)
        return counter
    return None


def _deque(
    tx: Translator, iterable: VariableTracker | None = None, maxlen: VariableTracker = NONE
) -> DequeVariable:
    bound = maxlen.as_python_constant()
    items = dispatch.iterate(tx, iterable) if iterable is not None else []
    deque = DequeVariable(list(items), maxlen=bound)
    deque.trim(from_left=True)
    return deque


def _dict_items(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> dict[Any, VariableTracker]:
    made = dispatch.call_builtin(tx, dict, list(args), dict(kwargs))
    return dict(made.items)


# -- deque ---------------------------------------------------------------------------------------
def _append(tx, obj, value):
    obj.items.append(value)
    obj.trim(from_left=True)
    return NONE


def _appendleft(tx, obj, value):
    obj.items.insert(0, value)
    obj.trim(from_left=False)
    return NONE


def _items_for(tx, obj, iterable):
    """What ``extend``/``extendleft`` add, taken one at a time as CPython's deque takes them (a
    ``map`` reading the deque sees it grow); the deque itself is copied first, as CPython does."""
    if iterable is obj:
        return list(obj.items)
    return dispatch.each_item(tx, iterable)


def _extend(tx, obj, iterable):
    for item in _items_for(tx, obj, iterable):
        _append(tx, obj, item)
    return NONE


def _extendleft(tx, obj, iterable):
    for item in _items_for(tx, obj, iterable):
        _appendleft(tx, obj, item)
    return NONE


def _pop(tx, obj, left: bool = False):
    if not obj.items:
        raise PythonError(IndexError("pop from an empty deque"))
    return obj.items.pop(0 if left else -1)


def _rotate(tx, obj, n=ConstantVariable(1)):  # noqa: B008 (an immutable constant)
    steps = n.as_python_constant()
    if obj.items:
        steps %= len(obj.items)
        obj.items[:] = obj.items[-steps:] + obj.items[:-steps]
    return NONE


DEQUE_METHODS = {
    "append": (True, _append),
    "appendleft": (True, _appendleft),
    "extend": (True, _extend),
    "extendleft": (True, _extendleft),
    "pop": (True, lambda tx, obj: _pop(tx, obj)),
    "popleft": (True, lambda tx, obj: _pop(tx, obj, left=True)),
    "rotate": (True, _rotate),
    "copy": (False, lambda tx, obj: DequeVariable(list(obj.items), maxlen=obj.maxlen)),
}


# -- Counter -------------------------------------------------------------------------------------
def _count(vt: VariableTracker | None) -> Any:
    if vt is None:
        return 0
    if not vt.is_python_constant():
        raise Unsupported("data_dependent", f"a Counter holding {vt}")
    return vt.as_python_constant()


def _counter_update(tx, obj, iterable=None, **kwargs):
    """``Counter.update``: counts the items of an iterable one at a time as they come (CPython's
    ``_count_elements``), adds the counts of a mapping."""
    if isinstance(iterable, DictVariable):
        pairs = [(k, _count(v)) for k, v in iterable.items.items()]
    elif iterable is not None:
        pairs = ((_key(item), 1) for item in dispatch.each_item(tx, iterable))
    else:
        pairs = []
    for key, n in itertools.chain(pairs, [(k, _count(v)) for k, v in kwargs.items()]):
        obj.items[key] = ConstantVariable(_count(obj.items.get(key)) + n)
    return NONE


_key = hash_key


def _most_common(tx, obj, n=NONE):
    counts = [(k, _count(v)) for k, v in obj.items.items()]
    limit = n.as_python_constant()
    if limit is None:
        ordered = sorted(counts, key=lambda kv: kv[1], reverse=True)
    else:
        ordered = heapq.nlargest(limit, counts, key=lambda kv: kv[1])
    return ListVariable([TupleVariable([key_vt(k), ConstantVariable(c)]) for k, c in ordered])


def _counter_getitem(tx, obj, key):
    return obj.items.get(_key(key), ConstantVariable(0))  # ``__missing__`` gives 0, stores nothing


DICT_SUBCLASS_METHODS = {
    collections.Counter: {
        "update": (True, _counter_update),
        "most_common": (False, _most_common),
        "total": (False, lambda tx, obj: ConstantVariable(sum(map(_count, obj.items.values())))),
        "__getitem__": (False, _counter_getitem),
    },
}


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
