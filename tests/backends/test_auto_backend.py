"""The default backend ``auto``: triton where it can run (CUDA tensors, or ``TRITON_INTERPRET=1``);
for graphs on CPU tensors otherwise, eager or Inductor by the rule of ``choose_cpu_backend`` (what
it decides is tested here, and that either way results match eager; nothing is timed)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from bytegraph.backends import auto as auto_module
from bytegraph.backends.registry import lookup_backend
from difftest import assert_same
from torch import nn
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import bytegraph

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)


@pytest.fixture(autouse=True)
def _no_interpreter(monkeypatch):
    """The triton tests' conftest may set ``TRITON_INTERPRET=1`` for the whole session."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def choices(fn, *args):
    """Compile ``fn`` with ``auto``, call it once, return the ``CpuChoice`` of each graph."""
    seen = []
    auto = lookup_backend("auto")

    def recording(gm, example_inputs):
        seen.append(auto_module.choose_cpu_backend(gm))
        return auto(gm, example_inputs)

    bytegraph.compile(fn, backend=recording)(*args)
    return seen


def mlp_block(x, w):
    """A transformer MLP: layer norm, a matrix product, GELU, a residual (9 fusible ops)."""
    h = F.layer_norm(x, x.shape[-1:])
    h = F.gelu(h @ w) * 0.5 + x
    return torch.tanh(h).sum(-1) + h.mean(-1)


def test_auto_uses_eager_for_a_small_mlp_on_cpu(monkeypatch):
    calls = []
    monkeypatch.setattr(
        auto_module, "eager", lambda gm, inputs: calls.append("eager") or gm.forward
    )
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(2, 8)
    [choice] = choices(model, x)
    assert (choice.backend, choice.fused_ops) == ("eager", 1)  # relu; the linears are library
    assert calls == ["eager"]


def test_library_and_layout_ops_are_not_counted():
    def fn(x, w, k):
        y = torch.matmul(x.transpose(0, 1), w).view(-1, 4)
        z = F.conv1d(y.unsqueeze(0), k).squeeze(0)
        return F.linear(z, w[:, :2].t()).reshape(2, -1)

    x, w, k = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4, 1)
    [choice] = choices(fn, x, w, k)
    assert (choice.backend, choice.fused_ops) == ("eager", 0)


def test_auto_uses_inductor_for_a_graph_with_many_fusible_ops(monkeypatch):
    calls = []
    inductor = lookup_backend("inductor")
    monkeypatch.setattr(
        auto_module,
        "lookup_backend",
        lambda name: (
            lambda gm, inputs, **kw: calls.append((name, kw)) or inductor(gm, inputs, **kw)
        ),
    )
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    [choice] = choices(mlp_block, x, w)
    assert choice.backend == "inductor" and choice.fused_ops >= auto_module.MIN_FUSED_OPS
    assert calls == [("inductor", {"options": {"fallback_random": True}})]


def test_few_fusible_ops_on_a_large_tensor_go_to_inductor():
    def fn(x, w):
        return torch.relu(x @ w) - 0.2

    big = auto_module.MIN_FUSED_ELEMENTS // 16
    [small] = choices(fn, torch.randn(4, 16), torch.randn(16, 16))
    [large] = choices(fn, torch.randn(big, 16), torch.randn(16, 16))
    assert (small.backend, small.fused_ops) == ("eager", 2)
    assert (large.backend, large.largest) == ("inductor", auto_module.MIN_FUSED_ELEMENTS)


def test_a_graph_without_metadata_counts_every_call_as_a_tensor_op():
    gm = torch.fx.symbolic_trace(lambda x: ((x + 1) * 2).sin().cos())
    assert auto_module.choose_cpu_backend(gm).fused_ops == 4


def test_cpu_graphs_through_inductor_match_eager_in_values_dtypes_and_grad():
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(4, 8, dtype=dtype)
        w = torch.randn(8, 8, dtype=dtype, requires_grad=True)
        bytegraph.reset()
        compiled = bytegraph.compile(mlp_block, backend="auto")
        assert_same(compiled(x, w), mlp_block(x, w))  # values, dtype, requires_grad
        with torch.no_grad():
            assert_same(compiled(x, w), mlp_block(x, w))


def test_dynamic_shapes_through_inductor_match_eager():
    def fn(x):
        return mlp_block(x, torch.ones(x.shape[-1], x.shape[-1])) * x.shape[0]

    compiled = bytegraph.compile(fn, backend="auto", dynamic=True)
    for rows in (3, 5, 7):
        x = torch.randn(rows, 6)
        assert_same(compiled(x), fn(x))
    assert len(bytegraph.cache_entries(compiled)) == 1  # one graph for every size


