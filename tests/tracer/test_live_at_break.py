"""Issue 24: a value made or reached in the trace that is live at a graph break is rebuilt there, so
the call still compiles graphs on both sides of the break (before: it ran in Python, 0 graphs).
Each kind's counts are compared with torch.compile's."""

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def _slice_live(x):
    y = x + 1
    s = slice(0, 2)
    print("break")  # the slice is live here: a resume-function argument
    return y[s] * 2


def test_a_slice_live_at_a_break():
    # 3.11: a slice is unhashable, and its guard's key hashed it (an internal error: run in Python)
    check_breaks(_slice_live, lambda: (torch.randn(3),), graphs=2, breaks=1)
    assert_no_more_breaks(1, _slice_live, torch.randn(3))


def _slice_argument(x, s):
    return x[s] * 2


def test_a_slice_argument():
    check_breaks(_slice_argument, lambda: (torch.randn(4), slice(1, 3)), graphs=1, breaks=0)
