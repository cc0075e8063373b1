"""Containers that hold themselves (``d["self"] = d``, ``xs.append(xs)``), as inputs and made in
the call: the result is eager's, and what bytegraph cannot trace is a counted reason, never an
internal error (a recursion that ran out of stack)."""

from __future__ import annotations

import warnings

import torch

import bytegraph
from bytegraph.explain import Recorder, Report


def _run(fn, *args):
    """``fn`` compiled, called twice; the messages of the warnings it gave."""
    compiled = bytegraph.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [compiled(*args) for _ in range(2)]
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "internal_error" in m], messages
    return results, messages


def test_an_input_list_holding_itself_compiles():
    xs = [1.5]
    xs.append(xs)

    def fn(x, xs):
        return x * xs[0] + len(xs), xs[1] is xs

    results, messages = _run(fn, torch.ones(2), xs)
    assert not messages
    for value, same in results:
        torch.testing.assert_close(value, fn(torch.ones(2), xs)[0])
        assert same is True


def test_an_input_dict_holding_itself_runs_in_python_with_its_reason():
    """Its keys read one by one compile (``d["a"]``); what reads it whole (``len``) breaks there,
    the reason counted; the rest runs from there."""
    d = {"a": 2}
    d["self"] = d

    def fn(x, d):
        return x + d["a"] + len(d)

    with Recorder() as rec:
        results, messages = _run(fn, torch.ones(2), d)
    assert not messages
    reasons = [str(b) for b in Report(rec.records).break_reasons]
    assert any("contains itself" in r for r in reasons), reasons
    for value in results:
        torch.testing.assert_close(value, fn(torch.ones(2), d))


def test_a_list_made_to_hold_itself_in_the_call_is_eagers():
    def fn(x):
        xs = [1]
        xs.append(xs)
        d = {"k": 1}
        d["me"] = d
        return x + len(xs) + len(d), xs, d

    results, messages = _run(fn, torch.ones(2))
    assert any("holds itself" in m for m in messages), messages
    for value, xs, d in results:
        torch.testing.assert_close(value, torch.full((2,), 5.0))
        assert xs[1] is xs and d["me"] is d
