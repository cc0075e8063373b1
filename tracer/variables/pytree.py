"""torch's pytree helpers (``torch.utils._pytree``) over structures of trackers.

``tree_flatten``, ``tree_unflatten``, ``tree_map``, ``tree_map_only``, ``tree_leaves``,
``tree_structure`` and ``TreeSpec.unflatten`` are traced on the trackers themselves: the builtin
nodes are the tracker's lists, tuples, namedtuples, dicts and ``OrderedDict``s; a node of a class
the user registered (``register_pytree_node``, ``register_dataclass``) is flattened and rebuilt by
its entry's functions, inlined like any user function; every other value is a leaf, and a function
mapped over the leaves is called through the tracer (traced, its effects recorded). The spec is
the real ``TreeSpec`` torch would build (a constant of the trace); a user node's context that is
no constant (an object its ``flatten_fn`` made or read) stays a tracker, a ``_Context`` standing
for it in that spec, which the rewritten code builds with the real context in place.

What the trace relies on of pytree's registry ``SUPPORTED_NODES`` is guarded entry by entry
(``REGISTRY_ENTRY``: the builtin node types' entries are torch's own, a user class's is the one
inlined, a leaf's class has none), never the whole dict. Any other form of call (an ``is_leaf``
function, torch's other node types, a spec the trace does not know) is declined: it goes on as a
call of torch's namespace.
"""

from __future__ import annotations

import collections
import inspect
import operator
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch.utils._pytree as pytree

from ...guards.sources import AttrSource, DictValueSource, ModuleGlobalSource, Source
from ..exc import PythonError, Unsupported
from . import dispatch
from .base import BoundAttributeVariable, ConstantLikeVariable, IdentityKey, VariableTracker
from .call_rules import call_rule
from .constants import ConstantVariable
from .containers import DictVariable, ListVariable, TupleVariable, hash_key, key_value
from .functions import UserFunctionVariable

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


class _Leaf:
    """Stands for the child at ``index`` in a one-level skeleton of a builtin node, which its
    entry's ``flatten_fn`` flattens (no pytree node type)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _Context:
    """Stands, in a spec the trace made, for the context at ``index`` of the spec's tracker: a
    value of the trace (an object a ``flatten_fn`` made or read), not a constant. Compares by
    identity: a spec holding one equals no other spec but itself."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<context {self.index}>"


def _with_contexts(spec: Any, contexts: tuple) -> Any:
    """``spec`` with each ``_Context`` in it replaced by its real context: what the rewritten
    code calls to build a spec whose contexts are values of the trace."""
    if spec.is_leaf():
        return spec
    context = spec.context
    if isinstance(context, _Context):
        context = contexts[context.index]
    kids = [_with_contexts(child, contexts) for child in spec.children()]
    return pytree.TreeSpec(spec.type, context, kids)


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
    """``vt`` as a builtin node: its registry key, its children and the real skeleton maker for
    them; None for anything else."""
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


def _user_class(cls: type) -> bool:
    """A class of the user's (or of a library outside torch): its registry entry, whoever made
    it, is inlined; torch's own registered types (``torch.Size``, ``torch.return_types``,
    ``deque``...) are declined."""
    return cls.__module__.partition(".")[0] not in ("builtins", "collections", "torch")


def _entry_function(tx: Translator, cls: type, entry: Any, name: str) -> VariableTracker:
    """The entry's ``flatten_fn`` or ``unflatten_fn`` (``name``), read from the registry by
    position (``[*SUPPORTED_NODES.values()][i].flatten_fn``, its identity guarded) so that what
    it closes over is guarded too. A Python function is inlined wherever it was defined: those
    ``register_dataclass`` makes are torch's."""
    fn = getattr(entry, name)
    source = AttrSource(DictValueSource(_REGISTRY, list(pytree.SUPPORTED_NODES).index(cls)), name)
    if isinstance(fn, types.FunctionType):
        tx.output.assume_identity(source, fn)
        tx.output.assume_identity(AttrSource(source, "__code__"), fn.__code__)
        return UserFunctionVariable(fn, source)
    return tx.wrap(fn, source)


def _python_type(vt: VariableTracker) -> type:
    try:
        return vt.python_type()
    except Unsupported:
        raise _Decline from None


@dataclass(frozen=True)
class Spec:
    """A spec the trace made or was given: the real ``TreeSpec`` (its ``_Context``s stand for
    ``contexts``, the trackers of contexts that are values of the trace)."""

    value: Any
    contexts: tuple[VariableTracker, ...] = ()

    def context(self, tx: Translator, node: Any) -> VariableTracker:
        """The tracker of ``node``'s context."""
        if isinstance(node.context, _Context):
            return self.contexts[node.context.index]
        return tx.fold(node.context)


