"""``torch.utils.checkpoint.checkpoint`` traced as a subgraph (``tracer/variables/subgraphs.py``):
one node calling the traced body, with the same values, gradients (of inputs and parameters) and
recomputation as eager, on the ``eager`` and ``aot_eager`` backends; bodies with effects break."""

from __future__ import annotations

import contextlib
import functools
import warnings

import pytest
import torch
import torch.utils.checkpoint as ck
from bytegraph.backends.state_nodes import RUNTIME
from bytegraph.tracer.variables.subgraphs import CONTEXT_FN, checkpoint_region
from difftest import assert_same, tensors_in
from dynamo_baseline import assert_no_more_breaks, dynamo_counts
from torch import nn

import bytegraph

torch.manual_seed(0)
LIN = nn.Linear(4, 4)
MLP = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))


def lambda_body(t):
    return ck.checkpoint(lambda x: LIN(x).relu(), t, use_reentrant=False).sum()


def nested_function(t):
    def body(x):
        return torch.tanh(LIN(x)) * 2

    return ck.checkpoint(body, t, use_reentrant=False)


def module_as_function(t):
    return ck.checkpoint(MLP, t, use_reentrant=False)


def with_kwargs(t, u):
    def body(x, scale=1.0, bias=None):
        return LIN(x) * scale + bias

    return ck.checkpoint(body, t, use_reentrant=False, scale=3.0, bias=u)


def several_outputs(t):
    def body(x):
        y = LIN(x)
        return y.sin(), {"cos": y.cos(), "n": 3}

    return ck.checkpoint(body, t, use_reentrant=False)


def nested(t):
    def inner(x):
        return LIN(x).sin()

    def outer(x):
        return ck.checkpoint(inner, x * 2, use_reentrant=False).cos() + x

    return ck.checkpoint(outer, t, use_reentrant=False)


def under_autocast(t):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ck.checkpoint(lambda x: LIN(x).relu(), t, use_reentrant=False)
    return y.float() * 2


def with_blocks_inside(t):
    def body(x):
        with torch.no_grad():
            y = LIN(x) * 2
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = LIN(y + x)
        return z.float().relu()

    return ck.checkpoint(body, t, use_reentrant=False)


def fills_its_own_list(t):
    def body(x):
        found = []
        for layer in MLP:
            x = layer(x)
            found.append(x)
        return found

    return ck.checkpoint(body, t, use_reentrant=False)


def reentrant(t):
    return ck.checkpoint(lambda x: LIN(x).relu(), t, use_reentrant=True)


def returns_its_inputs(t):
    def body(x, y):
        return x, {"y": y, "cos": y.cos()}

    y = t * 2
    same, found = ck.checkpoint(body, y, t, use_reentrant=False)
    return same + found["cos"], same is y, found["y"] is t


def set_grad_enabled_block(t):
    def body(x):
        with torch.set_grad_enabled(False):
            y = LIN(x) * 2
        return LIN(x).sin() + y, y.requires_grad

    return ck.checkpoint(body, t, use_reentrant=False)


def set_grad_enabled_calls(t):
    def body(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return LIN(y).sin() + x, y.requires_grad

    return ck.checkpoint(body, t, use_reentrant=False)


def reentrant_without_grad(t):
    """No argument requires grad: eager runs the body under no_grad (LIN's parameters do)."""

    def body(x):
        y = LIN(x)
        return y.relu(), y.requires_grad, torch.is_grad_enabled()

    return ck.checkpoint(body, t, use_reentrant=True)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, hidden, mask=None):
        return (self.b(torch.relu(self.a(hidden))) + hidden,)


