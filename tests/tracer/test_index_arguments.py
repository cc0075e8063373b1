"""Values given where CPython takes an index (``seq[i]``, ``del xs[i]``, ``xs.pop(i)``,
``slice.indices(n)``, ``operator.index(v)``) that it rejects whatever they hold: a tensor that is
not one integer element, an object whose class has no ``__index__``. The trace raises CPython's
own TypeError (type and message) instead of breaking; a tensor that could be an index (one
integer element) still needs its value. Also ``xs.count(t)`` / ``xs.index(t)`` where comparing
the tensor with the other items gives no tensor (``'b' == t`` is False). Each is compared with
eager CPython, and its graph breaks with torch.compile's."""

from __future__ import annotations

import operator

import torch
from difftest import check, check_breaks
from dynamo_baseline import assert_no_more_breaks


class Opaque:
    """A class with no ``__index__``."""


def _rejections(x, i, o):
    """Every index use of ``i`` (a tensor) and ``o`` (an object) in a ``try``: the error each
    gives, or its result."""
    xs = [x, 1, 2]
    uses = (
        lambda: (4, 5, 6)[i],
        lambda: xs[i],
        lambda: xs[1:i],
        lambda: "text"[i],
        lambda: b"bytes"[o],
        lambda: range(2, 9, 3)[i],
        lambda: range(9)[o:],
        lambda: xs.pop(i),
        lambda: xs.insert(o, 0),
        lambda: xs.__delitem__(i),
        lambda: xs.__setitem__(o, 0),
        lambda: operator.index(i),
        lambda: operator.index(o),
        lambda: slice(0, 9, 2).indices(i),
        lambda: slice(3).indices(o),
    )
    out = []
    for use in uses:
        try:
            out.append(use())
        except TypeError as e:
            out.append(str(e))
    return x * 2, out, len(xs)


def _float_and_object():
    return torch.randn(3), torch.tensor(2.0), Opaque()


def _two_integers_and_object():
    return torch.randn(3), torch.tensor([1, 0]), Opaque()


def test_a_float_tensor_and_an_object_are_rejected_as_indices():
    check_breaks(_rejections, _float_and_object, graphs=1, breaks=0)


def _few_rejections(x, i, o):
    """Keys torch.compile traces on every torch tested (2.11 crashes on a tensor key of a tuple,
    on ``range(5)[i]`` and on ``operator.index(o)``; ``_rejections`` covers them here)."""
    out = []
    for use in (lambda: ["a", "b"][o], lambda: (3, 4)[o]):
        try:
            out.append(use())
        except TypeError as e:
            out.append(str(e))
    return x - 1, out


def test_rejected_indices_break_no_more_than_torch_compile():
    check_breaks(_few_rejections, _float_and_object, graphs=1, breaks=0)
    assert_no_more_breaks(0, _few_rejections, *_float_and_object())


def test_an_integer_tensor_of_two_elements_is_rejected_as_an_index():
    check_breaks(_rejections, _two_integers_and_object, graphs=1, breaks=0)


def _index_by_item(x, i):
    return x + 1, ("a", "b", "c")[i]


def test_a_one_element_integer_tensor_index_needs_its_value():
    """CPython takes its value: the trace breaks rather than guess it, and is right."""
    compiled, _ = check(_index_by_item, torch.randn(2), torch.tensor(2), graphs=1, breaks=1)
    assert compiled(torch.randn(2), torch.tensor(1))[1] == "b"


def _uncaught(x, i):
    y = x + 1
    return y, [y, y][i]


def test_the_rejection_is_raised_as_cpython_raises_it():
    check_breaks(_uncaught, lambda: (torch.randn(2), torch.tensor(0.5)), graphs=1, breaks=1)


def _counts(x, xs, ys):
    return x + 1, xs.count(x), ys.count(x), ys.index(x), (None, "x", x).index(x)


def _counted_items():
    x = torch.randn(2)
    return x, [x, "b", None, (1, 2)], (b"y", x, torch.float32, [3])


def test_count_and_index_compare_a_tensor_with_items_it_cannot_equal():
    check_breaks(_counts, _counted_items, graphs=1, breaks=0)
    assert_no_more_breaks(0, _counts, *_counted_items())


def _count_numbers(x):
    return x + 1, [1, x, 2.0].count(x)


def test_count_of_a_tensor_among_numbers_needs_its_values():
    """``1 == t`` is a tensor: its truth is data, and the trace breaks there."""
    check(_count_numbers, torch.tensor([1.0]), graphs=1, breaks=1)
