"""The differential helpers fail where the compiled run differs: a fake compiled function that
drops an in-place update, returns a copy where eager returns its input, or hides a graph break, and
a torch.compile baseline that is missing, each make the helper raise."""

from __future__ import annotations

import difftest
import dynamo_baseline
import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from difftest import check, check_breaks

import bytegraph


def _fake_compiled(monkeypatch, make_fake):
    """``check`` compiles ``fn`` with ``make_fake(fn)`` instead of bytegraph."""

    def compile_counted(fn, **kwargs):
        counter = CompileCounter()
        counter.frame_count = 1
        return make_fake(fn), counter

    monkeypatch.setattr(difftest, "compile_counted", compile_counted)


def _add_in_place(x):
    x.add_(1)
    return x


def test_check_passes_on_a_faithful_compiled_function(monkeypatch):
    _fake_compiled(monkeypatch, lambda fn: fn)
    check(_add_in_place, torch.zeros(3))


def test_check_fails_when_the_compiled_function_drops_an_in_place_update(monkeypatch):
    def dropping(fn):
        return lambda x: x + 1  # the same value, but x is left as it was

    _fake_compiled(monkeypatch, dropping)
    with pytest.raises(AssertionError):
        check(_add_in_place, torch.zeros(3))


def test_check_fails_when_the_compiled_function_updates_a_copy(monkeypatch):
    def copying(fn):
        return lambda x: fn(x.clone())  # the result is right, the input unchanged

    _fake_compiled(monkeypatch, copying)
    with pytest.raises(AssertionError):
        check(_add_in_place, torch.zeros(3))


def test_check_fails_when_the_result_is_not_the_input_object(monkeypatch):
    def returns_list(x):
        return [x, x.sum()]

    def rebuilt(fn):
        def run(x):
            out = fn(x)
            return [out[0].clone(), out[1]]  # equal values, not the input itself

        return run

    _fake_compiled(monkeypatch, rebuilt)
    with pytest.raises(AssertionError, match="is an input in eager"):
        check(returns_list, torch.ones(3))


def test_check_fails_on_a_mutated_object_attribute(monkeypatch):
    class Box:
        def __init__(self):
            self.n = 0

    def bump(box, x):
        box.n += 1
        return x * box.n

    def forgetful(fn):
        def run(box, x):
            return x * (box.n + 1)  # the result eager gives, without the store

        return run

    _fake_compiled(monkeypatch, forgetful)
    with pytest.raises(AssertionError):
        check(bump, Box(), torch.ones(2))


def _break_with_no_tensor_op_after(x):
    y = x * 2
    bytegraph.graph_break()
    return y


def test_check_asserts_breaks_not_only_graphs():
    # one graph: the part after the break holds no tensor op; the break is still counted
    with pytest.raises(AssertionError, match="breaks"):
        check(_break_with_no_tensor_op_after, torch.randn(3), graphs=1)
    bytegraph.reset()
    check(_break_with_no_tensor_op_after, torch.randn(3), graphs=1, breaks=1)


def test_check_breaks_fails_when_the_compiled_function_drops_an_in_place_update():
    def dropping(x):
        return x + 1

    with pytest.raises(AssertionError):
        check_breaks(
            _add_in_place,
            lambda: (torch.zeros(3),),
            graphs=0,
            breaks=0,
            compiled=dropping,
            counter=CompileCounter(),
        )


def _python_only(x):
    return x.numpy().sum()  # torch.compile does not compile numpy() on a plain tensor input


def test_a_missing_baseline_fails_unless_the_test_says_why(monkeypatch):
    monkeypatch.setattr(dynamo_baseline, "dynamo_run", lambda fn, *a, **k: (0, 0, ["skipped"]))
    with pytest.raises(AssertionError, match="no baseline"):
        dynamo_baseline.assert_no_more_breaks(0, _python_only, torch.randn(3))
    assert dynamo_baseline.assert_no_more_breaks(
        0, _python_only, torch.randn(3), baseline_missing="torch.compile runs it in Python"
    ) == (0, 0)


def _breaks_after_its_last_op(x):
    y = x + 1
    print("no tensor op after this")
    return y


def test_dynamo_breaks_counts_a_break_explain_reports_as_none():
    # explain's count is graph_count - 1: 0 here, though torch.compile broke once
    assert dynamo_baseline.dynamo_counts(_breaks_after_its_last_op, torch.randn(3)) == (1, 0)
    assert dynamo_baseline.dynamo_breaks(_breaks_after_its_last_op, torch.randn(3)) == (1, 1)
    dynamo_baseline.assert_no_more_breaks(1, _breaks_after_its_last_op, torch.randn(3))
    with pytest.raises(AssertionError, match="torch.compile 1x"):
        dynamo_baseline.assert_no_more_breaks(2, _breaks_after_its_last_op, torch.randn(3))
