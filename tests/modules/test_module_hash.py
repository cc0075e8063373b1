"""Modules whose class defines ``__hash__`` and ``__eq__`` (torchmetrics' ``Metric`` hashes its
state, which ``__init__`` has not set yet, and its ``==`` builds a new metric): bytegraph's
change detection keeps modules by identity, so it neither calls those methods nor misses a
change after the hash moved."""

from __future__ import annotations

import torch
from difftest import assert_same

import bytegraph


class StateHashed(torch.nn.Module):
    """Hashes by its state, as a metric does: reading ``_state`` before ``__init__`` set it
    raises, and the hash moves with every change to ``count``. ``==`` answers True for any other
    module of its class."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.count = 0
        self._state = ("count",)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self._state))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    @property
    def history_len(self) -> int:
        return len(self.history)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class HashedFromTheStart(StateHashed):
    """``StateHashed`` whose hash can be read during ``__init__``."""

    def __init__(self, scale: float) -> None:
        object.__setattr__(self, "_state", ())
        super().__init__(scale)


def _double(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return m(x) + 1


def test_a_module_hashed_by_state_not_set_yet_is_built_after_a_compile() -> None:
    compiled = bytegraph.compile(_double, backend="eager")
    x = torch.randn(3)
    assert_same(compiled(StateHashed(2.0), x), _double(StateHashed(2.0), x))
    m = StateHashed(3.0)  # its __setattr__ ran before _state existed: hashing it raises
    assert_same(compiled(m, x), _double(m, x))


def test_a_change_after_the_hash_moved_is_seen() -> None:
    """The hash moves with a list the module holds, which no attribute store changes: a later
    store to the module must still be seen as a change."""
    m = HashedFromTheStart(2.0)
    m.history = []
    m._state = ("count", "history_len")
    compiled = bytegraph.compile(_double, backend="eager")
    x = torch.randn(3)
    for scale in (2.0, 3.0, 5.0, 7.0):
        assert_same(compiled(m, x), _double(m, x))
        m.history.append(scale)  # moves the hash
        m.scale = scale
        assert_same(compiled(m, x), _double(m, x))


def test_module_equality_is_not_called_by_change_detection() -> None:
    """Modules that all hash alike and record each ``==``: compiled calls and attribute stores
    call ``==`` as often as eager ones do (torchmetrics' ``==`` builds a new metric)."""
    compared = []

    class Recorded(HashedFromTheStart):
        def __hash__(self) -> int:
            return 0

        def __eq__(self, other: object) -> bool:
            compared.append(1)
            return other is self

    def run(fn) -> list:
        m, other = Recorded(2.0), Recorded(2.0)
        x = torch.ones(3)
        results = [fn(other, x), fn(m, x)]
        m.scale, other.scale = 7.0, 4.0
        return [*results, fn(m, x), fn(other, x)]

    expected = run(_double)
    eager_comparisons, compared[:] = len(compared), []
    assert_same(run(bytegraph.compile(_double, backend="eager")), expected)
    assert len(compared) == eager_comparisons