class Model(nn.Module):
    """transformers' gradient checkpointing: a partial of ``checkpoint`` called with
    ``layer.__call__``."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.gradient_checkpointing = True
        self._gradient_checkpointing_func = functools.partial(ck.checkpoint, use_reentrant=False)

    def forward(self, hidden):
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden = self._gradient_checkpointing_func(layer.__call__, hidden, None)[0]
            else:
                hidden = layer(hidden)[0]
        return hidden


MODEL = Model()


def transformers_layers(t):
    return MODEL(t)  # a function: compiling the module itself would patch its forward


def grad_input(*shape):
    return lambda: (torch.randn(*shape, requires_grad=True),)


CASES = {
    "lambda": (lambda_body, grad_input(2, 4), [LIN]),
    "nested_function": (nested_function, grad_input(3, 4), [LIN]),
    "module": (module_as_function, grad_input(2, 4), [MLP]),
    "kwargs": (
        with_kwargs,
        lambda: (torch.randn(2, 4, requires_grad=True), torch.randn(4, requires_grad=True)),
        [LIN],
    ),
    "several_outputs": (several_outputs, grad_input(2, 4), [LIN]),
    "nested": (nested, grad_input(2, 4), [LIN]),
    "under_autocast": (under_autocast, grad_input(2, 4), [LIN]),
    "with_blocks_inside": (with_blocks_inside, grad_input(2, 4), [LIN]),
    "fills_its_own_list": (fills_its_own_list, grad_input(2, 4), [MLP]),
    "reentrant": (reentrant, grad_input(2, 4), [LIN]),
    "returns_its_inputs": (returns_its_inputs, grad_input(2, 4), []),
    "set_grad_enabled_block": (set_grad_enabled_block, grad_input(2, 4), [LIN]),
    "set_grad_enabled_calls": (set_grad_enabled_calls, grad_input(2, 4), [LIN]),
    "reentrant_without_grad": (reentrant_without_grad, lambda: (torch.randn(2, 4),), [LIN]),
    "transformers_layers": (transformers_layers, grad_input(2, 4), [MODEL]),
}


def _run(fn, args, modules):
    """The result, the gradients of the arguments and of the modules' parameters after a backward
    of every output."""
    for module in modules:
        module.zero_grad(set_to_none=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager's warnings (a reentrant checkpoint's)
        result = fn(*args)
    needed = [o.sum() for o in tensors_in(result) if o.requires_grad]
    if needed:
        torch.autograd.backward(needed)
    arg_grads = [a.grad for a in args]
    params = [p.grad for module in modules for p in module.parameters()]
    return result, arg_grads, params


def _explain(fn, args):
    bytegraph.reset()
    report = bytegraph.explain(fn)(*args)
    bytegraph.reset()
    return report.graph_count, report.graph_break_count


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(CASES))
def test_checkpoint_traced_like_eager(name, backend):
    fn, make_args, modules = CASES[name]
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        args = make_args()
        eager_args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
        expected = _run(fn, eager_args, modules)
        actual = _run(compiled, args, modules)
        assert_same(actual, expected)
    assert _explain(fn, make_args()) == (1, 0)
    assert dynamo_counts(fn, *make_args()) == (1, 0)


def test_checkpoint_node_in_the_graph():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    bytegraph.reset()
    bytegraph.compile(nested_function, backend=backend)(torch.randn(2, 4, requires_grad=True))
    (gm,) = graphs
    calls = [n for n in gm.graph.nodes if n.target is checkpoint_region]
    assert len(calls) == 1
    body = getattr(gm, calls[0].args[0].target)
    assert isinstance(body, torch.fx.GraphModule)
    # the argument and the Linear's weight and bias are lifted into the body
    assert len(calls[0].args) == 4
    assert [n.op for n in gm.graph.nodes].count("call_function") == 2  # the call, its output


def _saved_tensors(fn, x):
    """How many tensors the forward saves for the backward besides ``x`` and the parameters (the
    activations a checkpoint recomputes instead)."""
    count = 0
    leaves = {t.data_ptr() for t in [x, *MLP.parameters()]}

    def pack(t):
        nonlocal count
        count += t.data_ptr() not in leaves
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    out.sum().backward()
    return count


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_saves_what_eager_saves(backend):
    """Recomputation happens: the compiled call saves no more activations for the backward than
    eager's checkpoint (AOTAutograd's graph may save fewer: eager's checkpoint of torch 2.11 saves
    an empty tensor of its own), fewer than the same body compiled without it."""

    def plain(t):
        return MLP(t)

    x = torch.randn(2, 4, requires_grad=True)
    compiled = bytegraph.compile(module_as_function, backend=backend)
    compiled_plain = bytegraph.compile(plain, backend=backend)
    compiled(x), compiled_plain(x)
    eager = _saved_tensors(module_as_function, x)
    saved = _saved_tensors(compiled, x)
    assert saved <= eager < _saved_tensors(compiled_plain, x)
    if backend == "eager":  # torch's own checkpoint runs
        assert saved == eager


def dropout_body(t):
    def body(x):
        return nn.functional.dropout(LIN(x), 0.5, training=True).relu()

    return ck.checkpoint(body, t, use_reentrant=False, preserve_rng_state=True).sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_dropout_in_checkpoint_same_gradients_as_eager(backend):
    """The recomputation draws the same dropout mask as the forward (torch.compile's eager
    backend runs the higher-order op without preserving the random state, and differs here)."""
    compiled = bytegraph.compile(dropout_body, backend=backend)
    for seed in (1, 2):
        x = torch.randn(8, 4, requires_grad=True)
        results = []
        for fn in (dropout_body, compiled):
            LIN.zero_grad(set_to_none=True)
            xi = x.detach().clone().requires_grad_()
            torch.manual_seed(seed)
            out = fn(xi)
            out.backward()
            results.append((out, xi.grad, LIN.weight.grad, LIN.bias.grad))
        assert_same(results[1], results[0])


def reshaping(t):
    def body(x):
        return LIN(x.reshape(-1, 4)).reshape(x.shape[0], -1).relu()

    return ck.checkpoint(body, t, use_reentrant=False)


@pytest.mark.parametrize("fn", [nested_function, reshaping])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_two_shapes(fn, backend):
    """Calls with other sizes: the body is traced again, then with symbolic sizes."""
    compiled = bytegraph.compile(fn, backend=backend)
    for shape in [(2, 4), (5, 4), (7, 4)]:
        x = torch.randn(*shape, requires_grad=True)
        expected = _run(fn, [x.detach().clone().requires_grad_()], [LIN])
        assert_same(_run(compiled, [x], [LIN]), expected)


def around_a_break(t):
    y = ck.checkpoint(lambda x: LIN(x).relu(), t, use_reentrant=False)
    print("between")
    return ck.checkpoint(lambda x: LIN(x).tanh(), y, use_reentrant=False) + y


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoints_around_a_break(backend, capsys):
    compiled = bytegraph.compile(around_a_break, backend=backend)
    for _ in range(2):
        x = torch.randn(2, 4, requires_grad=True)
        expected = _run(around_a_break, [_copy(x)], [LIN])
        assert_same(_run(compiled, [x], [LIN]), expected)
    assert _explain(around_a_break, (torch.randn(2, 4, requires_grad=True),)) == (2, 1)
    assert dynamo_counts(around_a_break, torch.randn(2, 4, requires_grad=True)) == (2, 1)


def _copy(t):
    return t.detach().clone().requires_grad_(t.requires_grad)


LOG: list[int] = []


def side_effect(t):
    def body(x):
        LOG.append(1)
        return x.sin()

    return ck.checkpoint(body, t, use_reentrant=False)


def in_place_on_input(t):
    def body(x):
        x.mul_(2)
        return x.sin()

    return ck.checkpoint(body, t, use_reentrant=False)


def grad_mode_left_changed(t):
    def body(x):
        torch.set_grad_enabled(False)
        return x.sin() * 2

    y = ck.checkpoint(body, t, use_reentrant=False)
    torch.set_grad_enabled(True)
    return y


def reentrant_returns_its_input(t):
    return ck.checkpoint(lambda x: (x, x.sin()), t, use_reentrant=True)


class Holder:
    def __init__(self):
        self.items = []


def into_an_object_of_the_trace(t):
    holder = Holder()

    def body(x):
        y = x.sin()
        holder.items.append(y)
        return y * 2

    return ck.checkpoint(body, t, use_reentrant=False), holder.items[0]


def into_a_local_dict(t):
    found = {}

    def body(x):
        found["cos"] = x.cos()
        return x * 2

    return ck.checkpoint(body, t, use_reentrant=False), found


def breaking_body(t):
    def body(x):
        print("inside")
        return x.cos()

    return ck.checkpoint(body, t, use_reentrant=False)


@pytest.mark.parametrize(
    ("fn", "dynamo"),
    [
        (side_effect, (0, -1)),  # torch.compile runs the whole call in Python
        (in_place_on_input, (1, 0)),
        (grad_mode_left_changed, (1, 0)),
        (reentrant_returns_its_input, (1, 0)),
        (into_an_object_of_the_trace, (0, -1)),
        (into_a_local_dict, (0, -1)),
        (breaking_body, (0, -1)),
    ],
)
def test_refused_bodies_break_and_stay_correct(fn, dynamo, capsys):
    """A body with effects (a store, an in-place write into its input, a print, grad mode left
    changed), or a reentrant checkpoint giving back its input (eager's autograd Function takes it
    over), breaks at the call: eager's results. (torch.compile traces the in-place write, the
    grad mode and the reentrant call without a break.)"""
    x = torch.randn(2, 4)
    LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager_x = x.clone()
        expected = fn(eager_x)
        eager_log = list(LOG)
        LOG.clear()
        bytegraph.reset()
        actual = bytegraph.compile(fn, backend="eager")(x)
    assert_same(actual, expected)
    assert_same(x, eager_x)
    assert LOG == eager_log
    assert _explain(fn, (torch.randn(2, 4),)) == (0, 1)
    assert dynamo_counts(fn, torch.randn(2, 4)) == dynamo


class CountOps(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_dropout_under_a_user_dispatch_mode():
    """A user's dispatch mode around the call does not make the node take the traced path:
    the recomputation still draws the forward's mask."""
    compiled = bytegraph.compile(dropout_body, backend="eager")
    x = torch.randn(8, 4, requires_grad=True)
    compiled(_copy(x))
    results = []
    for fn in (dropout_body, compiled):
        LIN.zero_grad(set_to_none=True)
        xi = _copy(x)
        torch.manual_seed(3)
        with CountOps():
            out = fn(xi)
            out.backward()
        results.append((out, xi.grad, LIN.weight.grad))
    assert_same(results[1], results[0])


