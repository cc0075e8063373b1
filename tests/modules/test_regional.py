"""Regional compilation: ``bytegraph.compile(layer)`` on each block of a model made of repeated
blocks. The modules of one class compiled with the same settings share one compiled ``forward``, so
the block's code is traced once and every block of the same structure reuses that variant."""

from __future__ import annotations

import torch
from difftest import assert_same
from torch import nn

import bytegraph
from bytegraph.explain import Recorder


class Block(nn.Module):
    def __init__(self, dim: int, scale: float = 1.0):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        self.scale = scale

    def forward(self, x):
        return x + self.proj(self.norm(x)).relu() * self.scale


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.layers = nn.ModuleList(blocks)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def compile_layers(model, **kwargs):
    for layer in model.layers:
        bytegraph.compile(layer, backend="eager", **kwargs)


def run_counted(model, x):
    # no_grad: otherwise the first block's input does not require grad and the others' do (two
    # variants, as with torch.compile)
    with Recorder() as recorder, torch.no_grad():
        out = model(x)
    return out, len(recorder.records)


def _compiled_against_eager(blocks) -> tuple[Stack, int]:
    """Compile ``blocks()``'s layers, run once against an eager copy; the model and its traces."""
    model, eager = Stack(blocks()), Stack(blocks())
    eager.load_state_dict(model.state_dict())
    compile_layers(model)
    x = torch.randn(2, 8)
    out, traces = run_counted(model, x)
    with torch.no_grad():
        assert_same(out, eager(x))
    return model, traces


def test_blocks_of_one_structure_share_one_trace():
    model, traces = _compiled_against_eager(lambda: [Block(8) for _ in range(6)])
    assert traces == 1
    assert len(bytegraph.cache_entries(model.layers[0].forward)) == 1
    _, traces = run_counted(model, torch.randn(2, 8))  # every block hits the shared entry
    assert traces == 0


def test_blocks_of_another_structure_get_their_own_variant():
    model, traces = _compiled_against_eager(
        lambda: [Block(8), Block(8), Block(8, scale=0.5), Block(8, scale=0.5)]
    )
    assert traces == 2  # scale=1.0 and scale=0.5 (a guarded attribute)
    assert len(bytegraph.cache_entries(model.layers[3].forward)) == 2


def test_other_settings_compile_separately():
    first, second = Block(8), Block(8)
    bytegraph.compile(first, backend="eager")
    bytegraph.compile(second, backend="eager", dynamic=False)
    assert first.forward.__func__ is not second.forward.__func__
    third = bytegraph.compile(Block(8), backend="eager")
    assert third.forward.__func__ is first.forward.__func__


def test_same_backend_options_share_one_forward():
    # a backend configured with options is a new partial per compile() call: equal settings still
    # share, other options do not
    first = bytegraph.compile(Block(8), backend="auto", options={"max_autotune": True})
    second = bytegraph.compile(Block(8), backend="auto", options={"max_autotune": True})
    third = bytegraph.compile(Block(8), backend="auto", options={"max_autotune": False})
    assert first.forward.__func__ is second.forward.__func__
    assert third.forward.__func__ is not first.forward.__func__
