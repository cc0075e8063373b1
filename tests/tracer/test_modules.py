"""Differential tests: ``nn.Module`` values inside compiled functions: calls inline ``forward``,
containers (Sequential, ModuleList, ModuleDict) are iterated and indexed, ``parameters()`` and
friends list guarded members."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check
from torch import nn

import bytegraph


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 1), "b": nn.Linear(3, 2)})
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return {name: head(x) * self.scale for name, head in self.heads.items()}


def test_sequential_call():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))

    def fn(x):
        return model(x)

    check(fn, torch.randn(2, 3))


def test_module_list_iteration_and_dict_items():
    model = Block()

    def fn(x):
        return model(x)

    check(fn, torch.randn(2, 3))


def test_module_list_indexing_and_len():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Tanh()])

    def fn(x):
        return layers[-1](layers[0](x)) * len(layers)

    check(fn, torch.randn(2, 2))


def test_module_dict_key_lookup():
    heads = nn.ModuleDict({"up": nn.Linear(2, 4), "down": nn.Linear(2, 1)})

    def fn(x, name):
        return heads[name](x)

    check(fn, torch.randn(3, 2), "down")


def test_sequential_indexing():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sigmoid())

    def fn(x):
        return model[1](model[0](x))

    check(fn, torch.randn(2, 2))


def test_parameters_sum_of_squares():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))

    def fn(x):
        reg = sum((p**2).sum() for p in model.parameters())
        return model(x).sum() + reg

    check(fn, torch.randn(4, 2))


def test_named_parameters_names():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1, bias=False))

    def fn(x):
        return {name: p.shape for name, p in model.named_parameters()}, x * 2

    check(fn, torch.randn(2))


def test_buffers_and_children():
    model = Block()

    def fn(x):
        n_children = len(list(model.children()))
        return x * n_children + sum(b.sum() for b in model.buffers())

    check(fn, torch.randn(2))


def test_module_attribute_read_in_forward():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = 3
            self.weight = nn.Parameter(torch.randn(2))

        def forward(self, x):
            return x * self.weight * self.factor

    model = Scale()

    def fn(x):
        return model(x)

    check(fn, torch.randn(2))


def test_module_passed_as_argument():
    def fn(m, x):
        return m(x) + 1

    check(fn, nn.Linear(2, 2), torch.randn(3, 2))


def test_module_forward_under_no_grad():
    model = nn.Linear(2, 2)

    def fn(x):
        with torch.no_grad():
            return model(x)

    check(fn, torch.randn(3, 2))


_CHILD_STORES = {
    "new": lambda m: setattr(m, "extra", nn.ReLU()),
    "replaced": lambda m: setattr(m, "0", nn.Tanh()),
    "none": lambda m: setattr(m, "0", None),
    "deleted": lambda m: delattr(m, "0"),
    "new_then_replaced": lambda m: (setattr(m, "extra", nn.ReLU()), setattr(m, "0", nn.Tanh())),
}
_CHILD_READS = {
    "named_children": lambda m: [n for n, _ in m.named_children()],
    "children": lambda m: [type(c).__name__ for c in m.children()],
    "named_modules": lambda m: [n for n, _ in m.named_modules()],
    "modules": lambda m: len(list(m.modules())),
    "named_parameters": lambda m: [n for n, _ in m.named_parameters()],
    "parameters": lambda m: len(list(m.parameters())),
    "iteration": lambda m: [type(c).__name__ for c in m],
    "len": len,
}


@pytest.mark.parametrize("read", _CHILD_READS)
@pytest.mark.parametrize("store", _CHILD_STORES)
def test_member_listings_see_submodules_stored_in_the_trace(store, read):
    """``m.extra = nn.ReLU()``, ``m[0]`` replaced, set to ``None`` or deleted in the trace, then
    the submodules listed (``named_children``, ``modules``, ``parameters``, iteration...): the
    listing is eager's, the stores filed as ``nn.Module.__setattr__`` files them."""
    store_fn, read_fn = _CHILD_STORES[store], _CHILD_READS[read]

    def fn(x, m):
        store_fn(m)
        return x + 1, read_fn(m)

    def make():
        torch.manual_seed(0)
        return torch.randn(2, 3), nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())

    bytegraph.reset()
    compiled = bytegraph.compile(fn, backend="eager")
    for _ in range(2):
        (x, model), (ex, eager_model) = make(), make()
        assert_same(compiled(x, model), fn(ex, eager_model))
        assert [(n, type(c)) for n, c in model.named_modules()] == [
            (n, type(c)) for n, c in eager_model.named_modules()
        ]
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]
