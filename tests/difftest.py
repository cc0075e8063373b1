"""Differential-test helpers: compile with a counting backend and compare with eager.

``compiled, counter = compile_counted(fn)`` compiles with a ``CompileCounter``; ``assert_same(a,
b)`` compares nested results (tensors with ``torch.testing.assert_close``, everything else with
``==``); ``check(fn, *args, graphs=1)`` runs the compiled function on ``args`` and eager on a copy,
compares results and the inputs after the call, and asserts the graph and break counts and that
nothing fell back. ``without_the_plugins_recorder()`` lets a test compile thousands of functions
without the pytest plugin keeping them all.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer import driver

import bytegraph
from bytegraph.explain import Recorder


def compile_counted(fn, **kwargs):
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter, **kwargs), counter


def uncompiled(fn):
    """``fn`` as eager runs it. ``bytegraph.compile(module)`` compiles the module in place (its
    ``forward`` replaced on the instance), so calling the module itself as the eager reference
    would compare compiled with compiled: its compiled ``forward`` is set aside for the call."""
    if not isinstance(fn, torch.nn.Module):
        return fn

    def run(*args, **kwargs):
        compiled = vars(fn).get("forward")
        if not hasattr(compiled, "__bytegraph__"):
            return fn(*args, **kwargs)
        del vars(fn)["forward"]
        try:
            return fn(*args, **kwargs)
        finally:
            vars(fn)["forward"] = compiled

    return run


@contextlib.contextmanager
def without_the_plugins_recorder() -> Iterator[None]:
    """The pytest plugin's per-test ``Recorder`` (the one active on entry) set aside for a while.

    It keeps every compile state and event of its test until the test ends, so a test compiling
    thousands of functions keeps them all alive, and each ``bytegraph.reset()`` visits every one:
    quadratic work. Only for tests that read what they compile through recorders of their own and
    carry neither ``no_graph_breaks`` nor ``max_recompiles``: what the plugin would have recorded
    there is only the lines of its terminal summary."""
    aside = [f for f in driver.LISTENERS if isinstance(getattr(f, "__self__", None), Recorder)]
    for listener in aside:
        driver.LISTENERS.remove(listener)
    try:
        yield
    finally:
        driver.LISTENERS.extend(aside)


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors of a result: the value itself, or those nested in its tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def assert_same(actual: Any, expected: Any) -> None:
    assert type(actual) is type(expected), f"{type(actual)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, equal_nan=True)
        assert actual.requires_grad == expected.requires_grad
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    elif type(expected).__module__ == "numpy" and hasattr(expected, "dtype"):
        import numpy as np  # an array or a NumPy scalar: its dtype, shape and values

        assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape)
        np.testing.assert_array_equal(actual, expected)
    else:
        assert actual == expected


def check(fn, *args, graphs: int = 1, breaks: int = 0, calls: int = 2, **kwargs):
    """Compile ``fn`` with a counting backend and call it ``calls`` times, compiled on ``args`` and
    eagerly on a deep copy of them taken just before; compare the results, the arguments after the
    call (in-place changes) and which results are the arguments themselves; assert exactly
    ``graphs`` graphs and ``breaks`` graph breaks over all calls, and that nothing fell back."""
    import copy

    from bytegraph.explain import Recorder

    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(calls):
        eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")  # a fallback warns: turn it into a failure
            actual = compiled(*args, **kwargs)
        expected = uncompiled(fn)(*eager_args, **eager_kwargs)
        assert_same(actual, expected)
        assert_state_same([list(args), kwargs], [list(eager_args), eager_kwargs])
        assert_same_identity(actual, expected, (args, kwargs), (eager_args, eager_kwargs))
    got = (counter.frame_count, break_count(recorder.report()))
    assert got == (graphs, breaks), (
        f"expected (graphs, breaks) == {(graphs, breaks)}, got {got}:\n"
        + "\n".join(map(str, recorder.report().break_reasons))
    )
    return compiled, counter


def assert_same_identity(actual: Any, expected: Any, inputs: Any, eager_inputs: Any) -> None:
    """Where eager's result holds one of eager's inputs (``return x``, ``[x, y]``, a dict of
    them...), the compiled result holds the compiled run's corresponding input, the same object."""
    counterpart: dict[int, Any] = {}

    def pair(a: Any, e: Any, depth: int = 0) -> None:
        counterpart.setdefault(id(e), a)
        if depth < 6 and type(a) is type(e):
            if isinstance(e, (tuple, list)) and len(a) == len(e):
                for x, y in zip(a, e, strict=True):
                    pair(x, y, depth + 1)
            elif isinstance(e, dict) and list(a) == list(e):
                for k in e:
                    pair(a[k], e[k], depth + 1)

    pair(inputs, eager_inputs)

    def walk(a: Any, e: Any, where: str, depth: int = 0) -> None:
        if id(e) in counterpart and not isinstance(e, (int, float, str, bytes, bool, type(None))):
            assert a is counterpart[id(e)], f"result{where} is an input in eager, not compiled"
        if depth < 6 and type(a) is type(e):
            if isinstance(e, (tuple, list)) and len(a) == len(e):
                for k, (x, y) in enumerate(zip(a, e, strict=True)):
                    walk(x, y, f"{where}[{k}]", depth + 1)
            elif isinstance(e, dict) and list(a) == list(e):
                for k in e:
                    walk(a[k], e[k], f"{where}[{k!r}]", depth + 1)

    walk(actual, expected, "")


