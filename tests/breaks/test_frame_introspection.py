"""User code that reads its own frame: ``locals()``, ``vars()`` and ``dir()`` with no argument see
the user's locals (with the values the user's frame has, dead ones too, in CPython's order),
never the names of the generated code that runs them (``__graph_out``, ``__compiled_fn_0``, a
resume function's ``__stack0``): traced, or at a graph break, in the frame that broke, in a
resume function that is compiled or runs in plain Python, or in an inlined callee. Whether two
calls give one dict is CPython's: the same dict up to 3.12, a new one from 3.13 (PEP 667).
Each case is compared with eager CPython."""

from __future__ import annotations

import functools
import logging
import sys
import traceback
import warnings

import pytest
import torch
from bytegraph.codegen.pyversion import LOCALS_SNAPSHOT
from difftest import assert_same, check_breaks, compile_counted

import bytegraph


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def test_locals_traced_lists_the_bound_locals_in_order():
    def fn(x):
        unused = 7  # dead after this line, still a local of the frame
        y = x + 1
        r = locals()
        return y, list(r), r["unused"], r["y"]

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_locals_traced_holds_dead_tensors():
    def fn(x):
        t = x * 2
        y = x + 1
        r = locals()
        return y, sorted(r), r["t"]

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_dir_traced_lists_the_bound_names():
    def fn(x):
        y = x + 1
        if x.shape[0] > 100:
            never = 1  # noqa: F841 (never bound: not listed)
        return y, dir()

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_vars_at_the_break_in_the_frame_that_broke():
    def fn(x):
        unused = 7
        y = x + 1
        v = sorted(vars())  # (the dict itself would hold itself once a later call updates it)
        return y, v, unused

    check_breaks(fn, randn(3), graphs=1, breaks=1)


def test_one_dict_per_frame_as_cpython_gives():
    def fn(x):
        y = x + 1
        same = locals() is locals()
        return y, same

    # up to 3.12 both calls give the frame's one dict: they run at breaks, on the frame kept
    check_breaks(fn, randn(3), graphs=1, breaks=0 if LOCALS_SNAPSHOT else 2)


def test_locals_updated_by_dir_as_cpython_does():
    def fn(x):
        y = x + 1
        keys = list(locals())
        z = y * 2
        names = dir()
        return z, keys, names, sorted(locals())

    # up to 3.12 each call runs at a break (so ``y * 2`` is in a second graph)
    check_breaks(
        fn, randn(3), graphs=1 if LOCALS_SNAPSHOT else 2, breaks=0 if LOCALS_SNAPSHOT else 3
    )


def test_locals_in_a_compiled_resume_function():
    def fn(x):
        a = 1
        y = x + 1
        print("between")
        z = y * 2
        r = locals()
        return z, list(r), r["a"]

    check_breaks(fn, randn(3), graphs=2, breaks=2)


def test_locals_in_a_resume_function_run_in_python():
    def fn(x):
        y = x + 1
        try:
            print("inside try")
            r = locals()
        except ValueError:
            r = None
        return y, list(r)

    check_breaks(fn, randn(3), graphs=1, breaks=1)


def _callee_reading_its_frame(t):
    u = t * 2
    r = locals()
    return u, list(r), r["t"]


def _callee_reading_its_frame_at_a_break(t):
    u = t * 2
    print("in the callee")
    r = locals()
    return u, list(r), r["t"]


def test_locals_in_an_inlined_callee():
    def fn(x):
        y = x + 1
        return _callee_reading_its_frame(y), _callee_reading_its_frame_at_a_break(y)

    check_breaks(fn, randn(3), graphs=1, breaks=2)


def test_locals_lists_cells_and_free_variables():
    scale = 3

    def fn(x):
        c = x + 1

        def inner():
            return c * scale

        r = locals()
        return inner(), list(r), r["scale"], r["c"]

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_locals_of_cells_and_free_variables_in_a_resume_function():
    scale = 3

    def fn(x):
        c = x + 1

        def inner():
            return c * scale

        print("between")
        return inner(), sorted(locals()), locals()["scale"]

    check_breaks(fn, randn(3), graphs=2, breaks=3)


def test_locals_of_a_cell_a_resume_function_takes_as_its_cell():
    def fn(x):
        c = 1

        def get():
            return c

        print("between")
        c = 2
        r = locals()
        return x + get(), list(r), r["c"]

    check_breaks(fn, randn(3), graphs=1, breaks=2)


def test_vars_and_dir_without_an_argument():
    def fn(x):
        y = x + 1
        v = sorted(vars())  # (the dict itself would hold itself once ``dir()`` updates it)
        print("between")
        d = dir()
        return y, v, d

    check_breaks(fn, randn(3), graphs=1, breaks=3)