def test_training_through_inductor_matches_eager():
    """A block with dropout, trained two SGD steps: random numbers are drawn as eager draws
    them (``fallback_random``), gradients and parameters match."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.fc = nn.LayerNorm(16), nn.Linear(16, 16)

        def forward(self, x):
            h = F.dropout(F.gelu(self.fc(self.norm(x))), 0.3, self.training)
            return (torch.tanh(h) * 0.5 + x).square().mean()

    torch.manual_seed(0)
    model, x = Block(), torch.randn(8, 16)
    [choice] = choices(Block().train(), x)
    assert choice.backend == "inductor"
    eager = Block()
    eager.load_state_dict(model.state_dict())
    bytegraph.reset()
    compiled = bytegraph.compile(model, backend="auto")
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for step in range(2):
        losses = []
        for m, opt in zip((compiled, eager), opts, strict=True):
            opt.zero_grad()
            torch.manual_seed(step)
            loss = m(x)
            loss.backward()
            opt.step()
            losses.append(loss)
        torch.testing.assert_close(losses[0], losses[1])
        for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, msg=name)
            torch.testing.assert_close(p, q, msg=name)


def _scheduled_training():
    """SGD with momentum under ExponentialLR: the optimizer's graph reads the learning rate, a new
    float at every step."""
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


def _scheduled_training_beside_eager(backend, steps):
    """``steps`` steps of ``_scheduled_training`` compiled with ``backend``, each beside eager's:
    the losses and the learning rate are eager's; gives the pairs of parameters (compiled, eager)
    and bytegraph's counters."""
    model, opt, step = _scheduled_training()
    eager_model, eager_opt, eager_step = _scheduled_training()
    compiled = bytegraph.compile(step, backend=backend)
    for _ in range(steps):
        x = torch.randn(5, 4)
        assert_same(compiled(x), eager_step(x))
    assert opt.param_groups[0]["lr"].hex() == eager_opt.param_groups[0]["lr"].hex()
    return list(zip(model.parameters(), eager_model.parameters(), strict=True)), bytegraph.stats()


def test_a_float_symbol_the_graph_does_not_read_compiles_with_aot_eager():
    """AOTAutograd's request to trace again after marking a float it did not turn into a tensor
    is a second compile (``backends/tensorify_restart.py``): the forward graph's compile raised
    ``TensorifyScalarRestartAnalysis`` (an internal error: the whole step ran in Python from the
    second call on)."""
    parameters, stats = _scheduled_training_beside_eager("aot_eager", steps=3)
    for p, q in parameters:
        assert torch.equal(p, q)
    assert not any(k.startswith("fallback") for k in stats), stats


def test_a_graph_reading_a_float_input_runs_with_eager():
    gm = torch.fx.symbolic_trace(lambda x, lr: ((x + 1) * 2).sin().cos() * lr)
    [_, lr] = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert auto_module.choose_cpu_backend(gm).backend == "inductor"
    lr.meta["example_value"] = ShapeEnv().create_unbacked_symfloat()
    # without metadata, what reads the float is unknown: Inductor may specialise it
    assert auto_module.choose_cpu_backend(gm) == auto_module.CpuChoice("eager", 5, 0, 1, True)


def _choice_once_the_float_is_a_symbol(fn, *tensors):
    """The ``CpuChoice`` of ``fn``'s graph at its second float (then a symbol; the first is a
    constant)."""
    seen = []

    def recording(gm, example_inputs):
        seen.append(auto_module.choose_cpu_backend(gm))
        return gm.forward

    compiled = bytegraph.compile(fn, backend=recording)
    for lr in (0.5, 0.25):
        compiled(*tensors, lr)
    return seen[-1]


def test_a_float_read_as_an_operand_goes_to_inductor_one_read_as_alpha_does_not():
    """Inductor takes a float that arithmetic reads as a 0-d tensor (one graph for every value),
    and specialises one given as ``alpha=`` (a graph per value)."""
    x, y = torch.randn(8), torch.randn(8)
    scaled = _choice_once_the_float_is_a_symbol(
        lambda x, y, lr: ((x + 1) * 2).sin().cos() * (-lr * 2) + lr, x, y
    )
    alpha = _choice_once_the_float_is_a_symbol(
        lambda x, y, lr: torch.add(((x + 1) * 2).sin().cos(), y, alpha=lr), x, y
    )
    assert scaled == auto_module.CpuChoice("inductor", 6, 8, 1, False)
    assert alpha == auto_module.CpuChoice("eager", 5, 8, 1, True)


def _scaled_block(x, w, scale):
    return mlp_block(x, w) * scale + scale


