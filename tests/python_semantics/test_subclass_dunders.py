"""Subclasses of builtin types that define a dunder of their own, crossed with the operations that
reach it: syntax (``d[k]``, ``x in d``, ``-d``, ``f"{d}"``), builtins (``bool``, ``len``, ``set``,
``sorted``, ``getattr`` with a default...) and the ``operator`` module (``operator.setitem``,
``operator.truth``...). Each object is made in the function and passed in; the results are
compared with eager's (a break is allowed, a different value is not).

CPython asks the class first where the operation is a type slot the subclass fills (``__bool__``
before the length, ``__setitem__`` through ``operator.setitem``, ``__getattr__`` for
``getattr(d, name, default)``), and reads a set object's storage, not its ``__iter__``, where a
set method is given one. Each of those was wrong before the commit adding this file."""

from __future__ import annotations

import collections
import copy
import operator

import pytest
import torch
from difftest import assert_same

import bytegraph

_P = collections.namedtuple("_P", "a b")

#: base name -> (base, make an object of a subclass ``cls``)
BASES = {
    "list": (list, lambda c: c([1, 2])),
    "tuple": (tuple, lambda c: c((1, 2))),
    "namedtuple": (_P, lambda c: c(1, 2)),
    "str": (str, lambda c: c("ab")),
    "bytes": (bytes, lambda c: c(b"ab")),
    "int": (int, lambda c: c(3)),
    "float": (float, lambda c: c(2.5)),
    "complex": (complex, lambda c: c(1, 2)),
    "dict": (dict, lambda c: c(a=1)),
    "OrderedDict": (collections.OrderedDict, lambda c: c(a=1)),
    "Counter": (collections.Counter, lambda c: c("aab")),
    "defaultdict": (collections.defaultdict, lambda c: c(int, a=1)),
    "set": (set, lambda c: c({1})),
    "frozenset": (frozenset, lambda c: c({1})),
    "deque": (collections.deque, lambda c: c([1, 2])),
    "object": (object, lambda c: c()),
}


def _key(d):
    return "a" if isinstance(d, dict) else 0


def _sized(d):
    return not isinstance(d, (int, float, complex)) and type(d).__mro__[-2] is not object


def _set_items(d):
    return isinstance(d, (set, frozenset))