def test_vars_and_dir_of_an_object_at_a_break():
    class Box:
        def __init__(self):
            self.w = 1

    box = Box()

    def fn(x):
        y = x + 1
        print("between")
        return y, vars(box), [n for n in dir(box) if not n.startswith("__")], sorted(locals())

    check_breaks(fn, randn(3), graphs=1, breaks=2)


def test_a_constant_named_as_a_cell_taken_as_its_cell():
    def fn(x):
        c = 1

        def get():
            return c

        print("between")
        c = 2
        r = {"x": x, "c": c}
        print("again")
        return x + get(), r["c"]

    check_breaks(fn, randn(3), graphs=1, breaks=2)


def _warns_for_its_caller(t):
    warnings.warn("checked by the caller", UserWarning, stacklevel=2)
    return t


def _caller_line(t):
    return t, sys._getframe(1).f_lineno


def _run_warning_recorded(fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(x)
    return result, [(w.filename, w.lineno, str(w.message)) for w in caught]


def test_a_warning_names_the_user_line_through_generated_frames():
    def in_the_frame(x):
        y = x + 1
        _warns_for_its_caller(y)
        return y * 2

    def in_a_resume_function(x):
        y = x + 1
        print("between")
        _warns_for_its_caller(y)
        return y * 2

    for fn in (in_the_frame, in_a_resume_function):
        compiled, _ = compile_counted(fn)
        expected = _run_warning_recorded(fn, torch.ones(3))
        for _ in range(2):
            result, caught = _run_warning_recorded(compiled, torch.ones(3))
            assert_same(result, expected[0])
            assert caught == expected[1], (fn.__name__, caught, expected[1])


def _warns_at(t, level):
    warnings.warn(f"stacklevel {level}", UserWarning, stacklevel=level)
    return t + 1


def _inner(t, level):
    return _warns_at(t, level) * 2


def _middle(t, level):
    return _inner(t, level) * 3


def test_a_warning_counts_callers_waiting_for_a_resumed_callee():
    """The warning breaks in a function three calls deep: its resume function runs first, while
    its callers' frames do not exist yet (their resume functions run after it). ``stacklevel``
    counts them as the user's stack has them, each naming the line of its call."""

    def fn(x, level):
        y = _middle(x, level)
        return y - 1

    for level in (1, 2, 3, 4, 5):
        compiled, _ = compile_counted(fn)
        expected = _run_warning_recorded(functools.partial(fn, level=level), torch.ones(3))
        result, caught = _run_warning_recorded(
            functools.partial(compiled, level=level), torch.ones(3)
        )
        assert_same(result, expected[0])
        assert caught == expected[1], (level, caught, expected[1])


def test_getframe_counts_the_user_frames():
    def fn(x):
        y = x + 1
        t, line = _caller_line(y)
        print("between")
        u, again = _caller_line(t)
        return u * 2, line, again

    # the frames ``sys._getframe`` reads are traced (the frame and the resume function's): only
    # ``print`` breaks
    check_breaks(fn, randn(3), graphs=2, breaks=1)


def _raises_after_a_break(x):
    y = x + 1
    print("between")
    raise ValueError(f"at {y.shape}")


def _logs_after_a_break(x, log):
    y = x + 1
    print("between")
    log.append((sys._getframe(0).f_code.co_name, sys._getframe(0).f_code.co_qualname))
    return y * 2


def test_code_after_a_break_runs_in_frames_named_as_the_users():
    """The code a break resumes runs in generated frames (the rewritten function's, a resume
    function's) whose code carries the user's function's name: a traceback, logging's funcName
    and ``f_code.co_name`` show the name eager shows (they showed ``__resume_at_<n>``)."""
    compiled = bytegraph.compile(_raises_after_a_break, backend="eager")
    for _ in range(2):
        with pytest.raises(ValueError) as caught:
            compiled(torch.ones(2))
        last = traceback.extract_tb(caught.value.__traceback__)[-1]
        assert (last.name, last.lineno) == (
            "_raises_after_a_break",
            _raises_after_a_break.__code__.co_firstlineno + 3,
        )

    expected, seen = [], []
    _logs_after_a_break(torch.ones(2), expected)
    compiled = bytegraph.compile(_logs_after_a_break, backend="eager")
    for _ in range(2):
        compiled(torch.ones(2), seen)
    assert seen == expected * 2

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("bytegraph-test-frames")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def logs(x):
        y = x + 1
        print("between")
        logger.info("after")
        return y

    try:
        logs(torch.ones(1))
        bytegraph.compile(logs, backend="eager")(torch.ones(1))
    finally:
        logger.removeHandler(handler)
    assert [r.funcName for r in records] == ["logs", "logs"]
