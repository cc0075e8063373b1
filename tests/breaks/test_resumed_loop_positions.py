"""A loop over ``enumerate`` whose body breaks at every iteration and reads another list at the
loop's index (``grads[i]``: how torch.optim's single-tensor steps walk their parameters). The
resume function takes the real ``enumerate`` and reads its count as a number; the break then
advances that enumerate (the items the trace took) before it builds the next resume call's
arguments. An argument read at that count (``grads[count]``) was read after the advance, one
item too far: each parameter got the next one's gradient (silently where the list is longer,
an ``IndexError`` or a shape error otherwise). Each case is compared with eager over calls with
new lists, and must not recompile once every iteration count was seen."""

from __future__ import annotations

import sys

import pytest
import torch

import bytegraph
from tests.difftest import assert_same, assert_state_same, compile_counted


def _index_other(params, grads):
    for i, param in enumerate(params):
        grad = grads[i]
        sys.stdout.write("")
        param.add_(grad)
    return params


def _index_other_after_break(params, grads):
    for i, param in enumerate(params):
        sys.stdout.write("")
        param.add_(grads[i])
    return params


def _item_and_power(params, grads, steps):  # Adafactor's single-tensor step, in short
    for i, param in enumerate(params):
        grad = grads[i]
        f = steps[i].item()
        param.add_(grad * f**-0.8)
    return params


def _enumerate_from_one(params, grads):
    for i, param in enumerate(params, 1):
        grad = grads[i - 1]
        sys.stdout.write("")
        param.mul_(grad)
    return params


def _enumerate_zip(params, grads, scales):
    for i, (param, grad) in enumerate(zip(params, grads)):  # noqa: B905 (grads is longer)
        scale = scales[i]
        sys.stdout.write("")
        param.add_(grad * scale)
    return params


def _lists(n, extra=1, shapes=None):
    """``n`` parameters, and ``n + extra`` of each other list: a read one item too far finds an
    item, so only the values tell it. Distinct values per position."""
    shapes = shapes or [(2,)] * (n + extra)
    params = [torch.zeros(shapes[k]) for k in range(n)]
    grads = [torch.full(shapes[k], float(10**k)) for k in range(n + extra)]
    return params, grads


CASES = {
    "index_other": (_index_other, lambda: _lists(4)),
    "index_other_mixed_shapes": (
        _index_other,
        lambda: _lists(4, 0, [(3, 4), (3,), (2, 3), (2,)]),
    ),
    "index_other_after_break": (_index_other_after_break, lambda: _lists(4)),
    "item_and_power": (
        _item_and_power,
        lambda: (*_lists(4), [torch.tensor(float(k + 2)) for k in range(5)]),
    ),
    "enumerate_from_one": (_enumerate_from_one, lambda: _lists(4)),
    "enumerate_zip": (_enumerate_zip, lambda: (*_lists(4), [0.5 * k for k in range(5)])),
}


@pytest.mark.parametrize("name", CASES)
def test_a_list_read_at_the_loops_index_after_a_break_is_eagers(name):
    fn, make = CASES[name]
    compiled, counter = compile_counted(fn)
    frames = []
    for _ in range(4):
        args, eager_args = make(), make()
        actual = compiled(*args)
        expected = fn(*eager_args)
        assert_same(actual, expected)
        assert_state_same(list(args), list(eager_args))
        frames.append(counter.frame_count)
    assert frames[-1] == frames[1], f"recompiled on identical calls: {frames}"


def test_the_loop_runs_compiled():
    """Not a fallback: graphs run, and the break is the write of each iteration."""
    report = bytegraph.explain(_index_other)(*_lists(4))
    assert report.graph_count >= 1 and report.graph_break_count >= 1
    assert not any(r.fell_back for r in report.break_reasons), report.break_reasons
