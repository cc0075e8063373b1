"""``module.to(...)`` inside ``forward`` (Soft-MoE moves each expert to its device on every call):
where every parameter, buffer and gradient of the tree already has that device and dtype, the call
changes nothing and is the module itself, without a break (torch.compile: none either); a tree
changed since (``.double()`` between calls) is traced again and converted as eager converts it.
"""

from __future__ import annotations

import copy

import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same, assert_state_same, check_breaks
from dynamo_baseline import assert_no_more_breaks
from torch import nn

import bytegraph


class Experts(nn.Module):
    """Soft-MoE's ``Experts``: the experts in use go to the module's device, the others to cpu."""

    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(3)])
        self.register_buffer("dummy", torch.ones(1), persistent=False)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        in_use = set(self.experts[0:2])
        for expert in self.experts:
            device = self.dummy.device if expert in in_use else "cpu"
            expert.to(device)
        same = self.to(torch.float32) is self
        return torch.stack([e(x) for e in self.experts]), same


class Cast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        self.lin.to(torch.float32)
        return self.lin(x.float())


def test_to_where_every_tensor_already_is_has_no_break():
    x = torch.randn(2, 4)
    assert_no_more_breaks(
        0,
        Experts(),
        x,
        baseline_missing="torch 2.11's Dynamo runs the call in Python: it refuses the "
        "nn.Parameter() constructor it meets in nn.Module._apply",
    )
    check_breaks(Experts(), lambda: (x,), graphs=1, breaks=0, calls=3)


def test_to_with_gradients_in_place_has_no_break():
    x = torch.randn(2, 4)
    eager = Experts()
    model = copy.deepcopy(eager)
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter)
    for _ in range(3):
        out, same = compiled(x)
        expected, eager_same = eager(x)
        assert_same((out, same), (expected, eager_same))
        out.sum().backward()
        expected.sum().backward()
        assert_state_same(model, eager)  # parameters with their gradients
    assert (
        counter.frame_count == 2
    )  # gradients read: one graph before the first backward, one after


def test_to_after_the_module_changed_converts_it_back():
    x = torch.randn(3, 4)
    eager = Cast()
    model = copy.deepcopy(eager)
    compiled = bytegraph.compile(model, backend="eager")
    assert_same(compiled(x), eager(x))
    model.double()  # the compiled call must put the float32 parameters back, as eager does
    eager.double()
    assert_same(compiled(x), eager(x))
    assert_state_same(model, eager)
    assert model.lin.weight.dtype is torch.float32
