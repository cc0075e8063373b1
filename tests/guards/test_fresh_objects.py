"""Guards never depend on the identity of an object created during the call: objects made before a
graph break reach the resume function as arguments that are new on every call, so an identity
guard on them (``L['p'] is ___o()``) would fail on every later call and trace again."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from difftest import assert_same

import bytegraph
from bytegraph.explain import Recorder


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: float = 2.0


def user_object(x):
    s = Scaler(2.0)
    y = s.apply(x)
    print("break")
    return s.apply(y)


def bound_method(x):
    f = Scaler(3.0).apply
    y = f(x)
    print("break")
    return f(y)


def dataclass_instance(x):
    p = Pair(x * 2)
    print("break")
    return p.a * p.b


def loss_module(x):
    loss = torch.nn.MSELoss()
    y = x * 2
    print("break")
    return loss(y, torch.zeros_like(y))


def linear_module(x):
    lin = torch.nn.Linear(3, 2)
    y = lin(x)
    print("break")
    return lin(x) + y


#: ``L['name'] is ___ref()``: an identity guard on a whole argument.
_IDENTITY_ON_ARGUMENT = re.compile(r"^L\['[^']+'\](\.__self__)? is ___")


@pytest.mark.parametrize(
    "fn", [user_object, bound_method, dataclass_instance, loss_module, linear_module]
)
def test_no_identity_guard_on_objects_made_during_the_call(fn):
    compiled = bytegraph.compile(fn, backend="eager")
    with Recorder() as recorder:
        for _ in range(3):
            x = torch.randn(4, 3)
            torch.manual_seed(0)
            expected = fn(x)
            torch.manual_seed(0)
            assert_same(compiled(x), expected)
    report = recorder.report()
    guards = [line for r in recorder.records for line in r.event.guards.splitlines()]
    assert not [g for g in guards if _IDENTITY_ON_ARGUMENT.match(g)]
    assert report.graph_break_count == 1
    assert not report.recompiles, [str(r) for r in report.recompiles]
