"""Numbers a call advances: an int or float attribute that the compiled code reads and then stores
another value into (a step counter, ``torchmetrics``' ``_update_count``, a running total) changes
before every next call, so the first trace reads it symbolically (``DynamicPolicy.foresee``) and
the second identical call compiles nothing. What the trace assumed of it is still checked: a
branch on it, a value written from outside the call, a number it reads without changing.

Each case runs the compiled code and eager on two copies, comparing results and the state each
call leaves (``assert_same``); compiles are counted with ``CompileCounter`` (resume functions
included). torch.compile (2.13, backend eager) specialises an int attribute of a module and
compiles again at each new value.
"""

from __future__ import annotations

import copy

import torch
from difftest import assert_same, compile_counted
from torch import nn

import bytegraph


class Counted(nn.Module):
    """``forward`` advances ``calls`` and reads it only to advance it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * 2


class Averaged(nn.Module):
    """A running mean kept as a Python float and a count, both advanced by each call and used
    in the result."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0.0
        self.seen = 0

    def forward(self, x):
        self.seen += x.shape[0]
        self.total = self.total + 0.5
        return x * self.total / self.seen


class Metric(nn.Module):
    """A torchmetrics-like metric: the count read into a local, reset, then stored advanced."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.update_count = 0

    def forward(self, x):
        count = self.update_count
        self.update_count = 0
        value = (x * self.scale).sum()
        self.update_count = count + 1
        return value


class Collection(nn.Module):
    """Metrics called in a loop that breaks at each metric: the resume functions get each
    metric as an argument and advance its count."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics = nn.ModuleList([Metric(2.0), Metric(3.0)])

    def forward(self, x):
        out = []
        for m in self.metrics:
            bytegraph.graph_break()
            out.append(m(x))
        return out


def _run(model: nn.Module, args_per_call: list[tuple], mutate=None):
    """Calls of the compiled ``model`` and of an eager copy, compared result by result and by the
    plain attributes left; the compile counter."""
    eager = copy.deepcopy(model)
    compiled, counter = compile_counted(model)
    for i, args in enumerate(args_per_call):
        if mutate is not None:
            mutate(i, model)
            mutate(i, eager)
        assert_same(compiled(*args), eager(*args))
        assert _state(model) == _state(eager)
    return counter


def _state(model: nn.Module) -> list:
    return [
        (name, key, value)
        for name, module in model.named_modules()
        for key, value in vars(module).items()
        if type(value) in (int, float, bool)
    ]


def test_a_counter_the_forward_advances_compiles_once():
    x = torch.randn(2, 4)
    counter = _run(Counted(), [(x,)] * 5)
    assert counter.frame_count == 1


def test_a_float_total_and_a_count_the_result_reads_compile_once():
    x = torch.randn(3, 4)
    counter = _run(Averaged(), [(x,)] * 5)
    assert counter.frame_count == 1


def test_counters_advanced_in_resume_functions_compile_nothing_at_the_second_call():
    x = torch.randn(3)
    model = Collection()
    eager = copy.deepcopy(model)
    compiled, counter = compile_counted(model)
    assert_same(compiled(x), eager(x))
    first = counter.frame_count
    for _ in range(3):
        assert_same(compiled(x), eager(x))
        assert _state(model) == _state(eager)
    assert counter.frame_count == first
    assert [m.update_count for m in model.metrics] == [4, 4]


def test_a_counter_on_a_plain_object_argument_compiles_once():
    class Steps:
        def __init__(self) -> None:
            self.n = 0

    def fn(x, steps):
        steps.n += 1
        return x + 1

    compiled, counter = compile_counted(fn)
    mine, theirs, x = Steps(), Steps(), torch.randn(3)
    for _ in range(4):
        assert_same(compiled(x, mine), fn(x, theirs))
    assert mine.n == theirs.n == 4 and counter.frame_count == 1


def test_a_branch_on_an_advanced_counter_is_still_checked():
    class EveryThird(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = 0

        def forward(self, x):
            self.step += 1
            if self.step % 3 == 0:
                return x * 10
            return x - 1

    x = torch.randn(3)
    counter = _run(EveryThird(), [(x,)] * 7)
    assert counter.frame_count == 2  # one variant per side of the branch


def test_a_counter_written_between_calls_gives_eager_results():
    def rewind(i, model):
        if i == 3:
            model.seen = 100
            model.total = -2.0

    x = torch.randn(2, 4)
    counter = _run(Averaged(), [(x,)] * 5, mutate=rewind)
    assert counter.frame_count == 1  # the numbers are the graph's inputs


def test_a_number_read_without_being_advanced_still_misses_when_it_changes():
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = 2
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * self.scale

    def rescale(i, model):
        if i == 2:
            model.scale = 5

    x = torch.randn(3)
    counter = _run(Scaled(), [(x,)] * 4, mutate=rescale)
    assert counter.frame_count == 2  # the first trace, then the new scale


def test_a_counter_the_caller_resets_before_each_call_compiles_once():
    def reset(i, model):
        model.calls = 0

    x = torch.randn(2, 4)
    counter = _run(Counted(), [(x,)] * 4, mutate=reset)
    assert counter.frame_count == 1
