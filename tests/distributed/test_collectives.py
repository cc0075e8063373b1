"""Collectives in graphs on real gloo worlds of CPU ranks (issue 13, parts 1 and 2).

Functional collectives are graph nodes; in-place ``torch.distributed`` calls are rewritten into
them plus a copy back; compiled results (and mutated arguments) equal eager on every rank; process
groups, ranks and world sizes are guarded constants; calls bytegraph does not model break the graph
and still run. Each ``check_<name>`` runs on every rank of one shared world
(``disttest.run_checks``), so a whole world is started once per world size; the tests below assert
on what the checks returned.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from difftest import assert_same
from disttest import expect_ok, run_checks

import bytegraph
from bytegraph.explain import Recorder


def differential(fn, make_args, *, graphs=1, breaks=0, backend="eager", calls=2):
    """``fn`` compiled vs eager on equal fresh arguments (results and mutated arguments), ``calls``
    times; asserts the graph and break counts; returns the collectives of each graph."""
    compiled = bytegraph.compile(fn, backend=backend)
    with Recorder() as recorder:
        for _ in range(calls):
            expected_args, actual_args = make_args(), make_args()
            expected = waited(fn(*expected_args))
            actual = compiled(*actual_args)
            assert_same(actual, expected)
            assert_same(actual_args, expected_args)  # in-place collectives mutate their outputs
    report = recorder.report()
    reasons = [str(b) for b in report.break_reasons]
    assert (report.graph_count, report.graph_break_count) == (graphs, breaks), reasons
    return [bytegraph.distributed.collectives(gm) for gm in report.graphs]


def waited(value):
    """Eager functional collectives return an ``AsyncCollectiveTensor``; a compiled function
    returns the plain tensor (already waited on in the graph), as torch.compile does."""
    if isinstance(value, funcol.AsyncCollectiveTensor):
        return value.wait()
    return value


def per_rank(shape, rank, scale=1.0):
    """A deterministic tensor that differs per rank (so a dropped collective shows)."""
    n = torch.Size(shape).numel()
    return (torch.arange(n, dtype=torch.float32).reshape(shape) + 10 * rank) * scale


# -- part 1: the dropped all_reduce of the issue ---------------------------------------------------
def issue_g(x):
    x = x * 2
    dist.all_reduce(x)
    return x + 1


def check_inplace_all_reduce(rank, world):
    colls = differential(issue_g, lambda: (per_rank((3,), rank),))
    assert colls == [["all_reduce(sum, 0)"]], colls
    return issue_g(per_rank((3,), rank)).tolist()


def check_inplace_all_reduce_mutates_argument(rank, world):
    def fn(x):
        dist.all_reduce(x)
        return x * 2

    differential(fn, lambda: (per_rank((2, 3), rank),))


#: torch 2.13 names (``*_single``) and their older names (torch 2.11 has only ``*_tensor``).
ALL_GATHER = getattr(funcol, "all_gather_single", funcol.all_gather_tensor)
REDUCE_SCATTER = getattr(funcol, "reduce_scatter_single", funcol.reduce_scatter_tensor)

# -- part 2: functional collectives ----------------------------------------------------------------
FUNCTIONAL = {
    "all_reduce": lambda x: funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1,
    "all_reduce_max_by_name": lambda x: funcol.all_reduce(x, "MAX", dist.group.WORLD.group_name),
    "all_gather_dim0": lambda x: ALL_GATHER(x, 0, dist.group.WORLD),
    "all_gather_tensor_dim1": lambda x: funcol.all_gather_tensor(x, 1, dist.group.WORLD) * 3,
    "reduce_scatter_dim0": lambda x: REDUCE_SCATTER(x, "sum", 0, dist.group.WORLD),
    "reduce_scatter_tensor_dim1": lambda x: funcol.reduce_scatter_tensor(
        x, "sum", 1, dist.group.WORLD
    ),
    "all_to_all_single": lambda x: funcol.all_to_all_single(x, None, None, dist.group.WORLD),
    "broadcast": lambda x: funcol.broadcast(x + 1, 1, dist.group.WORLD),
    "wait_tensor_later": lambda x: (
        funcol.wait_tensor(funcol.all_reduce(x, "sum", dist.group.WORLD)) + x.sin()
    ),
    "async_wait_method": lambda x: funcol.all_reduce(x, "sum", dist.group.WORLD).wait() * 2,
}


def _async_waited_after_compute(x):
    pending = funcol.all_reduce(x, "sum", dist.group.WORLD)  # used after independent work
    other = (x * 3).relu()
    return pending + other


def check_functional_collectives(rank, world):
    shape = (2 * world, 2 * world)
    seen = {}
    cases = {**FUNCTIONAL, "async_used_after_compute": _async_waited_after_compute}
    for name, fn in cases.items():
        colls = differential(fn, lambda: (per_rank(shape, rank),))
        assert len(colls) == 1 and len(colls[0]) == 1, (name, colls)
        seen[name] = colls[0][0]
    return seen


# -- part 2: in-place collectives rewritten to functional ones -------------------------------------
def _all_gather_into_tensor(x):
    out = x.new_empty((x.shape[0] * dist.get_world_size(), *x.shape[1:]))
    dist.all_gather_into_tensor(out, x * 2)
    return out


def _reduce_scatter_tensor(x):
    out = x.new_empty((x.shape[0] // dist.get_world_size(), *x.shape[1:]))
    dist.reduce_scatter_tensor(out, x)
    return out


def _broadcast(x):
    y = x + 1
    dist.broadcast(y, src=1)
    return y * 2


def _all_to_all_single(x):
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out


def _all_to_all_uneven(x):
    world, rank = dist.get_world_size(), dist.get_rank()
    inputs = [1] * (world - 1) + [x.shape[0] - world + 1]  # the same splits on every rank
    outputs = [inputs[rank]] * world
    out = x.new_empty((sum(outputs), *x.shape[1:]))
    dist.all_to_all_single(out, x, outputs, inputs)
    return out


def _all_gather_list(x):
    outs = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(outs, x.sin())
    return torch.stack(outs)


def _all_reduce_max(x):
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return x


def _async_op_then_wait(x):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    z = x + 1
    work.wait()
    return y + z


INPLACE = {
    "all_gather_into_tensor": _all_gather_into_tensor,
    "reduce_scatter_tensor": _reduce_scatter_tensor,
    "broadcast": _broadcast,
    "all_to_all_single": _all_to_all_single,
    "all_to_all_uneven": _all_to_all_uneven,
    "all_gather_list": _all_gather_list,
    "all_reduce_max": _all_reduce_max,
    "async_op_then_wait": _async_op_then_wait,
}


def check_inplace_collectives(rank, world):
    seen = {}
    for name, fn in INPLACE.items():
        colls = differential(fn, lambda: (per_rank((2 * world, 3), rank),))
        assert len(colls) == 1 and len(colls[0]) == 1, (name, colls)
        seen[name] = colls[0][0]
    return seen


# -- groups, ranks and world sizes are guarded constants -------------------------------------------
def check_rank_and_world_size_are_guarded_constants(rank, world):
    def fn(x):
        return x * dist.get_rank() + dist.get_world_size() + dist.group.WORLD.size()

    differential(fn, lambda: (torch.ones(3),))
    source = bytegraph.guard_source(_compiled_once(fn, torch.ones(3)))
    assert "group_state" in source, source


def _compiled_once(fn, *args):
    compiled = bytegraph.compile(fn)
    compiled(*args)
    return compiled


def check_group_argument_guarded_by_identity(rank, world):
    """A group passed in is a guarded constant: another group recompiles, with the right result."""

    def fn(x, group):
        y = x.clone()
        dist.all_reduce(y, group=group)
        return y * group.size()

    halves = [
        dist.new_group(list(range(world // 2))),
        dist.new_group(list(range(world // 2, world))),
    ]
    mine = halves[0] if rank < world // 2 else halves[1]
    compiled = bytegraph.compile(fn)
    x = per_rank((3,), rank)
    with Recorder() as recorder:
        for group in (dist.group.WORLD, mine, dist.group.WORLD):
            assert_same(compiled(x, group), fn(x, group))
    report = recorder.report()
    assert report.graph_count == 2 and report.graph_break_count == 0
    assert len(report.recompiles) == 1, report.recompiles
    return [bytegraph.distributed.collectives(gm) for gm in report.graphs]


def check_device_mesh_groups(rank, world):
    """A 1-D device mesh, and a dimension of a 2-D mesh, as the group of functional collectives."""
    from torch.distributed.device_mesh import init_device_mesh

    def over_mesh(x, mesh):
        return funcol.all_reduce(x, "sum", mesh) * 2

    line = init_device_mesh("cpu", (world,))
    out = {"1d": differential(over_mesh, lambda: (per_rank((3,), rank), line))}
    if world == 4:
        square = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))

        def over_dims(x, mesh):
            rows = funcol.all_reduce(x, "sum", (mesh, 1))
            return rows + funcol.all_reduce(x, "max", (mesh, 0))

        out["2d"] = differential(over_dims, lambda: (per_rank((3,), rank), square))
    return out


# -- calls the tracer does not model break the graph and still run ---------------------------------
def check_unmodelled_call_breaks_and_runs(rank, world):
    def fn(x):
        y = x * 2
        dist.barrier()
        return y + 1

    differential(fn, lambda: (per_rank((3,), rank),), graphs=2, breaks=1)
    report = bytegraph.explain(fn)(torch.ones(3))
    assert [b.kind for b in report.break_reasons] == ["collective"], report
    return str(report.break_reasons[0].reason)


# -- tensor parallelism: column- then row-parallel linears -----------------------------------------
class ColumnParallelLinear(torch.nn.Module):
    """This rank's slice of the output features of a full ``Linear``."""

    def __init__(self, full: torch.nn.Linear, rank: int, world: int):
        super().__init__()
        rows = full.out_features // world
        self.weight = torch.nn.Parameter(full.weight[rank * rows : (rank + 1) * rows].clone())
        self.bias = torch.nn.Parameter(full.bias[rank * rows : (rank + 1) * rows].clone())

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    """This rank's slice of the input features; the partial sums are all-reduced."""

    def __init__(self, full: torch.nn.Linear, rank: int, world: int, functional: bool):
        super().__init__()
        cols = full.in_features // world
        self.weight = torch.nn.Parameter(full.weight[:, rank * cols : (rank + 1) * cols].clone())
        self.bias = torch.nn.Parameter(full.bias.clone())
        self.functional = functional

    def forward(self, x):
        partial = torch.nn.functional.linear(x, self.weight)
        if self.functional:
            partial = funcol.all_reduce(partial, "sum", dist.group.WORLD)
        else:
            dist.all_reduce(partial)
        return partial + self.bias


