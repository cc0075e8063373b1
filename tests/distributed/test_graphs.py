"""The graphs collectives become, in one process: a world of the ``fake`` backend (rank 0 of 2,
whose collectives return their input) is enough to see what bytegraph records and guards. Values
across real ranks are checked on gloo in test_collectives.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from bytegraph.backends.debug import CompileCounter
from torch.testing._internal.distributed.fake_pg import FakeStore

import bytegraph


@pytest.fixture(scope="module", autouse=True)
def fake_world():
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    yield
    dist.destroy_process_group()


def graph_of(fn, *args):
    counter = CompileCounter()
    bytegraph.compile(fn, backend=counter)(*args)
    assert counter.frame_count == 1, counter.graphs
    return counter.graphs[0]


def targets(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_inplace_all_reduce_becomes_functional_collective_wait_and_copy():
    def fn(x):
        y = x * 2
        dist.all_reduce(y)
        return y + 1

    assert targets(graph_of(fn, torch.ones(3))) == [
        "<built-in function mul>",
        "_c10d_functional.all_reduce.default",
        "_c10d_functional.wait_tensor.default",
        "aten.copy_.default",
        "<built-in function add>",
    ]


def test_stacked_reduce_scatter_input_is_flattened():
    def fn(x):
        out = x.new_empty(x.shape[1:])
        dist.reduce_scatter_tensor(out, x)  # input (world size, *output shape): NCCL's form
        return out

    gm = graph_of(fn, torch.ones(2, 3, 4))
    assert "flatten" in [str(n.target) for n in gm.graph.nodes]
    assert bytegraph.distributed.collectives(gm) == ["reduce_scatter_tensor(sum, 2, 0)"]


def test_stacked_all_gather_output_is_a_view():
    def fn(x):
        out = x.new_empty((2, *x.shape))
        dist.all_gather_into_tensor(out, x)
        return out

    gm = graph_of(fn, torch.ones(3, 4))
    assert "view_as" in [str(n.target) for n in gm.graph.nodes]


def test_build_queries_fold_without_guards():
    def fn(x):
        if dist.is_available() and dist.is_gloo_available():
            return x + 1
        return x

    compiled = bytegraph.compile(fn)
    report = bytegraph.explain(fn)(torch.ones(2))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    compiled(torch.ones(2))
    assert "group_state" not in bytegraph.guard_source(compiled)


def test_default_group_state_is_guarded():
    def fn(x):
        return x * dist.get_world_size()

    compiled = bytegraph.compile(fn)
    compiled(torch.ones(2))
    assert "___group_state() == " in bytegraph.guard_source(compiled)


def _send(x):
    y = x + 1
    dist.send(y, 1)
    return y


def _reduce_to_one_rank(x):
    y = x + 1
    dist.reduce(y, dst=0)
    return y


def _rank_list_group(x):
    y = x + 1
    return funcol.all_reduce(y, "sum", [0, 1])


def _object_collective(x):
    y = x + 1
    dist.broadcast_object_list([1], src=0)
    return y


@pytest.mark.parametrize("fn", [_send, _reduce_to_one_rank, _rank_list_group, _object_collective])
def test_unmodelled_distributed_calls_break_before_running(fn):
    report = bytegraph.explain(fn)(torch.ones(2))
    assert [b.kind for b in report.break_reasons] == ["collective"], report


def test_work_handle_escaping_the_function_runs_it_in_python():
    def fn(x):
        return dist.all_reduce(x, async_op=True)

    report = bytegraph.explain(fn)(torch.ones(2))
    assert report.graph_count == 0 and report.break_reasons[0].fell_back, report


def test_collective_inside_a_black_box_breaks():
    def fn(x):
        y = x * 2
        torch.distributed.nn.functional.all_reduce(y)  # autograd-aware, not modelled
        return y

    report = bytegraph.explain(fn)(torch.ones(2))
    assert [b.kind for b in report.break_reasons] == ["collective"], report


def test_unread_collectives_survive_aot_autograd():
    """Nothing reads these collectives' results, yet the peers wait for them: they stay (as extra
    graph outputs) through AOTAutograd's partitioner, which keeps only what outputs need."""

    def fn(x):
        funcol.all_reduce(x, "sum", dist.group.WORLD)
        y = x.clone()
        dist.all_reduce(y)
        return x * 2

    counter = CompileCounter(bytegraph.lookup_backend("aot_eager"))
    x = torch.ones(3, requires_grad=True)
    torch.testing.assert_close(bytegraph.compile(fn, backend=counter)(x), fn(x))
    (forward,) = counter.compiled[0].forward_graphs
    issued = [n for n in forward.graph.nodes if "_c10d_functional.all_reduce" in str(n.target)]
    assert len(issued) == 2, forward.graph
