"""torch's pytree helpers (``torch.utils._pytree``) are traced over structures of builtin
containers (``tracer/variables/pytree.py``): the leaves are the trackers, the spec a constant of
the trace, a mapped function traced once per leaf; and a call of torch's namespace whose result
holds tensors is never folded to a constant (it breaks: ``OutputGraph._constant_result``).

Tracing pytree's Python instead would read its registry ``SUPPORTED_NODES`` (about a hundred
types), which the dict model guards whole; the rules guard only the entries they rely on (the
node types' entries are torch's own, the leaf types have none).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import NamedTuple

import pytest
import torch
import torch.utils._pytree as pytree
from difftest import check_breaks
from dynamo_baseline import dynamo_breaks
from torch.utils._pytree import (
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_map_only,
    tree_structure,
    tree_unflatten,
)

import bytegraph

CALLS: list[str] = []


def _x():
    return (torch.randn(3),)


def _flatten_and_unflatten(x):
    leaves, spec = tree_flatten({"a": x * 2, "b": (x, 3), "c": [x + 1]})
    leaves = [leaf * 2 if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    return tree_unflatten(leaves, spec), len(leaves)


def test_flatten_and_unflatten_give_tensors():
    check_breaks(_flatten_and_unflatten, _x, graphs=1, breaks=0)
    assert dynamo_breaks(_flatten_and_unflatten, torch.randn(3)) == (1, 0)


def _first_leaf(x):
    leaves, _ = tree_flatten(x * 2)
    return leaves[0]


def test_a_leaf_read_back_is_the_tensor():
    check_breaks(_first_leaf, _x, graphs=1, breaks=0)
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

    # traced once per leaf on each call (the compiled function appends as eager does)
    check_breaks(_mapped, _x, graphs=1, breaks=0, observe=observe)
    assert dynamo_breaks(_mapped, torch.randn(3)) == (1, 0)


def _mapped_only(x):
    return tree_map_only(torch.Tensor, lambda t: t + 1, (x, [x, "s"]))


def test_tree_map_only_with_a_lambda():
    check_breaks(_mapped_only, _x, graphs=1, breaks=0)
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
    check_breaks(_calls_the_residual, _x, graphs=1, breaks=0)
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


Point = collections.namedtuple("Point", ["x", "y"])


class Pair(NamedTuple):
    first: torch.Tensor
    second: int


def _namedtuples(x):
    tree = [Point(x, 2), Pair(x * 3, 4), {"p": Point(x.sin(), None)}]
    mapped = tree_map(lambda v: v * 2 if isinstance(v, torch.Tensor) else v, tree)
    leaves, spec = tree_flatten(mapped)
    return spec.unflatten([leaf + 1 if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves])


def test_namedtuples_are_nodes():
    check_breaks(_namedtuples, _x, graphs=1, breaks=0)
    assert dynamo_breaks(_namedtuples, torch.randn(3)) == (1, 0)


def _nested(x):
    tree = {"a": [x, (x + 1, [x * 2, "s"])], "b": collections.OrderedDict(k=x.cos(), j=1.5)}
    leaves = tree_leaves(tree)
    spec = tree_structure(tree)
    doubled = tree_map(lambda a, b: a + b if isinstance(a, torch.Tensor) else a, tree, tree)
    return doubled, len(leaves), spec.num_leaves, tree_unflatten(leaves[::-1], spec)


def test_nested_dicts_and_lists():
    check_breaks(_nested, _x, graphs=1, breaks=0)
    assert dynamo_breaks(_nested, torch.randn(3)) == (1, 0)


def _given_tree(tree):
    return tree_map_only(torch.Tensor, torch.neg, tree)


def test_a_tree_given_to_the_function():
    """The containers are inputs: a changed structure is a new variant (their guards), never a
    stale spec."""

    def trees():
        return ({"a": [torch.randn(2), 3], "b": (torch.randn(2),)},)

    def other():
        return ({"a": [torch.randn(2)], "b": (torch.randn(2), None)},)

    check_breaks(_given_tree, trees, graphs=2, breaks=0, calls=[trees, other, trees])


def _across_a_break(x):
    leaves, spec = tree_flatten((x * 2, [x + 1, 7]))
    bytegraph.graph_break()
    return tree_unflatten(
        [leaf * 3 if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves], spec
    )


def test_a_spec_live_across_a_graph_break():
    check_breaks(_across_a_break, _x, graphs=2, breaks=1)


class UserNode:
    """A class of the user's registered as a pytree node: its flatten and unflatten functions are
    inlined (they log their calls, which the compiled function must repeat as eager does)."""

    def __init__(self, a, b):
        self.a, self.b = a, b


def _user_flatten(node):
    CALLS.append("flatten")
    return [node.a, node.b], "ctx"


def _user_unflatten(values, context):
    CALLS.append(f"unflatten {context}")
    return UserNode(*values)


pytree.register_pytree_node(UserNode, _user_flatten, _user_unflatten)


def _observe_calls():
    seen = list(CALLS)
    CALLS.clear()
    return seen


def _user_node(x):
    leaves, spec = tree_flatten([UserNode(x, x * 2), x + 1])
    rebuilt = tree_unflatten([leaf * 2 for leaf in leaves], spec)
    node = rebuilt[0]
    return type(node) is UserNode, node.a, node.b, rebuilt[1], len(leaves), spec.num_leaves


def test_a_user_class_registered_as_a_node():
    check_breaks(_user_node, _x, graphs=1, breaks=0, setup=CALLS.clear, observe=_observe_calls)
    assert dynamo_breaks(_user_node, torch.randn(3)) == (1, 0)


@dataclasses.dataclass
class Record:
    """Registered with ``register_dataclass``: torch's own flatten and unflatten closures."""

    value: torch.Tensor
    label: str | None
    count: int = 3


