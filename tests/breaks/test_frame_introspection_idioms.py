"""A corpus of frame-introspection idioms used beside tensor ops, each compared with eager CPython
and with torch.compile: a frame's ``f_locals``, ``f_lineno``, ``f_code.co_name`` and
``f_globals['__name__']``, reached through ``inspect.stack()``, ``inspect.currentframe()`` or
``sys._getframe()``, the compiled function's own frame or, from a helper, its caller's. Over two
calls each gives eager's values (the real line numbers, the locals bound before the read) without
running in Python, and breaks no more than torch.compile (``dynamo_baseline.dynamo_run``), or, where
torch.compile gives no baseline (it raises where eager does not), no more than the test says.
A frame's ``f_locals`` is copied where it is read: from 3.13 (PEP 667) it is a live view of the
frame, which the snapshot a compiled frame gives is not."""

from __future__ import annotations

import inspect
import sys
import warnings

import pytest
import torch
from difftest import as_eager_twice
from dynamo_baseline import assert_no_more_breaks


def _caller_locals_by_getframe():
    return dict(sys._getframe(1).f_locals)


def _caller_locals_by_f_back():
    return dict(inspect.currentframe().f_back.f_locals)


def _caller_function():
    return inspect.stack()[1].function


def _caller_line():
    return inspect.stack()[1].frame.f_lineno


def _caller_module():
    return inspect.stack()[1].frame.f_globals["__name__"]


