"""Graph breaks and control flow: data-dependent branches and while loops (both ways across calls),
breaks inside loops (resuming mid-iteration over ranges, lists, dict items, enumerate, zip) and
inside branches."""

from __future__ import annotations

import pytest
import torch
from bytegraph.codegen.pyversion import PY311
from difftest import check_breaks

import bytegraph


@pytest.fixture(autouse=True)
def _branches_on_data_break():
    """These tests are about breaks at branches on tensor data and the resume functions after
    them, so the branches break under either default of ``speculate``."""
    with bytegraph.config.patch(speculate=False):
        yield


def pos(*shape):
    return lambda: (torch.rand(*shape) + 0.5,)


def neg(*shape):
    return lambda: (-torch.rand(*shape) - 0.5,)


def _branch_on_sum(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    else:
        y = y - 1
    return y.cos()


def test_if_sum_positive_both_branches():
    fn = _branch_on_sum
    # graph before the jump, then one graph per branch
    check_breaks(fn, None, calls=[pos(3), neg(3), pos(3), neg(3)], graphs=3, breaks=1)


def test_if_sum_positive_speculated_until_it_misses_too_often():
    fn = _branch_on_sum
    with bytegraph.config.patch(speculate=True, speculation_miss_limit=2):
        # one graph through the side the first call takes; the calls taking the other side rerun
        # in Python
        check_breaks(fn, None, calls=[pos(3), neg(3), pos(3), neg(3)], graphs=1, breaks=0)
        bytegraph.reset()
        # after two misses the next trace breaks at the branch: entry graph, then each side's
        check_breaks(fn, None, calls=[pos(3), neg(3), neg(3), neg(3), pos(3)], graphs=4, breaks=1)


def test_if_without_else():
    def fn(x):
        if x.mean() > 0:
            x = x.relu()
        return x * 3

    check_breaks(fn, None, calls=[pos(4), neg(4), neg(4)], graphs=3, breaks=1)


def test_if_return_in_branch():
    def fn(x):
        y = x.exp()
        if (y > 1.5).any():
            return y - 1
        return y + 1

    check_breaks(fn, None, calls=[pos(3), neg(3)], graphs=3, breaks=1)


def test_if_on_bool_tensor():
    def fn(x):
        y = x.abs()
        if y.max() > 0.7:
            y = y * 10
        return y

    small = lambda: (torch.rand(3) * 0.5,)  # noqa: E731
    # the else path has no op after the jump: no graph
    check_breaks(fn, None, calls=[pos(3), small, pos(3)], graphs=2, breaks=1)


def test_if_not_condition():
    def fn(x):
        y = x + 1
        if not y.sum() > 0:
            return y * -1
        return y

    check_breaks(fn, None, calls=[lambda: (torch.full((3,), -5.0),), pos(3)], graphs=2, breaks=1)


def test_and_condition():
    def fn(x, y):
        a = x + y
        if a.sum() > 0 and y.sum() > 0:
            return a * 2
        return a - 2

    def both():
        return torch.rand(3) + 1, torch.rand(3) + 1

    def first_only():
        return torch.rand(3) + 5, -torch.rand(3) - 1

    def none():
        return -torch.rand(3) - 5, torch.rand(3)

    check_breaks(fn, None, calls=[both, first_only, none], graphs=4, breaks=2)


def test_elif_chain():
    def fn(x):
        s = x.sum()
        if s > 1:
            r = x * 1
        elif s > -1:
            r = x * 2
        else:
            r = x * 3
        return r + 1

    big = lambda: (torch.full((2,), 3.0) + torch.rand(2),)  # noqa: E731
    mid = lambda: (torch.rand(2) * 0.1,)  # noqa: E731
    small = lambda: (torch.full((2,), -3.0) - torch.rand(2),)  # noqa: E731
    # entry (s > 1), then-branch, the elif's test (its own graph and break), its two branches
    check_breaks(fn, None, calls=[big, mid, small, big], graphs=5, breaks=2)


def test_while_max_halves_both_ways():
    def fn(t):
        while t.max() > 1:
            t = t / 2
        return t + 0

    big = lambda: (torch.rand(4) * 10 + 2,)  # noqa: E731
    small = lambda: (torch.rand(4) * 0.5,)  # noqa: E731
    # the entry graph (t.max() > 1), the loop body's resume (t / 2 and the test again: one resume
    # function reused at every iteration) and the exit's resume (t + 0); one break each at the test
    # NOTE(3.12): from 3.12 on, the loop test is duplicated at the loop's end, whose jumps are other
    # positions: one more resume (the body entered from the bottom test), with its graph and break
    bottom_test = not PY311
    _, _, report = check_breaks(
        fn, None, calls=[small, big, big, small], graphs=3 + bottom_test, breaks=2 + bottom_test
    )
    assert {r.kind for r in report.break_reasons} == {"data_dependent"}
    assert all(r.line == "while t.max() > 1:" for r in report.break_reasons)


def test_while_with_counter():
    def fn(t):
        n = 0
        while t.max() > 1:
            t = t / 2
            n += 1
        return t * n

    # max in [3, 4): exactly two halvings; the body's resume takes n symbolically from the first
    # (the loop advances it), so one variant serves n = 0 and n = 1. From 3.12 the loop tests its
    # condition again at its end: the first iteration resumes at the top test, the second at the
    # end's (two resume functions, one variant each)
    x = lambda: (torch.rand(3) * 0.5 + torch.tensor([3.0, 0.0, 0.0]),)  # noqa: E731
    graphs = 3 if PY311 else 4
    check_breaks(fn, x, calls=3, graphs=graphs, breaks=graphs - 1)


def test_while_never_entered():
    def fn(t):
        s = t * 2
        while s.sum() > 100:
            s = s - 1
        return s

    check_breaks(fn, lambda: (torch.rand(3),), graphs=1, breaks=1)


# -- breaks inside loops ---------------------------------------------------------------------------


def test_print_in_for_range():
    def fn(x):
        for i in range(3):
            x = x * 2 + i
            print("iter", i)
        return x.sum()

    # each iteration's print is a break: one resume variant takes every iteration's i (a range's
    # item, symbolic), another the loop's end
    check_breaks(fn, pos(3), graphs=3, breaks=2)


def test_break_mid_iteration_keeps_loop_state():
    def fn(x):
        acc = []
        for i in range(4):
            y = x * i
            if i == 2:
                print("half way", len(acc))
            acc.append(y + 1)
        return torch.stack(acc)

    check_breaks(fn, pos(2), graphs=2, breaks=1)


def test_for_over_list_of_tensors_with_break():
    def fn(xs):
        total = 0
        for t in xs:
            total = total + t.sin()
            print("t")
        return total

    # the second and third items' iterations share one variant of the resume function (the list
    # is read from where its iterator stands, ``iterators.ListRestIteratorVariable``); the one
    # where the loop ends makes no graph
    check_breaks(
        fn, lambda: ([torch.randn(2), torch.randn(2), torch.randn(2)],), graphs=2, breaks=2
    )


def test_for_over_dict_items_with_break():
    def fn(d):
        out = {}
        for k, v in d.items():
            out[k] = v * 2
            if k == "b":
                print("key", k)
        return out

    check_breaks(
        fn,
        lambda: ({"a": torch.randn(2), "b": torch.randn(2), "c": torch.randn(2)},),
        graphs=2,
        breaks=1,
    )


def test_for_enumerate_with_item():
    def fn(x):
        out = x
        for i, row in enumerate(x):
            v = row.sum().item()
            out = out + i * v
        return out

    # each .item() is an unbacked float computed by the graph: one graph for any values
    check_breaks(fn, lambda: (torch.randn(2, 3),), calls=3, graphs=1, breaks=0)


def test_for_enumerate_with_tolist():
    def fn(x):
        out = x
        for i, row in enumerate(x):
            v = row.sum().tolist()
            out = out + i * v
        return out

    # every .tolist() is a break; the floats specialise each resume (new values: new graphs)
    check_breaks(fn, lambda: (torch.randn(2, 3),), calls=1, graphs=3, breaks=2)


def test_for_zip_with_break():
    def fn(a, b):
        res = []
        for p, q in zip(a, b, strict=False):
            bytegraph.graph_break()
            res.append(p * q)
        return res

    make = lambda: ([torch.randn(2), torch.randn(2)], [torch.randn(2), torch.randn(2)])  # noqa: E731
    check_breaks(fn, make, graphs=2, breaks=2)


def test_loop_break_statement_after_graph_break():
    def fn(x):
        for i in range(10):
            x = x + 1
            print(i)
            if i == 1:
                break
        return x

    check_breaks(fn, pos(2), graphs=2, breaks=2)


def test_data_dependent_break_in_loop():
    def fn(x):
        for _ in range(3):
            if x.sum() > 0:
                x = x - 1
            else:
                x = x + 1
        return x

    # sums: 2.4 > 0, 0.4 > 0, -1.6 < 0. Graphs: the entry's test, the then-branch resume (one
    # variant for two and one iterations left: the range's item is symbolic), the else-branch
    # resume with none left
    x = lambda: (torch.full((2,), 1.2) + torch.rand(2) * 0.01,)  # noqa: E731
    check_breaks(fn, x, graphs=3, breaks=2)


def test_nested_loops_with_break():
    def fn(x):
        for i in range(2):
            for j in range(2):
                x = x + i * j
                bytegraph.graph_break()
        return x

    # the entry graph, then one resume graph per (i, j) left (the last resume only returns)
    check_breaks(fn, pos(2), graphs=4, breaks=4)


def test_continue_after_break():
    def fn(x):
        out = x
        for i in range(4):
            if i % 2:
                continue
            print("even", i)
            out = out * 2
        return out

    check_breaks(fn, pos(3), graphs=2, breaks=2)


# -- breaks inside branches ------------------------------------------------------------------------


@pytest.mark.parametrize("flag", [True, False])
def test_print_in_constant_branch(flag):
    def fn(x, flag):
        y = x + 1
        if flag:
            print("flag")
            y = y * 2
        else:
            y = y * 3
        return y

    check_breaks(fn, lambda: (torch.randn(3), flag), graphs=2 if flag else 1, breaks=int(flag))


def test_break_in_data_dependent_branch():
    def fn(x):
        y = x.sin()
        if y.sum() > 0:
            print("positive")
            y = y + 1
        return y * 2

    # entry, the then-resume stops at print at once (no graph), after print, and the else-resume
    check_breaks(fn, None, calls=[pos(3), neg(3), pos(3)], graphs=3, breaks=2)


def test_ternary_with_data_dependent_condition():
    def fn(x):
        return x * 2 if x.sum() > 0 else x * 3

    check_breaks(fn, None, calls=[pos(3), neg(3)], graphs=3, breaks=1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_not_of_tensor_condition(sign):
    def fn(x):
        y = x + 1
        flag = not y.any()
        if not (y > 0).all():
            return y * 2, flag
        return y * 3, flag

    # entry (y, y.any()) breaks at the first ``not``; its resume ((y > 0).all()) at the jump; the
    # branch taken is one more graph
    check_breaks(fn, lambda: (torch.ones(3) * sign,), graphs=3, breaks=2)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_tensor_condition_with_boolean_operators(sign):
    def fn(x, n):
        y = x * 2
        if n > 1 and y.sum() > 0 or n < 0:
            y = y + 1
        z = y.sum() > 1 and n
        return y, z

    # the ``if`` breaks at the tensor test; after it, ``y.sum() > 1 and n`` breaks again (``and``
    # keeps the tensor's truth for its jump); what is left after that has no tensor operation
    check_breaks(fn, lambda: (torch.ones(3) * sign, 2), graphs=2, breaks=2)