if hasattr(pytree, "register_dataclass"):
    pytree.register_dataclass(Record)


@pytest.mark.skipif(not hasattr(pytree, "register_dataclass"), reason="torch has no such API")
def test_a_registered_dataclass_is_a_node():
    def fn(x):
        mapped = tree_map(lambda v: v * 2, [Record(x, None, 4), Record(x.sin(), "s")])
        return [(type(r) is Record, r.value, r.label, r.count) for r in mapped]

    check_breaks(fn, _x, graphs=1, breaks=0)
    assert dynamo_breaks(fn, torch.randn(3)) == (1, 0)


def _nested_user_nodes(x):
    """User nodes inside dicts and lists, holding namedtuples and dicts themselves."""
    tree = {"a": [UserNode(Point(x, 2), {"k": x.cos()}), 1.5], "b": (UserNode(x, None),)}
    mapped = tree_map(lambda v: v + 1 if isinstance(v, torch.Tensor) else v, tree)
    inner, outer = mapped["a"][0], mapped["b"][0]
    leaves = tree_leaves(mapped)
    return (
        type(inner.a) is Point,
        inner.a.x,
        inner.a.y,
        inner.b,
        mapped["a"][1],
        type(outer) is UserNode,
        outer.a,
        outer.b,
        len(leaves),
    )


def test_user_nodes_nested_in_dicts_and_lists():
    check_breaks(
        _nested_user_nodes, _x, graphs=1, breaks=0, setup=CALLS.clear, observe=_observe_calls
    )
    assert dynamo_breaks(_nested_user_nodes, torch.randn(3)) == (1, 0)


def _given_node(tree):
    mapped = tree_map_only(torch.Tensor, torch.neg, tree)
    return mapped[0].a, mapped[0].b, mapped[1]


def test_a_user_node_given_to_the_function():
    def trees():
        return ([UserNode(torch.randn(2), torch.randn(2)), torch.randn(2)],)

    check_breaks(_given_node, trees, graphs=1, breaks=0, setup=CALLS.clear, observe=_observe_calls)
    assert dynamo_breaks(_given_node, *trees()) == (1, 0)


class Later:
    """Registered as a node only after the first compiled call."""

    def __init__(self, a):
        self.a = a


def _doubled(x):
    return tree_map(lambda v: v * 2 if isinstance(v, torch.Tensor) else v, [Later(x), x])


def test_a_node_registered_after_the_first_call_recompiles():
    """The first trace relied on ``Later`` having no entry (a leaf, given back as is): registering
    it is a new variant, which flattens it; another entry for it is another variant again."""
    compiled = bytegraph.compile(_doubled)
    x = torch.randn(2)
    leaf, doubled = compiled(x)
    assert type(leaf) is Later and leaf.a is x
    torch.testing.assert_close(doubled, x * 2)
    pytree.register_pytree_node(Later, lambda n: ([n.a], None), lambda v, _: Later(v[0]))
    try:
        node, doubled = compiled(x)
        assert type(node) is Later
        torch.testing.assert_close(node.a, x * 2)
        pytree._deregister_pytree_node(Later)
        pytree.register_pytree_node(Later, lambda n: ([n.a], None), lambda v, _: Later(v[0] + 1))
        node, _ = compiled(x)
        torch.testing.assert_close(node.a, x * 2 + 1)
    finally:
        pytree._deregister_pytree_node(Later)
    leaf, _ = compiled(x)
    assert type(leaf) is Later and leaf.a is x


class Fields:
    """A node whose flatten and unflatten functions close over the names of its fields."""

    def __init__(self, a=None, b=None, c=None):
        self.a, self.b, self.c = a, b, c


def _register_fields(names):
    pytree.register_pytree_node(
        Fields,
        lambda n: ([getattr(n, k) for k in names], None),
        lambda values, _: Fields(**dict(zip(names, values, strict=True))),
    )


FIELD_NAMES = ["a", "b"]
_register_fields(FIELD_NAMES)


