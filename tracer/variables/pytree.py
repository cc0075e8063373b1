"""torch's pytree helpers (``torch.utils._pytree``) over structures of builtin containers.

``tree_flatten``, ``tree_unflatten``, ``tree_map``, ``tree_map_only``, ``tree_leaves``,
``tree_structure`` and ``TreeSpec.unflatten`` are traced on the trackers themselves: the nodes are
the tracker's lists, tuples, namedtuples, dicts and ``OrderedDict``s, the leaves are the trackers of
tensors, numbers, strings and None, and a function mapped over the leaves is called through the
tracer (traced, its effects recorded). The spec is the real ``TreeSpec`` torch builds for the same
skeleton (containers of stand-ins for the leaves): a constant of the trace.

What the trace relies on of pytree's registry ``SUPPORTED_NODES`` is guarded entry by entry
(``REGISTRY_ENTRY``: the node types' entries are torch's own, the leaf types have none), never the
whole dict. Any other form of call (an ``is_leaf`` function, another node or leaf type, a spec the
trace does not know) is declined: it goes on as a call of torch's namespace.
"""

from __future__ import annotations

import collections
import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

from ...guards.sources import ModuleGlobalSource, Source
from . import dispatch
from .base import BoundAttributeVariable, ConstantLikeVariable, IdentityKey, VariableTracker
from .call_rules import call_rule
from .constants import ConstantVariable, SymNodeVariable
from .containers import DictVariable, ListVariable, TupleVariable, hash_key, key_value
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator

#: the registry's source: ``M['torch.utils._pytree']['SUPPORTED_NODES']``
_REGISTRY = ModuleGlobalSource(pytree.__name__, "SUPPORTED_NODES")

#: node type (as ``SUPPORTED_NODES`` keys it) -> torch's own flatten and unflatten functions
_TORCH_NODES = {
    list: (pytree._list_flatten, pytree._list_unflatten),
    tuple: (pytree._tuple_flatten, pytree._tuple_unflatten),
    dict: (pytree._dict_flatten, pytree._dict_unflatten),
    collections.namedtuple: (pytree._namedtuple_flatten, pytree._namedtuple_unflatten),
    collections.OrderedDict: (pytree._ordereddict_flatten, pytree._ordereddict_unflatten),
}

#: leaf classes: torch registers none of them (each trace guards that none is registered)
_LEAF_TYPES = (
    torch.Tensor,
    torch.nn.Parameter,
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    torch.dtype,
    torch.device,
)


class _Leaf:
    """Stands for the leaf at ``index`` in a skeleton torch flattens (no pytree node type)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _rely_on_node(tx: Translator, node_type: Any) -> bool:
    """Is torch's own entry registered for ``node_type``? Guarded either way it is found."""
    entry = pytree.SUPPORTED_NODES.get(node_type)
    tx.output.assume_registry_entry(_REGISTRY, node_type, entry)
    own = _TORCH_NODES.get(node_type)
    return entry is not None and (entry.flatten_fn, entry.unflatten_fn) == own


def _plain_namedtuple(cls: type) -> bool:
    """A class made by ``namedtuple()`` or ``typing.NamedTuple`` that keeps tuple's iteration and
    the factory's construction: flattened as its items, rebuilt as a tuple of its class."""
    new = vars(cls).get("__new__")
    factory_new = getattr(getattr(new, "__func__", new), "__globals__", {}).get("_tuple_new")
    return (
        cls.__bases__ == (tuple,)
        and pytree.is_namedtuple_class(cls)
        and factory_new is tuple.__new__
        and not {"__iter__", "__len__", "__init__", "__getitem__"} & vars(cls).keys()
    )


def _node_of(vt: VariableTracker) -> tuple[Any, list[VariableTracker], Any] | None:
    """``vt`` as a node: its registry key, its children and the real skeleton maker for them;
    None for a leaf."""
    if isinstance(vt, TupleVariable) and not vt.is_size:
        if vt.cls is tuple:
            return tuple, list(vt.items), tuple
        if _plain_namedtuple(vt.cls):
            cls = vt.cls
            return collections.namedtuple, list(vt.items), lambda kids: tuple.__new__(cls, kids)
    if type(vt) is ListVariable or (isinstance(vt, ListVariable) and vt.python_type() is list):
        return list, list(vt.items), list
    if isinstance(vt, DictVariable) and vt.cls in (dict, collections.OrderedDict):
        if not all(not isinstance(k, IdentityKey) or k.vt.is_python_constant() for k in vt.items):
            raise _Decline
        keys = [key_value(k) for k in vt.items]
        cls = vt.cls
        return cls, list(vt.items.values()), lambda kids: cls(zip(keys, kids, strict=True))
    return None


