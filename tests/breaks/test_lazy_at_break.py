"""Lazy values live at a graph break taken a few calls below the frame that consumes them: a
``map``/``filter``/``zip``/``enumerate`` whose items call a function that breaks two or three
calls deep (``q, k, v = map(lambda t: self.rot(t), qkv)``), and a generator made in a callee and
being consumed there. Each is rebuilt (as the real object over its rebuilt sources, or made again
by the instruction that made it), so what comes before keeps its graph instead of the whole call
running in Python. Results, printed output and break counts are compared with eager and with
torch.compile."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_counts_in_a_fresh_process
from torch import nn


def _leaf(t):
    print("leaf")  # the break, three calls below the consumer
    return t * 2


def _mid(t):
    return _leaf(t + 1)


def _f(t):
    return _mid(t) - 1


class _Rotary(nn.Module):
    def forward(self, t):
        return _mid(t) * 3


class _Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.rot = _Rotary()
        self.proj = nn.Linear(6, 18)

    def forward(self, x):
        qkv = self.proj(x).reshape(4, 3, 6).permute(1, 0, 2)
        q, k, v = map(lambda t: self.rot(t), qkv)  # a closure over self, consumed by the unpack
        return q @ k.transpose(-1, -2) @ v


def test_map_of_a_closure_in_a_module_consumed_by_an_unpack():
    torch.manual_seed(0)
    attention = _Attention()

    def fn(x):
        return attention(x)

    check_breaks(fn, lambda: (torch.randn(4, 6),), graphs=2, breaks=1)
    assert_no_more_breaks(1, fn, torch.randn(4, 6))


def _unpack_in_callee(xs):
    a, b, c = map(_f, xs)
    return a + b + c


def _map_two_calls_below(x):
    y = x.sin()
    return _unpack_in_callee(y.chunk(3)) + y.sum()


def test_map_consumed_in_a_callee():
    check_breaks(_map_two_calls_below, lambda: (torch.randn(6),), graphs=3, breaks=1)
    assert_no_more_breaks(1, _map_two_calls_below, torch.randn(6))


def _filtered_and_zipped(x):
    parts = x.cos().chunk(3)
    kept = filter(lambda t: _f(t).sum() is not None, parts)
    a, b, c = zip(kept, map(_f, parts), strict=True)
    return a[0] + b[1] + c[0]


def test_filter_and_zip_over_maps():
    check_breaks(_filtered_and_zipped, lambda: (torch.randn(6),), graphs=2, breaks=1)
    assert_no_more_breaks(1, _filtered_and_zipped, torch.randn(6))


LOG: list = []


def _sum_of_generator(xs):
    LOG.append("before")  # an effect before the generator is made: kept once
    total = sum(_f(t) for t in xs)  # the generator is made and consumed here; _leaf breaks
    LOG.append("after")
    return total


def _generator_in_a_callee(x):
    y = x.sin() * 2
    return _sum_of_generator(y.chunk(2)) + y.sum()


@pytest.fixture(scope="module")
def dynamo_generator_counts() -> dict:
    """torch.compile's ``(graphs, breaks)`` for the generator cases, from one fresh interpreter:
    late in a long session Dynamo's walk of a generator's globals can raise RecursionError
    (``dynamo_counts_in_a_fresh_process``), which says nothing of what torch.compile does."""
    fns = [_generator_in_a_callee, _user_generator_in_a_callee]
    counts = dynamo_counts_in_a_fresh_process([(fn, torch.randn(6)) for fn in fns])
    return dict(zip(fns, counts, strict=True))


def test_generator_made_and_consumed_in_a_callee(dynamo_generator_counts):
    """The callee's frame is rolled back to where it made the generator (not the whole call
    run in Python): the graph before the call stays, each effect happens once."""

    def setup():
        LOG.clear()

    check_breaks(
        _generator_in_a_callee,
        lambda: (torch.randn(6),),
        graphs=2,
        breaks=2,
        setup=setup,
        observe=lambda: list(LOG),
    )
    graphs, dynamo = dynamo_generator_counts[_generator_in_a_callee]
    assert graphs > 0 and 2 <= dynamo, (graphs, dynamo)


def _pairs(xs):
    for t in xs:
        yield _f(t)


def _unpack_user_generator(xs):
    a, b = _pairs(xs)
    return a * b


def _user_generator_in_a_callee(x):
    return _unpack_user_generator(x.cos().chunk(2)) + 1


def test_user_generator_made_in_a_callee(dynamo_generator_counts):
    check_breaks(_user_generator_in_a_callee, lambda: (torch.randn(6),), graphs=3, breaks=2)
    graphs, dynamo = dynamo_generator_counts[_user_generator_in_a_callee]
    assert graphs > 0 and 2 <= dynamo, (graphs, dynamo)