#: dunder -> (its body, the operations that reach it: one function of the object)
DUNDERS = {
    "__bool__": (
        "(self): return False",
        lambda d: (bool(d), not d, 1 if d else 2, operator.truth(d), operator.not_(d)),
    ),
    "__len__": ("(self): return 42", lambda d: (len(d), operator.length_hint(d))),
    "__getitem__": ("(self, i): return 7", lambda d: (d[_key(d)], operator.getitem(d, _key(d)))),
    "__setitem__": (
        "(self, k, v): pass",
        lambda d: (
            (operator.setitem(d, _key(d), 9), dict(d) if isinstance(d, dict) else list(d))
            if isinstance(d, (list, dict, collections.deque))
            else None
        ),
    ),
    "__delitem__": (
        "(self, k): pass",
        lambda d: (
            (operator.delitem(d, _key(d)), len(d))
            if isinstance(d, (list, dict, collections.deque))
            else None
        ),
    ),
    "__eq__": (
        "(self, o): return 'eq'",
        lambda d: (d == 5, 5 == d, operator.eq(d, 5), [d] == [5], d in [5]),
    ),
    "__ne__": ("(self, o): return 'ne'", lambda d: (d != 5, operator.ne(d, 5))),
    "__hash__": ("(self): return 3", lambda d: (hash(d), d in {3: 1}, len({d: 1}))),
    "__contains__": (
        "(self, o): return True",
        lambda d: (9 in d, 9 not in d, operator.contains(d, 9)),
    ),
    "__iter__": (
        "(self): return iter([5, 6])",
        lambda d: (
            (list(d), tuple(d), [*d], sorted(d), list(enumerate(d)), set(d), max(d), sum(d))
            if not isinstance(d, (int, float, complex))
            else list(d)
        ),
    ),
    "__reversed__": (
        "(self): return iter([8])",
        lambda d: list(reversed(d)) if not isinstance(d, (set, frozenset)) else None,
    ),
    "__repr__": ("(self): return 'R'", lambda d: (repr(d), f"{d!r}", repr([d]), repr({1: d}))),
    "__str__": ("(self): return 'S'", lambda d: (str(d), f"{d}", "%s" % (d,))),  # noqa: UP031
    "__format__": ("(self, s): return 'F'", lambda d: (format(d), f"{d}", f"{d:>3}")),
    "__add__": ("(self, o): return 'add'", lambda d: (d + d, operator.add(d, d))),
    "__iadd__": ("(self, o): return 'iadd'", lambda d: operator.iadd(d, d)),
    "__radd__": ("(self, o): return 'radd'", lambda d: 1 + d),
    "__mul__": ("(self, o): return 'mul'", lambda d: (d * 2, operator.mul(d, 2))),
    "__lt__": ("(self, o): return 'lt'", lambda d: (d < d, operator.lt(d, d))),
    "__or__": ("(self, o): return 'or'", lambda d: d | d),
    "__neg__": ("(self): return 'neg'", lambda d: (-d, operator.neg(d))),
    "__int__": ("(self): return 5", lambda d: int(d)),
    "__float__": ("(self): return 5.5", lambda d: float(d)),
    "__index__": ("(self): return 1", lambda d: ([10, 20, 30][d], operator.index(d), hex(d))),
    "__call__": ("(self, *a): return 'called'", lambda d: d()),
    "__getattr__": (
        "(self, n): return 'ga:' + n",
        lambda d: (d.foo, getattr(d, "bar"), hasattr(d, "baz"), getattr(d, "qux", 0)),  # noqa: B009
    ),
    "__copy__": ("(self): return 'cp'", lambda d: copy.copy(d)),
    "__missing__": ("(self, k): return 'miss'", lambda d: d["nokey"]),
}


def _subclass(base: type, dunder: str) -> type:
    namespace: dict = {}
    exec(f"def {dunder}{DUNDERS[dunder][0]}", namespace)  # noqa: S102 (the catalogue's bodies)
    return type(
        f"{base.__name__.title()}With{dunder.strip('_').title()}",
        (base,),
        {dunder: namespace[dunder]},
    )


def _outcome(fn, *args):
    """The result, or the exception's type and message."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 (compared, as eager's)
        return (type(e), str(e))


def _normal(value, cls: type, base: type):
    """``value`` with each object of ``cls`` as its class's name and its storage as ``base``'s
    repr shows it (eager's and the compiled call's objects are two objects)."""
    if type(value) in (tuple, list):
        return type(value)(_normal(v, cls, base) for v in value)
    if isinstance(value, cls):
        return type(value).__name__, None if base is object else base.__repr__(value)
    return value


@pytest.mark.parametrize("dunder", DUNDERS)
@pytest.mark.parametrize("base", BASES)
def test_subclass_dunder(base, dunder):
    cls_base, make = BASES[base]
    cls = _subclass(cls_base, dunder)
    use = DUNDERS[dunder][1]

    def made(x):
        return x + 1, use(make(cls))

    def given(x, obj):
        return x + 1, use(obj)

    for fn, given_objects in ((made, 0), (given, 1)):
        compiled = bytegraph.compile(fn, backend="eager")
        for _ in range(2):
            expected = _outcome(fn, torch.zeros(2), *[make(cls) for _ in range(given_objects)])
            actual = _outcome(compiled, torch.zeros(2), *[make(cls) for _ in range(given_objects)])
            assert_same(_normal(actual, cls, cls_base), _normal(expected, cls, cls_base))
