"""The pytest plugin (``bytegraph.pytest_plugin``), run through pytest's own ``pytester``.

The inner runs are inline (same process), so the plugin is loaded the way users get it: through the
``pytest11`` entry point of the installed bytegraph, never with ``-p``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import bytegraph

pytest_plugins = ["pytester"]

MODEL = """import torch
import bytegraph


@bytegraph.compile
def clean(x):
    return torch.relu(x) + 1


@bytegraph.compile
def breaks(x):
    y = x.sin()
    print("side effect")
    return y * 2


@bytegraph.compile(dynamic=False)
def scaled(x, n):
    return x * n
"""

PRINT_LINE = MODEL.splitlines().index('    print("side effect")') + 1
#: Where reports place ``scaled``: its first line, for a decorated function the decorator's.
SCALED_LINE = MODEL.splitlines().index("def scaled(x, n):")  # dynamic=False: each n recompiles


def assert_lines_in_order(result: pytest.RunResult, parts: list[str]) -> None:
    """Each of ``parts`` is in a line of stdout, in this order (plain substrings: no glob, since
    guard text has brackets)."""
    lines, i = result.stdout.lines, 0
    for part in parts:
        while i < len(lines) and part not in lines[i]:
            i += 1
        assert i < len(lines), f"{part!r} not found (in order) in:\n{result.stdout.str()}"
        i += 1


@pytest.fixture(scope="module", autouse=True)
def _import_lazy_modules_first():
    """pytester's inline runs drop from ``sys.modules`` what was first imported inside them, and
    extension modules (triton, torch._inductor...) abort the process when imported twice. So the
    backends and the compile/break/recompile paths are imported here, outside any inline run."""
    bytegraph.list_backends()
    namespace: dict = {}
    exec(compile(MODEL, "<warm-up model>", "exec"), namespace)
    namespace["clean"](torch.ones(2))
    namespace["breaks"](torch.ones(2))
    namespace["scaled"](torch.ones(2), 1)
    namespace["scaled"](torch.ones(2), 2)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(model=MODEL)
    pytester.syspathinsert()
    assert (
        pytester.path.joinpath("model.py").read_text().splitlines()[PRINT_LINE - 1].strip()
        == 'print("side effect")'
    )
    return pytester


def test_markers_registered_by_the_entry_point(project):
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.no_graph_breaks:*", "@pytest.mark.max_recompiles(n):*"]
    )


def test_markers_pass_strict_markers(project):
    project.makepyfile(
        test_strict="""
        import pytest, torch, model

        @pytest.mark.no_graph_breaks
        @pytest.mark.max_recompiles(0)
        def test_it():
            model.clean(torch.ones(2))
    """
    )
    project.runpytest("--strict-markers").assert_outcomes(passed=1)


def test_no_graph_breaks_fails_and_lists_the_break(project):
    project.makepyfile(
        test_breaks="""
        import pytest, torch, model

        @pytest.mark.no_graph_breaks
        def test_breaking():
            model.breaks(torch.ones(2))

        @pytest.mark.no_graph_breaks
        def test_clean():
            model.clean(torch.ones(2))

        def test_unmarked_break_is_allowed():
            model.breaks(torch.ones(2))
    """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_breaking*",
            "*bytegraph: 1 graph break(s) in a test run with no_graph_breaks:",
            "*1. print: call to print()*breaks*",
            f"*at *model.py:{PRINT_LINE} in breaks",
            '*print("side effect")',
            "*hint: *",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_breaks.py::test_breaking*"])


def test_no_graph_breaks_lists_a_break_in_a_callee_once(project):
    project.makepyfile(
        test_callee="""
        import pytest, torch, bytegraph

        def leaf(t):
            print("in leaf")
            return t + 1

        @bytegraph.compile
        def caller(x):
            return leaf(x * 2) - 1

        @pytest.mark.no_graph_breaks
        def test_breaking():
            caller(torch.ones(2))
    """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*bytegraph: 1 graph break(s) in a test run with no_graph_breaks:", "*1. print: *caller*"]
    )
    result.stdout.no_fnmatch_line("*2. print: *")


def test_option_applies_no_graph_breaks_everywhere(project):
    project.makepyfile(
        test_option="""
        import torch, model

        def test_unmarked_break():
            model.breaks(torch.ones(2))

        def test_unmarked_clean():
            model.clean(torch.ones(2))
    """
    )
    result = project.runpytest("--bytegraph-no-graph-breaks")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*in a test run with --bytegraph-no-graph-breaks:",
            "FAILED test_option.py::test_unmarked_break*",
        ]
    )


def test_max_recompiles(project):
    project.makepyfile(
        test_recompiles="""
        import pytest, torch, model

        @pytest.mark.max_recompiles(1)
        def test_too_many():
            for n in range(3):  # first compile, then 2 recompiles
                model.scaled(torch.ones(2), n)

        @pytest.mark.max_recompiles(0)
        def test_cached_entries_are_not_recompiles():
            for n in range(3):  # the entries compiled by the test above
                model.scaled(torch.ones(2), n)

        @pytest.mark.max_recompiles(2)
        def test_within_limit():
            for n in range(10, 12):
                model.scaled(torch.ones(2), n)
    """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    assert_lines_in_order(
        result,
        [
            "bytegraph: scaled recompiled 2 times (max_recompiles(1)):",
            "  - L['n'] == 0",
            "  - L['n'] == 0; L['n'] == 1",
            "FAILED test_recompiles.py::test_too_many",
        ],
    )


def test_bad_max_recompiles_argument_fails_the_test(project):
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.max_recompiles("two")
        def test_it():
            pass
    """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*max_recompiles needs a non-negative int*"])


