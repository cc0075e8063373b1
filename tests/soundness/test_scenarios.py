"""Every scenario of ``scenarios.py`` at every timing of ``harness.py``: each call equals eager and
the number of recompiles is exact."""

from __future__ import annotations

import pytest
import torch
from soundness.harness import run_scenario
from soundness.scenarios import SCENARIOS

CASES = [(s, t) for s in SCENARIOS for t in s.timings]


@pytest.fixture(autouse=True)
def _torch_state():
    tf32, threads = torch.backends.cuda.matmul.allow_tf32, torch.get_num_threads()
    yield
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_num_threads(threads)
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.set_default_device(None)
    torch.use_deterministic_algorithms(False)
    torch.set_autocast_enabled("cpu", False)


def test_scenario_table_is_large_enough():
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    assert len(CASES) >= 100


@pytest.mark.parametrize(("scenario", "timing"), CASES, ids=[f"{s.name}-{t}" for s, t in CASES])
def test_guards_are_sound(scenario, timing):
    run_scenario(scenario, timing)
