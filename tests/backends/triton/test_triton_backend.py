"""The backend as a whole: registry, availability, eager fallback per node and per graph, extern
calls, logging of generated code, the on-disk kernel cache, the compiled artifact's attributes."""

from __future__ import annotations

import logging
import os

import bytegraph.backends.triton as triton_backend
import torch
from bytegraph.backends.registry import lookup_backend
from bytegraph.backends.triton import config


def test_registered_under_triton():
    assert lookup_backend("triton") is triton_backend.triton_backend


def test_is_available_for_cpu_only_when_interpreting(monkeypatch):
    x = torch.randn(2)
    assert triton_backend.is_available_for([x])
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert triton_backend.is_available_for([x]) is False


def test_cpu_inputs_fall_back_to_eager_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    gm = torch.fx.symbolic_trace(lambda x: (x + 1,))
    assert lookup_backend("triton")(gm, [torch.randn(3)]) == gm.forward


def test_op_without_lowering_runs_with_torch_for_that_node(triton_check, caplog):
    with caplog.at_level(logging.INFO, logger="bytegraph.fusion"):
        runner = triton_check(lambda x: (torch.cummax(x * 2, 0)[0].relu() + 1,), torch.randn(5, 3))
    assert dict(runner.fallback_ops) == {"aten.cummax.default": 1}
    assert len(runner.kernels) == 2
    assert "running it with torch" in caplog.text


def test_matmul_and_conv_are_extern_calls(triton_check):
    def fn(x, w, k):
        return (torch.relu(x @ w), torch.nn.functional.conv2d(x[None, None], k).sigmoid())

    runner = triton_check(
        fn, torch.randn(6, 6), torch.randn(6, 4), torch.randn(2, 1, 3, 3), fallbacks=0
    )
    assert len(runner.kernels) == 2


def test_attention_is_an_extern_call(triton_check):
    def fn(q, k, v):
        return (torch.nn.functional.scaled_dot_product_attention(q, k, v) * 2,)

    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    triton_check(fn, q, k, v, atol=1e-5, rtol=1e-4)


def test_unsupported_graph_runs_eagerly_instead_of_failing(triton_compile, monkeypatch):
    from bytegraph.backends.triton import compile as compile_module

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(compile_module, "schedule", broken)
    runner = triton_compile(lambda x: (x.sin(),), torch.randn(4))
    x = torch.randn(4)
    torch.testing.assert_close(runner(x)[0], x.sin())
    assert "boom" in runner.source and runner.kernels == []


def test_output_code_logging_prints_kernels_and_wrapper(triton_compile, caplog):
    with caplog.at_level(logging.INFO, logger="bytegraph.output_code"):
        triton_compile(lambda x: (x.cos() * 3,), torch.randn(4))
    assert "@triton.jit" in caplog.text and "def call(args):" in caplog.text


def test_artifact_exposes_sources(triton_compile):
    runner = triton_compile(lambda x: (x.exp().sum(-1),), torch.randn(3, 4))
    (kernel,) = runner.kernels
    assert kernel.name == "triton_red_fused_exp_sum_0"
    assert kernel.source in runner.source and "def call(args):" in runner.source


def test_kernels_are_cached_on_disk_by_source_hash(triton_compile, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    triton_compile(lambda x: (x.abs() + 7,), torch.randn(4))
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("k") and files[0].endswith(".py")
    triton_compile(lambda x: (x.abs() + 7,), torch.randn(4))
    assert os.listdir(tmp_path) == files


def test_non_tuple_output_is_returned_as_is(triton_compile):
    runner = triton_compile(lambda x: x * 2, torch.randn(3))
    x = torch.randn(3)
    torch.testing.assert_close(runner(x), x * 2)


def test_module_with_parameters(triton_check):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.ReLU())
    triton_check(torch.fx.symbolic_trace(model), torch.randn(3, 8), grad=True)