class _Decline(Exception):
    """A structure this module does not trace: the call goes on as torch's namespace's."""


def _leaf_type(vt: VariableTracker) -> type:
    if isinstance(vt, TensorVariable):
        cls = vt.python_type()
    elif isinstance(vt, ConstantVariable | SymNodeVariable):
        cls = vt.python_type()
    else:
        raise _Decline
    if cls not in _LEAF_TYPES:
        raise _Decline
    return cls


def _flatten(tx: Translator, tree: VariableTracker) -> tuple[list[VariableTracker], Any]:
    """The leaf trackers of ``tree`` and the real spec of its structure (``_Decline`` where it is
    not made of the nodes and leaves above, or the registry holds others for their types)."""
    leaves: list[VariableTracker] = []
    seen: dict[Any, bool] = {}

    def rely(key: Any) -> None:
        if key not in seen:
            if key in _TORCH_NODES:
                seen[key] = _rely_on_node(tx, key)
            else:  # a leaf class: it has no entry
                seen[key] = pytree.SUPPORTED_NODES.get(key) is None
                tx.output.assume_registry_entry(_REGISTRY, key, None)
        if not seen[key]:
            raise _Decline

    def skeleton(vt: VariableTracker) -> Any:
        node = _node_of(vt)
        if node is None:
            rely(_leaf_type(vt))
            leaves.append(vt)
            return _Leaf(len(leaves) - 1)
        key, children, make = node
        rely(key)
        return make([skeleton(child) for child in children])

    found, spec = pytree.tree_flatten(skeleton(tree))
    return [leaves[leaf.index] for leaf in found], spec  # in the order torch gives them


def _unflatten(tx: Translator, spec: Any, leaves: list[VariableTracker]) -> VariableTracker:
    """The trackers' structure ``spec`` describes, holding ``leaves`` (``_Decline`` for node
    types other than the builtin ones above)."""
    if len(leaves) != spec.num_leaves:
        raise _Decline  # torch's ValueError, raised in Python
    rest = iter(leaves)

    def build(node: Any) -> VariableTracker:
        if node.is_leaf():
            return next(rest)
        if not _rely_on_node(tx, node.type):
            raise _Decline
        kids = [build(child) for child in node.children()]
        if node.type is list:
            return ListVariable(kids)
        if node.type is tuple:
            return TupleVariable(kids)
        if node.type is collections.namedtuple:
            if not _plain_namedtuple(node.context):
                raise _Decline
            return TupleVariable(kids, cls=node.context)
        keys = [hash_key(tx.fold(k)) for k in node.context]
        return DictVariable(dict(zip(keys, kids, strict=True)), cls=node.type)

    return build(spec)


@dataclass(eq=False)
class TreeSpecVariable(ConstantLikeVariable):
    """A ``TreeSpec`` the trace made (a constant of it: rebuilt by ``LOAD_CONST``)."""

    value: Any
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "unflatten":
            return _SpecUnflatten(self, name)
        if name in ("num_leaves", "num_nodes", "num_children"):
            return ConstantVariable(getattr(self.value, name))
        return super().var_getattr(tx, name)

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(self.value)


