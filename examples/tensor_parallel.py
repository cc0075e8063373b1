"""Collectives in graphs: a tensor-parallel MLP on two CPU ranks (gloo), compiled by bytegraph.

You will see, on rank 0:
1. the graph of a row-parallel linear written with an in-place ``dist.all_reduce``: the collective
   is rewritten into a functional ``all_reduce`` + ``wait_tensor`` + a copy back, in the graph;
2. ``bytegraph.explain``'s census: graphs, breaks, and the collectives of each graph;
3. what happens when the ranks take different paths (a data-dependent branch around a collective):
   with ``config.distributed_consistency_check`` every rank raises a ``DivergenceError`` naming
   each rank's compiled code, where eager would hang.
"""

# %%
import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from bytegraph.backends.debug import CompileCounter

import bytegraph


class ParallelMLP(torch.nn.Module):
    """Column-parallel up projection, row-parallel down projection (partial sums all-reduced)."""

    def __init__(self, dim: int, hidden: int, rank: int, world: int) -> None:
        super().__init__()
        torch.manual_seed(0)  # every rank builds the same full weights and keeps its shard
        up, down = torch.nn.Linear(dim, hidden), torch.nn.Linear(hidden, dim)
        shard = hidden // world
        self.up_w = torch.nn.Parameter(up.weight[rank * shard : (rank + 1) * shard].detach())
        self.up_b = torch.nn.Parameter(up.bias[rank * shard : (rank + 1) * shard].detach())
        self.down_w = torch.nn.Parameter(down.weight[:, rank * shard : (rank + 1) * shard].detach())
        self.down_b = down.bias

    def forward(self, x):
        h = torch.nn.functional.gelu(torch.nn.functional.linear(x, self.up_w, self.up_b))
        partial = torch.nn.functional.linear(h, self.down_w)
        dist.all_reduce(partial)  # in place: rewritten to a functional collective in the graph
        return partial + self.down_b


def step(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: the ranks below take different branches
        dist.all_reduce(y)
    dist.all_reduce(y)
    return y


def main(rank: int, world: int, store_dir: str) -> None:
    store = dist.FileStore(os.path.join(store_dir, "store"), world)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )
    # %% 1. The compiled tensor-parallel MLP: one graph, the collective inside it
    mlp = ParallelMLP(8, 16, rank, world)
    counter = CompileCounter()
    compiled = bytegraph.compile(mlp.forward, backend=counter)
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), mlp(x))
    if rank == 0:
        print(counter.graphs[0].code)

    # %% 2. The census: graphs, breaks and collectives per graph
    with torch.no_grad():
        report = bytegraph.explain(mlp)(x)
    if rank == 0:
        print("\n".join(str(report).splitlines()[:8]))

    # %% 3. Ranks that diverge fail with a clear error instead of hanging
    bytegraph.config.distributed_consistency_check = True
    bytegraph.config.distributed_consistency_timeout = 30.0
    data = torch.ones(3) if rank == 1 else -torch.ones(3)
    try:
        bytegraph.compile(step)(data)
    except bytegraph.distributed.DivergenceError as e:
        if rank == 0:
            print(f"\n{type(e).__name__}: {e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(main, args=(2, tmp), nprocs=2)
