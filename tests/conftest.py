"""Every test starts from ``bytegraph.reset()`` and a fixed seed (helpers live in ``difftest.py``).

Tests use the ``eager`` backend unless they name another: the default ``auto`` sends CPU graphs to
the Triton interpreter whenever ``TRITON_INTERPRET=1`` is set, which the triton tests' conftest sets
for the whole session (triton picks interpreter mode when it is imported). ``tests/backends`` checks
``auto`` itself.
"""

from __future__ import annotations

import pytest
import torch

import bytegraph

bytegraph.config.default_backend = "eager"


@pytest.fixture(autouse=True)
def _fresh_state():
    bytegraph.reset()
    torch.manual_seed(0)
    yield
    bytegraph.reset()
