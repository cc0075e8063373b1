"""The three ways users compile models: ``model.forward = compile(model.forward)`` (instance),
``Model.forward = compile(Model.forward)`` (class: one graph for every instance of the same
structure) and ``compile(model)`` (patches ``forward`` in place, returns the module).
``nn.Module.__call__`` still runs around the compiled forward, so hooks registered on the model are
honoured."""

from __future__ import annotations

import copy
import warnings

import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same
from torch import nn

import bytegraph


class MLP(nn.Module):
    def __init__(self, width: int = 4, layers: int = 2):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.norm(x)


def _strict():
    warnings.simplefilter("error")  # a fallback to Python warns: make it a failure


def test_instance_forward_monkeypatch():
    _strict()
    model, counter = MLP(), CompileCounter()
    eager = copy.deepcopy(model)
    model.forward = bytegraph.compile(model.forward, backend=counter)
    for _ in range(3):
        x = torch.randn(2, 4)
        assert_same(model(x), eager(x))
    assert counter.frame_count == 1


def test_class_forward_monkeypatch_shares_one_graph():
    _strict()

    class Net(MLP):
        pass

    counter = CompileCounter()
    Net.forward = bytegraph.compile(Net.forward, backend=counter)
    models = [Net() for _ in range(3)]
    for model in models:
        x = torch.randn(2, 4)
        expected = MLP.forward(model, x)
        assert_same(model(x), expected)
    assert counter.frame_count == 1
    wide = Net(width=6)  # another structure: another graph
    x = torch.randn(2, 6)
    assert_same(wide(x), MLP.forward(wide, x))
    assert counter.frame_count == 2
    for model in models:  # still served by the first entry
        model(torch.randn(2, 4))
    assert counter.frame_count == 2


def test_compile_module_patches_forward_and_returns_it():
    _strict()
    model, counter = MLP(), CompileCounter()
    eager = copy.deepcopy(model)
    assert bytegraph.compile(model, backend=counter) is model
    assert "forward" in model.__dict__
    x = torch.randn(3, 4)
    assert_same(model(x), eager(x))
    assert counter.frame_count == 1
    assert len(bytegraph.cache_entries(model)) == 1


def test_hooks_on_the_compiled_model_run_around_it():
    _strict()
    model = MLP()
    eager = copy.deepcopy(model)
    for m in (model, eager):
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_hook(lambda mod, args, out: out + 1)
    bytegraph.compile(model, backend="eager")
    x = torch.randn(2, 4)
    assert_same(model(x), eager(x))


def test_submodule_hooks_are_inlined():
    _strict()
    model = MLP()
    eager = copy.deepcopy(model)
    seen = []
    for m in (model, eager):
        m.layers[0].register_forward_pre_hook(lambda mod, args: (args[0].sin(),))
        m.layers[1].register_forward_hook(lambda mod, args, out: out * 3)
    counter = CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    assert_same(model(x), eager(x))
    assert counter.frame_count == 1 and not seen


def test_compiled_submodule_inside_a_compiled_model_is_inlined():
    _strict()
    model = MLP()
    eager = copy.deepcopy(model)
    bytegraph.compile(model.layers[0], backend="eager")
    counter = CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    assert_same(model(x), eager(x))
    assert counter.frame_count == 1
