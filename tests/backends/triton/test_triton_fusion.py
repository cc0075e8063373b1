"""Fusion: kernel counts for common patterns, rejected fusions carry reasons, generated source."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def test_pointwise_chain_is_one_kernel(triton_check):
    runner = triton_check(lambda x: (torch.relu(x * 2 + 1),), torch.randn(8, 5))
    assert [k.name for k in runner.kernels] == ["triton_poi_fused_mul_add_relu_0"]


def test_kernel_source_snapshot(triton_compile):
    runner = triton_compile(lambda x: (torch.relu(x * 2 + 1),), torch.randn(8, 5))
    assert (
        runner.kernels[0].source.split("\n", 4)[4]
        == """\
# kernel: triton_poi_fused_mul_add_relu_0
# fx nodes: mul, add, relu
@triton.jit
def triton_poi_fused_mul_add_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask, other=0)
    tmp1 = tl.full([1], 2.0, tl.float32)
    tmp2 = tmp0 * tmp1
    tmp3 = tl.full([1], 1.0, tl.float32)
    tmp4 = tmp2 + tmp3
    tmp5 = tl.where(tmp4 < 0, 0, tmp4)
    tl.store(out_ptr0 + (xindex), tmp5, xmask)
"""
    )


def test_softmax_last_dim_is_one_kernel(triton_check):
    runner = triton_check(lambda x: (torch.softmax(x, -1),), torch.randn(6, 10))
    assert len(runner.kernels) == 1
    assert "_softmax_" in runner.kernels[0].name


def test_looped_softmax_stays_within_two_kernels(triton_check, monkeypatch):
    from bytegraph.backends.triton import config

    monkeypatch.setattr(config, "persistent_reduction_max", 8)
    monkeypatch.setattr(config, "looped_rblock", 8)
    runner = triton_check(lambda x: (torch.softmax(x, -1),), torch.randn(5, 37))
    assert len(runner.kernels) <= 2
    assert "for roffset in range(0, rnumel, RBLOCK):" in runner.kernels[0].source


def test_layer_norm_forward_is_at_most_two_kernels(triton_check):
    runner = triton_check(
        lambda x, w, b: (F.layer_norm(x, (16,), w, b),),
        torch.randn(4, 7, 16),
        torch.randn(16),
        torch.randn(16),
    )
    assert len(runner.kernels) <= 2


def test_rms_norm_is_one_kernel(triton_check):
    def rms(x, w):
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,)

    runner = triton_check(rms, torch.randn(6, 32), torch.randn(32))
    assert len(runner.kernels) == 1


def test_gelu_bias_chain_fuses_around_matmul(triton_check):
    runner = triton_check(
        lambda x, w, b: (F.gelu(x @ w + b),),
        torch.randn(2, 3, 8),
        torch.randn(8, 16),
        torch.randn(16),
    )
    assert len(runner.kernels) == 1


class GPT2MLP(nn.Module):
    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return (self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")),)


def test_gpt2_mlp_pointwise_work_is_one_kernel_between_matmuls(triton_check):
    torch.manual_seed(0)
    runner = triton_check(torch.fx.symbolic_trace(GPT2MLP()), torch.randn(2, 5, 16))
    assert len(runner.kernels) == 1
    assert sum(runner.graphs[0].source.count(f"extern{i}(") for i in range(3)) == 2


def test_gpt2_mlp_backward_compiles_and_matches(triton_check):
    torch.manual_seed(0)
    mlp = GPT2MLP()
    runner = triton_check(torch.fx.symbolic_trace(mlp), torch.randn(2, 5, 16), grad=True)
    assert len(runner.graphs) == 2


def test_rejected_fusion_is_logged_with_reason(triton_check, caplog):
    def fn(x):
        y = x.exp()  # stored: a matmul reads it too
        return y.sum(0), y + 1, y.t() @ y

    with caplog.at_level(logging.DEBUG, logger="bytegraph.fusion"):
        runner = triton_check(fn, torch.randn(6, 5))
    assert len(runner.kernels) == 2
    assert "at an index other programs write" in caplog.text


def test_buffers_are_reused_when_lifetimes_allow(triton_check, monkeypatch):
    from bytegraph.backends.triton import graph

    monkeypatch.setattr(graph, "RECOMPUTE_READS", 0)  # store every value read twice

    def fn(x):
        a = x.exp()
        b = a.t() * a.sum(0)
        return (b.t() * b.sum(0),)

    runner = triton_check(fn, torch.randn(6, 6))
    assert "# reuse" in runner.graphs[0].source


def test_cheap_values_read_by_several_kernels_are_recomputed_not_stored(triton_check):
    """A layer norm's normalized input in its backward feeds the input gradient (row
    reductions) and the weight gradient (column sums): each kernel computes it itself."""

    def fn(x):
        y = x.exp() * 2
        return y.sum(0), y.sum(1), y + 1

    runner = triton_check(fn, torch.randn(6, 5))
    assert len(runner.kernels) == 2  # the column sums, the rows' sums with y + 1
    stored = [n for k in runner.kernels for n in k.kernel.stored]
    assert len(stored) == 3  # the three results, not y


def test_internal_buffers_are_not_stored(triton_check):
    runner = triton_check(lambda x: (torch.softmax(x, -1) * 2,), torch.randn(3, 8))
    assert runner.kernels[0].source.count("tl.store") == 1


def test_nanogpt_needs_no_more_kernels_than_inductor():
    """``benchmarks/kernel_counts.py`` on nanoGPT, inference and a training step: our kernels
    against those Inductor's Triton code generator makes for the same model (each counted in a
    fresh process, no kernel compiled)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {**os.environ, "TRITON_INTERPRET": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.kernel_counts", "--models", "nanogpt"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    rows = [line.split("|")[1:5] for line in done.stdout.splitlines() if "| nanogpt |" in line]
    assert len(rows) == 2, done.stdout + done.stderr
    for _, mode, ours, theirs in rows:
        assert int(ours) <= int(theirs), (mode, ours, theirs)
    assert done.returncode == 0
