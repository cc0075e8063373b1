"""Structural pattern matching (``match``): sequence, mapping and class patterns with CPython's
semantics, traced into one graph as torch.compile does. Each test first asserts the opcodes it
covers occur in the function (STYLE §9.5) and compares the counts with torch._dynamo's.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import dis

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_counts


def opnames(fn) -> set[str]:
    return {inst.opname for inst in dis.get_instructions(fn)}


def check(fn, *args):
    """One graph, no break, the same results and arguments as eager, twice."""
    check_breaks(fn, lambda: args, graphs=1, breaks=0)


def _sequences(x, v):
    match v:
        case []:
            return x + 100
        case [a]:
            return x + a
        case [a, b, *rest]:
            return x * a + b + len(rest)
        case _:
            return x - 1


@pytest.mark.parametrize(
    "subject",
    [[], [2], (3, 4), [1, 2, 3, 4], range(5), collections.deque([5, 6]), "ab", b"ab", 7, {1: 2}],
    ids=repr,
)
def test_sequence_patterns_match_sequences_only(subject):
    # str, bytes and dicts are not sequences to ``match``; a deque and a range are
    assert {"MATCH_SEQUENCE", "GET_LEN", "UNPACK_EX"} <= opnames(_sequences)
    x = torch.randn(3)
    check(_sequences, x, subject)
    assert dynamo_counts(_sequences, x, subject) == (1, 0)


class _Registered:
    """A sequence by registration with ``collections.abc.Sequence``, not by inheritance."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


collections.abc.Sequence.register(_Registered)


