"""A ``class`` statement in a compiled function is one break, at the call of ``__build_class__``
(the class body runs in Python), and the trace goes on after it on every Python version; making a
dataclass of it (``@dataclass``, ``@dataclass(frozen=True)``, ``make_dataclass``) runs in Python
too, one break, instead of tracing ``dataclasses``' code. Compared with eager and with
torch.compile's break count."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
import torch

from tests.difftest import as_eager_twice, check_breaks
from tests.dynamo_baseline import assert_no_more_breaks


def plain(x):
    y = x + 1

    class A:
        k = 2

    return y * A.k


def closure_and_super(x):
    k = 3

    class A:
        v = k

        def f(self):
            return x * k

    class B(A):
        def f(self):
            return super().f() + self.v

    return B().f() + 1


def with_metaclass(x):
    y = x * 2

    class Meta(type):
        def __new__(mcs, name, bases, ns, scale=1):
            ns["scale"] = scale
            return super().__new__(mcs, name, bases, ns)

    class C(metaclass=Meta, scale=4):
        pass

    return y * C.scale


def bare_dataclass(x):
    y = x + 1

    @dataclass
    class Box:
        t: torch.Tensor
        scale: float = 2.0

    b = Box(y)
    return b.t * b.scale, repr(Box(1)).split(".")[-1], Box(1) == Box(1)


def frozen_dataclass(x):
    y = x + 1

    @dataclass(frozen=True)
    class Box:
        t: int

    b = Box(3)
    try:
        b.t = 4
    except dataclasses.FrozenInstanceError:
        pass
    return y * b.t, hash(b) == hash(Box(3))


def made_dataclass(x):
    C = dataclasses.make_dataclass("C", [("a", int), ("b", int, dataclasses.field(default=2))])
    return x * C(1).b, dataclasses.astuple(C(5))


def _args():
    return (torch.randn(3),)


def test_class_statement_is_one_break():
    check_breaks(plain, _args, graphs=2, breaks=1, calls=1)
    assert_no_more_breaks(1, plain, *_args())


def test_class_body_with_closure_and_super():
    check_breaks(closure_and_super, _args, graphs=1, breaks=2, calls=1)
    assert_no_more_breaks(2, closure_and_super, *_args())


def test_class_statement_with_metaclass_keywords():
    check_breaks(with_metaclass, _args, graphs=2, breaks=2, calls=1)
    assert_no_more_breaks(2, with_metaclass, *_args())


def test_dataclass_decorator_runs_in_python():
    check_breaks(bare_dataclass, _args, graphs=2, breaks=2, calls=1)
    assert_no_more_breaks(2, bare_dataclass, *_args())


def test_frozen_dataclass_decorator_runs_in_python():
    check_breaks(frozen_dataclass, _args, graphs=2, breaks=2, calls=1)
    assert_no_more_breaks(2, frozen_dataclass, *_args())


def test_make_dataclass_runs_in_python():
    check_breaks(made_dataclass, _args, graphs=1, breaks=1, calls=1)
    assert_no_more_breaks(1, made_dataclass, *_args())


@pytest.mark.parametrize(
    "fn",
    [plain, closure_and_super, with_metaclass, bare_dataclass, frozen_dataclass, made_dataclass],
)
def test_called_again_as_eager(fn):
    """Each call makes a new class: the resume functions compiled for the first one are not
    taken for it, and the results stay eager's."""
    as_eager_twice(fn, lambda: (torch.ones(3),))
