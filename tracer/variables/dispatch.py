"""The operation protocol: what the opcodes and any tracker may ask of a value, and its rule table.

Each operation below (a call, a truth test, ``iter()``, an attribute read...) looks up the rule
registered for the type of the tracker it is asked about, nearest class of its MRO first, and
otherwise the operation's general rule. Families register rules with ``@rule(operation, *types)``
(no type: the general rule, registered by the family that owns the operation's meaning, mostly
``operations.py``). This module imports only ``base``: every family can ask for an operation of a
family above it, and the lookup is the only thing that knows who answers.

    @dispatch.rule("get_iter", IteratorVariable)
    def _iterator_itself(tx, value):
        return value
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from .base import VariableTracker

if TYPE_CHECKING:
    from ..translator import Translator

F = TypeVar("F", bound=Callable[..., Any])

#: operation -> tracker class -> rule; ``VariableTracker`` holds the general rule.
RULES: dict[str, dict[type, Callable[..., Any]]] = {
    name: {}
    for name in (
        "call",
        "iterate",
        "get_iter",
        "truth",
        "is_none",
        "is_same",
        "contains",
        "call_operator",
        "call_builtin",
        "getitem",
        "setitem",
        "delitem",
        "getattr",
        "store_attr",
        "construct",
        "sort_order",
        "namedtuple_attribute",
        "index_stand_in",
        "throw",
    )
}
_FOUND: dict[tuple[str, type], Callable[..., Any]] = {}


def rule(operation: str, *types: type) -> Callable[[F], F]:
    """Registers the decorated function as what ``operation`` does on trackers of ``types`` (and
    their subclasses without a rule of their own); with no type, as its general rule."""

    def register(fn: F) -> F:
        table = RULES[operation]
        for cls in types or (VariableTracker,):
            assert cls not in table, f"{operation} has a rule for {cls.__name__} already"
            table[cls] = fn
        _FOUND.clear()
        return fn

    return register


def lookup(operation: str, cls: type) -> Callable[..., Any]:
    """The rule of ``operation`` for trackers of class ``cls``."""
    try:
        return _FOUND[operation, cls]
    except KeyError:
        pass
    table = RULES[operation]
    found = next((table[c] for c in cls.__mro__ if c in table), None)
    if found is None:
        raise LookupError(f"no rule for {operation} on {cls.__name__}: its family is not loaded")
    _FOUND[operation, cls] = found
    return found


def call(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Any call the bytecode makes (the call-rule table first, then the tracker's own)."""
    return lookup("call", type(fn))(tx, fn, args, kwargs)


def iterate(tx: Translator, value: VariableTracker) -> list[VariableTracker]:
    """The items of an iterable whose length is known at trace time."""
    return lookup("iterate", type(value))(tx, value)


def get_iter(tx: Translator, value: VariableTracker) -> VariableTracker:
    """``iter(value)``: an iterator tracker."""
    return lookup("get_iter", type(value))(tx, value)


def each_item(tx: Translator, value: VariableTracker) -> Iterator[VariableTracker]:
    """The items of an iterable taken one at a time, when the consumer asks for the next, as
    CPython's ``list.extend``, ``deque.extend``, ``dict.update``, ``set.update``... take them: a
    ``map`` or generator that reads or changes the container being filled sees the items before."""
    it = get_iter(tx, value)
    while (item := it.next_item(tx)) is not None:
        yield item


def truth(tx: Translator, value: VariableTracker) -> bool:
    """``bool(value)`` where the trace needs its answer (a jump, ``not``)."""
    return lookup("truth", type(value))(tx, value)


def is_none(tx: Translator, value: VariableTracker) -> bool:
    """``value is None``."""
    return lookup("is_none", type(value))(tx, value)


def is_same(tx: Translator, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    """``lhs is rhs``."""
    return lookup("is_same", type(lhs))(tx, lhs, rhs)


def contains(tx: Translator, container: VariableTracker, item: VariableTracker) -> bool:
    """``item in container``."""
    return lookup("contains", type(container))(tx, container, item)


def call_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``op(*args)`` for an ``operator`` function (its rules: the operator registry)."""
    return lookup("call_operator", VariableTracker)(tx, op, args)


def call_builtin(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """A call of the builtin ``fn`` (its rules: the builtin registry)."""
    return lookup("call_builtin", VariableTracker)(tx, fn, args, kwargs)


def getitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> VariableTracker:
    """``obj[key]``."""
    return lookup("getitem", type(obj))(tx, obj, key)


def setitem(
    tx: Translator, obj: VariableTracker, key: VariableTracker, value: VariableTracker
) -> None:
    """``obj[key] = value``."""
    lookup("setitem", type(obj))(tx, obj, key, value)


def delitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> None:
    """``del obj[key]``."""
    lookup("delitem", type(obj))(tx, obj, key)


def getattr_(tx: Translator, obj: VariableTracker, name: str) -> VariableTracker:
    """``obj.name``."""
    return lookup("getattr", type(obj))(tx, obj, name)


def store_attr(tx: Translator, obj: VariableTracker, name: str, value: VariableTracker) -> None:
    """``obj.name = value``."""
    lookup("store_attr", type(obj))(tx, obj, name, value)


def construct(
    tx: Translator,
    cls: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a class tracker."""
    return lookup("construct", type(cls))(tx, cls, args, kwargs)


def sort_order(tx: Translator, *args: Any) -> list[int]:
    """The order ``sorted`` gives items (see its rule)."""
    return lookup("sort_order", VariableTracker)(tx, *args)


def namedtuple_attribute(tx: Translator, tup: VariableTracker, name: str) -> VariableTracker:
    """A field or method of a namedtuple."""
    return lookup("namedtuple_attribute", type(tup))(tx, tup, name)


def index_stand_in(value: VariableTracker) -> object | None:
    """What ``value``, not known at trace time, stands for in an operation that takes it as an
    index (``xs[i]``, ``slice.indices(n)``, ``operator.index``): a real object that CPython
    rejects there with the error the value itself would get; None where the value could be an
    index (its type has ``__index__`` and what it gives is data)."""
    return lookup("index_stand_in", type(value))(value)


def throw(tx: Translator, gen: VariableTracker, exc: VariableTracker) -> bool:
    """``gen.throw(exc)`` as ``contextlib``'s ``__exit__`` makes it, at the generator's
    ``yield``: True where the generator then ends (it caught ``exc``), False where ``exc``
    leaves it."""
    return lookup("throw", type(gen))(tx, gen, exc)
