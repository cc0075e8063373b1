"""A warning of a builtin the trace computes (``~True`` on 3.12 and later: bool.__invert__'s
DeprecationWarning) is given by every compiled call as CPython gives it: its category, text, file
and line (the frame running the operation, an inlined function's own, never a polyfill's), under
the filters of that call (once per location under ``default``, through the module's registry),
and raised where eager raises it where the filters make it an error (the trace breaks there; the
filters' answer is guarded). The tracer broke at each such operation; torch.compile traces it and
warns once, while tracing, from its own file. On 3.11 ``~True`` does not warn: the same tests
check that nothing warns."""

from __future__ import annotations

import contextlib
import functools
import operator
import sys
import types
import warnings

import pytest
import torch
from difftest import compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts
from torch import nn

import bytegraph
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
        # is right under any filters: the newest, tried first, it serves the next "always" call,
        # whose resumed graph is compiled then
        (("always", "error", "always", "error"), (2, 1)),
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


def test_warnings_warn_naming_the_callers_frame_is_found_by_the_compiled_call():
    """A ``stacklevel`` naming a caller of the compiled function (the caller's, different from
    call to call) is found by the compiled call, which gives the warning after its graph."""

    def fn(x):
        warnings.warn("from outside", stacklevel=2)
        return x + 1

    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):
        with recorder:
            actual, warned = _call_recording(compiled, torch.ones(2))
        expected, eager_warned = _call_recording(fn, torch.ones(2))
        assert warned == eager_warned
    assert (counter.frame_count, _breaks(recorder)) == (1, 0)


# -- ``warnings.warn`` naming a caller: ``stacklevel`` of 2 and more -------------------------------
# The frame ``stacklevel`` names is one the trace inlined (file, line, module and registry known
# when tracing), one of ``nn.Module.__call__``'s (known too), or a caller of the compiled function
# (or a caller waiting for a callee resumed after a break), found by the compiled call; past the
# outermost frame CPython names ``sys``. Each compiled call gives eager's warnings after its graph.

_LOG: list[int] = []  #: what the program did, up to a warning an error filter raises

_WARNS_LIB_B = """
import warnings

def warn_at(t, level, log):
    log.append(level)
    warnings.warn(f"library {level}", FutureWarning, stacklevel=level)
    return t + 1
"""

_WARNS_LIB_A = """
import warns_lib_b

def through(t, level, log):
    return warns_lib_b.warn_at(t * 2, level, log) - 1
"""


def _library(name, text):
    """A library module of its own (its own file and ``__name__``, in ``sys.modules``)."""
    module = types.ModuleType(name)
    module.__file__ = f"/site-packages/{name}.py"
    sys.modules[name] = module
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


warns_lib_b = _library("warns_lib_b", _WARNS_LIB_B)
warns_lib_a = _library("warns_lib_a", _WARNS_LIB_A)


def _nested_warn(t, level):
    _LOG.append(level)
    warnings.warn(f"nested {level}", DeprecationWarning, stacklevel=level)
    return t * 2


def _middle_helper(t, level):
    return _nested_warn(t + 1, level) - 1


def _through_helpers(level):
    def nested(x):
        y = _middle_helper(x, level)
        return y + 1

    return nested


def _through_partials(level):
    def through_partials(x):
        middle = functools.partial(_middle_helper, level=level)  # calls _nested_warn likewise
        return functools.partial(middle)(x) + 1

    return through_partials


def _through_a_library_module(level):
    def calls_the_library(x):
        return warns_lib_a.through(x + 1, level, _LOG)

    return calls_the_library


def _breaks_then_warns(t, level):
    print("before the warning")
    _LOG.append(level)
    warnings.warn(f"resumed {level}", UserWarning, stacklevel=level)
    return t + 1


def _in_a_resumed_callee(level):
    def resumed(x):
        y = x * 2
        return _breaks_then_warns(y, level) - 1

    return resumed


def _after_a_break(level):
    def break_first(x):
        print("before the helper")
        return _nested_warn(x, level) + 1

    return break_first


def _directly(level):
    def warns(x):
        _LOG.append(level)
        warnings.warn(f"directly {level}", UserWarning, stacklevel=level)
        return x - 1

    return warns


