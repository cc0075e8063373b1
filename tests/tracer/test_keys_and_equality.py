"""Hashing, equality and identity as CPython has them, on every kind of value the tracer meets.

Each case is a small function reading containers from its globals (made before the call) and
building others in the call, beside a tensor op; it runs compiled and eagerly (``check_breaks``:
results and their types, exceptions, mutations) with the graph breaks counted. The value kinds
are those third-party code keys dicts and sets with: None, floats, complex numbers, bytes,
tuples, classes, builtin types, functions, builtin functions, modules, enum members, plain
objects, frozensets, dtypes, devices, ranges.
"""

from __future__ import annotations

import enum
import math

import pytest
import torch
from difftest import check_breaks


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Plain:
    pass


def _function():
    return 1


PLAIN = Plain()
#: one value of each kind, and a second one of the same kind (not equal to the first)
KINDS = {
    "none": (None, 0),
    "float": (1.5, 2.5),
    "complex": (1j, 2j),
    "bytes": (b"x", b"y"),
    "tuple": ((1, "a"), (2, "b")),
    "class": (Plain, Color),
    "builtin_type": (int, str),
    "function": (_function, check_breaks),
    "builtin_function": (len, abs),
    "module": (math, enum),
    "enum_member": (Color.RED, Color.BLUE),
    "plain_object": (PLAIN, Plain()),
    "frozenset": (frozenset({1, 2}), frozenset({3})),
    "dtype": (torch.float32, torch.int64),
    "device": (torch.device("cpu"), torch.device("meta")),
    "range": (range(3), range(4)),
}


def _compiled_case(body: str, **globals_):
    """``def fn(x): <body>`` with ``globals_`` as its globals."""
    namespace = {"torch": torch, **globals_}
    exec(f"def fn(x):\n    {body}\n", namespace)
    return namespace["fn"]


def _x():
    return (torch.ones(3),)


@pytest.mark.parametrize("kind", KINDS)
def test_global_set_equals_a_set_built_in_the_call(kind):
    v, w = KINDS[kind]
    fn = _compiled_case(
        "return x + 1, S == {V}, S != {V}, {V} == S, S == {W}, S == {V, W}, S == [V]",
        S={v},
        V=v,
        W=w,
    )
    # an input set of values other than literals is not traced: each comparison breaks
    breaks = 0 if kind in ("float", "complex", "bytes") else 6
    check_breaks(fn, _x, graphs=1, breaks=breaks)


@pytest.mark.parametrize("kind", KINDS)
def test_containers_compare_items_by_identity_first(kind):
    v, w = KINDS[kind]
    fn = _compiled_case(
        "return (x + 1, L == [V], [V] == L, L != [V], L == [W], T == (V,), (V,) != T,"
        " D == {'k': V}, D == {'k': W}, L < [V, 0], L >= [V])",
        L=[v],
        T=(v,),
        D={"k": v},
        V=v,
        W=w,
    )
    check_breaks(fn, _x, graphs=1, breaks=0)


class _Holder:
    def __init__(self) -> None:
        self.perm = [0, 1, 2]
        self.items = [PLAIN]


HOLDER = _Holder()


def test_list_held_by_an_object_equals_a_list_built_in_the_call():
    fn = _compiled_case(
        "return (x + 1, H.perm == list(range(len(H.perm))), H.items == [P], H.perm == [0, 1],"
        " H.perm != [0, 1, 2])",
        H=HOLDER,
        P=PLAIN,
    )
    check_breaks(fn, _x, graphs=1, breaks=0)


def test_identity_of_two_objects_is_guarded():
    """``a is b`` false for two objects guarded only by type: the next call, passing the same
    object twice, must not reuse that answer."""

    def fn(x, a, b):
        return x + 1, a is b, a == b, a is not b, [a] == [b]

    other = Plain()
    compiled, counter, _ = check_breaks(
        fn, lambda: (torch.ones(2), PLAIN, other), graphs=1, breaks=0
    )
    check_breaks(
        fn,
        lambda: (torch.ones(2), PLAIN, PLAIN),
        graphs=2,
        breaks=0,
        compiled=compiled,
        counter=counter,
    )