def test_failing_test_keeps_its_own_failure(project):
    project.makepyfile(
        test_own="""
        import pytest, torch, model

        @pytest.mark.no_graph_breaks
        def test_it():
            model.breaks(torch.ones(2))
            assert 1 == 2, "the test's own failure"
    """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the test's own failure*",
            "*Captured bytegraph call*",
            f"graph break at model.py:{PRINT_LINE} in breaks:*",
        ]
    )


def test_terminal_summary_lists_breaks_and_recompiles_per_test(project):
    project.makepyfile(
        test_summary="""
        import torch, model

        def test_break():
            model.breaks(torch.ones(2))

        def test_recompile():
            model.scaled(torch.ones(2), 1)
            model.scaled(torch.ones(2), 2)

        def test_quiet():
            model.clean(torch.ones(2))
    """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=3)
    assert_lines_in_order(
        result,
        [
            "= bytegraph: graph breaks and recompiles =",
            "test_summary.py::test_break",
            f"  graph break at model.py:{PRINT_LINE} in breaks: print: call to print()"
            '  -> print("side effect")',
            "test_summary.py::test_recompile",
            f"  recompile of scaled (model.py:{SCALED_LINE}): L['n'] == 1",
        ],
    )
    assert "test_summary.py::test_quiet" not in result.stdout.str()


def test_report_fixture_sees_graphs_breaks_and_recompiles(project):
    project.makepyfile(
        test_fixture="""
        import bytegraph, torch
        from bytegraph.backends.debug import CompileCounter

        def test_it(bytegraph_report):
            assert bytegraph_report.graph_count == 0
            counter = CompileCounter()

            def fn(x):
                y = x.cos()
                print("in fixture test")
                return y + 1

            bytegraph.compile(fn, backend=counter)(torch.ones(2))
            assert bytegraph_report.graph_count == counter.frame_count
            assert [b.kind for b in bytegraph_report.break_reasons] == ["print"]
            assert bytegraph_report.break_reasons[0].line == 'print("in fixture test")'

            scaled = bytegraph.compile(lambda x, n: x * n, backend=counter)
            scaled(torch.ones(2), 1)
            scaled(torch.ones(2), 2)
            assert [r.failures for r in bytegraph_report.recompiles] == [["L['n'] == 1"]]
    """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_plugin_can_be_disabled(project):
    project.makepyfile(
        test_disabled="""
        import pytest, torch, model

        def test_it():
            model.breaks(torch.ones(2))
    """
    )
    result = project.runpytest("-p", "no:bytegraph", "--bytegraph-no-graph-breaks")
    assert result.ret != 0  # the option is unknown without the plugin
    result.stderr.fnmatch_lines(["*unrecognized arguments: --bytegraph-no-graph-breaks*"])


def test_example_project_runs(pytester):
    example = Path(__file__).parents[2] / "examples" / "pytest_plugin"
    for name in ("shapes.py", "test_shapes.py"):
        pytester.path.joinpath(name).write_text(example.joinpath(name).read_text())
    pytester.syspathinsert()
    pytester.runpytest("--strict-markers").assert_outcomes(passed=2, xfailed=1)
    result = pytester.runpytest("--runxfail")
    result.assert_outcomes(passed=2, failed=1)
    assert_lines_in_order(
        result,
        [
            "1. print: call to print()  [graph break in noisy_normalize]",
            "shapes.py:",
            'print("normalized", tuple(y.shape))',
        ],
    )