class ParallelMLP(torch.nn.Module):
    def __init__(self, full: torch.nn.Sequential, rank, world, functional):
        super().__init__()
        self.up = ColumnParallelLinear(full[0], rank, world)
        self.down = RowParallelLinear(full[2], rank, world, functional)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class ParallelAttention(torch.nn.Module):
    """Heads split across ranks: q/k/v column-parallel, the output projection row-parallel."""

    def __init__(self, full: torch.nn.ModuleDict, heads: int, rank, world, functional):
        super().__init__()
        self.heads = heads // world
        self.q, self.k, self.v = (ColumnParallelLinear(full[n], rank, world) for n in "qkv")
        self.out = RowParallelLinear(full["o"], rank, world, functional)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (
            p(x).view(b, t, self.heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v)
        )
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


def full_mlp(dim=16, hidden=32):
    torch.manual_seed(0)  # every rank builds the same full weights, then keeps its shard
    return torch.nn.Sequential(
        torch.nn.Linear(dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, dim)
    )


def full_attention(dim=16):
    torch.manual_seed(1)
    return torch.nn.ModuleDict({n: torch.nn.Linear(dim, dim) for n in "qkvo"})


def reference_attention(full, heads, x):
    b, t, _ = x.shape
    q, k, v = (full[n](x).view(b, t, heads, -1).transpose(1, 2) for n in "qkv")
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return full["o"](y.transpose(1, 2).reshape(b, t, -1))


