"""AOTAutograd's request to trace again after marking a float it did not turn into a tensor
(``backends/tensorify_restart.py``) compiles the graph again instead of failing the compile."""

from __future__ import annotations

import torch
from difftest import assert_same
from torch import nn

import bytegraph


def _scheduled_training():
    """SGD with momentum under ExponentialLR: the trace of the step reads the learning rate (a float
    traced symbolically from the second step on) while the forward graph, which does not read it,
    is compiled."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)

    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        sched.step()
        return loss

    return model, opt, step


def test_a_float_symbol_the_graph_does_not_read_compiles_with_aot_eager():
    """The forward graph's compile raised ``TensorifyScalarRestartAnalysis`` (an internal error:
    the whole step ran in Python from the second call on)."""
    model, opt, step = _scheduled_training()
    eager_model, eager_opt, eager_step = _scheduled_training()
    compiled = bytegraph.compile(step, backend="aot_eager")
    for _ in range(3):
        x = torch.randn(5, 4)
        assert_same(compiled(x), eager_step(x))
    assert opt.param_groups[0]["lr"].hex() == eager_opt.param_groups[0]["lr"].hex()
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        assert torch.equal(p, q)
    stats = bytegraph.stats()
    assert not any(k.startswith("fallback") for k in stats), stats