POLICY_CALLS: list[tuple[str, bool, str]] = []


def _policy(ctx, op, *args, **kwargs):
    POLICY_CALLS.append(("save mm", ctx.is_recompute, str(op)))
    if op == torch.ops.aten.mm.default:
        return ck.CheckpointPolicy.MUST_SAVE
    return ck.CheckpointPolicy.PREFER_RECOMPUTE


def _policy_saving_sin(ctx, op, *args, **kwargs):
    POLICY_CALLS.append(("save sin", ctx.is_recompute, str(op)))
    if op == torch.ops.aten.sin.default:
        return ck.CheckpointPolicy.MUST_SAVE
    return ck.CheckpointPolicy.PREFER_RECOMPUTE


SAVE_MM = functools.partial(ck.create_selective_checkpoint_contexts, _policy)
SAC_LIN = nn.Linear(3, 3)


def _sac_body(x):
    return SAC_LIN((x @ x).sin()).sin() * 2


def selective(t):
    context_fn = functools.partial(ck.create_selective_checkpoint_contexts, _policy)
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=context_fn)


def selective_from_global(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=SAVE_MM)


def selective_op_list(t):
    ops = [torch.ops.aten.mm.default]
    context_fn = functools.partial(ck.create_selective_checkpoint_contexts, ops)
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=context_fn)


