"""Everyday idioms on plain objects and classes, traced in one graph as torch.compile traces them
(issue 24): ``obj == None`` on a class without ``__eq__``, ``isinstance(x, A | B)``,
``x.__class__.__name__``, a missing class attribute caught by ``except AttributeError``."""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_counts


def check(fn, *args):
    """One graph, no break, eager's results; torch.compile: one graph, no break, too."""
    check_breaks(fn, lambda: args, graphs=1, breaks=0)
    assert dynamo_counts(fn, *args) == (1, 0)


class Plain:
    pass


class WithEq:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, WithEq) and other.v == self.v

    __hash__ = None


_SHARED = Plain()


def _plain_equality(x):
    a, b = Plain(), Plain()
    return (
        x + 1,
        a == None,  # noqa: E711 (the idiom under test)
        a != None,  # noqa: E711
        None == a,  # noqa: E711
        a == a,
        a != b,
        a == 3,
        "s" != a,
        _SHARED == _SHARED,
        a == _SHARED,
    )


def test_equality_of_objects_without_eq_is_identity():
    check(_plain_equality, torch.randn(3))


def _user_eq_still_runs(x):
    return x + 1, WithEq(1) == WithEq(1), WithEq(1) != WithEq(2), Plain() == WithEq(1)


def test_a_user_eq_still_decides():
    check_breaks(_user_eq_still_runs, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _union_isinstance(x, items):
    kinds = list | tuple
    if isinstance(items, kinds) and not isinstance(x, int | None):
        return x + len(items)
    return x - 1


def test_isinstance_with_a_union_of_classes():
    check(_union_isinstance, torch.randn(3), [1, 2])
    check(_union_isinstance, torch.randn(3), {1: 2})


def _union_live_at_a_break(x):
    kinds = list | tuple
    y = x + 1
    print("break")  # the union is live here: rebuilt for the rest
    return y * 2 if isinstance([y], kinds) else y


def test_a_union_live_at_a_break_is_rebuilt():
    check_breaks(_union_live_at_a_break, lambda: (torch.randn(3),), graphs=2, breaks=1)
    assert_no_more_breaks(
        1,
        _union_live_at_a_break,
        torch.randn(3),
        baseline_missing="torch.compile runs the call in Python: it cannot rebuild the union",
    )


def _class_name(x, p):
    return x + 1, f"{x.__class__.__name__}/{p.__class__.__name__}", x.__class__ is torch.Tensor


def test_class_name_of_a_tensor_in_an_fstring():
    check(_class_name, torch.randn(3), torch.nn.Parameter(torch.randn(2)))


def _exit_probe(x):
    def fn():
        pass

    try:
        type(fn).__exit__  # noqa: B018 (the read is the probe)
    except AttributeError:
        return x + 1
    return x - 1


def test_missing_class_attribute_caught_by_except_attributeerror():
    check(_exit_probe, torch.randn(3))


def _hasattr_on_classes(x):
    return x + 1, hasattr(Plain, "nope"), getattr(Plain, "nope", 5), hasattr(Plain, "__init__")


def test_hasattr_and_getattr_default_on_classes():
    check(_hasattr_on_classes, torch.randn(3))
