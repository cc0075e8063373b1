"""Nodes of user-registered pytree classes whose ``flatten_fn`` gives an object as the context (an
instance of a user class, a dataclass, an object read from a global) rather than a constant:
``tree_flatten``/``tree_unflatten``/``tree_map`` trace them, the spec holds the context's tracker,
``tree_unflatten`` gives the user's unflatten function that object, and a spec returned to the
caller is built with the real context in place (equal to eager's, the very object the flatten
function made). Each test compares results, specs and side effects with eager, and the breaks
with torch.compile's."""

from __future__ import annotations

import dataclasses

import torch
import torch.utils._pytree as pytree
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

import bytegraph


class Names:
    """A context class comparing and hashing by value, as a spec's context must."""

    def __init__(self, names):
        self.names = names

    def __eq__(self, other):
        return type(other) is Names and other.names == self.names

    def __hash__(self):
        return hash(self.names)


@dataclasses.dataclass(frozen=True)
class Scaled:
    names: tuple
    scale: float


#: the contexts the flatten functions made, in order (their identity is compared)
MADE: list = []
SHARED = Names(("a", "b"))


class ByObject:
    def __init__(self, a, b):
        self.a, self.b = a, b


class ByDataclass(ByObject):
    pass


class ByGlobal(ByObject):
    pass


def _flatten_by_object(node):
    context = Names(("a", "b"))
    MADE.append(context)
    return [node.a, node.b], context


pytree.register_pytree_node(ByObject, _flatten_by_object, lambda kids, ctx: ByObject(*kids))
pytree.register_pytree_node(
    ByDataclass,
    lambda node: ([node.a, node.b], Scaled(("a", "b"), 2.0)),
    lambda kids, ctx: ByDataclass(kids[0] * ctx.scale, kids[1]),
)
pytree.register_pytree_node(
    ByGlobal,
    lambda node: ([node.a, node.b], SHARED),
    lambda kids, ctx: ByGlobal(kids[0] + (ctx is SHARED), kids[1]),
)


def _x():
    return (torch.randn(3),)


def _observe():
    seen = [type(c).__name__ for c in MADE]
    MADE.clear()
    return seen


def _round_trip(cls):
    def fn(x):
        leaves, spec = pytree.tree_flatten({"node": cls(x, x + 1), "rest": [x]})
        out = pytree.tree_unflatten([leaf * 2 for leaf in leaves], spec)
        return out["node"].a + out["node"].b + out["rest"][0]

    fn.__name__ = f"round_trip_{cls.__name__}"
    return fn


def _mapped(cls):
    def fn(x):
        return pytree.tree_map(torch.sin, cls(x, x * 2)).a

    fn.__name__ = f"mapped_{cls.__name__}"
    return fn


def test_an_object_context_round_trips_without_a_break():
    for cls in (ByObject, ByDataclass, ByGlobal):
        for make in (_round_trip, _mapped):
            fn = make(cls)
            check_breaks(fn, _x, graphs=1, breaks=0, setup=MADE.clear, observe=_observe)
            assert_no_more_breaks(0, fn, *_x())


def _returns_the_spec(x):
    leaves, spec = pytree.tree_flatten([ByObject(x, x + 1), ByDataclass(x, x)])
    return leaves[0] + 1, spec


def test_a_returned_spec_holds_the_context_the_flatten_function_made():
    """Equal to eager's spec (contexts compared by their ``__eq__``), and its context is the very
    object the flatten function logged, a new one on each call."""
    compiled = bytegraph.compile(_returns_the_spec)
    for _ in range(2):
        MADE.clear()
        expected = _returns_the_spec(torch.ones(2))[1]
        eager_made = MADE.pop()
        result, spec = compiled(torch.ones(2))
        assert spec == expected
        assert spec.children()[0].context is MADE.pop() is not eager_made
        assert spec.children()[1].context == Scaled(("a", "b"), 2.0)
        torch.testing.assert_close(result, torch.full((2,), 2.0))
    assert_no_more_breaks(0, _returns_the_spec, torch.ones(2))


def _reads_the_context(x):
    spec = pytree.tree_structure(ByDataclass(x, x))
    return x * spec.context.scale, spec.context


def test_the_context_of_a_spec_made_in_the_trace_is_its_object():
    check_breaks(_reads_the_context, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, _reads_the_context, *_x())


def _maps_two_trees(x):
    return pytree.tree_map(torch.add, ByObject(x, x), ByObject(x, 2 * x)).b


def test_two_trees_with_object_contexts_are_compared_in_the_trace():
    """``tree_map`` over two trees compares each node's contexts with ``!=`` (torch's
    ``flatten_up_to``): ``Names.__eq__`` inlined, no break (one before; the cases are in
    ``test_pytree_two_trees.py``)."""
    check_breaks(_maps_two_trees, _x, graphs=1, breaks=0, setup=MADE.clear, observe=_observe)
    assert_no_more_breaks(0, _maps_two_trees, *_x())