class _Seq(collections.abc.Sequence):
    def __init__(self, *items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def _user_sequences(x):
    match _Seq(x, 2):
        case [t, n]:
            return t * n
    return x


def test_sequence_pattern_on_a_sequence_subclass():
    assert "MATCH_SEQUENCE" in opnames(_user_sequences)
    x = torch.randn(3)
    check(_user_sequences, x)
    assert dynamo_counts(_user_sequences, x) == (1, 0)


def _tensor_in_tuple(x):
    match (x, 2, x.shape):
        case (torch.Tensor() as t, int(n), (rows,)) if rows > 1:
            return t * n + rows
        case _:
            return x - 1


def test_tensor_subject_parts_and_guard():
    assert {"MATCH_SEQUENCE", "MATCH_CLASS"} <= opnames(_tensor_in_tuple)
    check(_tensor_in_tuple, torch.randn(3))
    check(_tensor_in_tuple, torch.randn(1))
    assert dynamo_counts(_tensor_in_tuple, torch.randn(3)) == (1, 0)


def _tensor_is_no_sequence(x):
    match x:
        case [a, b]:
            return a + b
        case _:
            return x * 2


def test_a_tensor_is_not_a_sequence():
    assert "MATCH_SEQUENCE" in opnames(_tensor_is_no_sequence)
    check(_tensor_is_no_sequence, torch.randn(2))


def _mappings(x, d):
    match d:
        case {"scale": s, "bias": b, **rest}:
            return x * s + b + len(rest)
        case {"scale": s}:
            return x * s
        case {}:
            return x + 100
    return x - 1


@pytest.mark.parametrize(
    "subject",
    [
        {"scale": 2, "bias": 3},
        {"scale": 2, "bias": 3, "a": 1, "b": 2},
        {"scale": 4},
        {"other": 1},
        collections.OrderedDict(scale=5),
        collections.defaultdict(int, scale=6),  # ``get`` does not call ``__missing__``
        [1, 2],
    ],
    ids=repr,
)
def test_mapping_patterns(subject):
    assert {"MATCH_MAPPING", "MATCH_KEYS", "GET_LEN", "DICT_UPDATE"} <= opnames(_mappings)
    x = torch.randn(3)
    check(_mappings, x, subject)
    assert dynamo_counts(_mappings, x, subject) == (1, 0)


class _Config(collections.abc.Mapping):
    """A user mapping: ``get`` is ``Mapping``'s, calling this ``__getitem__``."""

    def __init__(self, **values):
        self.values = values

    def __getitem__(self, key):
        return self.values[key]

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


def _user_mapping(x):
    match _Config(scale=3):
        case {"scale": s}:
            return x * s
    return x


def test_mapping_pattern_on_a_user_mapping():
    assert "MATCH_KEYS" in opnames(_user_mapping)
    check(_user_mapping, torch.randn(3))


class _Keys:
    A = "a"
    ALSO_A = "a"


def _duplicate_keys(x, d):
    match d:
        case {_Keys.A: a, _Keys.ALSO_A: b}:
            return x + a + b
    return x


def test_duplicate_mapping_keys_raise_like_cpython():
    assert "MATCH_KEYS" in opnames(_duplicate_keys)
    check_breaks(_duplicate_keys, lambda: (torch.randn(3), {"a": 1, "b": 2}), graphs=0, breaks=1)


@dataclasses.dataclass
class _Point:
    x: int
    y: torch.Tensor


class _Labelled:
    __match_args__ = ("label",)

    def __init__(self, label):
        self.label = label

    @property
    def upper(self):
        return self.label.upper()


def _classes(x, obj):
    match obj:
        case _Point(0, y):
            return y + x
        case _Point(x=n, y=y) if n > 2:
            return y * n
        case _Labelled("a", upper=u):
            return x + 1, u
        case _Labelled(missing=m):
            return m
        case _Labelled(label):
            return x + 2, label
        case bool(b):
            return x + 10 * b
        case int(n) | float(n):
            return x + n
        case str() as s:
            return x + 3, s
    return x - 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: _Point(0, torch.ones(3)),
        lambda: _Point(3, torch.ones(3)),
        lambda: _Point(1, torch.ones(3)),
        lambda: _Labelled("a"),
        lambda: _Labelled("b"),
        lambda: True,
        lambda: 4,
        lambda: 2.5,
        lambda: "s",
        lambda: None,
    ],
)
def test_class_patterns(make):
    # positional sub-patterns through __match_args__ (a dataclass's too), keyword ones, a property,
    # a missing attribute (no match), builtins matching themselves, guards
    assert "MATCH_CLASS" in opnames(_classes)
    x = torch.randn(3)
    check(_classes, x, make())
    obj = make()
    missing = isinstance(obj, _Labelled) and obj.label == "b"
    assert_no_more_breaks(
        0,
        _classes,
        x,
        obj,
        baseline_missing="torch.compile runs the call in Python (the missing attribute's "
        "AttributeError)"
        if missing
        else "",
    )


def _too_many_positional(x):
    match _Labelled("a"):
        case _Labelled(a, b):
            return x + a + b
    return x


def test_too_many_positional_sub_patterns_raise_like_cpython():
    assert "MATCH_CLASS" in opnames(_too_many_positional)
    # the TypeError is raised where CPython raises it: bytegraph counts that as its one break
    check_breaks(_too_many_positional, lambda: (torch.randn(3),), graphs=0, breaks=1)


def _not_a_class(x):
    cls = len
    match x:
        case cls():
            return x + 1
    return x


def test_a_non_class_pattern_raises_like_cpython():
    assert "MATCH_CLASS" in opnames(_not_a_class)
    check_breaks(_not_a_class, lambda: (torch.randn(3),), graphs=0, breaks=1)


def _match_in_loop(x, items):
    for item in items:
        match item:
            case ("add", v):
                x = x + v
            case ("mul", v):
                x = x * v
            case {"op": "neg"}:
                x = -x
    return x


def test_match_drives_a_small_interpreter():
    items = [("add", 1), ("mul", 3), {"op": "neg"}, ("noop",)]
    check(_match_in_loop, torch.randn(3), items)
    assert dynamo_counts(_match_in_loop, torch.randn(3), items) == (1, 0)
