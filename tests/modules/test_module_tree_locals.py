"""The module tree's check reads each module once: the type check of a module binds it to a local
that the checks inside it read (``module_tree._make_tree``). A change anywhere in a deep tree is
still seen through those locals, and a model with the same structure still passes."""

from __future__ import annotations

import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same
from torch import nn

import bytegraph


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x) * self.scale


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(self.inner(x))


class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _compiled():
    torch.manual_seed(0)
    model, counter = Deep().eval(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    assert_same(model(x), Deep.forward(model, x))
    return model, counter, x


def _tree_text(model) -> str:
    (variant,) = bytegraph.cache_entries(model)
    (tree,) = [v for k, v in variant.guards.consts.values.items() if k.startswith("___tree")]
    return tree.source


def test_each_module_is_read_once_by_the_tree_check():
    model, _, _ = _compiled()
    text = _tree_text(model)
    below_root = len(list(model.modules())) - 1
    assert text.count("._modules[") == below_root  # each in the check that binds it
    assert text.count(" := ") == below_root
    assert "R._modules['blocks']._modules[" not in text  # no chain read again from the root


def _set_deep_scale(m):
    m.blocks[2].inner.scale = 3.0


def _swap_deep_module(m):
    m.blocks[1].inner.lin = nn.Identity()


def _deep_hook(m):
    m.blocks[2].inner.lin.register_forward_hook(lambda mod, args, out: out + 1)


def _deep_requires_grad(m):
    m.blocks[0].inner.lin.weight.requires_grad_(False)


def _deep_no_bias(m):
    m.blocks[2].inner.lin = nn.Linear(4, 4, bias=False)


@pytest.mark.parametrize(
    "change",
    [_set_deep_scale, _swap_deep_module, _deep_hook, _deep_requires_grad, _deep_no_bias],
    ids=lambda f: f.__name__.lstrip("_"),
)
def test_a_change_deep_in_the_tree_recompiles(change):
    model, counter, x = _compiled()
    model(x)  # the tree check passed once: its answer is kept until a module changes
    assert counter.frame_count == 1
    change(model)
    assert_same(model(x), Deep.forward(model, x))
    assert counter.frame_count == 2, "the change must cause a recompile"
    assert_same(model(x), Deep.forward(model, x))
    assert counter.frame_count == 2


def test_a_model_of_the_same_structure_passes_the_tree_check():
    """The modules are checked by type through the locals, not by identity: another instance
    built alike is served by the same variant."""
    model, counter, x = _compiled()
    tree = next(
        v
        for k, v in bytegraph.cache_entries(model)[0].guards.consts.values.items()
        if k.startswith("___tree")
    )
    alike, other = Deep().eval(), Deep().eval()
    other.blocks[1].inner.scale = 5.0
    for instance in (alike, other):  # compiled as the model is (an attribute of the instance)
        bytegraph.compile(instance, backend=counter)
    assert tree.check(alike)
    assert not tree.check(other)
    assert counter.frame_count == 1