class _WarnsInForward(nn.Module):
    def __init__(self, level):
        super().__init__()
        self.level = level

    def forward(self, x):
        _LOG.append(self.level)
        warnings.warn(f"forward {self.level}", UserWarning, stacklevel=self.level)
        return x + 1


class _Outer(nn.Module):
    def __init__(self, level):
        super().__init__()
        self.inner = _WarnsInForward(level)

    def forward(self, x):
        return self.inner(x * 2) - 1


def _in_forward(level):
    module = _WarnsInForward(level)

    def calls_a_module(x):
        return module(x * 2) - 1

    return calls_a_module


def _in_a_module_called_by_a_module(level):
    module = _Outer(level)

    def calls_the_outer_module(x):
        return module(x) * 3

    return calls_the_outer_module


#: (how the function is made, stacklevels, (graphs, breaks) of the function: its prints break)
_CASES = {
    # 1: the helper's line, 2: its caller's, 3: the function's, 4: its caller's, 5: the next one's
    "through helpers": (_through_helpers, (1, 2, 3, 4, 5), (1, 0)),
    # the same, each helper called by partials (called from C: no frame of their own)
    "through partials": (_through_partials, (1, 2, 3, 4, 5), (1, 0)),
    # 1: module B's line, 2: module A's, 3: the function's, 4: its caller's
    "through a library module": (_through_a_library_module, (1, 2, 3, 4), (1, 0)),
    # a function resumed after its own break: the resumed one's caller waits for it (graphs: before
    # the break, the callee's resume function, the caller's)
    "in a resumed callee": (_in_a_resumed_callee, (1, 2, 3, 4), (3, 1)),
    # a helper inlined in a resume function (no graph before the break): the resume function's
    # own line, its caller's
    "after a break": (_after_a_break, (2, 3), (1, 1)),
    # 2: the caller's line, 3: the next one's, 10_000: past the outermost frame (``sys``)
    "directly": (_directly, (2, 3, 10_000), (1, 0)),
    # 2: ``_call_impl``'s line, 3: ``_wrapped_call_impl``'s, 4: the function's, 5: its caller's
    "in forward": (_in_forward, (2, 3, 4, 5), (1, 0)),
    # 2: the inner module's ``_call_impl``, 4: the outer ``forward``, 5: its ``_call_impl``,
    # 7: the function, 8: its caller
    "in a module called by a module": (_in_a_module_called_by_a_module, (2, 4, 5, 7, 8), (1, 0)),
}
_LEVELS = [
    pytest.param(make, level, counts, id=f"{name}-{level}")
    for name, (make, levels, counts) in _CASES.items()
    for level in levels
]
_REGISTRIES = (__name__, "warns_lib_a", "warns_lib_b", "torch.nn.modules.module", "sys")


def _clear_registries():
    for name in _REGISTRIES:
        sys.modules[name].__dict__.pop("__warningregistry__", None)


def _registries():
    """The places each module's ``__warningregistry__`` notes (``default``, ``module``)."""
    found = {}
    for name in _REGISTRIES:
        registry = sys.modules[name].__dict__.get("__warningregistry__", {})
        found[name] = sorted(repr(key) for key in registry if key != "version")
    return found


def _runs(fn, action, calls=3, error_in=None):
    """Three calls of ``fn`` under ``action`` (and ``error`` for the module ``error_in``), each
    from this one line (a warning naming the caller names it): their results, the warnings they
    gave and what the program did (``_LOG``) up to where one raised (its text)."""
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        if error_in is not None:
            warnings.filterwarnings("error", module=error_in)
        for _ in range(calls):
            _LOG.clear()
            try:
                results.append((fn(torch.ones(2)).tolist(), list(_LOG)))
            except Warning as e:
                results.append((f"{type(e).__name__}: {e}", list(_LOG)))
    return results, _seen(caught)


