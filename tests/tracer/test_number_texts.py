"""Texts of numbers computed from tensor data (``f"{t.item():.2f}"``, ``"%.3f" % t.item()``,
``"{:.2f}".format(x)``, ``str(t.item())``) are made after the graph, by CPython's own formatting of
the number the graph gives: no break where the trace never reads the text. Each case runs over
values whose texts are CPython's corner cases (nan, infinities, -0.0, subnormals, big and
negative numbers) through one compiled variant, each text compared with eager's; a spec the
type refuses raises CPython's error, and a spec that raises for some values only breaks."""

from __future__ import annotations

import math

import pytest
import torch
from difftest import break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks

from bytegraph.explain import Recorder

FLOATS = [
    0.0,
    -0.0,
    1.5,
    -2.675,
    1 / 3,
    1e16,
    123456789.125,
    -1e300,
    1e-310,
    5e-324,
    math.inf,
    -math.inf,
    math.nan,
]
INTS = [0, -1, 7, 255, -(2**63), 2**62 + 12345]

FLOAT_SPECS = ["", ".2f", "+.3f", " .1e", ">12,.3f", "_.4f", "=+10.4g", "08.3f", "%", ".0%", "G"]
INT_SPECS = ["", "d", "+d", ",d", "_x", "#x", "#o", "b", ">10", "^+12,"]


def _run(fn, values, dtype, graphs=1):
    """``fn`` compiled and eager on a tensor holding each of ``values``: the same results, one
    graph and no break over all calls."""
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for value in values:
        t = torch.tensor([value], dtype=dtype)
        with recorder:
            actual = compiled(t)
        expected = fn(t.clone())
        assert actual[1:] == expected[1:], value
        torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
    assert (counter.frame_count, break_count(recorder.report())) == (graphs, 0)


@pytest.mark.parametrize("spec", FLOAT_SPECS)
def test_fstring_of_a_float_item(spec):
    def fn(t):
        x = t.sum().item()
        return t * 2, f"{x:{spec}}", "{:{}}".format(x, spec), format(x, spec)

    _run(fn, FLOATS, torch.float64)


@pytest.mark.parametrize("spec", INT_SPECS)
def test_fstring_of_an_int_item(spec):
    def fn(t):
        n = t.sum().item()
        return t + 1, f"{n:{spec}}", "{0:{1}}|{0!r}".format(n, spec)

    _run(fn, INTS, torch.int64)


@pytest.mark.parametrize(
    "fmt", ["%.3f", "%+08.2f", "%-12.4e|", "%g", "%s", "%r", "%a", "%10.3G%%", "<%5.1f>"]
)
def test_percent_of_a_float_item(fmt):
    def fn(t):
        return t * 2, fmt % t.sum().item(), fmt % (t.max().item(),)

    _run(fn, FLOATS, torch.float64)


def test_percent_of_several_items():
    def fn(t):
        n, x = t.long().sum().item(), t.sum().item()
        return t * 2, "step %d: loss %.4f (%x) %s %s" % (n, x, n, "ok", 3)  # noqa: UP031

    _run(fn, [0.0, 2.5, -7.25, 1e10], torch.float64)


def test_str_and_repr_of_items():
    def fn(t):
        x, n = t.sum().item(), t.long().sum().item()
        return t * 2, str(x), repr(x), f"{x}|{n!r}", str(n) + repr(x)

    _run(fn, FLOATS[:-3], torch.float64)


LOGS: list[str] = []


def test_a_text_appended_to_a_log_is_made_after_the_graph():
    def fn(t):
        y = t * 2
        LOGS.append(f"loss={y.sum().item():.4f}")
        LOGS.append("%.2e" % y.mean().item())  # noqa: UP031
        return y

    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for value in (1.0, -3.5, math.nan):
        LOGS.clear()
        t = torch.full((3,), value)
        with recorder:
            compiled(t)
        got = list(LOGS)
        LOGS.clear()
        fn(t)
        assert got == LOGS
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)
    assert_no_more_breaks(0, fn, torch.ones(3))


def _float_spec_error(t):
    x = t.sum().item()
    try:
        text = f"{x:d}"
    except ValueError as e:
        text = e.args
    return t * 2, text, f"{x:.1f}"


def _percent_count_error(t):
    x = t.sum().item()
    try:
        text = "%f %f" % (x,)  # noqa: F507, UP031
    except TypeError as e:
        text = e.args
    return t * 2, text, "%.1f" % x  # noqa: UP031


def _percent_type_error(t):
    try:
        text = "%f and %f" % (t.sum().item(), "a")  # noqa: UP031
    except TypeError as e:
        text = e.args
    return t * 2, text


@pytest.mark.parametrize("fn", [_float_spec_error, _percent_count_error, _percent_type_error])
def test_a_format_the_type_refuses_raises_cpythons_error_in_the_trace(fn):
    _run(fn, [1.0, math.nan], torch.float64)


def test_a_format_that_fails_for_some_values_breaks():
    # ``%d`` of a float raises for nan and infinities, ``c`` of an int past the code points:
    # made where the trace reads them, in Python, as eager; ``.1f`` waits for the graph
    def fn(t):
        text = f"{t.sum().item():.1f}"
        return t * 2, text, "%d" % t.max().item(), f"{t.long().min().item():c}"  # noqa: UP031

    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    t = torch.tensor([32.5, 65.5])
    with recorder:
        actual = compiled(t)
    assert actual[1:] == fn(t)[1:] == ("98.0", "65", " ")
    assert break_count(recorder.report()) == 2
    assert_no_more_breaks(2, fn, t)
