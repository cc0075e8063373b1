"""Zero-argument ``super()`` after a graph break: the resume function keeps ``self`` as its first
argument (``super()`` reads the frame's first argument implicitly)."""

from __future__ import annotations

import torch
from difftest import assert_same, compile_counted


class Base(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Child(Base):
    def forward(self, x):
        y = x + 1
        print("between graphs")
        return super().forward(y) + 1


def test_super_after_break_binds_self(capsys):
    model = Child()
    compiled, counter = compile_counted(model.forward)
    x = torch.randn(3)
    assert_same(compiled(x), Base.forward(model, x + 1) + 1)
    assert_same(compiled(x), Base.forward(model, x + 1) + 1)
    assert counter.frame_count == 2
    assert capsys.readouterr().out == "between graphs\n" * 2