@pytest.mark.parametrize("action", ["always", "default", "once", "ignore"])
@pytest.mark.parametrize(("make", "level", "counts"), _LEVELS)
def test_warnings_warn_naming_a_caller_is_given_as_eager(make, level, counts, action, capsys):
    """Each compiled call gives eager's warnings (category, text, file, line) under each action,
    and fills the registries eager fills (``default``: once per place, ``once``: once per text);
    the warning itself breaks nothing. It broke at every call (a C function)."""
    fn = make(level)
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    with recorder, warnings.catch_warnings():  # traced first: a trace may change the filters,
        warnings.simplefilter("ignore")  # which empties every registry
        compiled(torch.ones(2))
    seen = []
    for run in (compiled, fn):
        _clear_registries()
        with recorder:
            results, warned = _runs(run, action)
        seen.append((results, warned, _registries()))
    assert seen[0] == seen[1]
    assert len(seen[0][1]) == {"always": 3, "ignore": 0}.get(action, 1)
    assert (counter.frame_count, _breaks(recorder)) == counts
    if action == "always":
        assert_no_more_breaks(counts[1], fn, torch.ones(2))


@pytest.mark.parametrize(("make", "level", "counts"), _LEVELS)
def test_warnings_warn_naming_a_caller_raises_where_eager_raises(make, level, counts, capsys):
    """Under an error filter the warning is raised where eager raises it, after what the program
    did before it (the trace breaks there; the filters' answer is guarded), and given again once
    the filters let it."""
    fn = make(level)
    compiled, _ = compile_counted(fn)
    for action in ("always", "error", "always", "error"):
        assert _runs(compiled, action, calls=2) == _runs(fn, action, calls=2)


@pytest.mark.parametrize(
    ("level", "breaks"),
    # the module of the frame named: warns_lib_b (an error), warns_lib_a and this one (none);
    # a caller found at run time may be of any module: the trace breaks there
    [(1, 1), (2, 0), (3, 0), (4, 1)],
)
def test_an_error_filter_for_one_module(level, breaks):
    """An error filter for the module ``stacklevel`` names raises there, as eager's; a frame of
    another module warns after the graph (the filters' answer for the module and line guarded)."""
    fn = _through_a_library_module(level)
    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    outcomes = []
    for run in (compiled, fn):
        with recorder if run is compiled else contextlib.nullcontext():
            outcomes.append(_runs(run, "always", error_in="warns_lib_b"))
    assert outcomes[0] == outcomes[1]
    assert ("FutureWarning" in outcomes[1][0][0][0]) == (level == 1)
    assert _breaks(recorder) == breaks


def warns_then_counts(x, log):
    warnings.warn("counted", UserWarning, stacklevel=1)
    return x + len(log)


def counts_then_warns(x, log):
    n = len(log)
    warnings.warn("counted", UserWarning, stacklevel=1)
    return x + n, len(log)


def warns_between_appends(x, out):
    out.append(1)
    warnings.warn("between", UserWarning, stacklevel=1)
    out.append(2)
    return x * 2


@pytest.mark.parametrize(("fn", "breaks"), [(warns_then_counts, 1), (counts_then_warns, 1)])
def test_the_record_list_read_by_the_program_is_as_eager(fn, breaks):
    """The warnings a compiled call gives after its graph go into ``catch_warnings(record=True)``'s
    list then: the program reading that list after the warning (or before it, then again) read
    it as it was before the call. Reading it after a kept warning breaks there (the warning given
    first); a warning whose list the trace read already is given where it stands."""
    results = []
    recorder = Recorder()
    for run in (bytegraph.compile(fn, backend="eager"), fn):
        got = []
        for _ in range(3):
            with warnings.catch_warnings(record=True) as log:
                warnings.simplefilter("always")
                with recorder:
                    out = run(torch.zeros(1), log)
                got.append((repr(out), [str(w.message) for w in log]))
        results.append(got)
    assert results[0] == results[1]
    assert recorder.report().graph_break_count == breaks


def test_a_users_showwarning_sees_the_programs_list_as_eager():
    """``warnings.showwarning`` replaced by the program's function (here appending to a list the
    program appends to): given after the graph's stores, it saw ``[1, 2]`` where eager's sees
    ``[1]``; such warnings are given where they stand (a break)."""
    results = []
    recorder = Recorder()
    for run in (bytegraph.compile(warns_between_appends, backend="eager"), warns_between_appends):
        out: list = []
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, *rest, out=out: out.append(str(message))
            with recorder:
                for _ in range(2):
                    run(torch.ones(1), out)
        results.append(out)
    assert results[0] == results[1] == [1, "between", 2] * 2
    assert recorder.report().graph_break_count == 1
