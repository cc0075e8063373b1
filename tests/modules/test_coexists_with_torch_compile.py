"""Importing bytegraph patches ``nn.Module`` methods (module-tree epochs): torch.compile must still
trace modules built and changed in the functions it compiles, with the breaks it has without us."""

from __future__ import annotations

import torch
from torch import nn

import bytegraph  # noqa: F401  (installs the patches under test)


def test_torch_compile_builds_modules_in_the_function():
    def fn(x):
        lin = nn.Linear(4, 4)
        return lin(x).sum() + nn.CrossEntropyLoss()(x, torch.tensor([0, 1]))

    x = torch.randn(2, 4)
    explained = torch._dynamo.explain(fn)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch.manual_seed(0)
    expected = fn(x)
    torch.manual_seed(0)
    assert torch.equal(torch.compile(fn, backend="eager")(x), expected)


class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        return self.lin(x) * self.calls


def test_torch_compile_replays_module_attribute_stores():
    module = _Counter()
    compiled = torch.compile(module, backend="eager")
    x = torch.randn(2, 4)
    out = compiled(x)
    assert module.calls == 1
    assert torch.equal(out, module.lin(x))
    assert torch._dynamo.explain(_Counter())(x).graph_break_count == 0
