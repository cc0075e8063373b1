"""torch.compiler's decorators, both ways: bytegraph's own (``bytegraph.disable``,
``allow_in_graph``, ``assume_constant_result``, ``error_on_graph_break``) and torch's applied to
code that bytegraph compiles. Graph and break counts are compared with ``torch._dynamo.explain``
on the same function.
"""

from __future__ import annotations

import operator
import sys
import warnings

import pytest
import torch
import torch._dynamo
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer import markers
from bytegraph.tracer.exc import BytegraphError

import bytegraph

CALLS: list[str] = []


def torch_counts(fn, *args):
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(*args)
    return out.graph_count, out.graph_break_count


def our_counts(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = bytegraph.explain(fn)(*args)
    return out.graph_count, out.graph_break_count


# -- disable -----------------------------------------------------------------------------------


@torch.compiler.disable
def torch_disabled(x):
    CALLS.append("torch_disabled")
    return x + 1


@torch.compiler.disable(recursive=False)
def torch_disabled_nonrecursive(x):
    CALLS.append("torch_disabled_nonrecursive")
    return x.cos() + 1


@torch._dynamo.disable(reason="talks to a logger")
def dynamo_disabled(x):
    CALLS.append("dynamo_disabled")
    return x * 3


@bytegraph.disable(reason="talks to a logger")
def our_disabled(x):
    CALLS.append("our_disabled")
    return x - 1


def calls(helper):
    def fn(x):
        y = x.sin()
        y = helper(y)
        return y * 2

    return fn


@pytest.mark.parametrize(
    "helper", [torch_disabled, torch_disabled_nonrecursive, dynamo_disabled, our_disabled]
)
def test_disabled_call_is_one_break_like_torch_compile(helper):
    fn = calls(helper)
    x = torch.randn(4)
    assert our_counts(fn, x) == (2, 1)
    if not helper.__dict__.get("__bytegraph_disabled__"):
        assert torch_counts(fn, x) == (2, 1)


@pytest.mark.parametrize(
    "helper", [torch_disabled, torch_disabled_nonrecursive, dynamo_disabled, our_disabled]
)
def test_disabled_function_runs_once_per_call_with_eager_results(helper):
    fn = calls(helper)
    compiled = bytegraph.compile(fn)
    x = torch.randn(4)
    CALLS.clear()
    torch.testing.assert_close(compiled(x), fn(x))
    assert CALLS == [helper.__name__] * 2
    compiled(x)
    assert CALLS == [helper.__name__] * 3


def test_break_names_the_disable_and_its_reason():
    out = bytegraph.explain(calls(our_disabled))(torch.randn(3))
    (reason,) = out.break_reasons
    assert reason.kind == "disabled"
    assert "bytegraph.disable" in reason.reason and reason.hint == "talks to a logger"
    assert reason.line == "y = helper(y)"
    torch_reason = bytegraph.explain(calls(dynamo_disabled))(torch.randn(3)).break_reasons[0]
    assert "torch.compiler.disable" in torch_reason.reason
    assert torch_reason.hint == "talks to a logger"


def test_disabled_method_of_a_submodule_is_one_break():
    class Inner(torch.nn.Module):
        @torch.compiler.disable
        def forward(self, x):
            CALLS.append("inner")
            return x + 1

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x.sin()).cos()

    model = Outer()
    x = torch.randn(3)
    assert our_counts(model, x) == torch_counts(model, x) == (2, 1)


def test_our_disable_on_a_module_runs_its_forward_in_python():
    linear = torch.nn.Linear(3, 3)
    bytegraph.disable(linear)

    def fn(x):
        return linear(x.relu()).sum()

    x = torch.randn(2, 3)
    assert our_counts(fn, x) == (2, 1)
    torch.testing.assert_close(bytegraph.compile(fn)(x), fn(x))


def test_compiling_a_disabled_function_returns_it():
    assert bytegraph.compile(our_disabled) is our_disabled
    assert bytegraph.compile(torch_disabled) is torch_disabled


def test_disable_of_a_compiled_function_runs_the_original():
    compiled = bytegraph.compile(lambda x: x + 1)
    plain = bytegraph.disable(compiled)
    x = torch.randn(2)
    torch.testing.assert_close(plain(x), x + 1)
    assert bytegraph.cache_entries(compiled) == []


