"""``bytegraph.explain``: break reasons (kind, file:line, source line, hint), graphs and ops,
guards, recompile reasons, and that explaining never touches a compiled function's own cache.

Counts are checked against what a ``CompileCounter`` backend saw, not hard-coded, where graph breaks
decide them.
"""

from __future__ import annotations

import inspect
import threading

import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer.driver import CompileEvent
from bytegraph.tracer.exc import Unsupported, UserLocation

import bytegraph
from bytegraph.explain import BreakReason, CompileRecord, Recorder, Report


def prints_in_the_middle(x):
    y = x.sin()
    print("explain me")
    return y * 2


def one_graph(x):
    return torch.relu(x) + 1


def scaled(x, n):
    return (x * n).relu()


def line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn``'s source containing ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_break_reason_has_kind_location_line_and_hint(capsys):
    out = bytegraph.explain(prints_in_the_middle)(torch.randn(3))
    assert capsys.readouterr().out == "explain me\n"
    assert out.graph_break_count == len(out.break_reasons) == 1
    br = out.break_reasons[0]
    assert br.kind == "print"
    assert br.function == "prints_in_the_middle"
    assert (br.filename, br.lineno) == (__file__, line_of(prints_in_the_middle, "print("))
    assert br.line == 'print("explain me")'
    assert br.hint


def test_graph_count_matches_counting_backend():
    counter = CompileCounter()
    out = bytegraph.explain(prints_in_the_middle, backend=counter)(torch.randn(3))
    assert out.graph_count == counter.frame_count
    assert all(a is b for a, b in zip(out.graphs, counter.graphs, strict=True))
    assert sum(len(ops) for ops in out.ops_per_graph) == out.op_count == counter.op_count


def test_ops_and_guards_of_one_graph():
    out = bytegraph.explain(one_graph)(torch.randn(4))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.ops_per_graph == [["relu", "add"]]
    assert "L['x'].shape == (4,)" in out.guards
    assert out.recompiles == []


def test_report_text_lists_sections():
    text = str(bytegraph.explain(prints_in_the_middle)(torch.randn(3)))
    lineno = line_of(prints_in_the_middle, "print(")
    assert "Graph break count: 1\n" in text
    assert (
        "Break reasons:\n  1. print: call to print()  [graph break in prints_in_the_middle]\n"
    ) in text
    assert f"     at {__file__}:{lineno} in prints_in_the_middle\n" in text
    assert '       print("explain me")\n' in text
    assert "     hint: " in text
    assert "Guards:\n  prints_in_the_middle (first call):\n    type(L['x']) is ___Tensor\n" in text


def test_second_call_reports_recompile_reason():
    explainer = bytegraph.explain(scaled)
    first = explainer(torch.randn(2), 3)
    assert first.recompiles == []
    second = explainer(torch.randn(2), 4)
    assert second.graph_count == 2
    assert len(second.recompiles) == 1
    recompile = second.recompiles[0]
    assert (recompile.function, recompile.filename) == ("scaled", __file__)
    assert recompile.failures == ["L['n'] == 3"]
    assert "Recompile reasons:\n  scaled (" in str(second) and "): L['n'] == 3" in str(second)
    assert first.graph_count == 1  # a report is a snapshot: later calls do not change it


def test_explaining_a_compiled_function_leaves_its_cache_alone():
    counter = CompileCounter()
    compiled = bytegraph.compile(one_graph, backend=counter)
    x = torch.randn(4)
    compiled(x)
    entries = bytegraph.cache_entries(compiled)
    guards = bytegraph.guard_source(compiled)

    out = bytegraph.explain(compiled)(x)

    assert out.graph_count == 1  # compiled afresh, with explain's own backend...
    assert counter.frame_count == 1  # ...not the function's
    assert bytegraph.cache_entries(compiled) == entries
    assert bytegraph.guard_source(compiled) == guards
    compiled(x)
    assert counter.frame_count == 1 and len(bytegraph.state_of(compiled).events) == 1


def test_explain_bound_method_and_module():
    class Scale(torch.nn.Module):
        def forward(self, x):
            return x * 2

        def twice(self, x):
            return x.cos() * 2

    module = Scale()
    out = bytegraph.explain(module)(torch.randn(2))
    assert out.ops_per_graph == [["mul"]]
    assert module.forward.__func__ is Scale.forward  # the module itself was not compiled
    assert bytegraph.explain(module.twice)(torch.randn(2)).ops_per_graph == [["cos", "mul"]]


def test_explain_silences_bytegraph_warnings(monkeypatch, recwarn):
    monkeypatch.setattr(bytegraph.config, "recompile_limit", 1)
    explainer = bytegraph.explain(scaled)
    explainer(torch.randn(2), 1)
    explainer(torch.randn(2), 2)  # past the limit: bytegraph warns and runs it in Python
    assert [str(w.message) for w in recwarn if "bytegraph" in str(w.message)] == []
    compiled = bytegraph.compile(scaled)
    compiled(torch.randn(2), 1)
    with pytest.warns(UserWarning, match="bytegraph: scaled hit recompile_limit"):
        compiled(torch.randn(2), 2)  # the same calls outside explain do warn


