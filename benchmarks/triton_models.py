"""Speedup over eager of ``backend="triton"`` and of ``torch.compile`` (Inductor) on a few models,
with the geometric mean of each column.

    python benchmarks/triton_models.py      # needs a CUDA GPU; exits cleanly (status 0) without one
    TRITON_INTERPRET=1 python benchmarks/triton_models.py --smoke   # tiny CPU run of our backend

Models run in inference mode (``torch.no_grad``) in fp32 and, with ``--dtype bf16``, in bf16.
Graphs are captured with ``torch.fx.symbolic_trace`` (standing in for the tracer) and handed to
the backend with real example inputs.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from bytegraph.backends.registry import lookup_backend


class MLP(nn.Module):
    """GPT-2 MLP: Linear -> GELU(tanh) -> Linear."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return (self.proj(F.gelu(self.fc(x), approximate="tanh")),)


class Block(nn.Module):
    """Pre-norm transformer block with SDPA attention."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.d, self.heads = d, heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.attn_out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = MLP(d)

    def forward(self, x):
        b, t, d, h = x.shape[0], x.shape[1], self.d, self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_out(y.transpose(1, 2).reshape(b, t, d))
        return (x + self.mlp(self.ln2(x))[0],)


class NormSoftmax(nn.Module):
    """Memory-bound head: RMSNorm, scaled softmax, residual."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        return (torch.softmax(y * 0.125, -1) + x,)


class ConvBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c).eval()

    def forward(self, x):
        return (F.silu(self.bn(self.conv(x))) + x,)


def models(smoke: bool) -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    d, t, b = (16, 8, 2) if smoke else (768, 512, 8)
    return {
        "gpt2_mlp": (MLP(d), (b, t, d)),
        "transformer_block": (Block(d, 2 if smoke else 12), (b, t, d)),
        "rmsnorm_softmax": (NormSoftmax(d * 4), (b * t, d * 4)),
        "conv_bn_silu": (ConvBlock(4 if smoke else 64), (b, 4 if smoke else 64, 8 if smoke else 56,
                                                         8 if smoke else 56)),
    }


def bench(fn: Callable[[], object], cuda: bool, reps: int) -> float:
    """Median milliseconds per call."""
    if cuda:
        import triton.testing

        return triton.testing.do_bench(fn, warmup=25, rep=reps * 10, return_mode="median")
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * sorted(times)[len(times) // 2]


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CPU, TRITON_INTERPRET=1)")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    smoke = args.smoke and os.environ.get("TRITON_INTERPRET") == "1"
    if not smoke and not torch.cuda.is_available():
        print("benchmarks/triton_models.py: no CUDA GPU here; nothing to measure (use --smoke with "
              "TRITON_INTERPRET=1 to check the script on CPU)")
        return 0
    device = "cpu" if smoke else "cuda"
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    reps = 2 if smoke else args.reps
    ours_col, inductor_col = [], []
    print(f"{'model':20} {'eager ms':>9} {'triton x':>9} {'inductor x':>11}  kernels")
    torch.manual_seed(0)
    for name, (model, shape) in models(smoke).items():
        model = model.to(device=device, dtype=dtype).eval()
        x = torch.randn(shape, device=device, dtype=dtype)
        with torch.no_grad():
            ours = lookup_backend("triton")(torch.fx.symbolic_trace(model), [x])
            torch.testing.assert_close(ours(x)[0], model(x)[0], atol=5e-2, rtol=5e-2)
            eager = bench(lambda m=model, x=x: m(x), not smoke, reps)
            mine = bench(lambda o=ours, x=x: o(x), not smoke, reps)
            line = f"{name:20} {eager:9.3f} {eager / mine:9.2f}"
            ours_col.append(eager / mine)
            if not smoke:
                compiled = torch.compile(model)
                compiled(x)
                theirs = bench(lambda c=compiled, x=x: c(x), True, reps)
                inductor_col.append(eager / theirs)
                line += f" {eager / theirs:11.2f}"
            else:
                line += f" {'-':>11}"
        print(f"{line}  {len(ours.kernels)}")
    print(f"{'geomean':20} {'':9} {geomean(ours_col):9.2f} {geomean(inductor_col):11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
