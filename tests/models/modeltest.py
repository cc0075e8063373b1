"""Shared check for the real-model tests: compile a model, compare inference and one training step
with eager (outputs, gradients, parameters after an optimizer step, buffers) and assert the number
of graph breaks (``bytegraph.explain``), so a new break is a failure, never hidden."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import bytegraph

Loss = Callable[[Any], torch.Tensor]


def first_tensor(out: Any) -> torch.Tensor:
    """The main output of a model (a tensor, the first of a tuple, or
    ``.logits``/``last_hidden_state``)."""
    for name in ("logits", "last_hidden_state"):
        if hasattr(out, name):
            return getattr(out, name)
    return out if isinstance(out, torch.Tensor) else first_tensor(out[0])


def check_model(
    model: nn.Module,
    *inputs: Any,
    breaks: int = 0,
    loss: Loss | None = None,
    backend: str = "eager",
    steps: int = 2,
    **kwargs: Any,
) -> None:
    """Inference (eval, no_grad) then ``steps`` training steps (train, SGD), compiled vs eager."""
    loss = loss or (lambda out: first_tensor(out).float().square().mean())
    eager = copy.deepcopy(model)
    report = bytegraph.explain(copy.deepcopy(model).eval().forward, backend=backend)(
        *inputs, **kwargs
    )
    assert report.graph_break_count == breaks, str(report)
    bytegraph.compile(model, backend=backend)
    with torch.no_grad():
        for m in (model, eager):
            m.eval()
        torch.testing.assert_close(
            first_tensor(model(*inputs, **kwargs)), first_tensor(eager(*inputs, **kwargs))
        )
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (model, eager)]
    for m in (model, eager):
        m.train()
    for _ in range(steps):
        for m, opt in zip((model, eager), opts, strict=True):
            opt.zero_grad()
            loss(m(*inputs, **kwargs)).backward()
        for (name, p), (_, q) in zip(
            model.named_parameters(), eager.named_parameters(), strict=True
        ):
            torch.testing.assert_close(p.grad, q.grad, msg=name, atol=1e-5, rtol=1e-4)
        for opt in opts:
            opt.step()
    for (name, b), (_, c) in zip(model.named_buffers(), eager.named_buffers(), strict=True):
        torch.testing.assert_close(b, c, msg=name)
