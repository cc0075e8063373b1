"""A value the code after a break drops unread (the result of a call made for its effect) is
passed to the resume function as None: the resume function's guards do not check it, so calls
whose dropped results differ run the same compiled entries."""

from __future__ import annotations

import io
import warnings

import torch
from difftest import assert_same, compile_counted


def seek_to_end(x, buf):
    y = x + 1
    buf.seek(0, 2)  # a break; it returns the end offset, which the code drops
    return y * 2


def seek_in_a_callee(buf):
    buf.seek(0, 2)  # a break inside a callee
    return buf.tell()


def calls_a_seeking_helper(x, buf):
    y = x + 1
    seek_in_a_callee(buf)  # the callee's result, dropped by the caller
    return y * 2


def keeps_the_offset(x, buf):
    y = x + 1
    n = buf.seek(0, 2)  # read afterwards: not dead
    return y * n


def _frame_counts(fn, texts):
    """Graphs compiled so far after each call; between calls the buffer grows by ``text``, so
    the offset ``seek`` returns differs at each call."""
    compiled, counter = compile_counted(fn)
    x, buf, expected_buf = torch.randn(3), io.StringIO(), io.StringIO()
    counts = []
    for text in texts:
        buf.write(text)
        expected_buf.write(text)
        buf.seek(0)
        expected_buf.seek(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(x, buf)
        assert_same(got, fn(x, expected_buf))
        assert buf.tell() == expected_buf.tell() == len(buf.getvalue())
        counts.append(counter.frame_count)
    return counts


TEXTS = ["a", "bb", "ccc", "dddd"]


def test_dropped_result_of_a_break_is_not_guarded():
    counts = _frame_counts(seek_to_end, TEXTS)
    assert counts[0] > 0 and counts[-1] == counts[0]


def test_dropped_result_of_a_callee_with_a_break_is_not_guarded():
    counts = _frame_counts(calls_a_seeking_helper, TEXTS)
    assert counts[0] > 0 and counts[-1] == counts[0]


def test_a_result_read_later_is_still_guarded():
    counts = _frame_counts(keeps_the_offset, TEXTS)
    assert counts[-1] > counts[0]  # each new offset is a new constant for the resume function
