"""Never drop a side effect: a recorded call whose result is not a tensor is
erased only when proven pure; one operator with an effect its schema states stays in the graph as an
effectful node; anything else breaks the graph and runs in Python.

Before, every call from a torch namespace ran on fake tensors and was erased whenever its result was
None or a constant: ``dist.all_reduce`` (tests/distributed), ``aten._foreach_add_.Scalar``,
``torch.autograd.backward``, ``increment_version`` and ``inference_mode.__exit__`` silently did
nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer import effects
from difftest import assert_same

import bytegraph


def test_mutating_operator_returning_none_stays_in_the_graph():
    def fn(a, b):
        torch.ops.aten._foreach_add_.Scalar([a, b], 1.0)  # returns None
        return a * 2

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    actual_args, expected_args = (torch.zeros(2), torch.ones(2)), (torch.zeros(2), torch.ones(2))
    assert_same(compiled(*actual_args), fn(*expected_args))
    assert_same(actual_args, expected_args)
    (gm,) = counter.graphs
    (node,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten._foreach_add_.Scalar]
    assert effects.is_effectful(node) and node.is_impure()
    gm.graph.eliminate_dead_code()  # what a backend's dead-code pass does
    assert node in gm.graph.nodes


def test_python_function_with_effects_breaks_and_runs():
    def fn(w, x):
        loss = (w * x).sum()
        torch.autograd.backward(loss)
        return loss.detach()

    w1, w2 = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    report = bytegraph.explain(fn)(w1, torch.full((2,), 3.0))
    fn(w2, torch.full((2,), 3.0))
    assert_same(w1.grad, w2.grad)  # before: the backward was erased and no gradient appeared
    assert report.graph_break_count >= 1, report  # its body is traced; the engine call breaks


def test_c_function_returning_none_breaks_and_runs():
    def fn(x):
        torch.autograd.graph.increment_version(x)
        return x + 1

    x1, x2 = torch.ones(2), torch.ones(2)
    report = bytegraph.explain(fn)(x1)
    fn(x2)
    assert x1._version == x2._version
    # increment_version's body is traced (it returned None); its C call breaks
    kinds = [(b.kind, b.line) for b in report.break_reasons]
    assert kinds and all(k == ("effect", "torch._C._increment_version(tensor)") for k in kinds)


def test_python_helper_returning_none_as_a_value_is_traced_through():
    def fn(x, mask):
        mask = torch.nn.functional._canonical_mask(
            mask=mask, mask_name="mask", other_type=None, other_name="", target_type=x.dtype
        )
        return x + 1 if mask is None else x

    report = bytegraph.explain(fn)(torch.ones(2), None)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report


def test_pure_check_returning_none_is_folded():
    def fn(x):
        torch._check(x.shape[0] == 3)
        return x * 2

    report = bytegraph.explain(fn)(torch.ones(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    assert report.ops_per_graph == [["mul"]]


def test_query_returning_a_constant_is_folded():
    def fn(x):
        return x * torch.numel(x) if torch.is_floating_point(x) else x

    report = bytegraph.explain(fn)(torch.ones(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    assert report.ops_per_graph == [["mul"]]


def test_tensor_setitem_stays_in_the_graph_as_an_effect():
    def fn(x):
        y = x.clone()
        y[0] = 5.0
        return y

    counter = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=counter)(torch.ones(3)), fn(torch.ones(3)))
    (gm,) = counter.graphs
    assert any(effects.is_effectful(n) for n in gm.graph.nodes)


def test_only_four_places_erase_recorded_nodes():
    """The class of bug is a node erased without proof: ``_wrap_result`` erases only what
    ``effects.classify`` calls pure, ``restore`` only rolls back an instruction,
    ``graph_module`` only drops unused shape arithmetic that is not effectful, and
    ``python_numbers.Split.prune_inputs`` only number inputs nothing reads (placeholders, which
    have no effect). A new place that erases nodes must come with the same care (and be added
    here)."""
    root = Path(bytegraph.__file__).resolve().parent.parent / "tracer"
    sites = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for call in ast.walk(fn):
                    if (
                        isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Attribute)
                        and call.func.attr in ("erase_node", "eliminate_dead_code")
                    ):
                        sites.add((path.name, fn.name))
    assert sites == {
        ("output_graph.py", "_wrap_result"),
        ("output_graph.py", "restore"),
        ("output_graph.py", "graph_module"),
        ("python_numbers.py", "prune_inputs"),
    }


def test_call_changing_global_state_breaks_and_leaves_no_trace():
    def fn(x):
        y = x * 2
        torch._C._set_grad_enabled(False)  # caught by name; the probe would catch it otherwise
        z = y * 3
        torch._C._set_grad_enabled(True)
        return z

    x = torch.ones(2, requires_grad=True)
    assert_same(bytegraph.compile(fn)(x), fn(x))
    assert torch.is_grad_enabled()


def test_probe_undoes_and_reports_a_global_state_change():
    probe = effects.EffectProbe()
    fake_mode = effects.ProbedFakeTensorMode()
    with probe.watching(fake_mode):
        torch.set_default_dtype(torch.float64)
    assert probe.state_changed == ["default dtype"]
    assert torch.get_default_dtype() is torch.float32


def test_trace_fakes_run_without_torchs_dispatch_cache():
    """The trace's fake mode leaves torch's fake-tensor dispatch cache alone (no lookups, no
    entries: each entry costs a second fake output, and in a trace the cache seldom hits), and
    operators the short way does not decide still get their fake results from torch."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def counts():
        bypasses = sum(FakeTensorMode.cache_bypasses.values())
        return FakeTensorMode.cache_hits, FakeTensorMode.cache_misses, bypasses

    def fn(x, mask):
        return x[mask].cumsum(0), torch.linalg.vector_norm(x, dim=1).cummax(0).values

    x, mask = torch.randn(6, 3), torch.tensor([True, False, True, True, False, True])
    before = counts()
    assert_same(bytegraph.compile(fn, backend="eager")(x, mask), fn(x, mask))
    assert counts() == before