def selective_dropout_op_list(t):
    ops = [torch.ops.aten.mm.default]
    context_fn = functools.partial(ck.create_selective_checkpoint_contexts, ops)
    body = lambda x: nn.functional.dropout(x @ x, 0.5).sin()  # noqa: E731
    return ck.checkpoint(body, t, use_reentrant=False, context_fn=context_fn)


def selective_dropout(t):
    body = lambda x: nn.functional.dropout(x @ x, 0.5).sin()  # noqa: E731
    return ck.checkpoint(body, t, use_reentrant=False, context_fn=SAVE_MM)


class SelectiveBlock(nn.Module):
    """A layer whose checkpoint's context_fn is an attribute."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.context_fn = SAVE_MM

    def forward(self, t):
        body = lambda x: self.lin(x @ x).relu()  # noqa: E731
        return ck.checkpoint(body, t, use_reentrant=False, context_fn=self.context_fn) + t


SAC_BLOCK = SelectiveBlock()


def selective_nested(t):
    """In a checkpoint's body: eager's outer recomputation runs it (and its policy) again."""

    def outer(x):
        return ck.checkpoint(_sac_body, x * 2, use_reentrant=False, context_fn=SAVE_MM).cos() + x

    return ck.checkpoint(outer, t, use_reentrant=False)


def selective_attribute(t):
    return SAC_BLOCK(t)  # a function: compiling the module itself would patch its forward


#: name -> (function, modules whose gradients are compared, whether eager calls a policy)
SELECTIVE = {
    "made_in_the_call": (selective, [SAC_LIN], True),
    "from_a_global": (selective_from_global, [SAC_LIN], True),
    "op_list": (selective_op_list, [SAC_LIN], False),
    "dropout_op_list": (selective_dropout_op_list, [], False),
    "dropout": (selective_dropout, [], True),
    "attribute": (selective_attribute, [SAC_BLOCK], True),
    "nested": (selective_nested, [SAC_LIN], True),
}


def _sac_input():
    return (torch.arange(9.0).reshape(3, 3) / 10).requires_grad_()


def _sac_runs(fns, modules, seed):
    """Per function: its ``_run`` on a fresh input after ``seed``, and the policy's calls."""
    runs = []
    for fn in fns:
        POLICY_CALLS.clear()
        torch.manual_seed(seed)
        runs.append((_run(fn, [_sac_input()], modules), list(POLICY_CALLS)))
    return runs


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(SELECTIVE))
def test_selective_checkpointing_traced_like_eager(name, backend):
    """Selective checkpointing (a ``context_fn`` of ``create_selective_checkpoint_contexts``,
    made in the call, read from a global or an attribute) in one graph: eager's values,
    gradients of the input and parameters, requires_grad, and the policy called on every call
    with eager's operators (a policy function makes the node run when the graph runs under
    AOTAutograd; a list of operators is AOTAutograd's to apply), as torch.compile's one graph."""
    fn, modules, calls_policy = SELECTIVE[name]
    compiled = bytegraph.compile(fn, backend=backend)
    for seed in (0, 1):
        eager, actual = _sac_runs([fn, compiled], modules, seed)
        assert bool(eager[1]) == calls_policy
        assert_same(actual, eager)
    assert _explain(fn, (_sac_input(),)) == (1, 0)
    assert dynamo_counts(fn, _sac_input()) == (1, 0)


