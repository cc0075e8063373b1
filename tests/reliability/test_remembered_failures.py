"""A trace that fails (a bug in bytegraph, or a construct that cannot be traced at all) is
remembered: later calls under the same guards run the original code with no new trace, the warning
is given once per code object, and the failure shows in ``explain``, ``stats()`` and the
graph-break log."""

from __future__ import annotations

import logging
import warnings

import pytest
import torch
from bytegraph.tracer import opcodes

import bytegraph


@pytest.fixture
def broken_binary_op(monkeypatch):
    """Make every BINARY_OP handler raise as a bug would (not ``Unsupported``)."""
    calls = []

    def broken(tx, inst):
        calls.append(inst)
        raise KeyError("bug inside bytegraph")

    monkeypatch.setitem(opcodes.HANDLERS, "BINARY_OP", broken)
    return calls


def _fn(x, n):
    return x * n


def test_internal_error_is_traced_once_then_runs_original_code(broken_binary_op):
    compiled = bytegraph.compile(_fn)
    x = torch.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [compiled(x, 2) for _ in range(5)]
    for r in results:
        torch.testing.assert_close(r, x * 2)
    assert len(broken_binary_op) == 1, "traced again after the failure"
    assert bytegraph.stats()["frames"] == 1
    assert bytegraph.stats()["fallback:internal_error"] == 1
    messages = [str(w.message) for w in caught if str(w.message).startswith("bytegraph")]
    assert len(messages) == 1 and "internal_error" in messages[0]


def test_remembered_failure_keeps_the_guards_it_reached(broken_binary_op):
    compiled = bytegraph.compile(_fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(torch.ones(3), 2)
        compiled(torch.ones(3), 2)
        assert len(broken_binary_op) == 1
        compiled(torch.ones(3, dtype=torch.float64), 2)  # other guards: traced (and fails) again
    assert len(broken_binary_op) == 2
    entries = bytegraph.cache_entries(compiled)
    assert len(entries) == 2 and all(e.reason.startswith("fallback") for e in entries)
    assert "L['x'].dtype" in entries[0].guards.source


def test_warning_is_given_once_per_code_object(broken_binary_op):
    compiled = bytegraph.compile(_fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.ones(3), 2)
        compiled(torch.ones(3, dtype=torch.float64), 2)
        compiled(torch.ones(4), 3)
    assert len([w for w in caught if "bytegraph: running" in str(w.message)]) == 1


def test_failure_shows_in_explain_and_log(broken_binary_op, caplog):
    with caplog.at_level(logging.INFO, logger="bytegraph.graph_breaks"):
        report = bytegraph.explain(_fn)(torch.ones(3), 2)
    (reason,) = report.break_reasons
    assert reason.fell_back and reason.kind == "internal_error"
    assert any("running it in Python" in r.message for r in caplog.records)


def test_unsupported_trace_is_remembered_without_guards(monkeypatch):
    traces = []

    def unsupported_at_entry(*args, **kwargs):
        traces.append(1)
        raise bytegraph.tracer.exc.Unsupported("test", "cannot trace this at all")

    monkeypatch.setattr("bytegraph.tracer.convert.convert_call", unsupported_at_entry)
    compiled = bytegraph.compile(_fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            torch.testing.assert_close(compiled(torch.ones(2), 3), torch.full((2,), 3.0))
    assert len(traces) == 1
    assert bytegraph.stats()["fallback:test"] == 1
