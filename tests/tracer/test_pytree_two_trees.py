"""``torch.utils._pytree.tree_map(fn, tree, other)`` over nodes of user-registered classes whose
context is an object (a user object, one with its own ``__eq__``, a list or dict made in the
flatten function): torch flattens ``other`` up to ``tree``'s spec (``TreeSpec.flatten_up_to``),
calling each node's ``flatten_fn`` and testing ``context != spec's context``, and raises its
``ValueError`` where a node's type, arity or context differs. The trace does the same: the user's
``__eq__``/``__ne__`` runs as CPython runs it (in that order, on those operands), and a mismatch
raises torch's error, caught in the function or given back. Each test compares results,
exceptions and effects with eager, and the breaks with torch.compile's.
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

#: ``(left, right)`` names of each context comparison, in order
COMPARED: list = []


class Meta:
    """Compares by identity (``object``'s ``__eq__``)."""

    def __init__(self, name):
        self.name = name


class Tag:
    """Compares by name, logging each comparison's operands."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        COMPARED.append(("eq", self.name, getattr(other, "name", None)))
        return isinstance(other, Tag) and self.name == other.name

    def __ne__(self, other):
        COMPARED.append(("ne", self.name, getattr(other, "name", None)))
        return not (isinstance(other, Tag) and self.name == other.name)

    __hash__ = None


class Box:
    """Its context is the object it holds."""

    def __init__(self, a, b, meta):
        self.a, self.b, self.meta = a, b, meta


class Named:
    """Its context is a list its flatten function makes."""

    def __init__(self, a, names):
        self.a, self.names = a, names


class Tagged:
    """Its context is a ``Tag`` its flatten function makes."""

    def __init__(self, a, name):
        self.a, self.name = a, name


class Keyed:
    """Its context is a dict its flatten function makes, holding an object."""

    def __init__(self, a, meta):
        self.a, self.meta = a, meta


pytree.register_pytree_node(
    Box, lambda x: ([x.a, x.b], x.meta), lambda kids, meta: Box(kids[0], kids[1], meta)
)
pytree.register_pytree_node(
    Named, lambda x: ([x.a], list(x.names)), lambda kids, names: Named(kids[0], names)
)
pytree.register_pytree_node(
    Tagged, lambda x: ([x.a], Tag(x.name)), lambda kids, tag: Tagged(kids[0], tag.name)
)
pytree.register_pytree_node(
    Keyed, lambda x: ([x.a], {"meta": x.meta}), lambda kids, c: Keyed(kids[0], c["meta"])
)

SHARED = Meta("shared")


def _x():
    return (torch.randn(3),)


def _observe():
    seen = list(COMPARED)
    COMPARED.clear()
    return seen


def _add(x, y):
    return x + y


def _same_object(x):
    out = pytree.tree_map(_add, Box(x, x * 2, SHARED), Box(x + 1, x, SHARED))
    return out.a, out.b, out.meta is SHARED


def _equal_by_eq(x):
    out = pytree.tree_map(_add, Tagged(x, "q"), Tagged(x * 2, "q"))
    return out.a, out.name


def _lists_and_dicts(x):
    named = pytree.tree_map(_add, Named(x, ("a", "b")), Named(x * 3, ["a", "b"]))
    keyed = pytree.tree_map(_add, [Keyed(x, SHARED), x], [Keyed(x, SHARED), x * 2])
    return named.a, named.names, keyed[0].a, keyed[1], keyed[0].meta is SHARED


def _nested(x):
    out = pytree.tree_map(
        _add, {"k": Box(x, Tagged(x, "n"), SHARED)}, {"k": Box(x, Tagged(x, "n"), SHARED)}
    )
    return out["k"].a, out["k"].b.a


def _prefix(x):
    """``other`` holds a list where ``tree`` has a leaf: the function gets the list."""
    out = pytree.tree_map(
        lambda a, b: a + b[0] * b[1], [Box(x, x, SHARED)], [Box(x, [x, 2], SHARED)]
    )
    return out[0].a, out[0].b


def test_equal_contexts_map_without_a_break():
    """The same object, objects equal by their ``__eq__`` (which runs, through ``__ne__``, once
    per node, the other tree's context on the left as in torch), lists and dicts made in the
    flatten functions, nested nodes, and a tree that is a prefix of the other."""
    for fn in (_same_object, _equal_by_eq, _lists_and_dicts, _nested, _prefix):
        check_breaks(fn, _x, graphs=1, breaks=0, setup=COMPARED.clear, observe=_observe)
        assert_no_more_breaks(0, fn, *_x())


def test_the_user_ne_runs_on_torchs_operands():
    COMPARED.clear()
    check_breaks(_equal_by_eq, _x, graphs=1, breaks=0, setup=COMPARED.clear, observe=_observe)
    _equal_by_eq(*_x())
    assert COMPARED == [("ne", "q", "q")]


def _different_objects(x):
    return pytree.tree_map(_add, Box(x, x, Meta("a")), Box(x, x, Meta("a"))).a


def _different_tags(x):
    return pytree.tree_map(_add, Tagged(x, "p"), Tagged(x, "q")).a


def _different_lists(x):
    return pytree.tree_map(_add, Named(x, ("a",)), Named(x, ("b",))).a


def _different_types(x):
    return pytree.tree_map(_add, Box(x, x, SHARED), [x, x])


def _caught(fn):
    def caught(x):
        try:
            fn(x)
        except ValueError as e:
            return x + 1, str(e)
        return x, ""

    caught.__name__ = f"caught{fn.__name__}"
    return caught


def test_a_mismatch_raises_torchs_error():
    """Contexts that differ (two objects equal in all but identity, tags unequal by ``__eq__``,
    lists) and a node of another type raise torch's ``ValueError`` with its message: given
    back (one break, where CPython raises it) or caught in the function (no break)."""
    for fn in (_different_objects, _different_tags, _different_lists, _different_types):
        check_breaks(fn, _x, graphs=0, breaks=1, setup=COMPARED.clear, observe=_observe)
        caught = _caught(fn)
        check_breaks(caught, _x, graphs=1, breaks=0, setup=COMPARED.clear, observe=_observe)
        assert_no_more_breaks(0, caught, *_x())


def _more_children(x):
    return pytree.tree_map(_add, (Box(x, x, SHARED), x), (Box(x, x, SHARED), x, x))


def test_a_builtin_node_that_differs_is_left_to_torch():
    """A tuple of another length: torch's error, raised by Python after a break (the user's
    flatten functions run there again, none of their effects kept from the trace)."""
    check_breaks(_more_children, _x, graphs=0, breaks=1)