def _captured_checkpoint(fn):
    """The checkpoint node of the one graph bytegraph compiles for ``fn``, and its subgraph."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    bytegraph.reset()
    bytegraph.compile(fn, backend=backend)(_sac_input())
    (gm,) = graphs
    (node,) = [n for n in gm.graph.nodes if n.target is checkpoint_region]
    return node, getattr(gm, node.args[0].target)


def test_selective_policy_function_runs_with_the_graph():
    """A policy function: the node keeps the context_fn and is marked to run when the graph
    runs; a list of operators: not marked (AOTAutograd applies it)."""
    node, body = _captured_checkpoint(selective)
    assert node.meta.get(RUNTIME)
    context_fn = body.meta[CONTEXT_FN]
    assert context_fn.func is ck.create_selective_checkpoint_contexts
    assert context_fn.args == (_policy,)
    node, body = _captured_checkpoint(selective_op_list)
    assert not node.meta.get(RUNTIME)
    assert body.meta[CONTEXT_FN].args == ([torch.ops.aten.mm.default],)


def test_selective_op_list_saves_what_it_lists():
    """Under AOTAutograd the listed operator's result is saved for the backward (the rest is
    recomputed): one more tensor saved than the same checkpoint without a context_fn."""

    def plain(t):
        return ck.checkpoint(_sac_body, t, use_reentrant=False)

    def saved(fn):
        count = 0
        x = _sac_input()
        leaves = {t.data_ptr() for t in [x, *SAC_LIN.parameters()]}

        def pack(t):
            nonlocal count
            count += t.data_ptr() not in leaves
            return t

        fn(x)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = fn(x)
        out.sum().backward()
        return count

    bytegraph.reset()
    listed = saved(bytegraph.compile(selective_op_list, backend="aot_eager"))
    assert listed == saved(bytegraph.compile(plain, backend="aot_eager")) + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_selective_policy_in_a_global_is_guarded(backend, monkeypatch):
    """Another context_fn in the global the call reads: the call uses it (a new variant)."""
    compiled = bytegraph.compile(selective_from_global, backend=backend)
    for policy in (_policy, _policy_saving_sin):
        context_fn = functools.partial(ck.create_selective_checkpoint_contexts, policy)
        monkeypatch.setitem(globals(), "SAVE_MM", context_fn)
        eager, actual = _sac_runs([selective_from_global, compiled], [SAC_LIN], 0)
        assert {call[0] for call in eager[1]} == {"save mm" if policy is _policy else "save sin"}
        assert_same(actual, eager)


def selective_writes_in_place(t):
    def body(x):
        return (x @ x).sin_() * 2

    ops = [torch.ops.aten.mm.default]
    context_fn = functools.partial(ck.create_selective_checkpoint_contexts, ops)
    return ck.checkpoint(body, t, use_reentrant=False, context_fn=context_fn)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_selective_checkpoint_writing_a_saved_result_raises_as_eager(backend):
    """A body writing in place into a result the policy saves: eager's checkpoint raises in the
    backward; so does the compiled call (the node runs when the graph runs, never traced by
    AOTAutograd, whose functional graph would not raise)."""
    compiled = bytegraph.compile(selective_writes_in_place, backend=backend)
    for fn in (selective_writes_in_place, compiled):
        out = fn(_sac_input())
        with pytest.raises(RuntimeError, match="selective activation checkpoint has been mutated"):
            out.sum().backward()
    assert _explain(selective_writes_in_place, (_sac_input(),)) == (1, 0)


def closure_policy(t):
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(str(op))
        return ck.CheckpointPolicy.PREFER_RECOMPUTE

    context_fn = functools.partial(ck.create_selective_checkpoint_contexts, policy)
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=context_fn), len(seen)


def closure_context_fn(t):
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(str(op))
        return ck.CheckpointPolicy.PREFER_RECOMPUTE

    def context_fn():
        return ck.create_selective_checkpoint_contexts(policy)

    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=context_fn), len(seen)


def _autocast_contexts():
    POLICY_CALLS.append(("context_fn", False, "autocast"))
    return torch.autocast("cpu", dtype=torch.bfloat16), torch.autocast("cpu", dtype=torch.bfloat16)


def autocast_contexts(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=_autocast_contexts)


def selective_reentrant(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=True, context_fn=SAVE_MM)


@pytest.mark.parametrize(
    ("fn", "dynamo"),
    [
        # torch.compile keeps the first call's closure: its policy appends to that call's list
        (closure_policy, (1, 0)),
        (closure_context_fn, None),  # torch.compile: an internal error
        # contexts that change what the body computes (torch.compile fails to compile it with
        # aot_eager: "must generate a tuple of two TorchDispatchMode")
        (autocast_contexts, (1, 0)),
    ],
)
def test_untraced_context_fns_break_and_stay_correct(fn, dynamo):
    """A policy made in the call (a closure over its locals) and a context_fn of the user's whose
    contexts change what the body computes break: the checkpoint runs in Python, as in eager."""
    compiled = bytegraph.compile(fn, backend="eager")
    for seed in (0, 1):
        eager, actual = _sac_runs([fn, compiled], [SAC_LIN], seed)
        assert_same(actual, eager)
    assert _explain(fn, (_sac_input(),)) == (0, 1)
    if dynamo is not None:
        assert dynamo_counts(fn, _sac_input()) == dynamo


def _user_context_fn():
    POLICY_CALLS.append(("context_fn", False, ""))
    return ck.create_selective_checkpoint_contexts(_policy)


#: a lambda read from a global
USER_CONTEXT_LAMBDA = lambda: ck.create_selective_checkpoint_contexts(_policy)  # noqa: E731


def _user_null_contexts():
    POLICY_CALLS.append(("context_fn", False, "null"))
    return contextlib.nullcontext(), contextlib.nullcontext()


def _user_forward_only():
    """The caching mode for the forward, nothing for the recomputation (it recomputes all)."""
    forward, _ = ck.create_selective_checkpoint_contexts(_policy)
    return forward, contextlib.nullcontext()


def user_function(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=_user_context_fn)


def user_lambda(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=USER_CONTEXT_LAMBDA)


def user_lambda_in_the_call(t):
    context_fn = lambda: ck.create_selective_checkpoint_contexts(_policy)  # noqa: E731
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=context_fn)


def user_null_contexts(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=_user_null_contexts)


def user_forward_only(t):
    return ck.checkpoint(_sac_body, t, use_reentrant=False, context_fn=_user_forward_only)


def user_nested(t):
    """In a checkpoint's body: eager's outer recomputation calls it (and its policy) again."""

    def outer(x):
        inner = ck.checkpoint(_sac_body, x * 2, use_reentrant=False, context_fn=_user_context_fn)
        return inner.cos() + x

    return ck.checkpoint(outer, t, use_reentrant=False)


class UserContextBlock(nn.Module):
    """A layer whose checkpoint's context_fn is a function kept in an attribute."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.context_fn = _user_context_fn

    def forward(self, t):
        body = lambda x: self.lin(x @ x).relu()  # noqa: E731
        return ck.checkpoint(body, t, use_reentrant=False, context_fn=self.context_fn) + t