@dataclass(eq=False)
class _SpecUnflatten(BoundAttributeVariable):
    """``spec.unflatten`` of a spec the trace made."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        made = None
        if len(args) == 1 and not kwargs:
            made = _traced(lambda: _unflatten(tx, self.obj.value, _items(tx, args[0])))
        if made is None:
            return dispatch.call(tx, tx.wrap_static(self.obj.value.unflatten), args, kwargs)
        return made


def _items(tx: Translator, leaves: VariableTracker) -> list[VariableTracker]:
    if not isinstance(leaves, ListVariable | TupleVariable):
        raise _Decline
    return list(leaves.items)


#: id -> the specs traces made: constants of their code, given back to resume functions
_MADE: dict[int, Any] = {}


def _made_spec(spec: Any) -> TreeSpecVariable:
    _MADE[id(spec)] = spec
    return TreeSpecVariable(spec)


def _spec(tx: Translator, vt: VariableTracker) -> Any:
    """The real spec ``vt`` is: one this trace made, or one a trace made given to this one (the
    same object on each call: its identity guarded). A spec made in Python, a new object on each
    call, is declined (guarding its identity would recompile on each call)."""
    if isinstance(vt, TreeSpecVariable):
        return vt.value
    value = getattr(vt, "value", None)
    source = getattr(vt, "source", None)
    if source is None or _MADE.get(id(value)) is not value:
        raise _Decline
    tx.output.assume_identity(source, value)
    return value


def _traced(make: Any) -> VariableTracker | None:
    try:
        return make()
    except _Decline:
        return None


def _bound(fn: Any, args: list, kwargs: dict) -> dict[str, Any]:
    """``fn``'s parameters bound to the trackers; an ``is_leaf`` other than None declines."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except TypeError:  # raised by the call itself, in Python
        raise _Decline from None
    is_leaf = bound.get("is_leaf")
    if is_leaf is not None and not (
        is_leaf.is_python_constant() and is_leaf.as_python_constant() is None
    ):
        raise _Decline
    return bound


def _result(tx: Translator, leaves: list[VariableTracker], spec: Any) -> VariableTracker:
    return TupleVariable([ListVariable(leaves), _made_spec(spec)])


@call_rule(pytree.tree_flatten)
def _tree_flatten(tx, fn, args, kwargs):
    return _traced(lambda: _result(tx, *_flatten(tx, _bound(fn, args, kwargs)["tree"])))


@call_rule(pytree.tree_leaves)
def _tree_leaves(tx, fn, args, kwargs):
    return _traced(lambda: ListVariable(_flatten(tx, _bound(fn, args, kwargs)["tree"])[0]))


@call_rule(pytree.tree_structure)
def _tree_structure(tx, fn, args, kwargs):
    return _traced(lambda: _made_spec(_flatten(tx, _bound(fn, args, kwargs)["tree"])[1]))


@call_rule(pytree.tree_unflatten)
def _tree_unflatten(tx, fn, args, kwargs):
    def made() -> VariableTracker:
        bound = _bound(fn, args, kwargs)
        return _unflatten(tx, _spec(tx, bound["treespec"]), _items(tx, bound["leaves"]))

    return _traced(made)


@call_rule(pytree.tree_map)
def _tree_map(tx, fn, args, kwargs):
    def made() -> VariableTracker:
        bound = _bound(fn, args, kwargs)
        leaves, spec = _flatten(tx, bound["tree"])
        columns = [leaves]
        for rest in bound.get("rests", ()):
            rest_leaves, rest_spec = _flatten(tx, rest)
            if rest_spec != spec:  # a prefix of a deeper structure, or a mismatch
                raise _Decline
            columns.append(rest_leaves)
        func = bound["func"]
        mapped = [dispatch.call(tx, func, list(row), {}) for row in zip(*columns, strict=True)]
        return _unflatten(tx, spec, mapped)  # node types ``_flatten`` relied on: never declined

    return _traced(made)


@call_rule(pytree.tree_map_only)
def _tree_map_only(tx, fn, args, kwargs):
    def made() -> VariableTracker:
        bound = _bound(fn, args, kwargs)
        leaves, spec = _flatten(tx, bound["tree"])
        test, func = bound["type_or_types_or_pred"], bound["func"]
        by_type = test.is_python_constant() and isinstance(
            test.as_python_constant(), type | tuple | types.UnionType
        )
        if not by_type and test.is_python_constant() and not callable(test.as_python_constant()):
            raise _Decline  # torch's TypeError, raised in Python

        def chosen(leaf: VariableTracker) -> bool:
            if by_type:
                return dispatch.truth(tx, dispatch.call_builtin(tx, isinstance, [leaf, test], {}))
            return dispatch.truth(tx, dispatch.call(tx, test, [leaf], {}))

        mapped = [dispatch.call(tx, func, [leaf], {}) if chosen(leaf) else leaf for leaf in leaves]
        return _unflatten(tx, spec, mapped)

    return _traced(made)