def test_recorder_keeps_only_its_thread_when_asked():
    compiled = bytegraph.compile(one_graph)
    other = bytegraph.compile(scaled)
    with Recorder(thread_only=True) as mine, Recorder() as every:
        worker = threading.Thread(target=other, args=(torch.randn(2), 1))
        worker.start()
        worker.join()
        compiled(torch.randn(2))
    assert [r.function for r in mine.records] == ["one_graph"]
    assert sorted(r.function for r in every.records) == ["one_graph", "scaled"]


def test_break_reason_text_with_inlined_stack():
    # A report built from a hand-made event: formatting alone, independent of what the tracer does.
    e = Unsupported("print", "call to print()", hint="move it out")
    e.user_stack = [
        UserLocation(__file__, line_of(prints_in_the_middle, "y = x.sin()"), "outer"),
        UserLocation(__file__, line_of(prints_in_the_middle, "print("), "inner"),
    ]
    fallback = Unsupported("opcode", "no handler for X")
    records = [
        CompileRecord("outer", __file__, 1, CompileEvent("first call", breaks=[e]), 0),
        CompileRecord("other", __file__, 1, CompileEvent("first call", unsupported=fallback), 1),
    ]
    report = Report(records)
    assert [(br.kind, br.fell_back) for br in report.break_reasons] == [
        ("print", False),
        ("opcode", True),
    ]
    assert str(report.break_reasons[0]) == "\n".join(
        [
            "print: call to print()  [graph break in outer]",
            f"  at {__file__}:{e.user_stack[0].lineno} in outer",
            "    y = x.sin()",
            f"  at {__file__}:{e.user_stack[1].lineno} in inner",
            '    print("explain me")',
            "  hint: move it out",
        ]
    )
    assert str(report.break_reasons[1]) == "opcode: no handler for X  [other ran in Python]"
    assert report.break_reasons[1].line == "" and report.break_reasons[1].lineno == 0
    assert BreakReason.of("f", e, fell_back=False).location is e.user_stack[-1]


def three_kinds_of_break(x):
    y = x.sin()
    print("a side effect")
    s = y.sum().tolist()
    if y.mean() > 0:
        y = y + s
    return y * 2


@bytegraph.config.patch(speculate=False)  # a break at a branch on data is one of the three
def test_report_with_three_different_break_reasons(capsys):
    counter = CompileCounter()
    x = torch.ones(4)
    report = bytegraph.explain(three_kinds_of_break, backend=counter)(x)
    assert report.graph_break_count == 3
    assert report.graph_count == counter.frame_count == 4
    kinds = [r.kind for r in report.break_reasons]
    assert kinds == ["print", "tensor_to_python", "data_dependent"]
    expected_lines = ['print("a side effect")', "s = y.sum().tolist()", "if y.mean() > 0:"]
    for reason, text in zip(report.break_reasons, expected_lines, strict=True):
        assert reason.filename == __file__
        assert reason.lineno == line_of(three_kinds_of_break, text)
        assert reason.line == text
        assert reason.hint
    text = str(report)
    for line in expected_lines:
        assert line in text
    torch.testing.assert_close(three_kinds_of_break(x), (x.sin() + x.sin().sum()) * 2)


def doubled_or_negated(x):
    if x.sum() > 0:
        return x * 2
    return -x


def test_why_lists_each_speculated_branch_with_its_hits_and_misses():
    compiled = bytegraph.compile(doubled_or_negated, backend="eager")
    pos, neg = torch.ones(3), -torch.ones(3)
    with bytegraph.config.patch(speculate=True, speculation_miss_limit=3):
        for x in (pos, pos, neg, pos):
            torch.testing.assert_close(compiled(x), doubled_or_negated(x))
        answer = bytegraph.why(compiled, pos)
    line = line_of(doubled_or_negated, "if x.sum() > 0:")
    assert [len(sites) for sites in answer.speculated.values()] == [1]
    assert str(answer).splitlines() == [
        "selected: entry 0",
        f"entry 0 speculates on: {__file__}:{line} in doubled_or_negated: 3 hits, 1 misses",
        "    if x.sum() > 0:",
    ]


def test_why_lists_no_speculated_branch_when_the_branch_breaks():
    compiled = bytegraph.compile(doubled_or_negated, backend="eager")
    with bytegraph.config.patch(speculate=False):
        compiled(torch.ones(3))
        answer = bytegraph.why(compiled, torch.ones(3))
    assert answer.speculated == {} and str(answer) == "selected: entry 0"