USER_CONTEXT_BLOCK = UserContextBlock()


def user_attribute(t):
    return USER_CONTEXT_BLOCK(t)


#: name -> (function, modules whose gradients are compared, torch.compile's (graphs, breaks) or
#: None where it raises: an internal error for a function made in the call). Where it compiles,
#: torch.compile gives other results than eager's (the policy called only while AOTAutograd
#: traces; two nullcontext()s fail to compile with aot_eager).
USER_CONTEXT_FNS = {
    "function": (user_function, [SAC_LIN], (1, 0)),
    "lambda": (user_lambda, [SAC_LIN], (1, 0)),
    "lambda_in_the_call": (user_lambda_in_the_call, [SAC_LIN], None),
    "null_contexts": (user_null_contexts, [SAC_LIN], (1, 0)),
    "forward_only": (user_forward_only, [SAC_LIN], (1, 0)),
    "nested": (user_nested, [SAC_LIN], (1, 0)),
    "attribute": (user_attribute, [USER_CONTEXT_BLOCK], (1, 0)),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(USER_CONTEXT_FNS))
def test_user_context_fn_traced_like_eager(name, backend):
    """A context_fn that is a function of the user's giving selective checkpointing's contexts
    or nullcontext()s: one graph, whose node calls it for the forward and each recomputation
    (its calls and the policy's, logged in order, are eager's), eager's values and gradients."""
    fn, modules, dynamo = USER_CONTEXT_FNS[name]
    compiled = bytegraph.compile(fn, backend=backend)
    for seed in (0, 1):
        eager, actual = _sac_runs([fn, compiled], modules, seed)
        assert eager[1], "eager calls the context_fn or its policy"
        assert_same(actual, eager)
    assert _explain(fn, (_sac_input(),)) == (1, 0)
    if dynamo is not None:
        assert dynamo_counts(fn, _sac_input()) == dynamo


