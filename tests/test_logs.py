"""``BYTEGRAPH_LOGS`` / ``bytegraph.set_logs``: artifact parsing, levels, and what each artifact
prints (graph code with file:line comments, breaks with the user stack, guards, recompiles with the
failing guard, original and rewritten bytecode)."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys

import pytest
import torch

import bytegraph
from bytegraph.logs import ARTIFACTS, parse


@pytest.fixture(autouse=True)
def _logs_off():
    bytegraph.set_logs("")
    yield
    bytegraph.set_logs("")


def add_relu(x):
    y = x + 1
    return y.relu()


def prints(x):
    y = x.cos()
    print("logged break")
    return y + 1


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_parse_names_plus_and_all():
    assert parse("graph_code, +guards,") == {"graph_code": logging.INFO, "guards": logging.DEBUG}
    assert parse("all") == dict.fromkeys(ARTIFACTS, logging.INFO)
    assert parse("+all")["fusion"] == logging.DEBUG
    assert parse("") == {}


def test_unknown_artifact_is_an_error():
    with pytest.raises(ValueError, match="unknown bytegraph log artifact 'graph'.*graph_code"):
        bytegraph.set_logs("graph")


def test_set_logs_sets_levels_and_turns_others_off():
    bytegraph.set_logs("+recompiles,guards")
    assert logging.getLogger("bytegraph.recompiles").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("bytegraph.guards").getEffectiveLevel() == logging.INFO
    assert not logging.getLogger("bytegraph.graph_code").isEnabledFor(logging.INFO)
    bytegraph.set_logs("")
    assert logging.getLogger("bytegraph.recompiles").level == logging.NOTSET
    assert logging.getLogger("bytegraph").propagate


def test_only_enabled_artifacts_print(capsys):
    bytegraph.set_logs("guards")
    bytegraph.compile(add_relu)(torch.randn(3))
    err = capsys.readouterr().err
    assert "[bytegraph.guards] GUARDS add_relu\n" in err
    assert "L['x'].shape == (3,)" in err
    assert "[bytegraph.graph_code]" not in err


def test_nothing_prints_when_off(capsys):
    bytegraph.compile(add_relu)(torch.randn(3))
    assert capsys.readouterr().err == ""


def test_graph_code_has_file_line_comments(capsys):
    bytegraph.set_logs("graph_code")
    bytegraph.compile(add_relu)(torch.randn(3))
    err = capsys.readouterr().err
    assert "[bytegraph.graph_code] TRACED GRAPH add_relu\n" in err
    first, second = line_of(add_relu, "y = x + 1"), line_of(add_relu, "relu()")
    assert f"# File: {__file__}:{first} in add_relu, code: y = x + 1" in err
    assert f"# File: {__file__}:{second} in add_relu, code: return y.relu()" in err


def test_graph_break_logged_with_user_stack(capsys):
    bytegraph.set_logs("graph_breaks")
    bytegraph.compile(prints)(torch.randn(3))
    err = capsys.readouterr().err
    assert "[bytegraph.graph_breaks] graph break in prints" in err
    assert "print: call to print()" in err
    assert f"  at {__file__}:{line_of(prints, 'print(')} in prints\n" in err
    assert '    print("logged break")\n' in err
    assert "  hint: " in err


def test_recompile_logged_with_failing_guard(capsys):
    bytegraph.set_logs("recompiles")
    compiled = bytegraph.compile(add_relu)
    compiled(torch.randn(3))
    assert capsys.readouterr().err == ""
    compiled(torch.randn(5))
    err = capsys.readouterr().err
    assert "[bytegraph.recompiles] Recompiling function add_relu" in err
    assert "- L['x'].shape == (3,)" in err


def test_bytecode_logs_original_and_rewritten(capsys):
    bytegraph.set_logs("bytecode")
    bytegraph.compile(add_relu)(torch.randn(3))
    err = capsys.readouterr().err
    original, _, rewritten = err.partition("MODIFIED BYTECODE")
    assert original.startswith(f"[bytegraph.bytecode] ORIGINAL BYTECODE add_relu {__file__}:")
    assert "LOAD_FAST" in original and "x" in original and "__compiled_fn_" not in original
    assert rewritten.startswith(" add_relu (first call)\n")
    assert "__compiled_fn_" in rewritten  # the rewritten code calls the graph


def test_caplog_sees_artifacts_without_set_logs(caplog):
    with caplog.at_level(logging.INFO, logger="bytegraph.guards"):
        bytegraph.compile(add_relu)(torch.randn(3))
    assert [r.name for r in caplog.records] == ["bytegraph.guards"]


def test_environment_variable_read_at_import():
    code = (
        "import logging, bytegraph; "
        "print([logging.getLogger('bytegraph.' + n).level "
        "for n in ('guards', 'recompiles', 'fusion')])"
    )
    env = {**os.environ, "BYTEGRAPH_LOGS": "+guards,recompiles"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"[{logging.DEBUG}, {logging.INFO}, {logging.NOTSET}]"
