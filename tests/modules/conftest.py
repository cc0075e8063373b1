"""Shared helpers for the nn.Module tests: compile a deep copy of a model and compare with eager."""

from __future__ import annotations

import pytest
import torch

import bytegraph


@pytest.fixture(autouse=True)
def _fresh():
    torch.manual_seed(0)
    bytegraph.reset()
    yield