def _fields(x):
    leaves = tree_leaves(Fields(a=x, b=x * 2, c=x * 3))
    return len(leaves), leaves[-1]


def test_what_a_node_function_closes_over_is_guarded():
    """The closure is read through the registry entry: a changed list of names recompiles."""
    check_breaks(_fields, _x, graphs=1, breaks=0)
    assert dynamo_breaks(_fields, torch.randn(3)) == (1, 0)
    compiled = bytegraph.compile(_fields)
    x = torch.randn(2)
    count, last = compiled(x)
    assert count == 2
    torch.testing.assert_close(last, x * 2)
    FIELD_NAMES.append("c")
    try:
        count, last = compiled(x)
        assert count == _fields(x)[0] == 3
        torch.testing.assert_close(last, x * 3)
    finally:
        FIELD_NAMES.pop()
    assert compiled(x)[0] == 2


class Opaque:
    """A node whose context is the node itself, an object made in the trace holding a tensor."""

    def __init__(self, a):
        self.a = a


pytree.register_pytree_node(
    Opaque, lambda n: ([n.a], n), lambda values, context: Opaque(values[0] + context.a)
)


def _opaque(x):
    CALLS.append("start")
    leaves, spec = tree_flatten(Opaque(x))
    return tree_unflatten([leaves[0] * 2], spec).a


def test_a_node_whose_context_is_no_constant_does_not_break():
    """The spec holds the context's tracker: ``tree_unflatten`` gives the unflatten function that
    node, whose tensor it reads (torch.compile breaks 0 times too)."""
    check_breaks(_opaque, _x, graphs=1, breaks=0, setup=CALLS.clear, observe=_observe_calls)
    assert dynamo_breaks(_opaque, torch.randn(3)) == (1, 0)


def _leaf_or_node(x):
    leaves, _ = tree_flatten([x, 2.5])
    return len(leaves)


def test_registering_a_leaf_type_recompiles():
    """The trace relied on ``float`` having no registry entry: registering one is seen."""
    compiled = bytegraph.compile(_leaf_or_node)
    assert compiled(torch.randn(2)) == _leaf_or_node(torch.randn(2)) == 2
    pytree.register_pytree_node(float, lambda f: ([], f), lambda _, f: f)
    try:
        assert _leaf_or_node(torch.randn(2)) == 1
        assert compiled(torch.randn(2)) == 1
    finally:
        pytree._deregister_pytree_node(float)
    assert compiled(torch.randn(2)) == 2


def _calls_the_user_function(x):
    return tree_map(_logged, (x, [x * 2]))


def test_a_traced_function_calls_no_more_than_eager():
    CALLS.clear()
    compiled = bytegraph.compile(_calls_the_user_function)
    for _ in range(3):
        torch.testing.assert_close(compiled(torch.ones(2))[1][0], torch.full((2,), 4.0))
    assert CALLS == ["fn"] * 6
    CALLS.clear()


def _only_some(x):
    tree = {"a": x, "b": [3, 2.5, torch.float32, None], "c": (x.to(torch.float64),)}
    numbers = tree_map_only((int, float), lambda v: v * 2, tree)
    doubles = tree_map_only(lambda v: getattr(v, "dtype", None) == torch.float64, torch.neg, tree)
    return numbers, doubles


def test_tree_map_only_with_types_and_a_predicate():
    check_breaks(_only_some, _x, graphs=1, breaks=0)
    assert dynamo_breaks(_only_some, torch.randn(3)) == (1, 0)


def _first_of_pair(x):
    return tree_flatten((x, x * 2))[0][0]


def test_a_node_entry_replaced_recompiles():
    """The trace relied on tuple's entry being torch's own: another one is seen."""
    compiled = bytegraph.compile(_first_of_pair)
    x = torch.randn(2)
    torch.testing.assert_close(compiled(x), x)
    own = pytree.SUPPORTED_NODES[tuple]
    pytree.SUPPORTED_NODES[tuple] = own._replace(
        flatten_fn=lambda t: (list(t)[::-1], None),
        unflatten_fn=lambda values, _: tuple(values)[::-1],
    )
    try:
        torch.testing.assert_close(_first_of_pair(x), x * 2)
        torch.testing.assert_close(compiled(x), x * 2)
    finally:
        pytree.SUPPORTED_NODES[tuple] = own
    torch.testing.assert_close(compiled(x), x)


def _breaking(t):
    CALLS.append("fn")
    if isinstance(t, torch.Tensor):
        bytegraph.graph_break()
    return t * 2


def _mapped_with_a_break(x):
    CALLS.append("start")
    return tree_map(_breaking, {"a": x.sin(), "b": [3, x]})


def test_a_mapped_function_that_breaks_runs_once_per_leaf():
    def observe():
        seen = list(CALLS)
        CALLS.clear()
        return seen

    check_breaks(_mapped_with_a_break, _x, graphs=1, breaks=1, observe=observe)