def test_user_context_fn_runs_with_the_graph():
    """The node keeps the user's function itself and is marked to run when the graph runs."""
    node, body = _captured_checkpoint(user_function)
    assert node.meta.get(RUNTIME)
    assert body.meta[CONTEXT_FN] is _user_context_fn


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_user_context_fn_in_a_global_is_guarded(backend, monkeypatch):
    """Another function in the global the call reads: a new variant, which calls it; one whose
    contexts change what the body computes: the call breaks, and runs as eager."""
    compiled = bytegraph.compile(user_function, backend=backend)
    others = [_user_context_fn, _user_null_contexts, _autocast_contexts]
    for other in others:
        monkeypatch.setitem(globals(), "_user_context_fn", other)
        eager, actual = _sac_runs([user_function, compiled], [SAC_LIN], 0)
        assert eager[1][0][2] == {_user_null_contexts: "null", _autocast_contexts: "autocast"}.get(
            other, ""
        )
        assert_same(actual, eager)


def _leaked_modes(t):
    return t * 2, ck.create_selective_checkpoint_contexts(_policy)


def test_selective_contexts_given_back_are_one_pair():
    """The modes made in the trace and given back: made by the real call, once for both (the
    recomputation's mode replays what the forward's stores)."""
    out, (forward, recompute) = bytegraph.compile(_leaked_modes)(torch.ones(2))
    torch.testing.assert_close(out, torch.full((2,), 2.0))
    assert type(forward) is ck._CachingTorchDispatchMode
    assert type(recompute) is ck._CachedTorchDispatchMode
    assert forward.storage is recompute.storage
    assert _explain(_leaked_modes, (torch.ones(2),)) == (1, 0)