def _flatten(tx: Translator, tree: VariableTracker) -> tuple[list[VariableTracker], Spec]:
    """The leaf trackers of ``tree`` and the spec of its structure, built as torch builds it
    (``_Decline`` where the registry holds another entry than torch's for a builtin node type).

    A builtin node's children and context are what its entry's function gives for a skeleton of
    stand-ins; a node of a user class is flattened by its entry's function, inlined (a constant
    context is held by the spec, any other by the ``Spec``'s trackers, a ``_Context`` in its
    place); any other value is a leaf: its class has no entry."""
    leaves: list[VariableTracker] = []
    contexts: list[VariableTracker] = []
    user_ran = False

    def spec_of(vt: VariableTracker) -> Any:
        nonlocal user_ran
        node = _node_of(vt)
        if node is not None:
            key, children, make = node
            if not _rely_on_node(tx, key):
                raise _Decline
            flatten = pytree.SUPPORTED_NODES[key].flatten_fn
            kids, context = flatten(make([_Leaf(i) for i in range(len(children))]))
            return pytree.TreeSpec(key, context, [spec_of(children[k.index]) for k in kids])
        cls = _python_type(vt)
        if pytree.is_namedtuple_class(cls):  # one torch reads as a namedtuple: not a plain one
            raise _Decline
        entry = pytree.SUPPORTED_NODES.get(cls)
        tx.output.assume_registry_entry(_REGISTRY, cls, entry)
        if entry is None:
            leaves.append(vt)
            return pytree.treespec_leaf()
        if not _user_class(cls):
            raise _Decline
        user_ran = True
        flatten = _entry_function(tx, cls, entry, "flatten_fn")
        flat = dispatch.iterate(tx, dispatch.call(tx, flatten, [vt], {}))
        if len(flat) != 2:
            raise Unsupported("pytree", f"{cls.__name__}'s flatten_fn gives no pair")
        children, context = flat
        kids = [spec_of(child) for child in dispatch.iterate(tx, children)]
        if context.is_python_constant():
            return pytree.TreeSpec(cls, context.as_python_constant(), kids)
        contexts.append(context)
        return pytree.TreeSpec(cls, _Context(len(contexts) - 1), kids)

    try:
        spec = spec_of(tree)
    except _Decline:
        if user_ran:  # effects of the user's code are recorded: undone with the instruction
            raise Unsupported("pytree", "a structure the trace does not flatten") from None
        raise
    return leaves, Spec(spec, tuple(contexts))


def _flatten_up_to(tx: Translator, made: Spec, tree: VariableTracker) -> list[VariableTracker]:
    """The subtrees of ``tree`` at the leaves of the spec ``made``, as torch's
    ``TreeSpec.flatten_up_to`` finds them for each further tree ``tree_map`` is given: at a user
    class's node, ``tree``'s node must be of that class, its ``flatten_fn`` (inlined) must give
    as many children, and ``context != spec's context`` (traced: a user ``__eq__`` or ``__ne__``
    inlined, objects compared by identity) must be false, else torch's ``ValueError``; a builtin
    node must be the spec's own (any difference, torch's error or its leeway between dict types,
    declines)."""
    subtrees: list[VariableTracker] = []

    def up_to(node: Any, vt: VariableTracker) -> None:
        if node.is_leaf():
            subtrees.append(vt)
            return
        if node.type in _TORCH_NODES:
            found = _node_of(vt)
            if found is None or found[0] is not node.type or not _rely_on_node(tx, node.type):
                raise _Decline
            children, make = found[1], found[2]
            flatten = pytree.SUPPORTED_NODES[node.type].flatten_fn
            kids, context = flatten(make([_Leaf(i) for i in range(len(children))]))
            if context != node.context or len(kids) != node.num_children:
                raise _Decline
            children = [children[k.index] for k in kids]
        else:
            children = _user_children(node, vt)
        for child_spec, child in zip(node.children(), children, strict=True):
            up_to(child_spec, child)

    def _user_children(node: Any, vt: VariableTracker) -> list[VariableTracker]:
        cls = _python_type(vt)
        if pytree.is_namedtuple_class(cls):  # torch names its type ``namedtuple``: declined
            raise _Decline
        if cls is not node.type:
            error = f"Type mismatch; expected {node.type!r}, but got {cls!r}."
            raise PythonError(ValueError(error))
        entry = pytree.SUPPORTED_NODES.get(cls)
        tx.output.assume_registry_entry(_REGISTRY, cls, entry)
        if entry is None:
            raise _Decline
        flatten = _entry_function(tx, cls, entry, "flatten_fn")
        flat = dispatch.iterate(tx, dispatch.call(tx, flatten, [vt], {}))
        if len(flat) != 2:
            raise Unsupported("pytree", f"{cls.__name__}'s flatten_fn gives no pair")
        children = dispatch.iterate(tx, flat[0])
        if len(children) != node.num_children:
            error = f"Node arity mismatch; expected {node.num_children}, but got {len(children)}."
            raise PythonError(ValueError(error))
        differs = dispatch.call_operator(tx, operator.ne, [flat[1], made.context(tx, node)])
        if dispatch.truth(tx, differs):
            error = f"Node context mismatch for custom node type {node.type!r}."
            raise PythonError(ValueError(error))
        return children

    up_to(made.value, tree)
    return subtrees


