"""``check_model`` itself: it compares every output tensor, counts breaks in training as in
inference, and fails when a training step falls back to Python."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from models import modeltest
from models.modeltest import check_model
from torch import nn

import bytegraph


class TwoOutputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x)
        return y, {"aux": y.sum(-1)}


class PrintsInTraining(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x)
        if self.training:
            print("training")  # a graph break in training only
        return y * 2


def _fake_compile(monkeypatch, wrap):
    """bytegraph.compile(model) replaced by ``wrap(model, forward)`` as the model's forward."""

    def compile(model, **kwargs):
        forward = model.forward
        model.forward = lambda *a, **k: wrap(model, forward, *a, **k)
        return model

    monkeypatch.setattr(modeltest.bytegraph, "compile", compile)


def test_a_wrong_second_output_fails(monkeypatch):
    def wrong_aux(model, forward, x):
        y, extra = forward(x)
        return y, {"aux": extra["aux"] + 1}

    _fake_compile(monkeypatch, wrong_aux)
    with pytest.raises(AssertionError, match="aux"):
        check_model(TwoOutputs(), torch.randn(2, 4))


def test_a_fallback_in_training_fails(monkeypatch):
    def falls_back_in_training(model, forward, x):
        if model.training:
            warnings.warn("bytegraph: running forward in Python: internal_error", stacklevel=1)
        return forward(x)

    _fake_compile(monkeypatch, falls_back_in_training)
    with pytest.raises(UserWarning, match="bytegraph: running"):
        check_model(TwoOutputs(), torch.randn(2, 4))


def test_a_break_in_training_only_is_counted():
    with pytest.raises(AssertionError, match="training"):
        check_model(PrintsInTraining(), torch.randn(2, 4))
    bytegraph.reset()
    check_model(PrintsInTraining(), torch.randn(2, 4), train_breaks=1)


def test_outputs_compared_leaf_by_leaf():
    y = torch.ones(2)
    modeltest.assert_outputs_close((y, {"a": [y, 3]}), (y.clone(), {"a": [y.clone(), 3]}))
    with pytest.raises(AssertionError):
        modeltest.assert_outputs_close((y, {"a": [y, 3]}), (y, {"a": [y + 1, 3]}))
    with pytest.raises(AssertionError):
        modeltest.assert_outputs_close((y, {"a": [y, 3]}), (y, {"a": [y, 4]}))


class _Counts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("seen", torch.zeros(()))
        self.calls, self.shapes = 0, ()


def test_state_differences_reports_what_a_forward_left_behind():
    """The model suites' state check (``suite.state_differences``): a buffer, a counter, a tuple
    attribute, an attribute one model lacks, each named; equal state gives nothing."""
    from models.suite import state_differences

    a = _Counts()
    b = copy.deepcopy(a)
    assert state_differences(a, b, "now") == []
    a.calls, a.lin.note = 1, "x"
    a.seen += 1
    a.shapes = (2, 3)
    found = state_differences(a, b, "now")
    assert any("buffer seen now" in d for d in found), found
    b.seen += 1
    found = state_differences(a, b, "now")
    assert any("attribute calls now" in d for d in found), found
    assert any("attribute shapes now" in d for d in found), found
    assert any("attributes of lin now: ['note'] in one model only" in d for d in found), found
