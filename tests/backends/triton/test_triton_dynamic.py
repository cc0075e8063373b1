"""Dynamic shapes: symbolic sizes become kernel arguments; one compiled graph serves many sizes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from bytegraph.backends.triton import config


def test_pointwise_serves_many_sizes(triton_compile):
    runner = triton_compile(
        lambda x, y: (torch.relu(x * y + 1),), torch.randn(5, 7), torch.randn(7), dynamic=True
    )
    for n, m in [(5, 7), (3, 9), (11, 2)]:
        x, y = torch.randn(n, m), torch.randn(m)
        torch.testing.assert_close(runner(x, y)[0], torch.relu(x * y + 1))
    assert len(runner.kernels) == 1
    assert "xnumel" in runner.kernels[0].source


def test_softmax_with_symbolic_rows_uses_looped_kernel(triton_compile):
    runner = triton_compile(
        lambda x: (torch.softmax(x, -1), x.sum(0)), torch.randn(4, 6), dynamic=True
    )
    for n, m in [(4, 6), (3, 300), (7, 5)]:
        x = torch.randn(n, m)
        out = runner(x)
        torch.testing.assert_close(out[0], torch.softmax(x, -1))
        torch.testing.assert_close(out[1], x.sum(0), atol=1e-5, rtol=1e-5)
    assert any("for roffset" in k.source for k in runner.kernels)


def test_layer_norm_dynamic_batch(triton_compile):
    w, b = torch.randn(8), torch.randn(8)
    runner = triton_compile(
        lambda x, w, b: (F.layer_norm(x, (8,), w, b),), torch.randn(3, 8), w, b, dynamic=True
    )
    for n in (3, 10):
        x = torch.randn(n, 8)
        torch.testing.assert_close(runner(x, w, b)[0], F.layer_norm(x, (8,), w, b))


def test_views_with_symbolic_sizes(triton_compile, monkeypatch):
    monkeypatch.setattr(config, "persistent_reduction_max", 16)
    runner = triton_compile(
        lambda x: ((x.t() * 2).reshape(-1), x[:, 1:].sum(-1)), torch.randn(4, 6), dynamic=True
    )
    for n, m in [(4, 6), (5, 3)]:
        x = torch.randn(n, m)
        out = runner(x)
        torch.testing.assert_close(out[0], (x.t() * 2).reshape(-1))
        torch.testing.assert_close(out[1], x[:, 1:].sum(-1))
