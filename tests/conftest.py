"""Every test starts from ``bytegraph.reset()`` and a fixed seed (helpers live in ``difftest.py``)."""

from __future__ import annotations

import pytest
import torch

import bytegraph


@pytest.fixture(autouse=True)
def _fresh_state():
    bytegraph.reset()
    torch.manual_seed(0)
    yield
    bytegraph.reset()
