"""A C function or C method whose call is a graph break is not guarded (its type, ``__name__``,
``__self__``): the call runs in Python on whatever its source holds then. Where the trace read the
callable for something else, its guards stay."""

from __future__ import annotations

import contextlib
import io
import sys
import types
import warnings

import torch
from difftest import assert_same, compile_counted

import bytegraph


def writes(x):
    y = x + 1
    sys.stdout.write("w")
    return y * 2


def _quiet_call(compiled, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compiled(*args)


def test_no_guard_on_the_method_a_break_calls():
    compiled, _ = compile_counted(writes)
    x = torch.randn(3)
    with contextlib.redirect_stdout(io.StringIO()):
        _quiet_call(compiled, x)
    guards = bytegraph.cache_entries(compiled)[0].guards.source
    assert "stdout" in guards  # ``sys.stdout`` itself is still read through its tracker
    assert ".write" not in guards


def test_the_call_reads_the_callable_at_each_call():
    compiled, counter = compile_counted(writes)
    x = torch.randn(3)
    first, second = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(first):
        assert_same(_quiet_call(compiled, x), writes(x))
    frames = counter.frame_count
    with contextlib.redirect_stdout(second):
        assert_same(_quiet_call(compiled, x), (x + 1) * 2)
    assert first.getvalue() == "ww" and second.getvalue() == "w"
    assert counter.frame_count == frames  # the same entries: nothing about ``write`` is checked

    class Stream:  # a Python ``write`` now: still called, in Python
        def __init__(self):
            self.parts = []

        def write(self, text):
            self.parts.append(text)
            return len(text)

    stream = Stream()
    with contextlib.redirect_stdout(stream):
        assert_same(_quiet_call(compiled, x), (x + 1) * 2)
    assert stream.parts == ["w"]


def type_read_from_a_local(x, buf):
    w = buf.write
    k = 2 if isinstance(w, types.BuiltinMethodType) else 3
    w("")
    return x * k


def type_read_again(x, buf):
    k = 2 if isinstance(buf.write, types.BuiltinMethodType) else 3
    buf.write("")
    return x * k


def test_a_callable_read_before_its_call_keeps_its_guards():
    for fn in (type_read_from_a_local, type_read_again):

        class Buffer(io.StringIO):
            pass

        compiled, _ = compile_counted(fn)
        x, buf = torch.randn(3), Buffer()
        assert_same(_quiet_call(compiled, x, buf), fn(x, buf))
        Buffer.write = lambda self, text: len(text)  # ``buf.write`` is a Python method now
        assert_same(_quiet_call(compiled, x, buf), fn(x, buf))


def decides_on_the_type_of_stdout(x):
    k = 2 if isinstance(sys.stdout, io.StringIO) else 3
    sys.stdout.write("")
    return x * k


def test_the_type_of_the_object_a_break_calls_a_method_of_stays_guarded():
    """The trace folded ``isinstance(sys.stdout, ...)`` with only ``sys.stdout``'s type guard
    behind it (no other source reads through it, no frame holds it): that guard is not one of
    those that only say which method the break calls, and a stream of another type recompiles."""

    class Stream:
        def write(self, text):
            return len(text)

    compiled, _ = compile_counted(decides_on_the_type_of_stdout)
    x = torch.randn(3)
    for stream in (io.StringIO(), Stream(), io.StringIO()):
        with contextlib.redirect_stdout(stream):
            expected = decides_on_the_type_of_stdout(x)
            assert_same(_quiet_call(compiled, x), expected)