def test_reentrant_selective_checkpoint_raises_as_eager():
    """A reentrant checkpoint with a context_fn: torch raises, so the call breaks and raises
    (torch.compile traces it into one graph and does not raise)."""
    compiled = bytegraph.compile(selective_reentrant, backend="eager")
    for fn in (selective_reentrant, compiled):
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            fn(_sac_input())
    assert dynamo_counts(selective_reentrant, _sac_input()) == (1, 0)


def test_reentrant_without_grad_warns_as_eager():
    """A reentrant checkpoint none of whose arguments requires grad warns as eager's does, on
    every call the warning filters let through."""
    compiled = bytegraph.compile(reentrant_without_grad, backend="eager")
    messages = []
    for fn in (reentrant_without_grad, compiled, compiled):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(torch.randn(2, 4))
        messages.append([str(w.message) for w in caught])
    assert messages[0] == ["None of the inputs have requires_grad=True. Gradients will be None"]
    assert messages[1] == messages[2] == messages[0]


def test_reentrant_runs_as_reentrant():
    """The reentrant checkpoint keeps eager's behaviour: ``torch.autograd.grad`` through it raises
    in both."""
    compiled = bytegraph.compile(reentrant, backend="eager")
    errors = []
    for fn in (reentrant, compiled):
        x = torch.randn(2, 4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(x)
        with pytest.raises(RuntimeError) as error:
            torch.autograd.grad(out.sum(), [x])
        errors.append(str(error.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_transformers_gradient_checkpointing(backend):
    """A tiny Llama with transformers' gradient checkpointing, one training step: one graph
    (torch.compile breaks once), the loss and every parameter's gradient as in eager."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    model = transformers.LlamaForCausalLM(config)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    ids = torch.randint(0, 64, (2, 8))

    def step(ids):
        return model(input_ids=ids, labels=ids).loss

    results = []
    for fn in (step, bytegraph.compile(step, backend=backend)):
        model.zero_grad(set_to_none=True)
        loss = fn(ids)
        loss.backward()
        results.append((loss, [p.grad for p in model.parameters()]))
    assert_same(results[1], results[0])
    assert _explain(step, (ids,)) == (1, 0)
    assert_no_more_breaks(0, step, ids)


def under_no_grad(t):
    with torch.no_grad():
        return ck.checkpoint(lambda x: LIN(x).relu(), t, use_reentrant=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_under_no_grad(backend):
    x = torch.randn(2, 4, requires_grad=True)
    assert_same(bytegraph.compile(under_no_grad, backend=backend)(x), under_no_grad(x))
    assert _explain(under_no_grad, (x,)) == (1, 0)
    assert dynamo_counts(under_no_grad, x) == (1, 0)


SEQ = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))


def sequential(t):
    return ck.checkpoint_sequential(SEQ, 2, t, use_reentrant=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_sequential(backend):
    """``checkpoint_sequential``'s body is traced, one checkpoint per segment: one graph where
    torch.compile runs the call in Python."""
    compiled = bytegraph.compile(sequential, backend=backend)
    for _ in range(2):
        x = torch.randn(3, 4, requires_grad=True)
        expected = _run(sequential, [_copy(x)], [SEQ])
        assert_same(_run(compiled, [x], [SEQ]), expected)
    assert _explain(sequential, (torch.randn(3, 4, requires_grad=True),)) == (1, 0)
    assert dynamo_counts(sequential, torch.randn(3, 4, requires_grad=True)) == (0, -1)


def raising_body(t):
    def body(x):
        LOG.append(1)
        x.sin()
        raise ValueError("no")

    try:
        return ck.checkpoint(body, t, use_reentrant=False)
    except ValueError:
        return t + len(LOG)


def test_body_raising_to_a_handler_outside_breaks():
    """What the body did before it raised stays, as in eager: the call runs in Python."""
    x = torch.zeros(2)
    LOG.clear()
    expected = raising_body(x)
    LOG.clear()
    bytegraph.reset()
    assert_same(bytegraph.compile(raising_body, backend="eager")(x), expected)
    assert LOG == [1]
    assert _explain(raising_body, (x,)) == (0, 1)
    assert dynamo_counts(raising_body, x) == (0, -1)
