"""Fake results reused within a trace (``tracer/fakes/fake_reuse.py``): a call whose target,
argument metadata and global state match an earlier call's gets fresh fake tensors of the earlier
result's metadata instead of running on fake tensors again; views, in-place ops, symbolic sizes and
results that require grad always run."""

from __future__ import annotations

import pytest
import torch
from bytegraph.tracer import output_graph
from bytegraph.tracer.fakes.fake_reuse import FakeResults
from difftest import assert_same, compile_counted
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv


@pytest.fixture
def fake_runs(monkeypatch):
    """The targets run on fake tensors, in order."""
    runs: list = []
    original = output_graph.OutputGraph._run_fake

    def run_fake(self, op, target, args, kwargs, probe):
        runs.append(target)
        return original(self, op, target, args, kwargs, probe)

    monkeypatch.setattr(output_graph.OutputGraph, "_run_fake", run_fake)
    return runs


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.silu(self.proj(x)) * 2.0 + x


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _metadata(gm: torch.fx.GraphModule) -> list:
    return [
        (n.name, tuple(v.shape), v.stride(), v.dtype, v.device, v.requires_grad)
        for n in gm.graph.nodes
        if isinstance(v := n.meta.get("example_value"), torch.Tensor)
    ]


def test_repeated_layers_run_each_call_on_fake_tensors_once(fake_runs):
    torch.manual_seed(0)
    model, x = Stack().eval(), torch.randn(2, 8)
    compiled, counter = compile_counted(model)
    with torch.no_grad():
        assert_same(compiled(x), model(x))
    assert counter.frame_count == 1
    assert fake_runs.count(torch._C._nn.linear) == 1  # the first layer's; the others reuse it
    assert fake_runs.count(torch.nn.functional.silu) == 1


def test_reused_results_have_the_metadata_a_fake_run_gives(monkeypatch):
    torch.manual_seed(0)
    x = torch.randn(2, 8)
    graphs = []
    for reuse in (True, False):
        if not reuse:
            monkeypatch.setattr(FakeResults, "key", lambda *a: None)  # every call runs
        compiled, counter = compile_counted(Stack().eval())
        with torch.no_grad():
            compiled(x)
        graphs += counter.graphs
    reused, fresh = graphs
    assert _metadata(reused) == _metadata(fresh)


def test_results_that_require_grad_run_every_time(fake_runs):
    torch.manual_seed(0)
    model, x = Stack(), torch.randn(2, 8)
    compiled, _ = compile_counted(model)
    assert_same(compiled(x), model(x))
    assert fake_runs.count(torch._C._nn.linear) == 4


def test_views_run_every_time(fake_runs):
    def fn(a, b):
        return a.transpose(0, 1) + b.transpose(0, 1)

    compiled, _ = compile_counted(fn)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    assert_same(compiled(a, b), fn(a, b))
    assert fake_runs.count("transpose") == 2


def test_a_call_returning_its_argument_returns_the_new_argument(fake_runs):
    def fn(a, b):
        return a.contiguous() * 2, b.contiguous() * 3

    compiled, counter = compile_counted(fn)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    assert_same(compiled(a, b), fn(a, b))
    assert fake_runs.count("contiguous") == 1
    (gm,) = counter.graphs
    nodes = [n for n in gm.graph.nodes if n.target == "contiguous"]
    assert [n.meta["example_value"] for n in nodes] == [
        n.args[0].meta["example_value"] for n in nodes
    ]
    assert nodes[0].meta["example_value"] is not nodes[1].meta["example_value"]


def test_in_place_calls_run_every_time(fake_runs):
    def fn(a, b):
        a.add_(1)
        b.add_(1)
        return a + b

    compiled, _ = compile_counted(fn)
    args, expected_args = (torch.zeros(2), torch.ones(2)), (torch.zeros(2), torch.ones(2))
    assert_same(compiled(*args), fn(*expected_args))
    assert_same(args, expected_args)
    assert fake_runs.count("add_") == 2


def test_symbolic_sizes_are_not_keyed():
    mode = FakeTensorMode(shape_env=ShapeEnv())
    results = FakeResults(mode)
    static = mode.from_tensor(torch.ones(3, 4), static_shapes=True)
    dynamic = mode.from_tensor(torch.ones(3, 4), static_shapes=False)
    assert results.key("call_method", "sum", (static,), {}) is not None
    assert results.key("call_method", "sum", (dynamic,), {}) is None


def test_keys_tell_constants_of_other_types_and_signs_apart():
    mode = FakeTensorMode()
    results = FakeResults(mode)
    x = mode.from_tensor(torch.ones(3, dtype=torch.int64))
    keys = [results.key("call_function", torch.mul, (x, c), {}) for c in (2, 2.0, True, 0.0, -0.0)]
    assert None not in keys and len(set(keys)) == 5


def test_other_fake_modes_and_user_functions_are_not_keyed():
    mode, other = FakeTensorMode(), FakeTensorMode()
    results = FakeResults(mode)
    x = other.from_tensor(torch.ones(3))
    assert results.key("call_method", "sum", (x,), {}) is None

    def user_fn(t):
        return t

    y = mode.from_tensor(torch.ones(3))
    assert results.key("call_function", user_fn, (y,), {}) is None


@pytest.mark.parametrize(
    ("change", "grad"),
    [
        (lambda y: y.unsqueeze_(0), False),
        (lambda y: y.t_(), False),
        (lambda y: y.detach_(), True),  # the product no longer requires grad
    ],
    ids=["unsqueeze_", "t_", "detach_"],
)
def test_a_result_changed_in_place_is_not_reused(fake_runs, change, grad):
    # The first product is described when the second call comes: by then it has changed.
    def fn(a, w):
        y = a * w
        change(y)
        return y, a * w

    compiled, _ = compile_counted(fn)
    a, w = torch.randn(2, 3), torch.randn(2, 3, requires_grad=grad)
    assert_same(compiled(a, w), fn(a, w))
    assert len([t for t in fake_runs if getattr(t, "__name__", t) == "mul"]) == 2
