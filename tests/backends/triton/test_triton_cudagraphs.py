"""``mode="reduce-overhead"`` (``Options(cudagraphs=True)``): the CUDA-graph runner's bookkeeping.

On CPU the capture layer is replaced by ``FakeCapture``, which behaves as a CUDA graph does: the
recording computes nothing (its outputs are poisoned), a replay recomputes from the recorded
inputs into the recorded outputs. Everything else (static buffers, re-recording per shape,
invalidation when a static input moves, cloned outputs, fallbacks) is the real runner, running
real kernels under the interpreter. ``@pytest.mark.gpu`` tests capture real CUDA graphs.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from bytegraph.backends.triton import Options, compile_triton, config, cudagraphs, triton_backend

import bytegraph

pytestmark = pytest.mark.interpreter_only  # the GPU parts are the gpu-marked tests below

CUDAGRAPHS = Options(cudagraphs=True)


class FakeCapture:
    """Records ``fn`` by running it once, then poisons the outputs it allocated (a real capture
    computes nothing); a replay runs ``fn`` again and writes its results into those outputs."""

    def __init__(self) -> None:
        self.records = 0
        self.replays = 0

    def record(self, fn, inputs):
        self.records += 1
        outputs = fn()
        storages = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}
        for o in outputs:
            if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() not in storages:
                o.fill_(float("nan") if o.is_floating_point() else -7)

        def replay() -> None:
            self.replays += 1
            for o, new in zip(outputs, fn(), strict=True):
                if isinstance(o, torch.Tensor):
                    o.copy_(new)

        return outputs, replay


class FailingCapture:
    def record(self, fn, inputs):
        raise RuntimeError("operation not permitted when stream is capturing")


@pytest.fixture
def fake_capture(monkeypatch):
    capture = FakeCapture()
    monkeypatch.setattr(cudagraphs, "capture_for", lambda inputs: capture)
    return capture


def mlp_graph():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
    return model, torch.fx.symbolic_trace(model)


def runner_of(compiled):
    (graph,) = compiled.graphs
    assert graph.runner is not None
    return graph.runner


def test_replays_after_one_warmup_and_one_recording(fake_capture):
    model, gm = mlp_graph()
    with torch.no_grad():
        compiled = compile_triton(gm, [torch.randn(4, 6)], Options(cudagraphs=True))
        for _ in range(5):
            x = torch.randn(4, 6)
            torch.testing.assert_close(compiled(x), model(x))
    stats = runner_of(compiled).stats
    assert (stats["warmups"], stats["records"], stats["replays"]) == (1, 1, 4)
    assert fake_capture.records == 1


def test_each_shape_is_recorded_once(fake_capture, triton_compile):
    model, gm = mlp_graph()
    with torch.no_grad():  # dynamic: one compiled graph for every row count
        compiled = triton_compile(gm, torch.randn(4, 6), dynamic=True, options=CUDAGRAPHS)
        for rows in (4, 4, 2, 2, 4, 2, 4):
            x = torch.randn(rows, 6)
            torch.testing.assert_close(compiled(x), model(x))
    runner = runner_of(compiled)
    assert runner.stats["records"] == 2 and len(runner.recordings) == 2


def test_dynamic_inputs_are_copied_into_one_static_buffer(fake_capture):
    model, gm = mlp_graph()
    with torch.no_grad():
        compiled = compile_triton(gm, [torch.randn(4, 6)], Options(cudagraphs=True))
        for _ in range(4):
            compiled(torch.randn(4, 6))
    (rec,) = runner_of(compiled).recordings.values()
    (position,) = rec.buffers  # the activation; the parameters are read in place
    address = rec.buffers[position].data_ptr()
    x = torch.randn(4, 6)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert rec.buffers[position].data_ptr() == address
    torch.testing.assert_close(rec.buffers[position], x)
    assert set(rec.static) == {i for i in range(len(rec.static) + 1) if i != position}


def test_outputs_are_not_overwritten_by_later_calls(fake_capture):
    model, gm = mlp_graph()
    with torch.no_grad():
        compiled = compile_triton(gm, [torch.randn(4, 6)], Options(cudagraphs=True))
        xs = [torch.randn(4, 6) for _ in range(4)]
        outs = [compiled(x) for x in xs]
        for x, out in zip(xs, outs, strict=True):
            torch.testing.assert_close(out, model(x))


def test_moved_parameter_invalidates_the_recording(fake_capture):
    gm = torch.fx.symbolic_trace(lambda x, w: (torch.tanh(x @ w),))
    w = nn.Parameter(torch.randn(6, 3))
    # Every x stays alive, so none comes back at an earlier address (an input seen twice at the
    # same address would be read in place, and invalidated when it moves: not what this tests).
    xs = [torch.randn(4, 6) for _ in range(6)]
    with torch.no_grad():
        compiled = compile_triton(gm, [torch.randn(4, 6), w], Options(cudagraphs=True))
        for x in xs[:3]:
            compiled(x, w)
        w = nn.Parameter(torch.randn(6, 3))  # a new parameter at a new address
        for x in xs[3:]:
            torch.testing.assert_close(compiled(x, w)[0], torch.tanh(x @ w))
    stats = runner_of(compiled).stats
    assert stats["invalidations"] == 1 and stats["records"] == 2
    (rec,) = runner_of(compiled).recordings.values()
    assert set(rec.static) == {1}  # a parameter stays read in place


def test_input_seen_at_one_address_is_read_in_place_until_it_moves(fake_capture):
    gm = torch.fx.symbolic_trace(lambda x, y: (x * y + 1,))
    a, b, y = torch.randn(5), torch.randn(5), torch.randn(5)
    compiled = compile_triton(gm, [a, y], Options(cudagraphs=True))
    compiled(a, y), compiled(a, y)  # same tensors twice: read in place
    runner = runner_of(compiled)
    (rec,) = runner.recordings.values()
    assert set(rec.static) == {0, 1} and not rec.buffers
    for x in (b, a, b, a):  # x moves once: re-recorded with x copied, never again after that
        torch.testing.assert_close(compiled(x, y)[0], x * y + 1)
    assert runner.stats["invalidations"] == 1 and runner.stats["records"] == 2
    (rec,) = runner.recordings.values()
    assert set(rec.buffers) == {0} and set(rec.static) == {1}


def test_recordings_beyond_the_limit_drop_the_least_recent(
    fake_capture, monkeypatch, triton_compile
):
    monkeypatch.setattr(config, "cudagraph_max_recordings", 2)
    compiled = triton_compile(
        lambda x: (x.exp(),), torch.randn(3), dynamic=True, options=CUDAGRAPHS
    )
    for n in (3, 3, 4, 4, 5, 5, 3, 3):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x)[0], x.exp())
    runner = runner_of(compiled)
    assert [key[0][0] for key in runner.recordings] == [(5,), (3,)]
    assert runner.stats["records"] == 4


def test_invalidate_all_drops_recordings(fake_capture):
    gm = torch.fx.symbolic_trace(lambda x: (x + 2,))
    compiled = compile_triton(gm, [torch.randn(3)], Options(cudagraphs=True))
    x = torch.randn(3)
    compiled(x), compiled(x)
    cudagraphs.invalidate_all()
    assert not runner_of(compiled).recordings
    torch.testing.assert_close(compiled(x)[0], x + 2)


def test_bytegraph_reset_drops_recordings(fake_capture):
    gm = torch.fx.symbolic_trace(lambda x: (x * 3,))
    compiled = compile_triton(gm, [torch.randn(3)], Options(cudagraphs=True))
    x = torch.randn(3)
    compiled(x), compiled(x)
    assert runner_of(compiled).recordings
    bytegraph.reset()
    assert not runner_of(compiled).recordings


def test_training_step_forward_and_backward_are_graphed(fake_capture):
    model, gm = mlp_graph()
    compiled = compile_triton(gm, [torch.randn(4, 6)], Options(cudagraphs=True))
    for _ in range(3):
        x = torch.randn(4, 6)
        model.zero_grad()
        model(x).square().sum().backward()
        want = [p.grad.clone() for p in model.parameters()]
        gm.zero_grad()
        compiled(x).square().sum().backward()
        for p, w in zip(gm.parameters(), want, strict=True):
            torch.testing.assert_close(p.grad, w)
    assert all(g.runner is not None and g.runner.stats["replays"] == 2 for g in compiled.graphs)


def test_failed_recording_runs_without_graphs(monkeypatch):
    monkeypatch.setattr(cudagraphs, "capture_for", lambda inputs: FailingCapture())
    gm = torch.fx.symbolic_trace(lambda x: (x.sin(),))
    compiled = compile_triton(gm, [torch.randn(3)], Options(cudagraphs=True))
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x)[0], x.sin())
    assert "not permitted" in runner_of(compiled).disabled


def test_cpu_inputs_run_without_cuda_graphs():
    gm = torch.fx.symbolic_trace(lambda x: (x.cos(),))
    compiled = triton_backend(gm, [torch.randn(3)], {"triton.cudagraphs": True})
    assert compiled.graphs[0].runner is None
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x)[0], x.cos())


def test_unknown_option_names_the_known_ones():
    with pytest.raises(ValueError, match="max_autotune, triton.cudagraphs"):
        triton_backend(torch.fx.symbolic_trace(lambda x: (x,)), [torch.randn(2)], {"cuda": 1})
    assert Options.from_dict({"max_autotune": True}) == Options(max_autotune=True)
    assert Options.from_dict({"triton.cudagraphs": True}) == Options(cudagraphs=True)


@pytest.mark.gpu
def test_cuda_graph_replay_on_gpu(triton_gpu):
    model, _ = mlp_graph()
    model = model.cuda()
    gm = torch.fx.symbolic_trace(model)
    with torch.no_grad():
        compiled = compile_triton(gm, [torch.randn(4, 6, device="cuda")], Options(cudagraphs=True))
        xs = [torch.randn(4, 6, device="cuda") for _ in range(5)]
        outs = [compiled(x) for x in xs]
        for x, out in zip(xs, outs, strict=True):
            torch.testing.assert_close(out, model(x))
    stats = runner_of(compiled).stats
    assert (stats["records"], stats["replays"]) == (1, 4)
