"""Small whole models, forward and backward: a transformer block and a conv net."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = 2, 5, 16
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = att.masked_fill(torch.ones(t, t).tril() == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return (x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")),)


def test_transformer_block_forward_and_backward(triton_check):
    torch.manual_seed(0)
    runner = triton_check(torch.fx.symbolic_trace(Block()), torch.randn(2, 5, 16), grad=True,
                          atol=1e-4, rtol=1e-4)
    assert len(runner.graphs) == 2


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x, w, b):
        y = F.batch_norm(self.conv(x), None, None, w, b, training=True).relu()
        y = F.max_pool2d(y, 2)
        return (self.fc(y.flatten(1)).log_softmax(-1),)


def test_conv_net_forward_and_backward(triton_check):
    torch.manual_seed(0)
    runner = triton_check(torch.fx.symbolic_trace(ConvNet()), torch.randn(2, 3, 4, 4),
                          torch.randn(4), torch.randn(4), grad=True, atol=1e-4, rtol=1e-4)
    assert runner.kernels
