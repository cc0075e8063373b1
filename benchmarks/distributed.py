"""Tensor-parallel transformer block on CPU ranks (gloo): breaks per forward and step time, with
in-place (``dist.all_reduce``) and with functional collectives, bytegraph beside torch.compile in
the same run.

The block is attention (heads split across ranks: q/k/v column-parallel, output projection
row-parallel) plus an MLP (column- then row-parallel), each row-parallel linear ending in an
all-reduce: two collectives per forward. Every rank builds the same full weights and keeps its
shard; every rank checks the compiled outputs against eager. Forwards are timed after warm-up, all
variants interleaved in rounds (``--rounds``) of 5 forwards started together on all ranks; the
best round is kept per variant (the least disturbed by other processes) and the slowest rank's
figure is reported. Both compilers use the same backend (``--backend``, default ``eager``: graphs
run as they are, so the time difference is tracing overhead and breaks, not kernels).

Run::

    python benchmarks/distributed.py                 # 2 ranks, eager backend
    python benchmarks/distributed.py --world 4 --backend aot_eager --rounds 40
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.multiprocessing as mp
import torch.nn.functional as F

import bytegraph


class TPBlock(torch.nn.Module):
    """Pre-norm transformer block, tensor-parallel over the default group."""

    def __init__(self, dim: int, heads: int, rank: int, world: int, functional: bool) -> None:
        super().__init__()
        torch.manual_seed(0)  # the same full weights on every rank
        full = {n: torch.nn.Linear(dim, dim) for n in ("q", "k", "v", "o")}
        up, down = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.heads, self.functional = heads // world, functional
        self.qkv = torch.nn.ParameterList(
            [_rows(full[n].weight, rank, world) for n in "qkv"]
            + [_rows(full[n].bias, rank, world) for n in "qkv"]
        )
        self.o_w, self.o_b = _cols(full["o"].weight, rank, world), full["o"].bias
        self.up_w, self.up_b = _rows(up.weight, rank, world), _rows(up.bias, rank, world)
        self.down_w, self.down_b = _cols(down.weight, rank, world), down.bias

    def reduce(self, partial: torch.Tensor) -> torch.Tensor:
        if self.functional:
            return funcol.all_reduce(partial, "sum", dist.group.WORLD)
        dist.all_reduce(partial)
        return partial

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.norm1(x)
        wq, wk, wv, bq, bk, bv = self.qkv
        q, k, v = (
            F.linear(h, w, bias).view(b, t, self.heads, -1).transpose(1, 2)
            for w, bias in ((wq, bq), (wk, bk), (wv, bv))
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
        x = x + self.reduce(F.linear(y.reshape(b, t, -1), self.o_w)) + self.o_b
        h = F.gelu(F.linear(self.norm2(x), self.up_w, self.up_b))
        return x + self.reduce(F.linear(h, self.down_w)) + self.down_b


def _rows(w: torch.Tensor, rank: int, world: int) -> torch.nn.Parameter:
    n = w.shape[0] // world
    return torch.nn.Parameter(w.detach()[rank * n : (rank + 1) * n].clone())


def _cols(w: torch.Tensor, rank: int, world: int) -> torch.nn.Parameter:
    n = w.shape[1] // world
    return torch.nn.Parameter(w.detach()[:, rank * n : (rank + 1) * n].clone())


def breaks_per_forward(kind: str, fn, x: torch.Tensor, backend: str) -> tuple[int, int]:
    """(graphs, graph breaks) of one forward, from bytegraph's or torch's ``explain``."""
    if kind == "bytegraph":
        report = bytegraph.explain(fn, backend=backend)(x)
        return report.graph_count, report.graph_break_count
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(x)
    return out.graph_count, out.graph_break_count


def time_forwards(fns: dict[str, object], x: torch.Tensor, rounds: int, burst: int = 5) -> dict:
    """Per function, the slowest rank's best per-forward time (seconds): the functions are timed in
    interleaved rounds (a burst of ``burst`` forwards each, started together on all ranks by a
    barrier) and the fastest burst is kept, the one least disturbed by other processes."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            dist.barrier()
            start = time.perf_counter()
            for _ in range(burst):
                fn(x)
            best[name] = min(best[name], (time.perf_counter() - start) / burst)
    slowest = torch.tensor([best[name] for name in fns])
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return dict(zip(fns, slowest.tolist(), strict=True))


def worker(rank: int, world: int, store_dir: str, opts: argparse.Namespace, out: dict) -> None:
    store = dist.FileStore(os.path.join(store_dir, "store"), world)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=120)
    )
    torch.set_num_threads(1)
    torch.manual_seed(1)
    x = torch.randn(opts.batch, opts.seq, opts.dim)
    rows, fns = [], {}
    with torch.no_grad():
        for functional in (False, True):
            form = "functional" if functional else "in-place"
            block = TPBlock(opts.dim, opts.heads, rank, world, functional)
            expected = block(x)
            compiled = {
                "bytegraph": bytegraph.compile(block.forward, backend=opts.backend),
                "torch.compile": torch.compile(block.forward, backend=opts.backend),
            }
            fns[(form, "eager")] = block.forward
            rows.append((form, "eager", 0, 0))
            for name, fn in compiled.items():
                torch.testing.assert_close(fn(x), expected)
                graphs, breaks = breaks_per_forward(name, block.forward, x, opts.backend)
                fns[(form, name)] = fn
                rows.append((form, name, graphs, breaks))
        for fn in fns.values():  # warm up
            fn(x)
        times = time_forwards(fns, x, opts.rounds)
    rows = [(*row, times[row[:2]]) for row in rows]
    if rank == 0:
        out["rows"] = rows
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--backend", default="eager", help="backend of both compilers")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds (5 forwards each)")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=8)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(worker, args=(opts.world, tmp, opts, out), nprocs=opts.world)
        rows = list(out["rows"])
    print(
        f"tensor-parallel block, {opts.world} gloo ranks, x=({opts.batch}, {opts.seq}, "
        f"{opts.dim}), backend={opts.backend}, best of {opts.rounds} rounds of 5 forwards"
    )
    print(
        f"{'collectives':<12}{'compiler':<15}{'graphs':>7}{'breaks/fwd':>12}{'ms/fwd':>9}"
        f"{'vs eager':>10}"
    )
    eager = {form: s for form, name, _, _, s in rows if name == "eager"}
    for form, name, graphs, breaks, seconds in rows:
        shown = "-" if name == "eager" else str(graphs)
        shown_breaks = "-" if name == "eager" else str(breaks)
        print(
            f"{form:<12}{name:<15}{shown:>7}{shown_breaks:>12}{seconds * 1e3:>9.3f}"
            f"{seconds / eager[form]:>9.2f}x"
        )


if __name__ == "__main__":
    main()
