"""A value the code after a break drops unread (the result of a call made for its effect) is not
passed to the resume function, which starts after the ``POP_TOP`` that drops it: its guards do not
check it, so calls whose dropped results differ run the same compiled entries. And a break at a
method call calls the method as the original code does (a method load: no bound method made),
whatever the instance holds under that name."""

from __future__ import annotations

import dis
import inspect
import io
import warnings

import torch
from difftest import assert_same, check_breaks, compile_counted

import bytegraph


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


def test_the_resume_function_takes_no_dropped_value():
    compiled, _ = compile_counted(seek_to_end)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(torch.randn(3), io.StringIO("abc"))
    (resume,) = bytegraph.state_of(compiled).resumes.values()
    assert list(inspect.signature(resume).parameters) == ["y"]


def writes_through(x, buf):
    y = x + 1
    buf.write("text")  # a break at a C method of the argument, its result dropped
    return y * 2


class _Shadowed(io.StringIO):
    """A buffer whose instance attribute ``write`` (set by the test) shadows the class's method."""


def _method_load(fn) -> bool:
    """Whether ``fn``'s code reads ``write`` as a method (LOAD_METHOD, 3.12's flagged LOAD_ATTR)."""
    for instr in dis.get_instructions(fn):
        if instr.argval == "write" and instr.opname in ("LOAD_METHOD", "LOAD_ATTR"):
            return instr.opname == "LOAD_METHOD" or "NULL|self" in instr.argrepr
    raise AssertionError("no read of write")


def test_a_break_at_a_method_call_loads_it_as_a_method():
    compiled, _, _ = check_breaks(
        writes_through, lambda: (torch.randn(3), io.StringIO()), graphs=2, breaks=1
    )
    assert _method_load(bytegraph.cache_entries(compiled)[0].fn)


def test_an_instance_attribute_shadowing_the_method_is_called():
    def make():
        buf = _Shadowed()
        buf.seen = []
        buf.write = buf.seen.append
        return torch.randn(3), buf

    compiled, counter = compile_counted(writes_through)
    for _ in range(2):
        x, buf = make()
        _, expected_buf = make()
        assert_same(compiled(x, buf), writes_through(x, expected_buf))
        assert buf.seen == expected_buf.seen == ["text"]
        assert buf.getvalue() == expected_buf.getvalue() == ""