def _user_nodes(spec: Any) -> bool:
    """Does ``spec`` hold a node of a user class (whose ``flatten_fn`` the trace ran)?"""
    if spec.is_leaf():
        return False
    return spec.type not in _TORCH_NODES or any(map(_user_nodes, spec.children()))


def _unflatten(tx: Translator, made: Spec, leaves: list[VariableTracker]) -> VariableTracker:
    """The trackers' structure ``made`` describes, holding ``leaves``: builtin nodes made as
    trackers, a user class's node by its entry's ``unflatten_fn`` (inlined, given its context's
    tracker), children first as torch does."""
    spec = made.value
    if len(leaves) != spec.num_leaves:
        raise _Decline  # torch's ValueError, raised in Python
    rest = iter(leaves)

    def build(node: Any) -> VariableTracker:
        if node.is_leaf():
            return next(rest)
        if node.type not in _TORCH_NODES:
            entry = pytree.SUPPORTED_NODES.get(node.type)
            tx.output.assume_registry_entry(_REGISTRY, node.type, entry)
            if entry is None or not _user_class(node.type):
                raise _Decline
            kids = ListVariable([build(child) for child in node.children()])
            unflatten = _entry_function(tx, node.type, entry, "unflatten_fn")
            return dispatch.call(tx, unflatten, [kids, made.context(tx, node)], {})
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
    """A ``TreeSpec`` the trace made: a constant of it (rebuilt by ``LOAD_CONST``), unless some
    node's context is a value of the trace (``contexts``: the spec is then built by the
    rewritten code, ``_with_contexts``, and only its shape is read in the trace)."""

    value: Any
    source: Source | None = None
    #: the trackers the ``_Context``s of ``value`` stand for
    contexts: tuple[VariableTracker, ...] = ()

    def is_python_constant(self) -> bool:
        return not self.contexts

    def as_python_constant(self) -> Any:
        if self.contexts:
            raise Unsupported("pytree", "a TreeSpec holding a context made in the trace")
        return self.value

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "unflatten":
            return _SpecUnflatten(self, name)
        if name in ("num_leaves", "num_nodes", "num_children"):
            return ConstantVariable(getattr(self.value, name))
        if name == "context" and self.contexts:
            return Spec(self.value, self.contexts).context(tx, self.value)
        if self.contexts:
            raise Unsupported("pytree", f"TreeSpec.{name} of a spec holding a traced context")
        return super().var_getattr(tx, name)

    def reconstruct(self, cg: Codegen) -> None:
        if not self.contexts:
            cg.load_const(self.value)
            return
        cg.load_const(_with_contexts)
        cg.load_const(self.value)
        for context in self.contexts:
            context.reconstruct(cg)
        cg.build_tuple(len(self.contexts))
        cg.call_function(2)


@dataclass(eq=False)
class _SpecUnflatten(BoundAttributeVariable):
    """``spec.unflatten`` of a spec the trace made."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        made = None
        if len(args) == 1 and not kwargs:
            spec = Spec(self.obj.value, self.obj.contexts)
            made = _traced(lambda: _unflatten(tx, spec, _items(tx, args[0])))
        if made is None:
            spec = self.obj.as_python_constant()
            return dispatch.call(tx, tx.wrap_static(spec.unflatten), args, kwargs)
        return made


def _items(tx: Translator, leaves: VariableTracker) -> list[VariableTracker]:
    if not isinstance(leaves, ListVariable | TupleVariable):
        raise _Decline
    return list(leaves.items)


#: id -> the specs traces made: constants of their code, given back to resume functions
_MADE: dict[int, Any] = {}


def _made_spec(made: Spec) -> TreeSpecVariable:
    if not made.contexts:  # a constant of the code
        _MADE[id(made.value)] = made.value
    return TreeSpecVariable(made.value, contexts=made.contexts)


def _spec(tx: Translator, vt: VariableTracker) -> Spec:
    """The spec ``vt`` is: one this trace made, or a constant one a trace made given to this one
    (the same object on each call: its identity guarded). A spec made in Python, a new object on
    each call, is declined (guarding its identity would recompile on each call)."""
    if isinstance(vt, TreeSpecVariable):
        return Spec(vt.value, vt.contexts)
    value = getattr(vt, "value", None)
    source = getattr(vt, "source", None)
    if source is None or _MADE.get(id(value)) is not value:
        raise _Decline
    tx.output.assume_identity(source, value)
    return Spec(value)


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


def _result(tx: Translator, leaves: list[VariableTracker], spec: Spec) -> VariableTracker:
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
        try:
            columns += [_flatten_up_to(tx, spec, rest) for rest in bound.get("rests", ())]
        except _Decline:
            if _user_nodes(spec.value):  # effects of the user's code: undone with the instruction
                raise Unsupported("pytree", "a structure the trace does not flatten") from None
            raise
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