def check_tensor_parallel_blocks(rank, world):
    """The TP MLP and attention, with in-place and functional collectives: one graph, no break,
    equal to eager TP and to the unsharded block (inputs are the same on every rank)."""
    torch.manual_seed(2)
    x = torch.randn(2, 5, 16)
    out = {}
    for functional in (False, True):
        mlp_full, attn_full = full_mlp(), full_attention()
        blocks = {
            "mlp": (ParallelMLP(mlp_full, rank, world, functional), mlp_full(x)),
            "attention": (
                ParallelAttention(attn_full, 4, rank, world, functional),
                reference_attention(attn_full, 4, x),
            ),
        }
        for name, (block, unsharded) in blocks.items():
            with torch.no_grad():
                colls = differential(block.forward, lambda: (x.clone(),))
                torch.testing.assert_close(bytegraph.compile(block.forward)(x), unsharded)
            out[f"{name}/{'functional' if functional else 'in-place'}"] = colls
    return out


def check_tensor_parallel_aot_eager(rank, world):
    """The functional TP MLP through AOTAutograd (functionalised ATen graph): same result."""
    torch.manual_seed(2)
    x = torch.randn(2, 5, 16)
    for functional in (False, True):
        block = ParallelMLP(full_mlp(), rank, world, functional)
        with torch.no_grad():
            differential(block.forward, lambda: (x.clone(),), backend="aot_eager")