# -- graph breaks ----------------------------------------------------------------------------------
# ``check_breaks(fn, make_args, graphs=2, breaks=1)`` runs ``fn`` eagerly and compiled on equal
# fresh inputs, several times, and compares results, raised exceptions, printed output, the
# arguments after the call (mutations) and whatever ``observe()`` returns (globals...); it asserts
# the exact number of graphs compiled and graph breaks taken (resume functions included), and that
# nothing fell back.


def assert_state_same(actual: Any, expected: Any) -> None:
    """``assert_same`` that also compares what a call can change in place: plain objects attribute
    by attribute (``vars``), modules by parameters, buffers and training flags, optimizers by their
    state, leaf tensors' ``.grad``."""
    if isinstance(expected, torch.nn.Module):
        assert type(actual) is type(expected)
        assert [m.training for m in actual.modules()] == [m.training for m in expected.modules()]
        assert_state_same(
            dict(actual.state_dict(keep_vars=True)), dict(expected.state_dict(keep_vars=True))
        )
    elif isinstance(expected, torch.optim.Optimizer):
        assert type(actual) is type(expected)
        assert_state_same(actual.state_dict(), expected.state_dict())
    elif isinstance(expected, torch.Tensor):
        assert_same(actual, expected)
        if expected.is_leaf and actual.is_leaf:
            assert (actual.grad is None) == (expected.grad is None), "one input has a .grad"
            if expected.grad is not None:
                assert_same(actual.grad, expected.grad)
    elif isinstance(expected, types.FunctionType):
        assert type(actual) is type(expected)
        assert actual.__qualname__ == expected.__qualname__
    elif isinstance(expected, types.MethodType):
        assert type(actual) is type(expected)
        assert actual.__func__ is expected.__func__
        assert_state_same(actual.__self__, expected.__self__)
    elif hasattr(expected, "__dict__") and not isinstance(expected, type):
        assert type(actual) is type(expected)
        assert_state_same(dict(vars(actual)), dict(vars(expected)))
    elif isinstance(expected, (tuple, list)) and type(actual) is type(expected):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_state_same(a, e)
    elif isinstance(expected, dict) and type(actual) is type(expected):
        assert list(actual) == list(expected)
        for key in expected:
            assert_state_same(actual[key], expected[key])
    else:
        assert_same(actual, expected)


def _run_captured(fn, args, kwargs, setup, observe):
    import contextlib
    import io

    if setup is not None:
        setup()
    out = io.StringIO()
    grad = torch.is_grad_enabled()
    with contextlib.redirect_stdout(out):
        try:
            result, error = fn(*args, **kwargs), None
        except Exception as e:  # noqa: BLE001 (compared with eager's)
            result, error = None, e
    state = observe() if observe is not None else None
    return result, error, out.getvalue(), state, torch.is_grad_enabled() == grad


def as_eager_twice(fn, make_args=lambda: (torch.ones(3),)):
    """``fn`` compiled and eager, each called twice from one place with ``make_args()``: the same
    results each time. Returns bytegraph's report of the two compiled calls."""
    from bytegraph.explain import Recorder

    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):
        with recorder:
            got = compiled(*make_args())
        assert_same(got, uncompiled(fn)(*make_args()))
    return recorder.report()


def break_count(report) -> int:
    """Graph breaks in a ``Recorder`` report; asserts none of them was a fallback to Python."""
    fell_back = [str(r) for r in report.break_reasons if r.fell_back]
    assert not fell_back, f"fell back to Python: {fell_back}"
    return report.graph_break_count


def check_breaks(
    fn,
    make_args,
    *,
    graphs: int,
    breaks: int,
    calls: int = 2,
    kwargs=None,
    setup=None,
    observe=None,
    compiled=None,
    counter=None,
):
    """Differential test of a function with graph breaks; returns ``(compiled, counter, report)``.

    ``make_args()`` makes fresh inputs for each call (the eager run gets a deep copy); ``setup()``
    runs before each run (reset globals), ``observe()`` after it (what to compare besides the
    result, printed output and arguments). ``calls`` may be a list of ``make_args`` callables to
    call in turn (e.g. to take both branches)."""
    import copy

    from bytegraph.explain import Recorder

    if compiled is None:
        compiled, counter = compile_counted(fn)
    makers = calls if isinstance(calls, list) else [make_args] * calls
    recorder = Recorder()
    for make in makers:
        args = make()
        eager_args = copy.deepcopy(args)
        kw = dict(kwargs or {})
        expected = _run_captured(uncompiled(fn), eager_args, copy.deepcopy(kw), setup, observe)
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            actual = _run_captured(compiled, args, kw, setup, observe)
        result, error, printed, state, grad_ok = actual
        e_result, e_error, e_printed, e_state, _ = expected
        if e_error is not None:
            assert type(error) is type(e_error) and str(error) == str(e_error), (error, e_error)
        else:
            assert error is None, f"compiled raised {error!r}"
            assert_same(result, e_result)
        assert grad_ok, "grad mode not restored"
        assert printed == e_printed, f"printed {printed!r}, eager printed {e_printed!r}"
        assert_state_same(state, e_state)
        assert_state_same(list(args), list(eager_args))
    report = recorder.report()
    got = (counter.frame_count, break_count(report))
    assert got == (graphs, breaks), (
        f"expected (graphs, breaks) == {(graphs, breaks)}, got {got}:\n"
        + "\n".join(map(str, report.break_reasons))
    )
    return compiled, counter, report
