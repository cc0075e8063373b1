"""A warning of a builtin the trace computes (``~True`` on 3.12 and later: bool.__invert__'s
DeprecationWarning) is given by every compiled call as CPython gives it: its category, text, file
and line (the frame running the operation, an inlined function's own, never a polyfill's), under
the filters of that call (once per location under ``default``, through the module's registry),
and raised where eager raises it where the filters make it an error (the trace breaks there; the
filters' answer is guarded). The tracer broke at each such operation; torch.compile traces it and
warns once, while tracing, from its own file. On 3.11 ``~True`` does not warn: the same tests
check that nothing warns."""

from __future__ import annotations

import operator
import warnings

import pytest
import torch
from difftest import compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts

from bytegraph.explain import Recorder

FLAG = True


def _warns_here() -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ~FLAG  # noqa: B018 (its warning is the point)
    return bool(caught)


WARNS = _warns_here()  #: this CPython warns on ``~True``


def inverts(x, flag):
    return x + 1, ~flag, ~FLAG, operator.invert(False)


def _helper(flag):
    return ~flag


def inverts_in_a_callee(x, flag):
    y = x * 2
    return y, _helper(flag), list(map(operator.invert, [flag, not flag]))


def changes_then_inverts(x, log):
    log.append(1)
    value = ~FLAG
    log.append(2)
    return x + value


def _seen(caught):
    return [(w.category, str(w.message), w.filename, w.lineno, w.source) for w in caught]


def _call_recording(fn, *args, action="always"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        result = fn(*args)
    return result, _seen(caught)


def _breaks(recorder):
    return recorder.report().graph_break_count


@pytest.mark.parametrize("fn", [inverts, inverts_in_a_callee])
def test_each_call_warns_as_eager(fn):
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for flag in (True, True, False, True):
        with recorder:
            actual, warned = _call_recording(compiled, torch.ones(2), flag)
        expected, eager_warned = _call_recording(fn, torch.ones(2), flag)
        assert actual[1:] == expected[1:]
        torch.testing.assert_close(actual[0], expected[0])
        assert warned == eager_warned
        assert bool(warned) == WARNS
    assert (counter.frame_count, _breaks(recorder)) == (2, 0)  # a variant per flag
    assert dynamo_counts(fn, torch.ones(2), True) == (1, 0)


@pytest.mark.parametrize(
    ("actions", "counts"),
    [
        # traced under "always": the filters' answer guarded, so "error" traces again, with the
        # break there (no graph before it; CPython raises, so the resumed graph waits for a call
        # under other filters); the variant with the break, where CPython runs the operation,
        # is right under any filters
        (("always", "error", "always", "error"), (1, 1)),
        (("error", "always", "error"), (1, 1)),
    ],
)
def test_an_error_filter_raises_where_eager_raises(actions, counts):
    compiled, counter = compile_counted(changes_then_inverts)
    recorder = Recorder()
    for action in actions:
        log, eager_log = [], []
        with recorder, warnings.catch_warnings():
            warnings.simplefilter(action)
            try:
                outcome = compiled(torch.ones(2), log)
            except DeprecationWarning as e:
                outcome = str(e)
            try:
                expected = changes_then_inverts(torch.ones(2), eager_log)
            except DeprecationWarning as e:
                expected = str(e)
        assert type(outcome) is type(expected)
        if isinstance(expected, str):
            assert outcome == expected
        else:
            torch.testing.assert_close(outcome, expected)
        assert log == eager_log == ([1] if action == "error" and WARNS else [1, 2])
    assert (counter.frame_count, _breaks(recorder)) == (counts if WARNS else (1, 0))


def test_the_default_action_warns_once_per_location():
    compiled, _ = compile_counted(inverts)
    seen = []
    for fn in (compiled, inverts):
        globals().pop("__warningregistry__", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # changing the filters empties the registries
            runs = []
            for _ in range(3):
                fn(torch.ones(2), True)
                runs.append(_seen(caught))
                caught.clear()
        seen.append(runs)
    assert seen[0] == seen[1]
    assert [len(run) for run in seen[0]] == ([1, 0, 0] if WARNS else [0, 0, 0])  # one line


# -- ``warnings.warn`` called by the program -------------------------------------------------------
def _deprecated_helper(t):
    warnings.warn("use the other helper", DeprecationWarning, stacklevel=1)
    return t * 2


def warns_directly(x, log):
    warnings.warn("careful")  # noqa: B028 (the default: this frame)
    y = _deprecated_helper(x)
    log.append(1)
    warnings.warn("again", category=FutureWarning, stacklevel=1)
    return y + 1


def test_warnings_warn_is_given_by_every_compiled_call_as_eager():
    """``warnings.warn(text, category)`` in the function and in a helper: each compiled call
    warns as eager does, in order, from the frame and line eager names, once per location under
    ``default``. It broke at every call (a C function); torch.compile traces it."""
    compiled, counter = compile_counted(warns_directly)
    recorder = Recorder()
    for action in ("always", "always", "default"):
        with recorder:
            log = []
            actual, warned = _call_recording(compiled, torch.ones(2), log, action=action)
        eager_log = []
        expected, eager_warned = _call_recording(
            warns_directly, torch.ones(2), eager_log, action=action
        )
        torch.testing.assert_close(actual, expected)
        assert warned == eager_warned and len(warned) == 3
        assert log == eager_log
    assert (counter.frame_count, _breaks(recorder)) == (1, 0)
    assert_no_more_breaks(0, warns_directly, torch.ones(2), [])


def test_warnings_warn_under_an_error_filter_raises_where_eager_raises():
    compiled, _ = compile_counted(warns_directly)
    for action in ("always", "error", "always"):
        outcomes = []
        for fn in (compiled, warns_directly):
            log = []
            with warnings.catch_warnings():
                warnings.simplefilter(action)
                try:
                    outcomes.append((fn(torch.ones(2), log).tolist(), log))
                except UserWarning as e:
                    outcomes.append((str(e), log))
        assert outcomes[0] == outcomes[1]


def test_warnings_warn_naming_the_callers_caller_runs_in_python():
    """A ``stacklevel`` naming a caller (here past the compiled function: the caller's, different
    from call to call; for a ``forward``, torch's ``Module._call_impl``, a frame the trace does
    not have) runs in Python, where CPython finds that frame."""

    def fn(x):
        warnings.warn("from outside", stacklevel=2)
        return x + 1

    compiled, _ = compile_counted(fn)
    actual, warned = _call_recording(compiled, torch.ones(2))
    expected, eager_warned = _call_recording(fn, torch.ones(2))
    assert [w[1:4] for w in warned] == [w[1:4] for w in eager_warned]
