"""Buffer mutation happens exactly as in eager (BatchNorm running statistics, a KV cache written
with ``index_copy_`` and slicing, a counter buffer), and ``backward()`` through a compiled forward
gives eager's gradients, with the ``eager`` backend (autograd through the graph) and with
``aot_eager`` (separate forward and backward graphs from AOTAutograd)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from bytegraph.backends.aot import compile_graphs
from bytegraph.backends.debug import CompileCounter
from difftest import assert_same
from torch import nn

import bytegraph

BACKENDS = ["eager", "aot_eager"]


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean((2, 3)))


class KVCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(2, 8, 4))
        self.register_buffer("v", torch.zeros(2, 8, 4))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def forward(self, pos, k, v):
        self.k.index_copy_(1, pos, k)
        self.v[:, pos] = v
        self.calls += 1
        return (self.k * self.v).sum(-1)


def _pair(model):
    warnings.simplefilter("error")
    return model, copy.deepcopy(model)


def _buffers_equal(a: nn.Module, b: nn.Module) -> None:
    for (name, x), (_, y) in zip(a.named_buffers(), b.named_buffers(), strict=True):
        torch.testing.assert_close(x, y, msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batchnorm_running_stats_update_as_in_eager(backend):
    model, eager = _pair(ConvBN().train())
    bytegraph.compile(model, backend=backend)
    for _ in range(3):
        x = torch.randn(2, 3, 5, 5)
        assert_same(model(x), eager(x))
        _buffers_equal(model, eager)
    model.eval(), eager.eval()
    x = torch.randn(2, 3, 5, 5)
    assert_same(model(x), eager(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_kv_cache_and_counter_buffers_mutate_as_in_eager(backend):
    model, eager = _pair(KVCache())
    counter = CompileCounter() if backend == "eager" else backend
    bytegraph.compile(model, backend=counter)
    for step in range(3):
        pos = torch.tensor([step])
        k, v = torch.randn(2, 1, 4), torch.randn(2, 1, 4)
        assert_same(model(pos, k, v), eager(pos, k, v))
        _buffers_equal(model, eager)
    if backend == "eager":
        assert counter.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_match_eager(backend):
    model, eager = _pair(ConvBN().train())
    bytegraph.compile(model, backend=backend)
    x = torch.randn(2, 3, 5, 5)
    model(x).square().sum().backward()
    eager(x).square().sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_loop_matches_eager_without_recompiles(backend):
    model, eager = _pair(ConvBN().train())
    counter = CompileCounter()
    seen = []

    def counting(gm, inputs):
        seen.append(gm)
        return counter(gm, inputs) if backend == "eager" else compile_graphs(gm, inputs)

    bytegraph.compile(model, backend=counting)
    opts = [torch.optim.Adam(m.parameters(), lr=0.01) for m in (model, eager)]
    for _ in range(4):
        x = torch.randn(2, 3, 5, 5)
        for m, opt in zip((model, eager), opts, strict=True):
            opt.zero_grad()
            m(x).square().mean().backward()
            opt.step()
        for (name, p), (_, q) in zip(
            model.named_parameters(), eager.named_parameters(), strict=True
        ):
            torch.testing.assert_close(p, q, msg=name)
        _buffers_equal(model, eager)
    assert len(seen) == 1


def test_aot_eager_gets_separate_forward_and_backward_graphs():
    kept = []

    def backend(gm, inputs):
        fn = compile_graphs(gm, inputs)
        kept.append(fn)
        return fn

    model, eager = _pair(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    bytegraph.compile(model, backend=backend)
    x = torch.randn(5, 3)
    model(x).sum().backward()
    eager(x).sum().backward()
    (fn,) = kept
    assert len(fn.forward_graphs) == 1 and len(fn.backward_graphs) == 1
    targets = {str(n.target) for n in fn.backward_graphs[0].graph.nodes if n.op == "call_function"}
    assert any("mm" in t for t in targets)  # the backward matmuls live in their own graph
    for p, q in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)
