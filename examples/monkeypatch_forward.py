"""Compiling models by monkeypatching ``forward``: the way most users compile an ``nn.Module``.

What you will see:
1. ``model.forward = bytegraph.compile(model.forward)``: the traced graph (parameters are graph
   inputs) and the guards: one ``MODULE_TREE`` check for the whole model instead of one guard per
   parameter;
2. ``Model.forward = bytegraph.compile(Model.forward)``: every instance of the same structure shares
   one graph;
3. ``bytegraph.compile(model)`` returns the model itself, hooks still run, and an optimizer step
   does not recompile while ``model.eval()`` does.

    python examples/monkeypatch_forward.py
"""

# %%
# A small model: parameters, a buffer, a ModuleList, dropout (so train/eval matters).
from __future__ import annotations

import torch
from torch import nn

import bytegraph


class Block(nn.Module):
    def __init__(self, width: int = 8, layers: int = 3):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])
        self.drop = nn.Dropout(0.1)
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x):
        for layer in self.layers:
            x = self.drop(torch.relu(layer(x)))
        return x * self.scale


torch.manual_seed(0)
x = torch.randn(4, 8)

# %%
# 1. Patch one instance. Module.__call__ (hooks, _call_impl) still runs around the compiled forward.
model = Block().eval()
expected = model(x)
model.forward = bytegraph.compile(model.forward)
torch.testing.assert_close(model(x), expected)
(entry,) = bytegraph.cache_entries(model)
print("=== graph (parameters and buffers are placeholders) ===")
print(entry.graphs[0].code)
print("=== guards: the model is one MODULE_TREE check, the buffer keeps its tensor check ===")
print(bytegraph.guard_source(model.forward))

# %%
# 2. Patch the class: all instances with the same structure share one graph.
Block.forward = bytegraph.compile(Block.forward)
a, b = Block().eval(), Block().eval()
a(x), b(x)
print("class-patched entries:", bytegraph.cache_entries(Block.forward))
Block.forward = Block.forward.__wrapped__  # un-patch the class for the next section

# %%
# 3. compile(model) patches forward in place and returns the model; hooks keep working.
model = bytegraph.compile(Block(layers=2))
model.register_forward_hook(lambda mod, args, out: print("  forward hook saw", tuple(out.shape)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()
print("entries after 3 optimizer steps (no recompiles):", len(bytegraph.cache_entries(model)))
model.eval()
model(x)
print("entries after model.eval() (dropout off: a new graph):", len(bytegraph.cache_entries(model)))
