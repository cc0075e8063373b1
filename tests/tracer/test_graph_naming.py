"""Node targets and constants reach FX's generated code in a form it names correctly."""

from __future__ import annotations

import typing

import pytest
import torch
from bytegraph.tracer.exc import Unsupported
from bytegraph.tracer.graph_naming import graph_constant, graph_target

import bytegraph


def test_torch_ops_keep_their_dotted_path():
    for op in (torch.relu, torch.nn.functional.gelu, torch.ops.aten.add.Tensor, torch.Tensor.add):
        assert graph_target(op) is op


def test_callable_whose_path_leads_elsewhere_is_wrapped():
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    target = graph_target(Twice.apply)
    assert target is not Twice.apply and target.wrapped_target == Twice.apply
    assert not target.__module__.startswith("torch")
    torch.testing.assert_close(target(torch.ones(2)), torch.full((2,), 2.0))


def test_a_torch_callable_patched_away_after_its_first_use_is_wrapped(monkeypatch):
    silu = torch.nn.functional.silu
    assert graph_target(silu) is silu  # its path is remembered
    monkeypatch.setattr(torch.nn.functional, "silu", torch.relu)  # the path now leads elsewhere
    target = graph_target(silu)
    assert target is not silu and target.wrapped_target is silu
    monkeypatch.undo()
    assert graph_target(silu) is silu


def test_a_compiled_call_of_a_patched_torch_callable_runs_the_original(monkeypatch):
    silu = torch.nn.functional.silu

    def fn(x):
        return silu(x) + 1

    x = torch.randn(4)
    expected = fn(x)
    torch.compiler.reset()
    assert graph_target(silu) is silu
    monkeypatch.setattr(torch.nn.functional, "silu", torch.relu)
    compiled = bytegraph.compile(fn, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), expected)


def test_non_torch_callables_are_left_alone():
    def mine(x):
        return x

    assert graph_target(mine) is mine


@pytest.mark.parametrize(
    "value",
    [
        1,
        2.5,
        float("inf"),
        "s",
        None,
        torch.float16,
        torch.device("cpu"),
        slice(1, None),
        (1, [2, 3]),
        {"a": torch.strided},
        ...,
        range(3),
    ],
)
def test_literal_constants_are_accepted(value):
    assert graph_constant(value) is value


@pytest.mark.parametrize("value", [typing.Any, object(), int, (1, typing.Sequence), lambda: 0])
def test_other_constants_break_cleanly(value):
    with pytest.raises(Unsupported, match="constant argument of a graph op"):
        graph_constant(value)
