"""The truth of objects of builtin container and scalar subclasses that define ``__bool__``:
CPython's truth test asks the class's ``__bool__`` before the length (``if d``, ``bool(d)``,
``not d``). The trackers of list, deque, dict, set subclasses answer truth from their storage's
length, so such a class is left to Python (a break); a list, deque or dict subclass with its own
``__bool__`` made in the function gave True where eager gives False. Each case is made in the
function and passed in; results compared with eager's (torch.compile gets all of them right)."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import assert_same

import bytegraph


def _false(self):
    return False


def _no_len(self):
    return 0


def _sub(base: type, **namespace) -> type:
    return type(f"{base.__name__.title()}Sub", (base,), namespace or {"__bool__": _false})


MAKERS = {
    "list": lambda: _sub(list)([1, 2]),
    "deque": lambda: _sub(collections.deque)([1, 2]),
    "dict": lambda: _sub(dict)(a=1),
    "OrderedDict": lambda: _sub(collections.OrderedDict)(a=1),
    "Counter": lambda: _sub(collections.Counter)("aa"),
    "defaultdict": lambda: _sub(collections.defaultdict)(int, a=1),
    "set": lambda: _sub(set)({1}),
    "frozenset": lambda: _sub(frozenset)({1}),
    "tuple": lambda: _sub(tuple)((1, 2)),
    "namedtuple": lambda: _sub(collections.namedtuple("P", "a b"))(1, 2),
    "str": lambda: _sub(str)("ab"),
    "int": lambda: _sub(int)(3),
    "float": lambda: _sub(float)(2.0),
    "list with __len__": lambda: _sub(list, __len__=_no_len)([1]),
}


def _truths(x, value):
    return x + 1, (1 if value else 2), bool(value), not value


@pytest.mark.parametrize("kind", MAKERS)
def test_made_in_the_function(kind):
    make = MAKERS[kind]

    def fn(x):
        return _truths(x, make())

    compiled = bytegraph.compile(fn, backend="eager")
    for _ in range(2):
        assert_same(compiled(torch.zeros(2)), fn(torch.zeros(2)))


@pytest.mark.parametrize("kind", MAKERS)
def test_passed_in(kind):
    value = MAKERS[kind]()
    compiled = bytegraph.compile(_truths, backend="eager")
    for _ in range(2):
        assert_same(compiled(torch.zeros(2), value), _truths(torch.zeros(2), value))
