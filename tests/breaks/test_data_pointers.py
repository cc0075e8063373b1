"""Data pointers read in a compiled function: ``t.data_ptr()``, ``t.untyped_storage()`` and its
``data_ptr()`` (``tracer/variables/tensors.py``, ``DataPtrVariable``). The number is known only
once the graph has run, so its first use breaks there (comparing two pointers, the idiom that asks
whether two tensors share data), and the break's code reads it from the tensor after the graph:
one break per comparison, as torch.compile. Where an operation of the graph after the read may
have moved the tensor's data (``out=``, ``resize_``...), the pointer is not read later: the call
runs in Python, as eager.
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_run
from torch import nn

import bytegraph
from bytegraph.explain import Recorder


def view_shares_data(x):
    a = x.view(2, 2)
    same = a.data_ptr() == x.data_ptr()
    return (a * 2 if same else a), same


def clone_does_not(x):
    c = x.clone()
    return c.data_ptr() == x.data_ptr(), c + 1


def storage_of_a_slice(x):
    y = x[1:]
    same = x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    return (y + 1 if same else y), same, y.data_ptr() - x.data_ptr()


def read_before_a_break(x):
    p = x.data_ptr()
    y = x * 2
    print("between")
    return p == x.data_ptr(), y


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4, bias=False)
        self.dec = nn.Linear(4, 4, bias=False)
        self.dec.weight = self.enc.weight

    def forward(self, x):
        tied = self.enc.weight.data_ptr() == self.dec.weight.data_ptr()
        y = self.enc(x)
        return (self.dec(y) if tied else y), tied


TIED = Tied()


def tied_weights(x):
    return TIED(x)


def one_pointer_read_twice(x):
    p = x.data_ptr()
    y = x.add_(1)  # in place: the data stays where it is
    return [p][0] == y.data_ptr(), p != x.data_ptr(), y


def two_reads_are_two_numbers(x):
    return x.data_ptr() is x.data_ptr(), x + 1


#: each function and the graphs and breaks of its first call
CASES = [
    (view_shares_data, 2, 1),
    (clone_does_not, 2, 1),
    (storage_of_a_slice, 2, 2),
    (tied_weights, 1, 0),
    (one_pointer_read_twice, 1, 0),
    (two_reads_are_two_numbers, 1, 1),
]

OLD_DYNAMO = "torch 2.11's Dynamo fails on a comparison of data pointers (its operator.eq)"


@pytest.mark.parametrize(("fn", "graphs", "breaks"), CASES, ids=[c[0].__name__ for c in CASES])
def test_data_pointers_compared_after_the_graph(fn, graphs, breaks):
    check_breaks(fn, lambda: (torch.randn(4),), graphs=graphs, breaks=breaks, calls=1)
    assert_no_more_breaks(breaks, fn, torch.randn(4), baseline_missing=OLD_DYNAMO)


def test_a_pointer_read_before_a_break():
    """The pointer read before ``print`` reaches the resume function as a number. torch 2.11's
    Dynamo then reads the input's pointer at trace time (one break, a new trace for each new
    tensor); from 2.13 it reads it after the graph, as here, and breaks there too."""
    check_breaks(read_before_a_break, lambda: (torch.randn(4),), graphs=1, breaks=2, calls=1)
    graphs, dynamo, reasons = dynamo_run(read_before_a_break, torch.randn(4))
    if "Data pointer comparison" in reasons:
        assert 2 <= dynamo, reasons


def moved_by_out(x):
    c = torch.empty(0)
    p = c.data_ptr()
    torch.add(x, x, out=c)
    return p == c.data_ptr(), c


def moved_by_resize_as(x):
    c = torch.empty(1)
    p = c.untyped_storage().data_ptr()
    c.resize_as_(torch.empty(4096))
    return p == c.untyped_storage().data_ptr(), c.shape


def offset_by_as_strided(x):
    y = x.clone()
    p = y.data_ptr()
    y.as_strided_((2,), (1,), 1)
    return p == y.data_ptr(), y


@pytest.mark.parametrize("fn", [moved_by_out, moved_by_resize_as, offset_by_as_strided])
def test_a_pointer_the_graph_may_have_moved_is_not_read_after_it(fn):
    compiled = bytegraph.compile(fn)
    recorder = Recorder()
    x = torch.randn(4)
    for _ in range(2):
        with recorder:
            got = compiled(x)
        assert_same(got, fn(x))
    reasons = [str(r) for r in recorder.report().break_reasons]
    assert reasons and all("may have moved" in r for r in reasons), reasons