def test_a_graph_reading_a_float_runs_with_inductor_once_for_every_value(monkeypatch):
    """A float as an operand of arithmetic goes to Inductor as a 0-d tensor: the float a
    constant, then one graph for every value, as torch.compile's Inductor; results as eager's."""
    backends = []
    lookup = auto_module.lookup_backend
    monkeypatch.setattr(
        auto_module, "lookup_backend", lambda name: backends.append(name) or lookup(name)
    )
    x, w = torch.randn(4, 8, dtype=torch.float64), torch.randn(8, 8, dtype=torch.float64)
    calls = [(x, w, s) for s in (0.5, 0.25, 1 / 3)]
    compiled = bytegraph.compile(_scaled_block, backend="auto")
    for args in calls:
        assert_same(compiled(*args), _scaled_block(*args))
    stats = bytegraph.stats()
    assert stats["frames"] == 2 and not any(k.startswith("fallback") for k in stats), stats
    assert backends == ["inductor", "inductor"]  # the float a constant, then a symbol
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    expected = torch.compile(_scaled_block, backend="inductor")
    for args in calls:
        expected(*args)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2


def test_a_training_step_under_a_learning_rate_scheduler_compiles_once():
    """Inductor made the learning rate ``add_(buf, alpha=-lr)`` reads a constant guarded on its
    value: every step compiled the optimizer's graph again, up to the recompile limit (10 frames in
    20 steps, then Python; torch.compile hits its limit too). That graph now runs with eager."""
    parameters, stats = _scheduled_training_beside_eager("auto", steps=6)
    for p, q in parameters:
        torch.testing.assert_close(p, q)
    assert stats["frames"] <= 4 and "recompile_limit" not in stats, stats


def test_a_size_read_from_data_in_the_backward_compiles_with_inductor():
    """``h[mask] = v`` with ``v`` requiring grad: the backward Inductor derives takes
    ``grad[mask]``, whose size depends on the mask's data. torch.compile compiles it (its fake mode
    has symbols); bytegraph's graph went to plain Python with an internal error (wav2vec2's
    training step). No warning from the first, failed attempt reaches the user."""

    def masked(x, mask, v):
        h = x * 2
        h[mask] = v
        return (h * 3).sum()

    x = torch.randn(4, 5, requires_grad=True)
    v = torch.randn(5, requires_grad=True)
    mask = torch.tensor([True, False, True, False])
    bytegraph.reset()
    compiled = bytegraph.compile(masked, backend="inductor")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x, mask, v)
        out.backward()
    assert [str(w.message) for w in caught if "bytegraph" in str(w.message)] == []
    assert [str(w.message) for w in caught if "Error detected" in str(w.message)] == []
    grads = (x.grad, v.grad)
    x.grad = v.grad = None
    expected = masked(x, mask, v)
    expected.backward()
    assert_same(out, expected)
    assert_same(grads, (x.grad, v.grad))
    assert len(bytegraph.cache_entries(compiled)) == 1


def test_a_graph_inductor_cannot_compile_runs_eagerly_with_a_notice(monkeypatch):
    def failing(gm, inputs, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(auto_module, "lookup_backend", lambda name: failing)
    monkeypatch.setitem(auto_module.notice_once.__globals__, "_NOTICED", set())  # once per test
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = bytegraph.compile(mlp_block, backend="auto")(x, w)
    assert_same(out, mlp_block(x, w))
    assert any("Inductor could not compile" in str(w.message) for w in caught)


SCRIPT = r"""
import json, sys
import torch, torch.nn.functional as F
import bytegraph

small = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def with_break(x):
    y = x.sin() * 2
    print("break")
    return y.cos() + 1

def block(x):
    return torch.tanh(F.gelu(x * 2 + 1) - x.mean(-1, keepdim=True)).sum(-1)

x = torch.randn(3, 4)
small(x), bytegraph.compile(small)(x), bytegraph.compile(with_break)(x)
after_small = "torch._inductor" in sys.modules
torch.testing.assert_close(bytegraph.compile(block)(x), block(x))
print(json.dumps([after_small, "torch._inductor" in sys.modules]))
"""


def test_inductor_is_imported_only_when_a_graph_goes_there():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    ).stdout
    after_small, after_block = json.loads(out.splitlines()[-1])
    assert (after_small, after_block) == (False, True)


def test_auto_uses_triton_under_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    seen = []
    triton = lookup_backend("triton")

    def recording(gm, inputs):
        seen.append("triton")
        return triton(gm, inputs)

    monkeypatch.setattr(auto_module, "lookup_backend", lambda name: recording)
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x * 2 + 1))
    fn = lookup_backend("auto")(gm, [torch.randn(8)])
    x = torch.randn(8)
    torch.testing.assert_close(fn(x), torch.relu(x * 2 + 1))
    assert seen == ["triton"]
