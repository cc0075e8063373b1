"""A graph break in the middle of a list, set or dict display with an unpacked part (``[*xs,
t.tolist(), y]``): the resume function takes the container under construction as an argument and
adds the rest to it. Those additions change that very object (the result): they were lost
(``[x, *xs]`` returned without the items after the break)."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def list_display(x, items, d):
    return [x, *items, (x + 1).tolist(), x + 1]


def set_display(x, items, d):
    return {*items, len((x + 1).tolist()), 7}, x * 2


def set_display_unpacked_after(x, items, d):
    return {len((x + 1).tolist()), *items, "a", *d}, x * 2


def dict_display(x, items, d):
    return {**d, "a": (x + 1).tolist(), "b": x * 2}


def list_display_in_call(x, items, d):
    return torch.cat([x, *[x * i for i in items], torch.tensor([len((x + 1).tolist())])])


@pytest.mark.parametrize(
    ("fn", "graphs"),
    [
        (list_display, 2),
        (set_display, 3),
        (set_display_unpacked_after, 3),
        (dict_display, 2),
        (list_display_in_call, 3),
    ],
    ids=lambda case: getattr(case, "__name__", ""),
)
def test_break_inside_a_display_keeps_what_follows(fn, graphs):
    def make_args():
        return torch.randn(2), [1, 2], {"z": 0}

    # 3 graphs: the resume function of the set and the call takes ``(x + 1).tolist()``'s floats
    # as an argument, guarded by value: the second call's new values recompile it
    check_breaks(fn, make_args, graphs=graphs, breaks=1)
    assert_no_more_breaks(1, fn, *make_args())
