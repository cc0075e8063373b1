"""``format(obj, spec)`` (an f-string's field) of an object whose class keeps ``object.__format__``:
``str(obj)`` (a class's Python ``__str__`` inlined) for an empty spec, CPython's TypeError for any
other. Counts beside torch.compile's."""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


class Described:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"Described({self.name})"


def _fields(x, obj):
    return x + 1, f"{obj}", format(obj, ""), f"{obj!s:>20}", f"{[1, 2]}", format({"a": 1})


def test_format_of_an_object_is_its_str():
    make = lambda: (torch.randn(3), Described("n"))  # noqa: E731
    check_breaks(_fields, make, graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _fields,
        *make(),
        baseline_missing="torch.compile fails on it (an internal error: format of a user object "
        "is not a constant)",
    )


def _with_spec(x, obj):
    return x + 1, format(obj, "x")


def test_format_with_a_spec_raises_as_eager():
    check_breaks(_with_spec, lambda: (torch.randn(3), Described("n")), graphs=1, breaks=1)
