"""Graph breaks inside inlined callees 1-3 calls deep: the caller's graph before the call is kept,
the callee continues after the break (its own resume function), then each caller continues after
its call. Graph counts prove nothing runs twice and nothing is left uncompiled.

Counting breaks: a break in a callee is reported once, by the frame that inlined the callee. The
callee's resume function starts *at* the breaking instruction and its trace stops there at once
(the instruction then runs inline, once): that is the same break, not reported again."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_counts

import bytegraph


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def leaf_print(x):
    y = x.cos()
    print("in leaf")
    return y.sin()


def mid(x):
    return leaf_print(x + 1) * 2


def top(x):
    return mid(x - 1) / 3


def test_break_one_deep():
    def fn(x):
        a = x * 2
        b = leaf_print(a)
        return b + a

    # graph 1: x*2 and cos; graph 2: sin (the callee's resume); graph 3: b + a (the caller's resume)
    check_breaks(fn, randn(3), graphs=3, breaks=1)


def test_break_two_deep():
    def fn(x):
        return mid(x.exp()) - 1

    check_breaks(fn, randn(3), graphs=4, breaks=1)


def test_break_three_deep():
    def fn(x):
        y = top(x) + 5
        return y

    check_breaks(fn, randn(3), graphs=5, breaks=1)


def test_callee_graph_break_explicit():
    def helper(t):
        t = t + 1
        bytegraph.graph_break()
        return t * 2

    def fn(x):
        return helper(x.relu()) - x

    check_breaks(fn, randn(4), graphs=3, breaks=1)


@bytegraph.config.patch(speculate=False)  # the break at the branch is under test
def test_callee_data_dependent_branch():
    def inner(t, k):
        t = t + k
        if t.sum() > 0:
            return t * 2
        return t * -2

    def fn(t):
        r = inner(t, 1) + inner(t, -1)
        return r.relu()

    ones = lambda: (torch.ones(3) + torch.rand(3) * 0.1,)  # noqa: E731
    minus = lambda: (-torch.ones(3) - torch.rand(3) * 0.1,)  # noqa: E731
    # two calls of inner with different branches per input; caller resumes after each call
    # entry (t + 1, the test), the callee's resume at its jump (breaks there: no graph), both
    # branches of it, the caller after the first call (t - 1, the test), after the second (relu)
    check_breaks(fn, None, calls=[ones, minus, ones], graphs=5, breaks=2)


def test_caller_graph_before_call_is_kept():
    def callee(t):
        print("callee")
        return t

    def fn(x):
        a = x.sin().cos().tan()
        return callee(a) + 1

    _, counter, _ = check_breaks(fn, randn(3), graphs=2, breaks=1)
    first = [
        n.target if isinstance(n.target, str) else n.target.__name__
        for n in counter.graphs[0].graph.nodes
        if n.op.startswith("call_")
    ]
    assert first == ["sin", "cos", "tan"]


def test_callee_result_used_in_expression():
    def scale(t, k):
        v = t.sum().tolist()
        return t * k + v

    def fn(x):
        return (1 + scale(x, 2)) * scale(x, 3)

    # each .tolist() float specialises the callee's resume (two calls: two values per run)
    check_breaks(fn, randn(3), calls=1, graphs=5, breaks=2)


def test_break_in_method_of_object():
    class Block:
        def __init__(self):
            self.w = torch.randn(3)

        def forward(self, x):
            h = x * self.w
            print("block")
            return h.relu()

    block = Block()

    def fn(x):
        return block.forward(x) + 1

    check_breaks(fn, randn(3), graphs=3, breaks=1)


def test_break_in_nn_module_forward():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            bytegraph.graph_break()
            return h.tanh()

    m = M()

    def fn(x):
        return m(x) * 2

    check_breaks(fn, randn(2, 3), graphs=3, breaks=1)


def test_callee_with_kwargs_breaks():
    def helper(t, *, scale=1.0, shift=0.0):
        t = t * scale
        print("scaled", scale)
        return t + shift

    def fn(x):
        return helper(x, scale=2.0, shift=1.0) - helper(x, shift=3.0)

    check_breaks(fn, randn(3), graphs=5, breaks=2)


def test_break_in_callee_inside_loop():
    def step(t, i):
        t = t + i
        bytegraph.graph_break()
        return t * 2

    def fn(x):
        for i in range(3):
            x = step(x, i)
        return x

    # entry (x + 0); the callee's resume after graph_break (t * 2); the caller's resume for the
    # remaining range items (1, 2) and (2,) (t + i), one variant (the range's item symbolic),
    # breaking in the callee again; the callee's resumes are reused
    check_breaks(fn, randn(2), graphs=3, breaks=2)


def test_break_in_callee_called_twice():
    def noisy(t):
        print("noisy")
        return t + 1

    def fn(x):
        a = noisy(x)
        b = noisy(a * 2)
        return a + b

    check_breaks(fn, randn(3), graphs=3, breaks=2)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_depth_parametrised_break(depth):
    def level3(t):
        return t * t.max().tolist()

    def level2(t):
        return level3(t + 1) - 1

    def level1(t):
        return level2(t * 2) / 2

    target = {1: level3, 2: level2, 3: level1}[depth]

    def fn(x):
        return target(x.abs()) + x

    # the float specialises the callee's resume: one graph per call for it
    check_breaks(fn, randn(3), calls=1, graphs=depth + 2, breaks=1)


def test_callee_closure_break():
    scale = torch.tensor(2.0)

    def closure_fn(t):
        print("closure", scale.shape)
        return t * scale

    def fn(x):
        return closure_fn(x + 1) + 1

    check_breaks(fn, randn(3), graphs=3, breaks=1)


def breaks_in_callee(x):
    return leaf_print(x * 2) + 1


def test_callee_break_listed_once_by_explain():
    report = bytegraph.explain(breaks_in_callee)(torch.randn(3))
    assert [(br.kind, br.function) for br in report.break_reasons] == [
        ("print", "breaks_in_callee")
    ]
    assert (report.graph_count, report.graph_break_count) == (3, 1)


def test_callee_break_counted_once_by_stats():
    bytegraph.reset()
    bytegraph.compile(breaks_in_callee)(torch.randn(3))
    assert bytegraph.stats()["break:print"] == 1


def test_callee_break_logged_once(capsys):
    bytegraph.set_logs("graph_breaks")
    try:
        bytegraph.compile(breaks_in_callee)(torch.randn(3))
    finally:
        bytegraph.set_logs("")
    assert capsys.readouterr().err.count("print: call to print()") == 1


def test_callee_break_in_try_of_caller_counted_once():
    def fn(x):
        try:
            y = leaf_print(x + 1)
        except ValueError:
            y = x
        return y * 3

    # the callee resumes after its print; what its resume code raises is raised at the caller's
    # call, in the caller's code, whose handler sees it (``continuation._raise_in_caller``). The
    # break is reported once. Graphs: x + 1 and cos, then sin; the caller's rest, in its try,
    # runs in Python. torch.compile: 2 graphs, 1 break.
    check_breaks(fn, randn(3), graphs=2, breaks=1)
    assert dynamo_counts(fn, torch.randn(3)) == (2, 1)