def stack_f_locals(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = dict(inspect.stack()[0].frame.f_locals)
    return y * 2, sorted(found), found["a"], found["y"]


def stack_f_lineno(x):
    y = x + 1
    line = inspect.stack()[0].frame.f_lineno
    return y * 2, line


def stack_f_lineno_across_a_break(x):
    frame = inspect.stack()[0].frame
    first = frame.f_lineno
    y = x + 1
    second = frame.f_lineno
    print("break")
    return y * 2, first, second, frame.f_lineno


def stack_co_name(x):
    y = x + 1
    return y * 2, inspect.stack()[0].frame.f_code.co_name


def stack_module_name(x):
    y = x + 1
    return y * 2, inspect.stack()[0].frame.f_globals["__name__"]


def currentframe_f_locals(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = dict(inspect.currentframe().f_locals)
    return y * 2, sorted(found), found["a"]


def currentframe_f_lineno(x):
    y = x + 1
    return y * 2, inspect.currentframe().f_lineno


def currentframe_module_name(x):
    y = x + 1
    return y * 2, inspect.currentframe().f_globals["__name__"]


def getframe_f_locals(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = dict(sys._getframe().f_locals)
    return y * 2, sorted(found), found["a"]


def getframe_f_lineno(x):
    y = x + 1
    return y * 2, sys._getframe(0).f_lineno


def getframe_co_name(x):
    y = x + 1
    return y * 2, sys._getframe().f_code.co_name


def callers_locals_by_getframe(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = _caller_locals_by_getframe()
    return y * 2, sorted(found), found["a"]


def callers_locals_by_f_back(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = _caller_locals_by_f_back()
    return y * 2, sorted(found), found["a"]


def callers_function(x):
    y = x + 1
    return y * 2, _caller_function()


def callers_line(x):
    y = x + 1
    return y * 2, _caller_line()


def callers_module_name(x):
    y = x + 1
    return y * 2, _caller_module()


def _recursive_lines(x, n):
    if n == 0:
        return x + 1, inspect.stack()[1].frame.f_lineno, inspect.stack()[0].frame.f_lineno
    return _recursive_lines(x * 2, n - 1)


def recursive_callers_line(x):
    return _recursive_lines(x, 1)


#: (idiom, bytegraph's breaks, torch.compile gives a baseline). Without a baseline, torch.compile
#: raises KeyError: the frame it gives holds no local ``a``.
IDIOMS = [
    (stack_f_locals, 2, False),  # the stack read, then f_locals read by CPython
    (stack_f_lineno, 1, True),
    (stack_f_lineno_across_a_break, 2, True),
    (stack_co_name, 1, True),
    (stack_module_name, 1, True),
    (currentframe_f_locals, 1, False),
    (currentframe_f_lineno, 0, True),
    (currentframe_module_name, 0, True),
    (getframe_f_locals, 1, False),
    (getframe_f_lineno, 0, True),
    (getframe_co_name, 0, True),
    (callers_function, 1, True),
    (callers_line, 1, True),
    (callers_module_name, 1, True),
    (recursive_callers_line, 2, True),
]


def _torch_compile_raises(fn, *args):
    import torch._dynamo

    torch._dynamo.reset()
    try:
        with warnings.catch_warnings(), pytest.raises(KeyError):
            warnings.simplefilter("ignore")
            torch.compile(fn, backend="eager")(*args)
    finally:
        torch._dynamo.reset()


@pytest.mark.parametrize(
    ("fn", "breaks", "baseline"), [pytest.param(*idiom, id=idiom[0].__name__) for idiom in IDIOMS]
)
def test_an_idiom_gives_eagers_values_breaking_no_more_than_torch_compile(
    fn, breaks, baseline, capsys
):
    """Each value eager gives, no fallback, the breaks listed (a frame read at run time by CPython
    is one break: the stack call, or the ``f_locals`` read; a frame given to the trace after it
    is read there: its code, its line where the trace continues it, its module's globals), no
    more than torch.compile's."""
    report = as_eager_twice(fn)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == breaks, report.break_reasons
    if baseline:
        assert_no_more_breaks(breaks, fn, torch.ones(3))
    else:
        _torch_compile_raises(fn, torch.ones(3))


@pytest.mark.parametrize("fn", [callers_locals_by_getframe, callers_locals_by_f_back])
def test_a_helper_reading_its_callers_locals_runs_the_call_in_python(fn):
    """A helper reading its caller's ``f_locals``: the compiled function's own frame, which the
    rewritten code cannot give with every local the user's frame has, so the call runs in Python
    (a fallback), with eager's values (torch.compile raises KeyError)."""
    report = as_eager_twice(fn)
    assert [r.kind for r in report.break_reasons if r.fell_back] == ["reconstruct"]
    _torch_compile_raises(fn, torch.ones(3))


def _caller_locals_by_stack():
    return dict(inspect.stack()[1].frame.f_locals)


def _frames_a(frame):
    return frame.f_locals["a"]


def callers_locals_by_stack(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = _caller_locals_by_stack()
    return y * 2, sorted(found), found["a"]


def callers_locals_of_a_frame_taking_its_own(x):
    a = 3  # noqa: F841 (read through the frame)
    here = inspect.currentframe()  # noqa: F841 (read through the frame)
    y = x + 1
    found = _caller_locals_by_stack()
    return y * 2, sorted(found), found["a"]


def callers_locals_changed_after_a_break(x):
    a = 3
    inspect.stack()
    a = 4  # noqa: F841 (read through the frame)
    y = x + 1
    found = _caller_locals_by_stack()
    return y * 2, sorted(found), found["a"]


def a_frame_given_to_a_helper_after_a_change(x):
    a = 3
    frame = inspect.stack()[0].frame
    a = 4  # noqa: F841 (read through the frame)
    y = x + 1
    return y * 2, _frames_a(frame)


def callers_locals_at_a_break(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    print("break")
    found = _caller_locals_by_stack()
    return y * 2, sorted(found), found["a"]


def _fallbacks(report):
    return [(r.function, r.kind) for r in report.break_reasons if r.fell_back]


@pytest.mark.parametrize(
    ("fn", "fallback"),
    [
        (callers_locals_by_stack, "callers_locals_by_stack"),
        (callers_locals_of_a_frame_taking_its_own, "callers_locals_of_a_frame_taking_its_own"),
        (callers_locals_changed_after_a_break, "__resume_at_"),
        (a_frame_given_to_a_helper_after_a_change, "__resume_at_"),
    ],
)
def test_a_callee_reading_its_callers_locals_runs_the_call_in_python(fn, fallback, capsys):
    """A helper reading ``f_locals`` of its caller's frame, reached by ``inspect.stack()`` or
    given to it: the generated frames running the caller hold the locals they were called with,
    not a constant, a value the trace changed since, so the call that breaks in the helper runs
    in Python (one fallback: the compiled function's, or the resume function's that calls the
    helper), with eager's values (torch.compile raises KeyError on the first)."""
    report = as_eager_twice(fn)
    found = _fallbacks(report)
    assert len(found) == 1 and found[0][0].startswith(fallback), report.break_reasons
    assert found[0][1] == "frame"


@pytest.mark.xfail(
    strict=True,
    reason="a local dead after an earlier break (a constant, an argument) is not passed to the "
    "resume function, so no frame holds it when a helper reads its caller's f_locals later; "
    "running the resume function in Python cannot bring it back",
)
def test_callers_locals_read_after_an_earlier_break(capsys):
    as_eager_twice(callers_locals_at_a_break)


def locals_of_the_stack_in_a_comprehension(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = [sorted(info.frame.f_locals) for info in inspect.stack()[:1]]
    return y * 2, found


def locals_of_the_stack_read_later(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    stack = inspect.stack()
    z = y * 2
    return z, [sorted(info.frame.f_locals) for info in stack[:1]]


#: 3.11: a comprehension is a function of its own, a callee reading a frame's locals
_COMPREHENSION_CALLS = sys.version_info < (3, 12)


@pytest.mark.parametrize(
    ("fn", "breaks", "fallbacks"),
    [
        (locals_of_the_stack_in_a_comprehension, 2, 1),
        (locals_of_the_stack_read_later, 2, 0),
    ],
)
def test_a_frame_from_the_stack_keeps_every_local(fn, breaks, fallbacks):
    """``inspect.stack()`` gives the function its own frame, read later elsewhere than in its
    own code (in a comprehension): every local bound is live at its breaks, those no longer
    used after it too (eager's names). The stack call breaks, and the ``f_locals`` read."""
    report = as_eager_twice(fn)
    assert len(_fallbacks(report)) == (fallbacks if _COMPREHENSION_CALLS else 0), report
    assert report.graph_break_count == breaks, report.break_reasons


def frame_locals_read_after_it_is_taken(x):
    a = 3  # noqa: F841 (read through the frame)
    y = x + 1
    found = inspect.currentframe().f_locals
    return y * 2, sorted(found)


@pytest.mark.xfail(
    sys.version_info >= (3, 13),
    strict=True,
    reason="from 3.13 (PEP 667) f_locals is a live view of the frame, which shows 'found' once "
    "it is bound; the compiled frame's f_locals is a copy made when it is read",
)
def test_frame_locals_is_a_view_from_3_13():
    """Eager's names over two calls; the ``f_locals`` read breaks."""
    report = as_eager_twice(frame_locals_read_after_it_is_taken)
    assert not _fallbacks(report), report.break_reasons
    assert report.graph_break_count == 1, report.break_reasons
