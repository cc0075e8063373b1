"""No result of a call run on fake tensors is folded to a constant that holds one: torch's pytree
helpers (``torch.utils._pytree``), recorded as graph ops, give eager's tensors.

``tree_flatten`` is recorded as one op run on fake tensors (a function of torch's namespace). Its
result, a list of tensors and a spec in a tuple, was folded to constants, so the compiled function
gave back a FakeTensor where eager gives a tensor (hyper-connections' ``add_residual_fn`` flattens a
branch's output and unflattens it after the residual mix). Such a result now breaks the graph at
the call (``OutputGraph._constant_result``), which runs in Python.

More breaks than torch.compile (0 on each function here), on purpose for now: tracing pytree's
Python instead (tried) reads its registry ``SUPPORTED_NODES``, a global dict of about a hundred
types, which the dict model guards whole (every key, and the values read by position): about
400 us of guards per call for a 12 us function. It waits for guards on the keys a trace reads.
"""

from __future__ import annotations

import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_breaks
from torch.utils._pytree import tree_flatten, tree_map, tree_map_only, tree_unflatten

CALLS: list[str] = []


def _x():
    return (torch.randn(3),)


def _flatten_and_unflatten(x):
    leaves, spec = tree_flatten({"a": x * 2, "b": (x, 3), "c": [x + 1]})
    leaves = [leaf * 2 if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    return tree_unflatten(leaves, spec), len(leaves)


def test_flatten_and_unflatten_give_tensors():
    # the list of leaves breaks; the spec, an object the resume function gets, breaks again
    check_breaks(_flatten_and_unflatten, _x, graphs=2, breaks=2)
    assert dynamo_breaks(_flatten_and_unflatten, torch.randn(3)) == (1, 0)


def _first_leaf(x):
    leaves, _ = tree_flatten(x * 2)
    return leaves[0]


def test_a_leaf_read_back_is_the_tensor():
    check_breaks(_first_leaf, _x, graphs=1, breaks=1)
    assert dynamo_breaks(_first_leaf, torch.randn(3)) == (1, 0)


def _logged(t):
    CALLS.append("fn")
    return t * 2


def _mapped(x):
    return tree_map(_logged, {"a": x, "b": [x, 1]})


def test_tree_map_calls_the_function_once_per_leaf_and_call():
    def observe():
        seen = list(CALLS)
        CALLS.clear()
        return seen

    # a user function is no graph constant: the call runs in Python, ``fn`` once per leaf
    check_breaks(_mapped, _x, graphs=0, breaks=1, observe=observe)
    assert dynamo_breaks(_mapped, torch.randn(3)) == (1, 0)


def _mapped_only(x):
    return tree_map_only(torch.Tensor, lambda t: t + 1, (x, [x, "s"]))


def test_tree_map_only_with_a_lambda():
    check_breaks(_mapped_only, _x, graphs=0, breaks=1)
    assert dynamo_breaks(_mapped_only, torch.randn(3)) == (1, 0)


def _residual_function(x):
    """hyper-connections' shape: a closure given back, which flattens its argument, mixes it with
    what it closes over, and unflattens it."""
    residual = x * 3

    def add_residual(out):
        (first, *rest), spec = tree_flatten(out)
        return tree_unflatten((first + residual, *rest), spec)

    return add_residual


def _calls_the_residual(x):
    add = _residual_function(x)
    return add((x.sin(), x.cos()))


def test_a_returned_closure_flattening_its_argument():
    check_breaks(_calls_the_residual, _x, graphs=1, breaks=1)
    assert dynamo_breaks(_calls_the_residual, torch.randn(3)) == (1, 0)


def _nested_result(x):
    """A function of torch's namespace that gives back tensors nested two deep."""
    return [[x * 2], 1]


_nested_result.__module__ = "torch._bytegraph_test_namespace"


def _reads_a_nested_result(x):
    return _nested_result(x + 1)[0][0] + 1


def test_a_nested_result_of_a_graph_op_is_never_a_constant():
    """Recorded as one op (torch's namespace), its result holds a tensor two deep: not folded to a
    constant holding a fake tensor; the call runs in Python instead, and gives eager's tensor."""
    check_breaks(_reads_a_nested_result, _x, graphs=2, breaks=1)