def test_disable_as_a_decorator_factory_keeps_the_function_name():
    @bytegraph.disable(recursive=False)
    def helper(x):
        return x

    assert helper.__name__ == "helper"
    assert helper.__bytegraph_disabled__.recursive is False


# -- allow_in_graph ------------------------------------------------------------------------------


def our_allowed(x, y):
    CALLS.append("our_allowed")
    return x * y + 1


bytegraph.allow_in_graph(our_allowed)


def torch_allowed(x):
    CALLS.append("torch_allowed")
    return x.relu() * 2


torch.compiler.allow_in_graph(torch_allowed)


def test_allow_in_graph_function_is_one_graph_node():
    def fn(x, y):
        return our_allowed(x.sin(), y) - 1

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(compiled(x, y), fn(x, y))
    (gm,) = counter.graphs
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert our_allowed in targets
    assert torch.mul not in targets and "mul" not in [getattr(t, "__name__", t) for t in targets]


def test_torch_allow_in_graph_is_honoured():
    def fn(x):
        return torch_allowed(x + 1).sum()

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.randn(5)
    torch.testing.assert_close(compiled(x), fn(x))
    assert counter.frame_count == 1
    assert torch_allowed in [n.target for n in counter.graphs[0].graph.nodes]


def test_allow_in_graph_function_runs_at_each_call():
    compiled = bytegraph.compile(lambda x: our_allowed(x, x))
    x = torch.randn(2)
    compiled(x)
    CALLS.clear()
    compiled(x)
    compiled(x)
    assert CALLS == ["our_allowed", "our_allowed"]


def test_allow_in_graph_refuses_non_callables():
    with pytest.raises(TypeError, match="expects a callable"):
        bytegraph.allow_in_graph(3)


# -- assume_constant_result -------------------------------------------------------------------

SCALE = {"value": 2.0}


@bytegraph.assume_constant_result
def our_scale():
    CALLS.append("our_scale")
    return SCALE["value"]


@torch._dynamo.assume_constant_result
def torch_scale(k):
    CALLS.append("torch_scale")
    return SCALE["value"] * k


@pytest.mark.parametrize("scale", [lambda: our_scale(), lambda: torch_scale(1)])
def test_assume_constant_result_is_called_once_while_tracing(scale):
    def fn(x):
        return x * scale()

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.randn(3)
    CALLS.clear()
    torch.testing.assert_close(compiled(x), x * 2)
    torch.testing.assert_close(compiled(x), x * 2)
    assert len(CALLS) == 1 and counter.frame_count == 1


def test_assume_constant_result_is_not_guarded():
    compiled = bytegraph.compile(lambda x: x * our_scale())
    x = torch.ones(2)
    compiled(x)
    SCALE["value"] = 5.0
    try:
        torch.testing.assert_close(compiled(x), x * 2)  # the assumption, as torch.compile makes it
    finally:
        SCALE["value"] = 2.0


def test_assume_constant_result_with_tensor_arguments_breaks():
    @bytegraph.assume_constant_result
    def needs_tensor(t):
        return float(t.sum())

    out = bytegraph.explain(lambda x: x * needs_tensor(x))(torch.ones(2))
    assert [r.kind for r in out.break_reasons] == ["constant_result"]


# -- error_on_graph_break ---------------------------------------------------------------------


def prints(x):
    y = x.sin()
    print("break")
    return y.cos()


def test_error_on_graph_break_around_a_call_raises_at_the_break(capsys):
    compiled = bytegraph.compile(prints)
    with bytegraph.error_on_graph_break(), pytest.raises(BytegraphError, match="print"):
        compiled(torch.randn(2))
    torch.testing.assert_close(compiled(torch.ones(2)), prints(torch.ones(2)))  # outside: breaks


def test_error_on_graph_break_false_inside_true_allows_breaks():
    compiled = bytegraph.compile(prints)
    with bytegraph.error_on_graph_break(True), bytegraph.error_on_graph_break(False):
        compiled(torch.randn(2))
    assert len(bytegraph.cache_entries(compiled)) == 1


def test_error_on_graph_break_decorator_on_a_compiled_function():
    @bytegraph.error_on_graph_break()
    @bytegraph.compile
    def fn(x):
        return prints(x)

    with pytest.raises(BytegraphError):
        fn(torch.randn(2))


