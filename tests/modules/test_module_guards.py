"""Module trees are guarded by one ``MODULE_TREE`` check (O(1) while no module changed) instead of
one guard per parameter, and every structural change still recompiles: swapped submodule, replaced
parameter, dtype change, ``train()``/``eval()``, ``requires_grad_``, hooks added later. In-place
value updates (optimizer steps) do not."""

from __future__ import annotations

import torch
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same
from torch import nn

import bytegraph


class Net(nn.Module):
    def __init__(self, layers: int = 2):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(4, 4) for _ in range(layers)])
        self.drop = nn.Dropout(0.5)
        self.scale = 2.0

    def forward(self, x):
        return self.drop(self.layers(x)) * self.scale


def _compiled(layers: int = 2):
    model, counter = Net(layers).eval(), CompileCounter()
    bytegraph.compile(model, backend=counter)
    x = torch.randn(2, 4)
    model(x)
    return model, counter, x


def _guard_lines(layers: int) -> list[str]:
    model, _, _ = _compiled(layers)
    return bytegraph.guard_source(model.forward).splitlines()


def test_guard_size_does_not_grow_with_layers():
    assert len(_guard_lines(2)) == len(_guard_lines(24))
    text = "\n".join(_guard_lines(24))
    assert "___tree.check(self)" in text
    assert "_parameters" not in text


def test_unchanged_model_calls_hit_the_fast_path():
    model, counter, x = _compiled()
    model(x)  # the first guarded call validates the tree (the slow path, once)
    (variant,) = bytegraph.cache_entries(model)
    tree = next(v for k, v in variant.guards.consts.values.items() if k.startswith("___tree"))
    slow_calls = []
    original = tree.slow
    tree.slow = lambda root: slow_calls.append(root) or original(root)
    for _ in range(5):
        model(x)
    assert slow_calls == [] and counter.frame_count == 1


def _recompiles_after(change) -> None:
    model, counter, x = _compiled()
    change(model)
    assert_same(model(x), Net.forward(model, x))
    assert counter.frame_count == 2, "the change must cause a recompile"
    model(x)
    assert counter.frame_count == 2


def test_swapped_submodule_recompiles():
    _recompiles_after(lambda m: m.layers.__setitem__(1, nn.Tanh()))


def test_replaced_parameter_with_new_shape_recompiles():
    def change(m):
        m.layers[1].weight = nn.Parameter(torch.randn(4, 4).t().contiguous().t())  # other strides

    _recompiles_after(change)


def test_dtype_change_recompiles():
    model, counter, x = _compiled()
    model.double()
    out = model(x.double())
    assert out.dtype is torch.float64 and counter.frame_count == 2


def test_train_eval_recompiles():
    def change(m):
        m.drop.p = 0.0  # train mode without randomness, to compare with eager
        m.train()

    _recompiles_after(change)


def test_requires_grad_change_recompiles():
    _recompiles_after(lambda m: m.layers[0].weight.requires_grad_(False))


def test_plain_attribute_change_recompiles():
    def change(m):
        m.scale = 3.0

    _recompiles_after(change)


def test_hook_added_after_compile_recompiles():
    _recompiles_after(lambda m: m.layers[0].register_forward_hook(lambda mod, a, out: out * 10))


def test_module_list_insert_recompiles():
    _recompiles_after(lambda m: m.layers.insert(0, nn.Identity()))


def test_optimizer_steps_do_not_recompile():
    model, counter, x = _compiled()
    model.train()
    model.drop.p = 0.0
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    assert counter.frame_count == 2  # one for eval, one for train mode
