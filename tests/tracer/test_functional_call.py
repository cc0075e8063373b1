"""``torch.func.functional_call``: the module's call traced with the given tensors standing in for
its parameters and buffers (``modules.py``); values, gradients, in-place buffer updates and the
module itself after the call compared with eager, break counts with torch.compile's."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from difftest import assert_same, tensors_in
from dynamo_baseline import dynamo_counts
from torch import nn
from torch.func import functional_call

import bytegraph

torch.manual_seed(0)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 4, bias=False)
        self.head = nn.Linear(4, 4, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, x):
        return self.head(self.embed(x).relu())


class ReadsParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale + sum(p.sum() for p in self.parameters())


def _leaf(t, grad=True):
    return t.detach().clone().requires_grad_(grad)


def same_parameters(module):
    def fn(x):
        return functional_call(module, dict(module.named_parameters()), (x,))

    return fn, lambda: (torch.randn(2, 4, requires_grad=True),)


def new_parameters(module):
    def fn(x, params):
        return functional_call(module, params, (x,))

    def make():
        params = {k: _leaf(torch.randn_like(v)) for k, v in module.named_parameters()}
        return torch.randn(2, 4), params

    return fn, make


def parameters_and_buffers(module):
    def fn(x, params, buffers):
        return functional_call(module, (params, buffers), x)

    def make():
        params = {k: _leaf(torch.randn_like(v)) for k, v in module.named_parameters()}
        buffers = {k: v.detach().clone() for k, v in module.named_buffers()}
        return torch.randn(3, 4), params, buffers

    return fn, make


def with_kwargs(module):
    def fn(x, params):
        return functional_call(module, params, (x,), {"scale": 2.0})

    def make():
        params = {k: _leaf(torch.randn_like(v)) for k, v in module.named_parameters()}
        return torch.randn(2, 4), params

    return fn, make


def untied(module):
    def fn(x, weight):
        return functional_call(module, {"head.weight": weight}, (x,), tie_weights=False)

    return fn, lambda: (torch.randn(2, 4), _leaf(torch.randn(4, 4)))


def tied(module):
    def fn(x, weight):
        return functional_call(module, {"head.weight": weight}, (x,))

    return fn, lambda: (torch.randn(2, 4), _leaf(torch.randn(4, 4)))


LIN = nn.Linear(4, 4)
CASES = {
    "same_parameters": (same_parameters, LIN),
    "new_parameters": (new_parameters, LIN),
    "batchnorm_buffers": (
        parameters_and_buffers,
        nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 4)),
    ),
    "kwargs_and_parameters_read": (with_kwargs, ReadsParameters()),
    "tied": (tied, Tied()),
    "untied": (untied, Tied()),
}


def _run(fn, args, module):
    module.zero_grad(set_to_none=True)
    result = fn(*args)
    torch.autograd.backward([t.sum() for t in tensors_in(result) if t.requires_grad])
    grads = [t.grad for t in tensors_in(args)]
    state = {k: (v, v.grad) for k, v in module.state_dict(keep_vars=True).items()}
    return result, grads, args, state


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(CASES))
def test_functional_call_like_eager(name, backend):
    make_case, module = CASES[name]
    fn, make_args = make_case(module)
    eager_module = copy.deepcopy(module)
    eager_fn, _ = make_case(eager_module)
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        args = make_args()
        eager_args = copy.deepcopy(args)
        expected = _run(eager_fn, eager_args, eager_module)
        actual = _run(compiled, args, module)
        assert_same(actual, expected)
    bytegraph.reset()
    report = bytegraph.explain(fn)(*make_args())
    bytegraph.reset()
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert dynamo_counts(fn, *make_args()) == (1, 0)


def test_module_left_as_it_was():
    module = nn.Linear(4, 4)
    weight, bias = module.weight, module.bias

    def fn(x, params):
        out = functional_call(module, params, (x,))
        return out, module.weight, module.bias

    params = {"weight": torch.ones(4, 4), "bias": torch.zeros(4)}
    out, w, b = bytegraph.compile(fn, backend="eager")(torch.ones(2, 4), params)
    assert w is weight and b is bias
    assert module.weight is weight and module.bias is bias
    assert_same(out, torch.full((2, 4), 4.0))


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_forward_with_side_effects():
    """A forward that stores to the module keeps its store, once per call."""
    module = Counting()

    def fn(x, params):
        return functional_call(module, params, (x,))

    params = {k: torch.randn_like(v) for k, v in module.named_parameters()}
    x = torch.randn(2, 4)
    expected = fn(x, params)
    compiled = bytegraph.compile(fn, backend="eager")
    assert_same(compiled(x, params), expected)
    assert_same(compiled(x, params), expected)
    assert module.calls == 3
    bytegraph.reset()
    report = bytegraph.explain(fn)(x, params)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert dynamo_counts(fn, x, params) == (1, 0)


class Reassigns(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        out = x @ self.weight
        self.weight = nn.Parameter(self.weight.detach() * 2)
        return out


def test_forward_assigning_a_replaced_member_breaks():
    """torch swaps the original back after the call, undoing the forward's assignment: that call
    runs in Python."""
    module = Reassigns()
    eager_module = copy.deepcopy(module)

    def fn(m, x, weight):
        return functional_call(m, {"weight": weight}, (x,)), m.weight

    x, weight = torch.randn(2, 4), torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(eager_module, x, weight)
        bytegraph.reset()
        actual = bytegraph.compile(fn, backend="eager")(module, x, weight)
    assert_same(actual, expected)
    bytegraph.reset()
    report = bytegraph.explain(fn)(copy.deepcopy(module), x, weight)
    assert report.graph_break_count == 1


class Raises(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if x.shape[0] > 1:
            raise ValueError("too many")
        return y


def test_forward_raising_leaves_the_module_as_it_was():
    """The exception reaches the caller's handler with the module's own parameters back."""
    module = Raises()

    def fn(x, params):
        try:
            return functional_call(module, params, (x,))
        except ValueError:
            return module.lin(x), module.lin.weight

    params = {k: torch.randn_like(v) for k, v in module.named_parameters()}
    x = torch.randn(2, 4)
    expected = fn(x, params)
    actual = bytegraph.compile(fn, backend="eager")(x, params)
    assert_same(actual, expected)
    assert actual[1] is module.lin.weight