def test_error_on_graph_break_marks_breaks_in_a_decorated_callee():
    @bytegraph.error_on_graph_break()
    def strict(x):
        print("no breaks here")
        return x

    def lenient(x):
        print("fine")
        return x

    fn = bytegraph.compile(lambda x: strict(x.sin()) + 1)
    with pytest.raises(BytegraphError, match="without a graph break"):
        fn(torch.randn(2))
    ok = bytegraph.compile(lambda x: lenient(x.sin()) + 1)
    with bytegraph.error_on_graph_break(True):
        with pytest.raises(BytegraphError):
            ok(torch.randn(2))
    relaxed = bytegraph.error_on_graph_break(False)(lenient)
    fine = bytegraph.compile(lambda x: relaxed(x.sin()) + 1)
    with bytegraph.error_on_graph_break(True):
        torch.testing.assert_close(fine(torch.ones(2)), torch.ones(2).sin() + 1)


def test_torch_error_on_graph_break_setting_is_honoured():
    compiled = bytegraph.compile(prints)
    with torch._dynamo.error_on_graph_break(True), pytest.raises(BytegraphError):
        compiled(torch.randn(2))


def test_fullgraph_wins_over_error_on_graph_break_false():
    compiled = bytegraph.compile(prints, fullgraph=True)
    with bytegraph.error_on_graph_break(False), pytest.raises(BytegraphError):
        compiled(torch.randn(2))


def test_is_compiling_is_true_while_tracing_only():
    def fn(x):
        return x + 1 if torch.compiler.is_compiling() else x - 1

    x = torch.zeros(1)
    assert bytegraph.compile(fn)(x).item() == 1
    assert fn(x).item() == -1


# -- substitute_in_graph ----------------------------------------------------------------------


def index_of(a, b, /):
    for i, item in enumerate(a):
        if item is b or item == b:
            return i
    raise ValueError("sequence.index(x): x not in sequence")


def test_a_c_function_without_substitute_breaks():
    out = bytegraph.explain(lambda x, items: x * sys.getsizeof(items))(torch.ones(2), [2, 2])
    assert out.graph_break_count == 1


def test_substitute_in_graph_traces_the_polyfill(monkeypatch):
    monkeypatch.setattr(markers, "SUBSTITUTES", {})
    wrapped = bytegraph.substitute_in_graph(operator.indexOf)(index_of)
    assert wrapped([1, 2, 3], 3) == 2 and wrapped.__name__ == "index_of"

    def fn(x, items):
        return x * operator.indexOf(items, 3) + wrapped(items, 2)

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    x = torch.ones(2)
    torch.testing.assert_close(compiled(x, [1, 2, 3]), fn(x, [1, 2, 3]))
    torch.testing.assert_close(compiled(x, [3, 2, 1]), fn(x, [3, 2, 1]))  # a new list: guarded
    assert counter.frame_count == 2


def test_substitute_can_constant_fold_through(monkeypatch):
    monkeypatch.setattr(markers, "SUBSTITUTES", {})
    calls = []

    def polyfill(a, b, /):
        calls.append("traced")
        return index_of(a, b)

    bytegraph.substitute_in_graph(operator.indexOf, can_constant_fold_through=True)(polyfill)
    compiled = bytegraph.compile(lambda x: x * operator.indexOf((1, 2, 3), 3), fullgraph=True)
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert calls == []  # folded by calling indexOf itself


def test_substitute_signature_must_match(monkeypatch):
    monkeypatch.setattr(markers, "SUBSTITUTES", {})
    with pytest.raises(TypeError, match="signature mismatch"):
        bytegraph.substitute_in_graph(operator.indexOf)(lambda a, b, c: 0)
    bytegraph.substitute_in_graph(operator.indexOf, skip_signature_check=True)(lambda a, b, c: 0)
    with pytest.raises(ValueError, match="already has a substitute"):
        bytegraph.substitute_in_graph(operator.indexOf)(index_of)


def test_torch_substitute_in_graph_is_honoured(monkeypatch):
    monkeypatch.setattr(markers, "SUBSTITUTES", {})
    handlers = torch._dynamo.variables.functions.PolyfilledFunctionVariable._get_polyfill_handlers()
    if operator.countOf not in handlers:

        @torch.compiler.substitute_in_graph(operator.countOf)
        def count_of(a, b, /):
            return sum(1 for item in a if item is b or item == b)

    def fn(x, items):
        return x * operator.countOf(items, 2)

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    torch.testing.assert_close(compiled(torch.ones(2), [2, 1, 2]), fn(torch.ones(2), [2, 1, 2]))
    assert counter.frame_count == 1
