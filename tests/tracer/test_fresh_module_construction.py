"""``torch.nn`` modules built in a traced function (``modules._build_torch_module``): the rewritten
code builds one before the graph (``SideEffects.prologue``) only where it reads it (a graph input,
the result, a store, a resume call) or where building it shows (random draws); eager's global
registration hooks run as in eager."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check, check_breaks, compile_counted
from torch import nn

import bytegraph
from bytegraph.explain import Recorder


def rewritten_code(fn, *args):
    """The rewritten code of ``fn``'s first trace, and the compiled function (called once)."""
    compiled = bytegraph.compile(fn, backend="eager")
    with Recorder() as recorder:
        compiled(*args)
    event = next(r.event for r in recorder.records if r.event.fn is not None)
    return event.fn.__code__, compiled


def builds(code, cls) -> bool:
    return any(c is cls for c in code.co_consts)


def logits():
    return torch.randn(4, 5), torch.tensor([0, 1, 4, 2])


def test_an_unread_loss_module_is_not_built():
    def fn(x, y):
        return nn.CrossEntropyLoss()(x, y)

    check(fn, *logits())
    code, _ = rewritten_code(fn, *logits())
    assert not builds(code, nn.CrossEntropyLoss)


def test_an_unread_activation_module_is_not_built():
    def fn(x):
        return nn.ReLU()(x) + nn.Tanh()(x)

    check(fn, torch.randn(3))
    code, _ = rewritten_code(fn, torch.randn(3))
    assert not builds(code, nn.ReLU) and not builds(code, nn.Tanh)


def test_a_module_whose_parameters_the_graph_reads_is_built():
    def fn(x):
        return nn.LayerNorm(3)(x)

    check(fn, torch.randn(2, 3))
    code, _ = rewritten_code(fn, torch.randn(2, 3))
    assert builds(code, nn.LayerNorm)


@pytest.mark.parametrize("used", [True, False])
def test_a_module_drawing_random_numbers_is_built(used):
    def fn(x):
        lin = nn.Linear(3, 2)
        return lin(x) if used else x + 1

    compiled, counter = compile_counted(fn)
    for _ in range(2):
        x = torch.randn(4, 3)
        torch.manual_seed(0)
        expected, expected_state = fn(x), torch.random.get_rng_state()
        torch.manual_seed(0)
        assert_same(compiled(x), expected)
        assert torch.equal(torch.random.get_rng_state(), expected_state)
    assert counter.frame_count == 1
    code, _ = rewritten_code(fn, torch.randn(4, 3))
    assert builds(code, nn.Linear)


def test_an_unread_module_with_parameters_not_drawing_is_not_built():
    def fn(x):
        norm = nn.LayerNorm(3)
        return x * norm.normalized_shape[0]

    check(fn, torch.randn(2, 3))
    code, _ = rewritten_code(fn, torch.randn(2, 3))
    assert not builds(code, nn.LayerNorm)


def test_a_returned_module_is_built_on_every_call():
    def fn(x):
        act = nn.ReLU()
        return act(x), act

    code, compiled = rewritten_code(fn, torch.randn(3))
    assert builds(code, nn.ReLU)
    x = torch.randn(3)
    (y1, m1), (_, m2) = compiled(x), compiled(x)
    assert_same(y1, torch.relu(x))
    assert type(m1) is nn.ReLU and type(m2) is nn.ReLU and m1 is not m2


def test_a_module_stored_on_an_object_is_built():
    class Holder:
        pass

    holder = Holder()

    def fn(x):
        holder.loss = nn.MSELoss(reduction="sum")
        return holder.loss(x, torch.zeros_like(x))

    code, compiled = rewritten_code(fn, torch.ones(3))
    assert builds(code, nn.MSELoss)
    first = holder.loss
    assert_same(compiled(torch.ones(3)), torch.tensor(3.0))
    assert type(holder.loss) is nn.MSELoss and holder.loss is not first
    assert holder.loss.reduction == "sum"


def test_a_module_live_at_a_graph_break_is_built():
    def fn(x):
        act = nn.Sigmoid()
        y = act(x) * 2
        bytegraph.graph_break()
        return act(y), type(act).__name__

    check_breaks(fn, lambda: (torch.randn(3),), graphs=2, breaks=1)


def test_a_sequential_of_the_modules_layers():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 2)

        def forward(self, x):
            return nn.Sequential(self.a, nn.ReLU(), self.b)(x)

    check(Model(), torch.randn(2, 3))


def _buffer_hook(seen):
    return nn.modules.module.register_module_buffer_registration_hook(
        lambda module, name, buffer: seen.append((type(module).__name__, name))
    )


def test_a_registration_hook_set_before_the_call_runs_as_in_eager():
    seen = []

    def fn(x, y):
        return nn.CrossEntropyLoss()(x, y)

    handle = _buffer_hook(seen)
    try:
        check_breaks(
            fn, logits, graphs=1, breaks=1, calls=3, setup=seen.clear, observe=lambda: list(seen)
        )
    finally:
        handle.remove()


def test_a_registration_hook_set_after_the_first_call_runs():
    seen = []

    def fn(x, y):
        return nn.CrossEntropyLoss()(x, y)

    compiled, _ = compile_counted(fn)
    compiled(*logits())
    handle = _buffer_hook(seen)
    try:
        for _ in range(2):
            x, y = logits()
            seen.clear()
            got = compiled(x, y)
            assert seen == [("CrossEntropyLoss", "weight")]
            assert_same(got, fn(x, y))
    finally:
        handle.remove()
    seen.clear()
    compiled(*logits())
    assert seen == []


@pytest.mark.parametrize("returned", [True, False])
def test_a_container_of_modules_built_in_the_trace(returned):
    def fn(x):
        seq = nn.Sequential(nn.ReLU(), nn.Tanh())
        return (seq(x), seq) if returned else seq(x)

    code, compiled = rewritten_code(fn, torch.randn(3))
    built = [builds(code, cls) for cls in (nn.Sequential, nn.ReLU, nn.Tanh)]
    assert built == [returned] * 3
    x = torch.randn(3)
    got = compiled(x)
    assert_same(got[0] if returned else got, torch.tanh(torch.relu(x)))
    if returned:
        assert [type(m) for m in got[1]] == [nn.ReLU, nn.Tanh]
