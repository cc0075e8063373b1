"""``nn.ParameterList`` in a compiled forward: iterated, unpacked and indexed without a break; its
length is guarded (``append`` recompiles) and its items are read by name (replacing one is seen)."""

from __future__ import annotations

import torch
from difftest import assert_same

import bytegraph


class Weights(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ps = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.full((2,), 1.0 + i)) for i in range(2)]
        )

    def forward(self, x):
        for p in self.ps:
            x = x + p
        first, *rest = self.ps
        return x * first + self.ps[-1] * rest[0]


def test_parameter_list_iterates_unpacks_and_indexes_in_one_graph():
    m, x = Weights(), torch.zeros(2)
    report = bytegraph.explain(m)(x)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    assert_same(bytegraph.compile(Weights.forward)(m, x), Weights.forward(m, x))


def test_parameter_list_append_recompiles():
    m, x = Weights(), torch.zeros(2)
    compiled = bytegraph.compile(Weights.forward)
    assert_same(compiled(m, x), Weights.forward(m, x))
    m.ps.append(torch.nn.Parameter(torch.full((2,), 5.0)))
    assert_same(compiled(m, x), Weights.forward(m, x))


def test_parameter_list_item_replaced_is_seen():
    m, x = Weights(), torch.zeros(2)
    compiled = bytegraph.compile(Weights.forward)
    assert_same(compiled(m, x), Weights.forward(m, x))
    m.ps[1] = torch.nn.Parameter(torch.full((2,), 7.0))
    assert_same(compiled(m, x), Weights.forward(m, x))
