"""``sys._getframe(n)`` and ``inspect.currentframe()`` in traced code: a frame the trace runs (the
compiled function, a callee it inlines) gives its code, name, file, globals and current line as
constants, with no break, and so do the frames of ``nn.Module.__call__`` above a module's
``forward``; what the trace cannot decide (``f_locals``, a frame above the compiled function, a
frame CPython runs elsewhere: a callback, a generator) breaks and reads the real frame. Each case
is compared with eager CPython, values and breaks, and its break count with torch.compile's.
``torch._dynamo.graph_break()`` is a graph break, as ``bytegraph.graph_break()`` is."""

from __future__ import annotations

import inspect
import sys
import warnings

import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

from bytegraph.explain import Recorder


def _x():
    return (torch.randn(3),)


def _caller_line(t):
    return t + 1, sys._getframe(1).f_lineno


def _caller_code(t):
    caller = sys._getframe(1)
    return t + 1, caller.f_code.co_name, caller.f_code.co_filename, caller.f_globals["__name__"]


def _two_up(t):
    return t * 2, sys._getframe(1).f_back.f_code.co_name, sys._getframe(2).f_lineno


def _middle(t):
    return _two_up(t)


def _inspected(t):
    return t + 1, inspect.currentframe().f_back.f_lineno


def _above_the_compiled_function(t):
    return t + 1, sys._getframe(2).f_code.co_name


def _caller_locals(t):
    return t + 1, sorted(sys._getframe(1).f_locals)


def caller_line(x):
    y = x + 1
    t, line = _caller_line(y)
    return t * 2, line


def caller_line_after_a_break(x):
    y = x + 1
    print("between")
    t, line = _caller_line(y)
    return t * 2, line


def caller_code(x):
    return _caller_code(x - 1)


def frame_of_the_function_itself(x):
    here = sys._getframe(0)
    first = here.f_lineno
    y = x + 1
    same = here is sys._getframe() and here.f_code is frame_of_the_function_itself.__code__
    return y, first, here.f_lineno, same


def two_frames_up(x):
    return _middle(x + 1)


def inspect_currentframe(x):
    return _inspected(x * 3)


def above_the_compiled_function(x):
    return _above_the_compiled_function(x)


def caller_locals(x):
    y = x + 1
    return _caller_locals(y)


def test_caller_line_is_the_call_site():
    check_breaks(caller_line, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, caller_line, torch.ones(3))


def test_caller_line_in_a_resume_function():
    check_breaks(caller_line_after_a_break, _x, graphs=2, breaks=1)
    assert_no_more_breaks(1, caller_line_after_a_break, torch.ones(3))


def test_caller_code_name_file_and_module():
    check_breaks(caller_code, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, caller_code, torch.ones(3))


def test_the_running_frame_moves_on():
    """``sys._getframe(0)`` is the one running frame, its code the function's: its line is where
    it runs when read."""
    check_breaks(frame_of_the_function_itself, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, frame_of_the_function_itself, torch.ones(3))


def _runs_in_python(fn):
    """``fn`` compiled gives eager's values and runs in Python: a frame of the trace is live
    where the trace cannot go on (the real frame the user's code reads there is not one that
    rewritten code can give)."""
    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):
        expected = fn(torch.ones(3))
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("ignore")  # the fallback's notice
            actual = compiled(torch.ones(3))
        assert_same(actual, expected)
    reasons = [r for r in recorder.report().break_reasons if r.fell_back]
    assert reasons and "FrameVariable" in str(reasons[0]), recorder.report().break_reasons


def test_frames_of_inlined_callers():
    check_breaks(two_frames_up, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, two_frames_up, torch.ones(3))


def test_inspect_currentframe():
    check_breaks(inspect_currentframe, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, inspect_currentframe, torch.ones(3))


def test_a_frame_above_the_compiled_function_is_read_at_run_time():
    """The frame above the compiled function is its caller's, which the trace cannot know: reading
    it breaks once, and the rewritten code gives the resume function the user's frame (not the
    entry function's), whose code the trace then reads, guarded."""
    _, _, report = check_breaks(above_the_compiled_function, _x, graphs=1, breaks=1)
    assert "above the compiled function" in str(report.break_reasons[0])
    assert_no_more_breaks(1, above_the_compiled_function, torch.ones(3))


def test_f_locals_is_read_in_python():
    _runs_in_python(caller_locals)


class _Named(nn.Module):
    def forward(self, x):
        return x + 1, sys._getframe(1).f_code.co_name


_named = _Named()


def module_forward(x):
    return _named(x * 2)


def test_the_frames_of_a_module_call_above_forward():
    """CPython runs ``forward`` from ``Module._call_impl``, a frame the trace does not run: its
    code and line are known (``frames.hidden_callers``), so ``sys._getframe(1)`` in ``forward``
    names it without a break."""
    check_breaks(module_forward, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, module_forward, torch.ones(3))


def test_a_callback_of_a_builtin():
    """``sorted`` (C) calls ``key``: the frame above it is the caller of ``sorted``, also where
    the trace runs ``key`` through a polyfill."""

    def fn(x):
        names = sorted(["b", "a"], key=lambda k: k + sys._getframe(1).f_code.co_name)
        return x + 1, names

    check_breaks(fn, _x, graphs=1, breaks=1)


def test_a_generator_reads_the_frame_when_it_runs():
    """A generator runs when its items are taken: the line of a frame it reads is where its
    frame is then, not where the generator was made."""

    def fn(x):
        here = sys._getframe(0)
        lines = (here.f_lineno for _ in range(2))
        y = x + 1
        return y, list(lines)

    compiled, _ = compile_counted(fn)
    for _ in range(2):
        assert_same(compiled(torch.ones(3)), fn(torch.ones(3)))


def _warn_for_caller(t):
    """A library's warning helper: names its caller's module and line in the message."""
    caller = sys._getframe(1)
    message = f"{caller.f_globals['__name__']}:{caller.f_lineno}: deprecated"
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    return t * 2


def warning_helper(x):
    y = x + 1
    return _warn_for_caller(y) - 1


def _recorded(fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(x)
    return result, [(w.category, w.filename, w.lineno, str(w.message)) for w in caught]


def test_a_warning_helper_reading_its_caller():
    """The frame is traced, and so is ``warnings.warn(stacklevel=2)``: the compiled call gives
    the warning after its graph, naming the user's line as eager's does."""
    compiled, counter = compile_counted(warning_helper)
    recorder = Recorder()
    for _ in range(2):
        expected = _recorded(warning_helper, torch.ones(3))
        with recorder:
            result, caught = _recorded(compiled, torch.ones(3))
        assert_same(result, expected[0])
        assert caught == expected[1], (caught, expected[1])
    assert (counter.frame_count, recorder.report().graph_break_count) == (1, 0)
    assert_no_more_breaks(0, warning_helper, torch.ones(3))


def explicit_dynamo_graph_break(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 2


def test_torch_dynamo_graph_break_breaks():
    check_breaks(explicit_dynamo_graph_break, _x, graphs=2, breaks=1)
    assert_no_more_breaks(1, explicit_dynamo_graph_break, torch.ones(3))
