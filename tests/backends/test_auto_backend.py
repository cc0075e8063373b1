"""The default backend ``auto``: triton where it can run (CUDA tensors, or ``TRITON_INTERPRET=1``),
eager for graphs on CPU tensors otherwise."""

from __future__ import annotations

import torch
from bytegraph.backends import auto as auto_module
from bytegraph.backends.registry import lookup_backend


def test_auto_uses_eager_for_cpu_graphs_without_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    calls = []
    monkeypatch.setattr(
        auto_module, "eager", lambda gm, inputs: calls.append("eager") or gm.forward
    )
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    fn = lookup_backend("auto")(gm, [torch.randn(3)])
    x = torch.randn(3)
    torch.testing.assert_close(fn(x), x + 1)
    assert calls == ["eager"]


def test_auto_uses_triton_under_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seen = []
    triton = lookup_backend("triton")

    def recording(gm, inputs):
        seen.append("triton")
        return triton(gm, inputs)

    monkeypatch.setattr(auto_module, "lookup_backend", lambda name: recording)
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x * 2 + 1))
    fn = lookup_backend("auto")(gm, [torch.randn(8)])
    x = torch.randn(8)
    torch.testing.assert_close(fn(x), torch.relu(x * 2 + 1))
    assert seen == ["triton"]
