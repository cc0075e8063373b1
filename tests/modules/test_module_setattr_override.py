"""Modules whose class overrides ``__setattr__`` and defers to ``nn.Module.__setattr__`` through
``super()`` (torchmetrics' ``Metric`` refuses a few names so): a store in the compiled code runs
the override as eager does, and the store the override makes is replayed through
``nn.Module.__setattr__`` (which files members in their tables), the override not run twice."""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks
from torch import nn


class Counted(nn.Module):
    """A metric-like module: its state is a buffer and two plain attributes, ``const`` is
    read-only, and every store is logged."""

    def __init__(self) -> None:
        super().__init__()
        self.log = []
        self.register_buffer("total", torch.zeros(3))
        self.calls = 0
        self.last = None

    def __setattr__(self, name: str, value) -> None:
        if name == "const":
            raise RuntimeError(f"Can't change const `{name}`.")
        if name != "log":
            self.log.append(name)
        super().__setattr__(name, value)

    def update(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.total = self.total + x
        self.last = x.sum()
        return self.total * 2


def _update(m: Counted, x: torch.Tensor) -> torch.Tensor:
    return m.update(x)


def _args() -> tuple:
    return (Counted(), torch.randn(3))


def test_stores_through_the_override_match_eager_and_break_no_more_than_torch_compile() -> None:
    m, x = _args()
    _, _, report = check_breaks(_update, _args, graphs=1, breaks=0, calls=3)
    assert_no_more_breaks(0, _update, m, x)


def test_the_override_runs_once_per_store() -> None:
    """Calls on one module: its log (the override's own effect) and the buffer it files. One
    compile: the count the call advances (an int attribute) is dynamic from the first trace."""
    m = Counted()
    shared = lambda: (m, torch.ones(3))  # noqa: E731 (the same module each call)
    check_breaks(_update, shared, graphs=1, breaks=0, calls=4)


def _store_const(m: Counted, x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    m.const = 1
    return y


def test_an_error_raised_by_the_override_is_eager_s() -> None:
    check_breaks(_store_const, _args, graphs=1, breaks=1, calls=2)


def _store_then_delete(m: Counted, x: torch.Tensor) -> torch.Tensor:
    m.extra = x + 1
    del m.extra
    m.total = x * 3
    return m.total


def test_a_store_then_a_deletion() -> None:
    """A deletion from a module breaks (with or without an override): the stores before and
    after it are replayed through ``nn.Module``'s methods."""
    check_breaks(_store_then_delete, _args, graphs=2, breaks=1, calls=2)


def _store_module(m: Counted, x: torch.Tensor) -> torch.Tensor:
    m.child = nn.Identity()
    return m.child(x) + 1


def test_a_submodule_filed_by_the_override_s_super_call() -> None:
    """Two graphs, as for a module class without an override: the second call compiles again."""
    check_breaks(_store_module, _args, graphs=2, breaks=0, calls=3)
