"""The models the GPU benchmarks compile: nanoGPT, a LLaMA block stack, BERT, ViT, a ResNet, and a
GPT decode step with a KV cache.

Each ``make_<model>(smoke)`` returns a ``Workload``: the module (random init, dropout off so every
compiler computes the same function), a function making its inputs on a device, and the training
loss. ``smoke=True`` gives tiny sizes for a CPU run under ``TRITON_INTERPRET=1``. BERT and ViT come
from ``transformers`` (configs only, no weights downloaded). Sizes are full-width layers but few of
them (2), so that both compilers' compile times fit one GPU session. Used by ``models_gpu.py`` and
``decode.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Workload:
    model: nn.Module
    inputs: Callable[[torch.device, torch.dtype], tuple]  #: fresh inputs on a device
    loss: Callable[[object, tuple], torch.Tensor]  #: (model output, inputs) -> scalar
    note: str = ""


def mean_square(out: object, inputs: tuple) -> torch.Tensor:
    if not isinstance(out, torch.Tensor):  # a transformers output
        out = out.last_hidden_state
    return out.float().square().mean()


# -- nanoGPT ---------------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.size()
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class GPTBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.c_fc, self.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class NanoGPT(nn.Module):
    """Karpathy's nanoGPT (GPT-2 architecture), LM head tied to the token embedding."""

    def __init__(self, vocab: int, block: int, layers: int, d: int, heads: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.h = nn.ModuleList(GPTBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def lm_loss(logits: torch.Tensor, inputs: tuple) -> torch.Tensor:
    targets = inputs[0].roll(-1, dims=1)
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def make_gpt(smoke: bool) -> Workload:
    vocab, block, layers, d, heads, batch = (
        (128, 16, 1, 32, 2, 2) if smoke else (50304, 512, 2, 768, 12, 8)
    )
    model = NanoGPT(vocab, block, layers, d, heads)
    return Workload(
        model,
        lambda dev, dt: (torch.randint(0, vocab, (batch, block), device=dev),),
        lm_loss,
        f"{layers} layers, d={d}, batch {batch} x {block} tokens",
    )


# -- LLaMA ----------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm, self.mlp_norm = RMSNorm(d), RMSNorm(d)
        self.wqkv, self.wo = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q, k, v = self.wqkv(self.attn_norm(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, d))
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LlamaStack(nn.Module):
    """LLaMA decoder blocks (RMSNorm, rotary embeddings, SwiGLU) on embedded tokens."""

    def __init__(self, vocab: int, seq: int, layers: int, d: int, heads: int) -> None:
        super().__init__()
        hidden = int(8 * d / 3 / 64 + 1) * 64
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, d // heads, 2).float() / (d // heads)))
        angles = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, idx):
        x = self.embed(idx)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def make_llama(smoke: bool) -> Workload:
    vocab, seq, layers, d, heads, batch = (
        (128, 16, 1, 32, 2, 2) if smoke else (32000, 512, 2, 1024, 16, 4)
    )
    model = LlamaStack(vocab, seq, layers, d, heads)
    return Workload(
        model,
        lambda dev, dt: (torch.randint(0, vocab, (batch, seq), device=dev),),
        lm_loss,
        f"{layers} blocks, d={d}, batch {batch} x {seq} tokens",
    )


# -- BERT and ViT (transformers) ------------------------------------------------------------------


def make_bert(smoke: bool) -> Workload:
    import transformers  # optional dependency: only these two models need it

    layers, d, heads, seq, batch = (1, 32, 2, 16, 2) if smoke else (2, 768, 12, 512, 8)
    config = transformers.BertConfig(
        num_hidden_layers=layers,
        hidden_size=d,
        num_attention_heads=heads,
        intermediate_size=4 * d,
        max_position_embeddings=max(seq, 64),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        vocab_size=30522 if not smoke else 128,
    )
    model = transformers.BertModel(config, add_pooling_layer=False)
    vocab = config.vocab_size
    return Workload(
        model,
        lambda dev, dt: (torch.randint(0, vocab, (batch, seq), device=dev),),
        mean_square,
        f"BertModel, {layers} layers, d={d}, batch {batch} x {seq} tokens",
    )


def make_vit(smoke: bool) -> Workload:
    import transformers

    layers, d, heads, image, batch = (1, 32, 2, 32, 2) if smoke else (2, 768, 12, 224, 16)
    config = transformers.ViTConfig(
        num_hidden_layers=layers,
        hidden_size=d,
        num_attention_heads=heads,
        intermediate_size=4 * d,
        image_size=image,
        patch_size=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = transformers.ViTModel(config, add_pooling_layer=False)
    return Workload(
        model,
        lambda dev, dt: (torch.randn(batch, 3, image, image, device=dev, dtype=dt),),
        mean_square,
        f"ViTModel, {layers} layers, d={d}, batch {batch} x {image}px",
    )


# -- ResNet ---------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, width: int = 64, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )  # fmt: skip
        chans = [width, width * 2, width * 4, width * 8]
        blocks, cin = [], width
        for i, c in enumerate(chans):
            blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
            cin = c
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def make_resnet(smoke: bool) -> Workload:
    batch, image, width, classes = (2, 32, 8, 10) if smoke else (32, 224, 64, 1000)
    return Workload(
        ResNet18(width, classes),
        lambda dev, dt: (torch.randn(batch, 3, image, image, device=dev, dtype=dt),),
        lambda out, inputs: out.float().square().mean(),
        f"ResNet-18 (width {width}), batch {batch} x {image}px",
    )


MODELS: dict[str, Callable[[bool], Workload]] = {
    "nanogpt": make_gpt,
    "llama": make_llama,
    "bert": make_bert,
    "vit": make_vit,
    "resnet": make_resnet,
}


# -- a decode step with a KV cache ----------------------------------------------------------------


class DecodeStep(nn.Module):
    """One token through ``layers`` GPT blocks attending to a KV cache of ``cache`` positions:
    writes the token's keys and values at ``pos`` (a tensor, so every step is the same graph)
    and returns the next-token logits."""

    def __init__(self, vocab: int, layers: int, d: int, heads: int, cache: int) -> None:
        super().__init__()
        self.heads, self.d = heads, d
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(cache, d)
        self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(2 * layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.fc = nn.ModuleList(nn.Linear(d, 4 * d) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(4 * d, d) for _ in range(layers))
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("k_cache", torch.zeros(layers, 1, heads, cache, d // heads))
        self.register_buffer("v_cache", torch.zeros(layers, 1, heads, cache, d // heads))

    def forward(self, token, pos):
        x = self.wte(token) + self.wpe(pos)  # [1, 1, d]
        hd = self.d // self.heads
        mask = torch.arange(self.k_cache.size(3), device=pos.device) <= pos  # [cache]
        for i in range(len(self.qkv)):
            q, k, v = self.qkv[i](self.ln[2 * i](x)).split(self.d, dim=2)
            q, k, v = (z.view(1, 1, self.heads, hd).transpose(1, 2) for z in (q, k, v))
            self.k_cache[i].index_copy_(2, pos, k)
            self.v_cache[i].index_copy_(2, pos, v)
            att = (q @ self.k_cache[i].transpose(-2, -1)) / math.sqrt(hd)
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            y = (att @ self.v_cache[i]).transpose(1, 2).reshape(1, 1, self.d)
            x = x + self.proj[i](y)
            x = x + self.out[i](F.gelu(self.fc[i](self.ln[2 * i + 1](x)), approximate="tanh"))
        return self.head(x)


def make_decode(smoke: bool) -> DecodeStep:
    return DecodeStep(*((128, 1, 32, 2, 16) if smoke else (8192, 4, 512, 8, 256)))
