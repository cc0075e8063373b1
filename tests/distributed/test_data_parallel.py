"""Data parallelism compiled by bytegraph trains like eager, on gloo CPU ranks.

- DDP: ``bytegraph.compile(ddp_model)`` compiles the wrapped module (DDP's own forward, the
  reducer's bookkeeping, runs in Python, as under torch.compile); after several SGD steps on
  per-rank data the gradients and parameters equal eager DDP's, and the communication hook
  reduces every gradient once per step, in as many buckets as eager.
- FSDP2: ``fully_shard`` per block and on the root, each block compiled: gradients and parameters
  equal eager FSDP2's after several steps.
Both with the ``eager`` backend (2 and 4 ranks) and ``aot_eager`` (2 ranks).
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from disttest import expect_ok, run_checks
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

import bytegraph


class Block(torch.nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(dim, 2 * dim), torch.nn.Linear(2 * dim, dim)
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, x):
        return x + self.b(torch.relu(self.a(self.norm(x))))


def _kept_out(event) -> int:
    """Graph breaks plus the fallback to Python, if any: what kept code out of a graph."""
    return len(event.breaks) + (event.unsupported is not None)


def model() -> torch.nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank
    return torch.nn.Sequential(Block(), Block(), torch.nn.Linear(8, 3))


def counting_hook(sizes: list[int]):
    """A DDP communication hook that records each bucket's size and all-reduces it (averaged), as
    the default hook does."""

    def hook(state, bucket):
        sizes.append(bucket.buffer().numel())
        tensor = bucket.buffer().div_(dist.get_world_size())
        return dist.all_reduce(tensor, async_op=True).get_future().then(lambda f: f.value()[0])

    return hook


def train(ddp: torch.nn.Module, run, rank: int, steps: int = 3):
    """SGD steps on per-rank data; returns every gradient and parameter after each step."""
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)
    seen = []
    for _ in range(steps):
        x, y = torch.randn(6, 8, generator=gen), torch.randint(0, 3, (6,), generator=gen)
        loss = torch.nn.functional.cross_entropy(run(x), y)
        loss.backward()
        seen.append([p.grad.clone() for p in ddp.parameters()])
        optimizer.step()
        optimizer.zero_grad()
        seen.append([p.detach().clone() for p in ddp.parameters()])
    return seen


def ddp_matches_eager(rank: int, backend: str) -> list[tuple[int, int]]:
    """Eager DDP and compiled DDP train alike; returns (graphs, breaks) of each compile."""
    base = model()
    eager = DDP(copy.deepcopy(base), bucket_cap_mb=1e-4)  # tiny buckets: several per step
    compiled_ddp = DDP(copy.deepcopy(base), bucket_cap_mb=1e-4)
    buckets: tuple[list[int], list[int]] = ([], [])
    eager.register_comm_hook(None, counting_hook(buckets[0]))
    compiled_ddp.register_comm_hook(None, counting_hook(buckets[1]))
    compiled = bytegraph.compile(compiled_ddp, backend=backend)
    assert compiled is compiled_ddp
    expected = train(eager, eager, rank)
    actual = train(compiled_ddp, compiled, rank)
    for a, e in zip(actual, expected, strict=True):
        for ta, te in zip(a, e, strict=True):
            torch.testing.assert_close(ta, te)
    # Every gradient is reduced once per step, in as many buckets as eager; which gradients
    # share a bucket follows their arrival order, which a compiled backward may change.
    numel = sum(p.numel() for p in base.parameters())
    assert sum(buckets[1]) == sum(buckets[0]) == 3 * numel, buckets
    assert len(buckets[1]) == len(buckets[0]) > 3, buckets
    report = bytegraph.explain(eager, backend=backend)(torch.randn(6, 8))  # DDP's module compiled
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    events = bytegraph.state_of(compiled_ddp).events
    return [(len(e.graphs), _kept_out(e)) for e in events]


def fsdp2_matches_eager(rank: int, backend: str) -> list[tuple[int, int]]:
    """Eager FSDP2 and FSDP2 with compiled blocks train alike; returns (graphs, breaks)."""
    base = model()
    eager, sharded = copy.deepcopy(base), copy.deepcopy(base)
    for m in (eager, sharded):
        for block in list(m)[:2]:
            fully_shard(block)
        fully_shard(m)
    for block in list(sharded)[:2]:
        bytegraph.compile(block, backend=backend)
    expected = train(eager, eager, rank)
    actual = train(sharded, sharded, rank)
    for a, e in zip(actual, expected, strict=True):
        for ta, te in zip(a, e, strict=True):
            torch.testing.assert_close(ta.full_tensor(), te.full_tensor())
    # Blocks of one class compiled alike share one compiled forward (and its events): each once.
    states = {id(s): s for s in (bytegraph.state_of(block) for block in list(sharded)[:2])}
    return [(len(e.graphs), _kept_out(e)) for s in states.values() for e in s.events]


def check_ddp_eager(rank, world):
    return ddp_matches_eager(rank, "eager")


def check_ddp_aot_eager(rank, world):
    return ddp_matches_eager(rank, "aot_eager")


def check_fsdp2_eager(rank, world):
    return fsdp2_matches_eager(rank, "eager")


def check_fsdp2_aot_eager(rank, world):
    return fsdp2_matches_eager(rank, "aot_eager")


#: Checks per world size (4 ranks share 2 CI cores: the AOTAutograd variants run with 2 only).
CHECKS = {
    2: ["ddp_eager", "ddp_aot_eager", "fsdp2_eager", "fsdp2_aot_eager"],
    4: ["ddp_eager", "fsdp2_eager"],
}
_RESULTS: dict[int, dict] = {}


def results(world: int) -> dict:
    if world not in _RESULTS:
        _RESULTS[world] = run_checks(__file__, CHECKS[world], world)
    return _RESULTS[world]


def test_ddp_compiled_trains_like_eager_ddp():
    for world in (2, 4):
        assert expect_ok(results(world)["ddp_eager"])[0] == [(1, 0)]


def test_ddp_compiled_with_aot_eager_trains_like_eager_ddp():
    assert expect_ok(results(2)["ddp_aot_eager"])[0] == [(1, 0)]


def test_fsdp2_blocks_compiled_train_like_eager():
    for world in (2, 4):
        assert expect_ok(results(world)["fsdp2_eager"])[0] == [(1, 0), (1, 0)]


def test_fsdp2_blocks_compiled_with_aot_eager_train_like_eager():
    assert expect_ok(results(2)["fsdp2_aot_eager"])[0] == [(1, 0), (1, 0)]
