"""The value kinds a cell puts in its containers and passes to its operation, and the containers.

A ``Kind`` makes its value (``make()``: a fresh object for mutable kinds, the same object for
classes, functions, modules and singletons) and says how a function body writes it when the
container is built inside the function (``literal``: a constant's source; ``None``: the body reads
it from the global ``V``). The catalogue covers what the tracer models and what it does not:
constants of each type, None, classes, builtin types, functions, builtin functions, bound
methods, modules, enum members, plain objects, objects with their own ``__eq__``/``__hash__``,
dataclasses, namedtuples, tensors, dtypes, devices, ``torch.Size``, frozensets, ranges, slices,
the unhashable list, dict and set, deques, ordered dicts and generators. Some kinds stand for how
the tracer comes by the value: ``symint`` and ``float_arg`` are passed as arguments and change
between calls (``passed``: the cell is called with ``variants`` first, so that bytegraph makes an
int symbolic), ``item`` and ``size_element`` are computed in the body (``expr``:
``tensor.item()``, an element of ``x.shape``), and the zero-dimensional ``tensor0d``.

A container of one of the five container types holds the kind's value beside a string
(``CONTAINERS``); where the value is unhashable, dicts and sets hold only the other item. Sets
hold ``0`` first: it takes slot 0 of the table whatever the value's hash, so CPython's iteration
order is ``0`` then the value in every process (a string's hash, and an object's, change from one
process to the next). The other types' receivers are one fixed value each (``RECEIVERS``).
Besides the five builtin containers, ``CONTAINERS`` has the ``collections`` containers, the dict
views, a dict and a list subclass overriding one method, ``bytearray`` (which holds bytes only:
crossed with a few kinds) and the iterators, each built partly consumed (``advanced``: the item
before the value is read, so a cell given one meets it at a position).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


class Plain:
    """An object with the default ``__eq__`` and ``__hash__`` (by identity)."""

    def __init__(self) -> None:
        self.a = 1

    def method(self, v: Any = None) -> Any:
        return v


class Keyed:
    """An object with its own ``__eq__`` and ``__hash__``, by ``key``."""

    def __init__(self, key: int) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyed) and other.key == self.key

    def __hash__(self) -> int:
        return hash(("Keyed", self.key))

    def __repr__(self) -> str:
        return f"Keyed({self.key})"


@dataclass(frozen=True)
class Point:
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def function(v: Any = None) -> Any:
    """A plain Python function (a value; the ``map`` iterators call it)."""
    return v


def gen(items: Any) -> Any:
    """A generator over ``items``."""
    yield from items


def advanced(iterator: Any) -> Any:
    """``iterator`` after its first item is read: an iterator met part way through."""
    next(iterator)
    return iterator


class SubDict(dict):
    """A dict subclass overriding one method."""

    def get(self, key: Any, default: Any = None) -> Any:
        return ("sub", dict.get(self, key, default))


class SubList(list):
    """A list subclass overriding one method."""

    def append(self, item: Any) -> None:
        list.append(self, ("sub", item))


_BOUND_OWNER = Plain()
_BOUND = _BOUND_OWNER.method  # one bound-method object, so that identity is defined


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[], Any]
    literal: str | None = None  #: source of an equal constant, for containers built in the body
    #: the cell takes the value as its argument ``V``, first called with each of ``variants``
    passed: bool = False
    variants: tuple[Any, ...] = ()
    expr: str | None = None  #: source the body computes the value with (every placement)
    fresh: bool = False  #: consumed by use: a new one for each run


def _same(value: Any) -> Callable[[], Any]:
    return lambda: value


KINDS: list[Kind] = [
    Kind("none", _same(None), "None"),
    Kind("bool", _same(True), "True"),
    Kind("int", _same(7), "7"),
    Kind("float", _same(2.5), "2.5"),
    Kind("complex", _same(1 + 2j), "(1+2j)"),
    Kind("str", _same("ab"), "'ab'"),
    Kind("bytes", _same(b"ab"), "b'ab'"),
    Kind("tuple", _same((1, "a"))),
    Kind("frozenset", _same(frozenset({1, 2}))),
    Kind("range", _same(range(3))),
    Kind("slice", _same(slice(1, 3))),
    Kind("class", _same(Plain)),
    Kind("builtin_type", _same(int)),
    Kind("function", _same(function)),
    Kind("builtin_function", _same(len)),
    Kind("bound_method", _same(_BOUND)),
    Kind("module", _same(math)),
    Kind("enum", _same(Color.RED)),
    Kind("object", Plain),
    Kind("eq_object", lambda: Keyed(1)),
    Kind("dataclass", _same(Point(1, 2))),
    Kind("namedtuple", _same(Pair(1, 2))),
    Kind("tensor", lambda: torch.tensor([1.0, 2.0])),
    Kind("dtype", _same(torch.float32)),
    Kind("device", _same(torch.device("cpu"))),
    Kind("size", _same(torch.Size([2, 3]))),
    Kind("list", lambda: [1, 2]),
    Kind("dict", lambda: {"a": 1}),
    Kind("set", lambda: {1, 2}),
    Kind("symint", _same(7), passed=True, variants=(3, 5)),
    Kind("float_arg", _same(2.5), passed=True, variants=(0.5, 1.5)),
    Kind("item", _same(2.0), expr="ITEM.item()"),
    Kind("size_element", _same(2), expr="x.shape[0]"),
    Kind("tensor0d", lambda: torch.tensor(3.0)),
    Kind("deque", lambda: collections.deque([1, 2])),
    Kind("ordered_dict", lambda: collections.OrderedDict(a=1)),
    Kind("generator", lambda: gen([1, 2]), fresh=True),
]
KIND = {k.name: k for k in KINDS}

#: Kinds for operations whose receiver is not a container: one of each family, the receiver's
#: own type added (``NATURAL``) so that the successful path is exercised too.
FEW = ("int", "none", "tuple", "object", "tensor")
NATURAL = {
    "str": "str",
    "bytes": "bytes",
    "int": "int",
    "bool": "bool",
    "float": "float",
    "complex": "complex",
    "type": "class",
    "object": "object",
    "range": "int",
    "slice": "int",
}


def hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


#: Container letter -> (type name, how it is built around the value ``v``, as source and as a
#: Python callable). ``h`` says whether ``v`` is hashable.
CONTAINERS: dict[str, tuple[str, Callable[[str, bool], str]]] = {
    "D": ("dict", lambda v, h: f"{{{v}: 'a', 'b': {v}}}" if h else f"{{'b': {v}}}"),
    "S": ("set", lambda v, h: f"{{0, {v}}}" if h else "{0}"),
    "F": ("frozenset", lambda v, h: f"frozenset({{0, {v}}})" if h else "frozenset({0})"),
    "L": ("list", lambda v, h: f"[{v}, 'b']"),
    "T": ("tuple", lambda v, h: f"({v}, 'b')"),
    "Q": ("deque", lambda v, h: f"collections.deque([{v}, 'b'])"),
    "O": (
        "OrderedDict",
        lambda v, h: (
            f"collections.OrderedDict([({v}, 'a'), ('b', {v})])"
            if h
            else f"collections.OrderedDict([('b', {v})])"
        ),
    ),
    "E": (
        "defaultdict",
        lambda v, h: (
            f"collections.defaultdict(list, {{{v}: 'a', 'b': {v}}})"
            if h
            else f"collections.defaultdict(list, {{'b': {v}}})"
        ),
    ),
    "C": (
        "Counter",
        lambda v, h: f"collections.Counter([{v}, 'b'])" if h else "collections.Counter(['b'])",
    ),
    "M": (
        "ChainMap",
        lambda v, h: (
            f"collections.ChainMap({{{v}: 'a'}}, {{'b': {v}}})"
            if h
            else f"collections.ChainMap({{}}, {{'b': {v}}})"
        ),
    ),
    "K": ("dict_keys", lambda v, h: f"{{{v}: 'a', 'b': 1}}.keys()" if h else "{'b': 1}.keys()"),
    "U": ("dict_values", lambda v, h: f"{{'a': {v}, 'b': 1}}.values()"),
    "I": ("dict_items", lambda v, h: f"{{'a': {v}, 'b': 1}}.items()"),
    "A": (
        "SubDict",
        lambda v, h: f"SubDict({{{v}: 'a', 'b': {v}}})" if h else f"SubDict({{'b': {v}}})",
    ),
    "P": ("SubList", lambda v, h: f"SubList([{v}, 'b'])"),
    "B": ("bytearray", lambda v, h: "bytearray(b'a,b')"),
    "J": ("list_iterator", lambda v, h: f"advanced(iter([0, {v}, 'b']))"),
    "N": ("enumerate", lambda v, h: f"advanced(enumerate([0, {v}, 'b']))"),
    "Z": ("zip", lambda v, h: f"advanced(zip([0, {v}, 'b'], 'xyz'))"),
    "W": ("map", lambda v, h: f"advanced(map(function, [0, {v}, 'b']))"),
    "G": ("list_reverseiterator", lambda v, h: f"advanced(reversed(['b', {v}, 0]))"),
    "Y": ("generator", lambda v, h: f"advanced(gen([0, {v}, 'b']))"),
}
LETTER = {name: letter for letter, (name, _) in CONTAINERS.items()}
#: Containers that do not hold the kind's value: their operations take a few kinds.
HOLDS_NOTHING = {"B"}
#: Containers a cell consumes: they cannot be put back as they were before a call.
CONSUMED = {"J", "N", "Z", "W", "G", "Y"}

#: The receiver of the other types' methods, as source (evaluated with ``Plain`` in scope).
RECEIVERS: dict[str, str] = {
    "str": "'a,b'",
    "bytes": "b'a,b'",
    "int": "7",
    "bool": "True",
    "float": "2.5",
    "complex": "(1+2j)",
    "type": "Plain",
    "object": "Plain()",
    "range": "range(1, 7, 2)",
    "slice": "slice(1, 5, 2)",
}

#: Names every cell's globals hold besides its containers and ``V``.
SCOPE: dict[str, Any] = {
    "torch": torch,
    "math": math,
    "Plain": Plain,
    "Keyed": Keyed,
    "Point": Point,
    "Pair": Pair,
    "Color": Color,
    "dataclasses": dataclasses,
    "collections": collections,
    "SubDict": SubDict,
    "SubList": SubList,
    "gen": gen,
    "advanced": advanced,
    "function": function,
    "ITEM": torch.tensor(2.0),
}
