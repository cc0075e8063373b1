"""Whole models, forward and backward, through the triton backend under the interpreter.

First small fx-traced pieces (a transformer block, a conv net, attention), then the models of
``tests/models`` through ``bytegraph.compile(model.forward, backend=...)`` (tracer and backend
together): LLaMA-style decoder, ResNet with BatchNorm, LSTM, ``nn.TransformerEncoder``, GPT-2 and
BERT (when ``transformers`` is installed). Each must compile every graph, generate kernels, match
eager in inference and in a training step, and fall back to torch only for known ops (the summary
line each prints, with ``-s``, gives kernels and fallbacks per model).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.triton import TritonCompiledFunction, triton_backend
from models.test_torch_models import Llama, LSTMTagger, ResNet

import bytegraph


class Block(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = 2, 5, 16
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = att.masked_fill(torch.ones(t, t).tril() == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return (x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")),)


def test_transformer_block_forward_and_backward(triton_check):
    torch.manual_seed(0)
    runner = triton_check(
        torch.fx.symbolic_trace(Block()), torch.randn(2, 5, 16), grad=True, atol=1e-4, rtol=1e-4
    )
    assert len(runner.graphs) == 2


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x, w, b):
        y = F.batch_norm(self.conv(x), None, None, w, b, training=True).relu()
        y = F.max_pool2d(y, 2)
        return (self.fc(y.flatten(1)).log_softmax(-1),)


def test_conv_net_forward_and_backward(triton_check):
    torch.manual_seed(0)
    runner = triton_check(
        torch.fx.symbolic_trace(ConvNet()),
        torch.randn(2, 3, 4, 4),
        torch.randn(4),
        torch.randn(4),
        grad=True,
        atol=1e-4,
        rtol=1e-4,
    )
    assert runner.kernels


def test_attention_backward_and_strided_attention_output(triton_check):
    """The CPU flash-attention op stays an extern call (its core decomposition returns the
    attention weights where the backward expects the logsumexp: wrong gradients), and its output,
    whose strides follow the inputs', is re-strided before a kernel reads it."""

    def fn(q, k, v):
        q, k, v = ((t + 0.5).transpose(1, 2) for t in (q, k, v))  # realized by us: contiguous
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (out.reshape(2, -1, 8, 4) * 2,)

    q, k, v = (torch.randn(2, 8, 2, 4) for _ in range(3))
    runner = triton_check(fn, q, k, v, grad=True)
    assert runner.kernels
    with torch.no_grad():  # the inference graph reads the attention output with a kernel
        assert triton_check(fn, q, k, v).kernels


# ---------------------------------------------------------------------------------------------
# Whole models through ``bytegraph.compile(model.forward, backend=...)``: the models of
# ``tests/models`` (tracer + triton backend together), inference and a training step.


def main_output(out):
    for name in ("logits", "last_hidden_state"):
        if hasattr(out, name):
            return getattr(out, name)
    return out if isinstance(out, torch.Tensor) else main_output(out[0])


def check_whole_model(model: nn.Module, *inputs, fallbacks: dict[str, int]) -> dict:
    """Compile ``model.forward`` with the triton backend; compare with an eager copy in inference
    (eval, no_grad) and in a training step (train: outputs, every parameter's gradient, buffers
    such as BatchNorm's running stats). Tolerances: ``torch.testing``'s per-dtype defaults, as
    Inductor's ``check_model`` uses them, for values and gradients alike.

    Every graph must be compiled (no graph ran eagerly) and generate kernels; the ops that ran
    through torch must be among ``fallbacks`` (op -> at most that many nodes). Returns a summary.
    """
    eager = copy.deepcopy(model)
    rec = CompileCounter(triton_backend)
    model.forward = bytegraph.compile(model.forward, backend=rec)

    model.eval(), eager.eval()
    with torch.no_grad():
        torch.testing.assert_close(main_output(model(*inputs)), main_output(eager(*inputs)))
    n_inference = len(rec.compiled)

    model.train(), eager.train()
    out, ref = main_output(model(*inputs)), main_output(eager(*inputs))
    torch.testing.assert_close(out, ref)
    out.float().square().mean().backward()
    ref.float().square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        # aot_autograd gives zeros where eager autograd leaves None (outputs the loss ignores)
        want = q.grad if q.grad is not None else torch.zeros_like(q)
        got = p.grad if p.grad is not None else torch.zeros_like(p)
        torch.testing.assert_close(got, want, msg=lambda m, name=name: f"grad of {name}: {m}")
    for (name, b), c in zip(model.named_buffers(), eager.buffers(), strict=True):
        torch.testing.assert_close(b, c, msg=lambda m, name=name: f"buffer {name}: {m}")

    assert rec.compiled and n_inference >= 1 and len(rec.compiled) > n_inference
    assert all(isinstance(c, TritonCompiledFunction) for c in rec.compiled), rec.compiled
    graphs = [g for c in rec.compiled for g in c.graphs]
    eager_graphs = [g.reason for g in graphs if not hasattr(g, "call")]
    assert not eager_graphs, f"graphs ran eagerly: {eager_graphs}"
    kernels = [k for c in rec.compiled for k in c.kernels]
    assert kernels, "no kernel generated"
    fell_back: dict[str, int] = {}
    for c in rec.compiled:
        for op, n in c.fallback_ops.items():
            fell_back[op] = fell_back.get(op, 0) + n
    unexpected = {op: n for op, n in fell_back.items() if n > fallbacks.get(op, 0)}
    assert not unexpected, f"new fallbacks to torch: {unexpected} (all: {fell_back})"
    summary = {
        "frames": len(rec.compiled),
        "aten_graphs": len(graphs),
        "kernels": len(kernels),
        "fallback_ops": sum(fell_back.values()),
        "fallbacks": fell_back,
    }
    print(f"\n{type(model).__name__}: {summary}")
    return summary


def test_llama_style_decoder_whole_model():
    torch.manual_seed(0)
    check_whole_model(Llama(), torch.randint(0, 64, (2, 8)), fallbacks={})


def test_resnet_with_batchnorm_whole_model():
    torch.manual_seed(0)
    check_whole_model(ResNet(), torch.randn(2, 3, 8, 8), fallbacks={})


def test_lstm_whole_model():
    torch.manual_seed(0)
    # inference runs the oneDNN LSTM layer kernel (no decomposition); training decomposes the cells
    check_whole_model(
        LSTMTagger(), torch.randint(0, 20, (2, 5)), fallbacks={"aten.mkldnn_rnn_layer.default": 2}
    )


def test_transformer_encoder_whole_model():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
    )
    # inference takes nn.TransformerEncoderLayer's fast path: one fused native op per layer
    check_whole_model(
        nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False),
        torch.randn(2, 5, 16),
        fallbacks={"aten._transformer_encoder_layer_fwd.default": 2},
    )


def test_gpt2_whole_model():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
    )
    check_whole_model(
        transformers.GPT2LMHeadModel(config), torch.randint(0, 100, (2, 8)), fallbacks={}
    )


def test_bert_whole_model():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    check_whole_model(transformers.BertModel(config), torch.randint(0, 100, (2, 8)), fallbacks={})