# -- part 5: explain counts collectives ------------------------------------------------------------
def check_explain_counts_collectives(rank, world):
    block = ParallelMLP(full_mlp(), rank, world, functional=False)
    with torch.no_grad():
        report = bytegraph.explain(block)(torch.randn(2, 16))
    assert report.collective_count == 1 and report.collectives_per_graph == [["all_reduce(sum, 0)"]]
    assert "Collectives per graph (1 in all):" in str(report)
    return str(report).splitlines()[:4]


WORLD2 = [
    "inplace_all_reduce",
    "inplace_all_reduce_mutates_argument",
    "functional_collectives",
    "inplace_collectives",
    "rank_and_world_size_are_guarded_constants",
    "group_argument_guarded_by_identity",
    "unmodelled_call_breaks_and_runs",
    "tensor_parallel_blocks",
    "tensor_parallel_aot_eager",
    "explain_counts_collectives",
    "device_mesh_groups",
]
WORLD4 = [
    "device_mesh_groups",
    "inplace_all_reduce",
    "functional_collectives",
    "inplace_collectives",
    "tensor_parallel_blocks",
]


_RESULTS: dict[int, dict] = {}


def results(world: int) -> dict:
    if world not in _RESULTS:
        _RESULTS[world] = run_checks(__file__, WORLD2 if world == 2 else WORLD4, world)
    return _RESULTS[world]


# -- tests -----------------------------------------------------------------------------------------
def test_inplace_all_reduce_is_in_the_graph():
    for world in (2, 4):
        values = expect_ok(results(world)["inplace_all_reduce"])
        first = 20 * sum(range(world)) + 1  # element 0: (10 * rank) * 2, summed, plus 1
        assert all(v[0] == first for v in values), values


def test_inplace_all_reduce_mutates_its_argument():
    expect_ok(results(2)["inplace_all_reduce_mutates_argument"])


def test_functional_collectives_are_graph_nodes():
    for world in (2, 4):
        seen = expect_ok(results(world)["functional_collectives"])[0]
        assert seen["all_reduce"] == "all_reduce(sum, 0)"
        assert seen["all_reduce_max_by_name"] == "all_reduce(max, 0)"
        assert seen["all_gather_tensor_dim1"] == f"all_gather_into_tensor({world}, 0)"
        assert seen["reduce_scatter_tensor_dim1"] == f"reduce_scatter_tensor(sum, {world}, 0)"
        assert seen["all_to_all_single"] == "all_to_all_single(0)"
        assert seen["broadcast"] == "broadcast(1, 0)"


def test_inplace_collectives_are_rewritten_to_functional_ones():
    for world in (2, 4):
        seen = expect_ok(results(world)["inplace_collectives"])[0]
        assert seen["all_gather_into_tensor"] == f"all_gather_into_tensor({world}, 0)"
        assert seen["reduce_scatter_tensor"] == f"reduce_scatter_tensor(sum, {world}, 0)"
        assert seen["all_reduce_max"] == "all_reduce(max, 0)"
        assert seen["broadcast"] == "broadcast(1, 0)"
        assert seen["async_op_then_wait"] == "all_reduce(sum, 0)"


def test_rank_and_world_size_are_guarded_constants():
    expect_ok(results(2)["rank_and_world_size_are_guarded_constants"])


def test_group_argument_is_guarded_by_identity():
    graphs = expect_ok(results(2)["group_argument_guarded_by_identity"])[0]
    assert graphs[0] == ["all_reduce(sum, 0)"] and graphs[1] != graphs[0]


def test_unmodelled_collective_breaks_the_graph_and_runs():
    reasons = expect_ok(results(2)["unmodelled_call_breaks_and_runs"])
    assert all("barrier" in r for r in reasons), reasons


def test_tensor_parallel_mlp_and_attention_compile_without_breaks():
    for world in (2, 4):
        graphs = expect_ok(results(world)["tensor_parallel_blocks"])[0]
        assert set(graphs) == {
            f"{b}/{f}" for b in ("mlp", "attention") for f in ("in-place", "functional")
        }
        assert all(colls == [["all_reduce(sum, 0)"]] for colls in graphs.values()), graphs


def test_tensor_parallel_through_aot_eager():
    expect_ok(results(2)["tensor_parallel_aot_eager"])


def test_explain_counts_collectives_per_graph():
    lines = expect_ok(results(2)["explain_counts_collectives"])[0]
    assert lines[0] == "Graph count: 1"


def test_device_mesh_groups_are_traced():
    for world in (2, 4):
        graphs = expect_ok(results(world)["device_mesh_groups"])[0]
        assert len(graphs["1d"]) == 1 and len(graphs["1d"][0]) == 1, graphs
    assert [len(g) for g in graphs["2d"]] == [2], graphs
