"""Shared check for the real-model tests: compile a model, compare inference and one training step
with eager (outputs, gradients, parameters after an optimizer step, buffers) and assert the number
of graph breaks (``bytegraph.explain``), so a new break is a failure, never hidden.

``check_model`` is for hand-built models; ``BytegraphEngine`` is bytegraph's ``suite.Engine`` for
the ``zoo`` architectures (``suite.run_arch``)."""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from models.suite import Engine, Phase, first_tensor
from torch import nn

import bytegraph
from bytegraph.explain import Recorder, Report

Loss = Callable[[Any], torch.Tensor]


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


class BytegraphEngine(Engine):
    name = "bytegraph"

    def __init__(self, backend: str | None = "eager") -> None:
        self.backend = backend
        self.recorder = Recorder()
        self.mark = 0

    def compile(self, model: nn.Module) -> Callable[..., Any]:
        bytegraph.reset()
        if self.backend is None:  # default arguments
            return bytegraph.compile(model)
        return bytegraph.compile(model, backend=self.backend)

    def start(self) -> None:
        self.mark = len(self.recorder.records)

    def counts(self) -> Phase:
        report = Report(self.recorder.records[self.mark :])
        reasons = report.break_reasons
        return Phase(
            graphs=report.graph_count,
            breaks=len(reasons),
            reasons=[r.reason for r in reasons],
            internal=[r.reason for r in reasons if r.kind == "internal_error"],
        )

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with warnings.catch_warnings(), self.recorder:
            warnings.filterwarnings("ignore", message="bytegraph: ")
            yield
