"""Shared check for the real-model tests: compile a model, compare inference and training steps
with eager (every output tensor, gradients, parameters after each optimizer step, buffers) and
assert the number of graph breaks in both phases and that neither fell back to Python, so a new
break or a fallback is a failure, never hidden.

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
    train_breaks: int | None = None,
    loss: Loss | None = None,
    backend: str = "eager",
    steps: int = 2,
    **kwargs: Any,
) -> None:
    """Inference (eval, no_grad) then ``steps`` training steps (train, SGD), compiled vs eager:
    every tensor of the outputs, the gradients, the parameters after each step and the buffers.
    The first call of each phase takes exactly ``breaks`` (inference) and ``train_breaks``
    (training; default ``breaks``) graph breaks; a fallback to Python in either phase fails."""
    loss = loss or (lambda out: first_tensor(out).float().square().mean())
    train_breaks = breaks if train_breaks is None else train_breaks
    eager = copy.deepcopy(model)
    bytegraph.compile(model, backend=backend)
    with torch.no_grad():
        for m in (model, eager):
            m.eval()
        with _no_fallback() as recorder:
            out = model(*inputs, **kwargs)
        _assert_breaks(recorder.report(), breaks, "inference")
        assert_outputs_close(out, eager(*inputs, **kwargs))
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (model, eager)]
    for m in (model, eager):
        m.train()
    for step in range(steps):
        outs = []
        for m, opt in zip((model, eager), opts, strict=True):
            opt.zero_grad()
            if m is model:
                with _no_fallback() as recorder:
                    outs.append(m(*inputs, **kwargs))
                if step == 0:
                    _assert_breaks(recorder.report(), train_breaks, "training")
            else:
                outs.append(m(*inputs, **kwargs))
            loss(outs[-1]).backward()
        assert_outputs_close(outs[0], outs[1], atol=1e-5, rtol=1e-4)
        for (name, p), (_, q) in zip(
            model.named_parameters(), eager.named_parameters(), strict=True
        ):
            torch.testing.assert_close(p.grad, q.grad, msg=name, atol=1e-5, rtol=1e-4)
        for opt in opts:
            opt.step()
        for (name, p), (_, q) in zip(
            model.named_parameters(), eager.named_parameters(), strict=True
        ):
            torch.testing.assert_close(p, q, msg=name, atol=1e-5, rtol=1e-4)
    for (name, b), (_, c) in zip(model.named_buffers(), eager.named_buffers(), strict=True):
        torch.testing.assert_close(b, c, msg=name)


def assert_outputs_close(actual: Any, expected: Any, path: str = "out", **tolerances: Any) -> None:
    """Every tensor of two model outputs (tensors, tuples, lists, dicts and ``ModelOutput``s,
    nested) is close, and the structure and every other leaf equal."""
    assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, msg=path, **tolerances)
        assert actual.requires_grad == expected.requires_grad, f"{path}: requires_grad"
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_outputs_close(actual[key], expected[key], f"{path}[{key!r}]", **tolerances)
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_outputs_close(a, e, f"{path}[{i}]", **tolerances)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


@contextlib.contextmanager
def _no_fallback() -> Iterator[Recorder]:
    """Records the compile events of the block; bytegraph's fallback warning fails it."""
    recorder = Recorder()
    with warnings.catch_warnings(), recorder:
        warnings.filterwarnings("error", message="bytegraph: ")
        yield recorder


def _assert_breaks(report: Report, breaks: int, phase: str) -> None:
    fell_back = [str(r) for r in report.break_reasons if r.fell_back]
    assert not fell_back, f"{phase} fell back to Python: {fell_back}"
    assert report.graph_break_count == breaks, f"{phase}: {report}"


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
