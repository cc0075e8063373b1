"""torch.func's transforms traced into the graph: ``vmap``, ``grad``, ``grad_and_value``,
``jacrev``, ``jacfwd``, ``hessian`` and ``jvp`` (``torch.vmap`` is ``torch.func.vmap``).

``vmap(f, in_dims, ...)`` gives a ``TransformVariable``: the function the transform makes, not yet
called. Its call traces ``f``'s body into a subgraph (``subgraphs.trace_subgraph``) on *stand-ins*
for the transformed arguments' tensors: tensors of a graph of their own (``_StandIns``) showing
what the body sees of them under the transform, one example's slice for vmap
(``select(in_dim, 0)``), a leaf that requires grad for the others. The body's reads of them are
lifted as inputs like every tensor it reads from the outer graph; the node calling the subgraph
(``vmap_region``, ``grad_region``, ``jacobian_region``) runs torch.func's transform of it with the
real tensors in the stand-ins' places and what the body closes over (parameters, tensors of the
outer graph) passed as it is: not batched (in_dim None), not differentiated, as in eager. Its
outputs' metadata comes from running the node on fake tensors; a transform that would raise there
(batch sizes that differ, a random op under ``randomness="error"``, a loss that is no scalar)
breaks, and the call raises in Python as in eager.

Also refused (``Unsupported``: the call runs in Python): what ``trace_subgraph`` refuses (effects,
breaks, reads of tensor data), options that are not constants, transformed arguments that are not
tensors or tuples, lists and dicts of them, results that are not tensors (eager's transforms take
tensors only). A tensor the body gives back as it was given it is an output of the subgraph for the
other transforms, the node's result that is its input itself on the fake run being that input's
tracker (``_call_region``: a vjp's or grad's given-back argument, a jvp's tangent). vmap gives such
a tensor back as eager does (``_given_back``): a batched argument whose batch dimension stays where
it was is the argument itself (``vmap(lambda x: x)(t) is t``), else its ``movedim``, a view of it; a
tensor not batched is itself for ``out_dims`` None, a view expanded over the batch for 0. ``jvp(f,
primals, tangents)`` is one such node, giving the outputs and their tangents. With ``has_aux`` the
body gives ``(output, aux)``: the node transforms the outputs of ``output`` (``main_at``) and gives
those of ``aux`` (``aux_at``) back as the transform does. ``vjp(f, *primals)`` is a node giving the
outputs and a ``PullbackVariable`` whose call is a node running torch.func's vjp again on the same
tensors (a body that draws is refused; a tensor written in place since the vjp is given to it as it
was, copied just after the vjp, and as it is now: ``copied``), rebuilt by the rewritten code the
same way (``rebuilt_pullback``; after such a write, refused). A body's reads of a tensor's
``requires_grad``, ``is_leaf`` and ``grad_fn`` give functorch's answer, that of the innermost
transform's level (``TransformBody``); those it does not model break. functorch's deprecated aliases
(``functorch.vmap``...) give their ``FutureWarning`` at every compiled call as eager's
(``run_time_warnings.keep``) and are traced as torch.func's functions (``_alias``).
``functionalize`` and the functions ``jacrev``/``jacfwd`` made before the trace are not traced
(their calls break: functorch's internals run in Python).
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch._functorch.deprecated as deprecated
import torch._functorch.eager_transforms
import torch._functorch.vmap
import torch.fx
import torch.utils._pytree as pytree
from torch.multiprocessing.reductions import StorageWeakRef

from ..exc import Unsupported
from ..run_time_warnings import keep
from . import dispatch
from .base import VariableTracker
from .call_rules import call_rule, call_rules_for
from .constants import ConstantVariable, SymNodeVariable
from .containers import DictVariable, ListVariable, TupleVariable, key_value
from .subgraphs import RETURNED, Subgraph, replace_tensors
from .subgraphs import _written as written_by
from .subgraphs import trace_subgraph as _trace_subgraph
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ...guards.sources import Source
    from ..translator import Translator


@dataclass(eq=False)
class TransformVariable(VariableTracker):
    """``transform(fn, **options)`` not yet called (``vmap(f, in_dims=(0, None))``): its call
    traces ``fn``. The options are constants; rebuilt as the same call."""

    transform: Callable[..., Any]  #: ``torch.func.vmap``, ``torch.func.grad``...
    fn: VariableTracker
    options: dict[str, Any]
    source: Source | None = None

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return _CALLS[self.transform](tx, self, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)

        def build() -> None:
            cg.load_const(self.transform)
            self.fn.reconstruct(cg)
            for value in self.options.values():
                cg.load_const(value)
            cg.call_function(1 + len(self.options), tuple(self.options))

        cg.build_once(self, build)
        return None

    def __repr__(self) -> str:
        return f"TransformVariable({self.transform.__name__}, {self.fn!r})"


_TRANSFORMS = (
    torch.func.vmap,
    torch.func.grad,
    torch.func.grad_and_value,
    torch.func.jacrev,
    torch.func.jacfwd,
)


def _bind(
    fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker], what: str
) -> inspect.BoundArguments:
    """``args`` and ``kwargs`` bound to ``fn``'s parameters; a call CPython would refuse breaks."""
    try:
        return inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported("functorch", f"{what} called with {e}") from None


@call_rule(*_TRANSFORMS)
def _transform(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``vmap(f, ...)``: the function it makes, with its options as constants."""
    bound = _bind(fn, args, kwargs, f"{fn.__name__}()")
    func = bound.arguments.pop("func")
    options = {}
    for name, vt in bound.arguments.items():
        if not vt.is_python_constant():
            raise Unsupported("functorch", f"{fn.__name__}()'s {name} is not a constant")
        options[name] = vt.as_python_constant()
    return TransformVariable(fn, func, options)


@call_rule(torch._functorch.vmap.vmap_impl)
def _vmap_impl(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """The call of a function ``vmap`` made before the trace (a global, an argument, a local
    carried over a break): its wrapper's body, inlined, gives this its function and options."""
    if len(args) < 5 or not all(vt.is_python_constant() for vt in args[1:5]):
        raise Unsupported("functorch", "vmap()'s options are not constants")
    names = ("in_dims", "out_dims", "randomness", "chunk_size")
    options = {name: vt.as_python_constant() for name, vt in zip(names, args[1:5], strict=True)}
    made = TransformVariable(torch.func.vmap, args[0], options)
    return made.call_function(tx, list(args[5:]), kwargs)


@call_rule(
    torch._functorch.eager_transforms.grad_impl,
    torch._functorch.eager_transforms.grad_and_value_impl,
)
def _grad_impl(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """The call of a function ``grad`` or ``grad_and_value`` made before the trace, as
    ``_vmap_impl``: ``grad_impl(func, argnums, has_aux, args, kwargs)``."""
    call_args, call_kwargs = args[3:5] if len(args) == 5 else (None, None)
    if (
        kwargs
        or not all(vt.is_python_constant() for vt in args[1:3])
        or not isinstance(call_args, TupleVariable)
        or not isinstance(call_kwargs, DictVariable)
        or not all(isinstance(key_value(k), str) for k in call_kwargs.items)
    ):
        raise Unsupported("functorch", f"{fn.__name__}() called with what is not traced")
    transform = torch.func.grad if fn is _GRAD_IMPL else torch.func.grad_and_value
    options = {"argnums": args[1].as_python_constant(), "has_aux": args[2].as_python_constant()}
    made = TransformVariable(transform, args[0], options)
    keywords = {key_value(k): v for k, v in call_kwargs.items.items()}
    return made.call_function(tx, list(call_args.items), keywords)


_GRAD_IMPL = torch._functorch.eager_transforms.grad_impl

#: ``hessian(f)`` is ``jacfwd(jacrev(f))``: its Python body is traced.
call_rules_for(torch.func.hessian, owner=__name__, substitute=torch.func.hessian)


@call_rule(
    torch._functorch.eager_transforms._jvp_with_argnums,
    torch._functorch.eager_transforms._vjp_with_argnums,
)
def _untraced(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """The functions ``jacrev`` and ``jacfwd`` made before the trace run functorch's own levels
    (``_vjp_with_argnums``...), which the trace does not model: the call runs in Python."""
    raise Unsupported(
        "functorch",
        f"{fn.__name__}() is not traced: functorch's state outside a transform's call",
        hint="call jacrev/jacfwd/vmap/grad in the compiled function",
    )


# -- the arguments: trees of tensors, their stand-ins ----------------------------------------------


def _tree_map(
    tree: VariableTracker,
    dims: Any,
    leaf: Callable[[VariableTracker, Any], VariableTracker],
    what: str,
) -> VariableTracker:
    """``tree`` (a tensor, or tuples, lists and dicts of them) with ``leaf(tensor, dim)`` in each
    tensor's place, new containers where it has some; ``dims`` is one option for every leaf (an
    int) or a tree of them in ``tree``'s shape. A subtree whose option is None stays as it is."""
    if dims is None:
        return tree
    if isinstance(tree, TensorVariable):
        if not isinstance(dims, int) or isinstance(dims, bool):
            raise Unsupported("functorch", f"{what}: option {dims!r} for a tensor")
        return leaf(tree, dims)
    if isinstance(tree, (TupleVariable, ListVariable)) and tree.python_type() in (tuple, list):
        if not isinstance(dims, int):
            if type(dims) is not tree.python_type() or len(dims) != len(tree.items):
                raise Unsupported("functorch", f"{what}: options {dims!r} do not fit {tree}")
            items = [_tree_map(i, d, leaf, what) for i, d in zip(tree.items, dims, strict=True)]
        else:
            items = [_tree_map(i, dims, leaf, what) for i in tree.items]
        return TupleVariable(items) if isinstance(tree, TupleVariable) else ListVariable(items)
    if isinstance(tree, DictVariable) and tree.cls is dict and type(tree.items) is dict:
        if not isinstance(dims, int):
            raise Unsupported("functorch", f"{what}: per-key options of a dict argument")
        items = {k: _tree_map(v, dims, leaf, what) for k, v in tree.items.items()}
        return DictVariable(items)
    raise Unsupported(
        "functorch",
        f"{what}: an argument {tree} that is not a tensor or a tuple, list or dict of tensors",
    )


def _leaves(tree: VariableTracker) -> list[TensorVariable]:
    """The tensors of a tree ``_tree_map`` made, in order."""
    if isinstance(tree, TensorVariable):
        return [tree]
    if isinstance(tree, (TupleVariable, ListVariable)):
        return [t for item in tree.items for t in _leaves(item)]
    if isinstance(tree, DictVariable):
        return [t for item in tree.items.values() for t in _leaves(item)]
    return []


def _rebuild(tree: VariableTracker, leaves: list[VariableTracker]) -> VariableTracker:
    """``tree`` in new containers, its tensors replaced by ``leaves`` in order (as torch.func gives
    a gradient in its argument's structure)."""
    found = iter(leaves)
    return replace_tensors(tree, lambda vt: next(found))


class _StandIns:
    """The stand-ins of one transform's call: tensors of a graph of their own, each for a real
    tensor of the trace, with the option the transform applies to it."""

    def __init__(self, tx: Translator, what: str, make: Callable[[torch.Tensor, Any], Any]):
        self.tx, self.what, self.make = tx, what, make
        self.graph = torch.fx.Graph()
        self.real: dict[torch.fx.Node, tuple[TensorVariable, Any]] = {}

    def __call__(self, real: TensorVariable, option: Any) -> TensorVariable:
        try:
            with self.tx.output.fake_mode:
                example = self.make(real.example, option)
        except Exception as e:  # eager's transform raises: the call runs in Python
            raise Unsupported("functorch", f"{self.what}: {type(e).__name__}: {e}") from None
        node = self.graph.placeholder(f"stand_in_{len(self.real)}")
        node.meta["example_value"] = example
        self.real[node] = (real, option)
        return TensorVariable(node, example)

    def inputs(self, sub: Subgraph) -> tuple[list[VariableTracker], list[Any]]:
        """The node's inputs (the real tensors in the stand-ins' places) and each one's option
        (None for what the body closes over). A stand-in the body never reads becomes an input
        too: vmap still checks its batch size, grad gives it a zero gradient."""
        graph = sub.module.graph
        read = {vt.node for vt in sub.lifted}
        body = next(n for n in graph.nodes if n.op != "placeholder")
        for node in self.real:
            if node in read:
                continue
            with graph.inserting_before(body):
                graph.placeholder(f"unread_{len(sub.lifted)}").meta.update(node.meta)
            sub.lifted.append(TensorVariable(node, node.meta["example_value"]))
        sub.module.recompile()
        inputs: list[VariableTracker] = []
        options: list[Any] = []
        for vt in sub.lifted:
            real, option = self.real.get(vt.node, (vt, None))
            inputs.append(real)
            options.append(option)
        return inputs, options

    def batch_size(self, tx: Translator) -> VariableTracker:
        """The size of the batch dimension of the first stand-in's real tensor (vmap's)."""
        real, dim = next(iter(self.real.values()))
        return real.call_method(tx, "size", [ConstantVariable(dim)], {})

    @staticmethod
    def positions(sub: Subgraph, leaves: list[TensorVariable]) -> tuple:
        """Where each of ``leaves`` (stand-ins) is among the node's inputs (after ``inputs``)."""
        where = {vt.node: i for i, vt in enumerate(sub.lifted)}
        return tuple(where[leaf.node] for leaf in leaves)


#: The transforms whose innermost level differentiates its stand-ins: in their bodies a stand-in
#: requires grad, and so does what is computed from it as autograd says.
_REVERSE = frozenset({"grad()", "grad_and_value()", "jacrev()", "vjp()"})


@dataclass(eq=False)
class TransformBody:
    """A transform's body being traced (``OutputGraph.transform_bodies``): what its tensors'
    ``requires_grad``, ``is_leaf`` and ``grad_fn`` read as. functorch gives the tensors of a
    transform an autograd state of its own, that of its innermost level: under vmap, jvp and
    jacfwd a tensor of that level (a stand-in, or computed from one) requires no grad, is a leaf
    and has no ``grad_fn``; under grad, jacrev and vjp a stand-in is a leaf requiring grad and
    what is computed from it follows autograd, as its fake does where nothing else it depends on
    requires grad. The other tensor arguments of grad, jacrev and jacfwd (``wrapped``) read as
    not requiring grad, and so does a tensor computed in the body from tensors of the outer
    graph alone under any transform but vmap (under vmaps alone: its own state); a tensor of the
    outer graph read as it is (closed over, an argument vmap does not batch) keeps its own.
    Other tensors (of an enclosing transform's level) break."""

    what: str  #: the transform's call, ``vmap()``...
    stand_ins: frozenset[torch.fx.Node]  #: the nodes of its stand-ins
    wrapped: frozenset[torch.fx.Node]  #: the tensor arguments it wraps without differentiating
    start: int  #: ``len(output.created)`` where its body began
    outer: TransformBody | None  #: the enclosing transform's body

    def autograd_attr(self, tx: Translator, t: TensorVariable, name: str) -> Any:
        """``t.name`` read in this body: a constant, or None where it is the tensor's own (its
        fake's answer); ``Unsupported`` where it is not modelled."""
        if name not in ("requires_grad", "is_leaf", "grad_fn"):
            raise Unsupported("functorch", f"Tensor.{name} in the body of a torch.func transform")
        state = self._state(tx, t)
        if state is None:
            return None
        requires_grad, is_leaf = state
        if name == "grad_fn":
            return ConstantVariable(None)  # a constant state is a leaf's
        return ConstantVariable(requires_grad if name == "requires_grad" else is_leaf)

    def _bodies(self) -> list[TransformBody]:
        body: TransformBody | None = self
        found = []
        while body is not None:
            found.append(body)
            body = body.outer
        return found

    def _state(self, tx: Translator, t: TensorVariable) -> tuple[bool, bool] | None:
        """``(requires_grad, is_leaf)`` of ``t`` in this body, or None for the tensor's own."""
        bodies = self._bodies()
        created = tx.output.created
        inner = set(created[self.start :])
        enclosing = set(created[bodies[-1].start : self.start])
        elsewhere = frozenset().union(*(b.stand_ins for b in bodies[1:]))
        wrapped = frozenset().union(*(b.wrapped for b in bodies))
        reached: set[torch.fx.Node] = set()
        outer: list[torch.fx.Node] = []
        todo = [t.node]
        while todo:
            node = todo.pop()
            if node in reached:
                continue
            reached.add(node)
            if node in inner:
                todo.extend(node.all_input_nodes)
            elif node in enclosing or node in elsewhere:
                raise Unsupported(
                    "functorch",
                    f"the autograd state of a tensor of an enclosing transform in {self.what}'s "
                    "body",
                )
            elif node not in self.stand_ins:
                outer.append(node)
        if t.node not in inner:  # read as it is
            if t.node in self.stand_ins:
                return self.what in _REVERSE, True
            return (False, True) if t.node in wrapped else None
        if reached & self.stand_ins:  # a tensor of this level
            if self.what not in _REVERSE:
                return False, True
            if any(_requires_grad(node) for node in outer):
                raise Unsupported(
                    "functorch",
                    f"the autograd state in {self.what}'s body of a tensor computed from one "
                    "requiring grad outside it",
                )
            return None
        if all(b.what == "vmap()" for b in bodies) and not set(outer) & wrapped:
            return None
        return False, True


def _requires_grad(node: torch.fx.Node) -> bool:
    example = node.meta.get("example_value")
    return isinstance(example, torch.Tensor) and example.requires_grad


def trace_subgraph(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: Any,
    what: str,
    stand_ins: _StandIns,
    given_back: bool | str = RETURNED,
) -> Subgraph:
    """``subgraphs.trace_subgraph`` of a transform's body, whose tensors' autograd state is read
    as functorch's (``TransformBody``); ``given_back``: the caller models a tensor the body
    returns as it was given (vmap), else the subgraph returns it and the node's transform gives
    it back as eager's does (``_call_region``)."""
    output = tx.output
    bodies = output.transform_bodies
    wrapped: frozenset[torch.fx.Node] = frozenset()
    if what != "vmap()":  # vmap leaves the tensors it does not batch as they are
        given = [*args, *dict(kwargs).values()]
        wrapped = frozenset(vt.node for vt in _leaves(TupleVariable(given)))
    body = TransformBody(
        what,
        frozenset(stand_ins.real),
        wrapped - frozenset(stand_ins.real),
        len(output.created),
        bodies[-1] if bodies else None,
    )
    bodies.append(body)
    try:
        return _trace_subgraph(tx, fn, args, kwargs, what, given_back)
    finally:
        bodies.pop()


def _check_grad_mode(what: str) -> None:
    """Refuse a reverse-mode transform where grad mode is off: its body runs with grad on, which
    the trace, in the mode it found, would not see (``torch.is_grad_enabled()``)."""
    if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
        raise Unsupported("functorch", f"{what} where grad mode is off")


# -- the node --------------------------------------------------------------------------------------


def _call_region(
    tx: Translator,
    region: Callable[..., Any],
    sub: Subgraph,
    inputs: list[VariableTracker],
    options: dict[str, Any],
) -> list[TensorVariable]:
    """One node of the outer graph running ``region(subgraph, *inputs, **options)`` (``options``:
    constants), which gives a tuple of tensors; its items. An item that is one of the inputs
    itself on the fake run (a vjp's output that is its primal, a jvp's tangent that is the one
    given, a pullback's gradient that is its cotangent: the body gives back its argument) is that
    input's tracker, as eager's transform gives back that very tensor."""
    output = tx.output
    fakes = [vt.value if isinstance(vt, SymNodeVariable) else vt.example for vt in inputs]
    call = functools.update_wrapper(functools.partial(region, sub.module, **options), region)
    example = output.run_fake(call, fakes)
    graph = output.graph
    attr = graph.create_node("get_attr", output.add_subgraph(sub.module))
    output.created.append(attr)
    args = (attr, *(vt.node for vt in inputs))
    node = graph.create_node("call_function", region, args, options)
    node.meta["example_value"] = example
    node.meta["stack_trace"] = output._stack_trace()
    output.created.append(node)
    given = {id(fake): vt for fake, vt in zip(fakes, inputs, strict=True)}
    items: list[TensorVariable] = []
    for i, value in enumerate(example):
        if isinstance(given.get(id(value)), TensorVariable):
            items.append(given[id(value)])  # the transform gives back its input itself
            continue
        item = graph.create_node("call_function", operator.getitem, (node, i), {})
        item.meta["example_value"] = value
        item.meta["stack_trace"] = node.meta["stack_trace"]
        output.created.append(item)
        items.append(TensorVariable(item, value))
    return items


def _computed(sub: Subgraph, what: str) -> None:
    """Refuse a body whose result holds something else than tensors (torch.func's transforms
    raise on those)."""
    if len(_leaves(sub.result)) != _count(sub.result):
        raise Unsupported("functorch", f"{what}: the function returns something else than tensors")


def _count(tree: VariableTracker) -> int:
    if isinstance(tree, (TupleVariable, ListVariable)):
        return sum(_count(item) for item in tree.items)
    if isinstance(tree, DictVariable):
        return sum(_count(item) for item in tree.items.values())
    return 1


def _outputs_map(sub: Subgraph, items: list[TensorVariable]) -> dict[torch.fx.Node, TensorVariable]:
    return {vt.node: item for vt, item in zip(sub.outputs, items, strict=True)}


# -- vmap ------------------------------------------------------------------------------------------


def vmap_region(gmod: torch.fx.GraphModule, *inputs: Any, **options: Any) -> Any:
    """What a vmap's node runs: ``torch.func.vmap`` of the subgraph with the per-input
    ``in_dims`` and per-output ``out_dims`` the trace worked out."""
    return torch.func.vmap(gmod, **options)(*inputs)


def _select(example: torch.Tensor, dim: int) -> torch.Tensor:
    """What the body of a vmap sees of an argument batched along ``dim``: one example."""
    return example.select(dim, 0)


def _call_vmap(
    tx: Translator, vt: TransformVariable, args: list[VariableTracker], kwargs: Any
) -> VariableTracker:
    in_dims = vt.options.get("in_dims", 0)
    if isinstance(in_dims, tuple):
        if len(in_dims) != len(args):
            raise Unsupported("functorch", f"vmap(): in_dims {in_dims} for {len(args)} arguments")
    elif isinstance(in_dims, int) and not isinstance(in_dims, bool):
        in_dims = (in_dims,) * len(args)
    else:
        raise Unsupported("functorch", f"vmap(): in_dims={in_dims!r}")
    stand_ins = _StandIns(tx, "vmap()", _select)
    body_args = [
        _tree_map(arg, dims, stand_ins, "vmap()") for arg, dims in zip(args, in_dims, strict=True)
    ]
    if not stand_ins.real:
        raise Unsupported("functorch", "vmap(): no tensor argument is batched")
    sub = trace_subgraph(tx, vt.fn, body_args, kwargs, "vmap()", stand_ins, given_back=True)
    _computed(sub, "vmap()")
    leaf_dims = _leaf_out_dims(sub.result, vt.options.get("out_dims", 0))
    out_dims = _out_dims(sub, leaf_dims)
    inputs, dims = stand_ins.inputs(sub)
    options = {k: v for k, v in vt.options.items() if k in ("randomness", "chunk_size")}
    options.update(in_dims=tuple(dims), out_dims=out_dims)
    items = _call_region(tx, vmap_region, sub, inputs, options)
    new = _outputs_map(sub, items)
    chunked = options.get("chunk_size") is not None
    per_leaf = iter(leaf_dims)

    def unbatched(t: TensorVariable) -> VariableTracker:
        out_dim = next(per_leaf)
        if t.node in new:
            return new[t.node]
        return _given_back(tx, stand_ins, t, out_dim, chunked)

    return replace_tensors(sub.result, unbatched)


def _leaf_out_dims(result: VariableTracker, out_dims: Any) -> list[Any]:
    """The ``out_dims`` of each tensor of the body's result, in order (``_leaves``)."""
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * len(_leaves(result))
    if (
        isinstance(out_dims, tuple)
        and isinstance(result, TupleVariable)
        and len(out_dims) == len(result.items)
        and all(isinstance(d, int) or d is None for d in out_dims)
    ):
        return [d for item, d in zip(result.items, out_dims, strict=True) for _ in _leaves(item)]
    raise Unsupported("functorch", f"vmap(): out_dims={out_dims!r} for {result}")


def _out_dims(sub: Subgraph, leaf_dims: list[Any]) -> tuple:
    """The ``out_dims`` of each output of the subgraph (the tensors of its result the body
    computed, each once), from each result tensor's (``leaf_dims``)."""
    computed = {vt.node for vt in sub.outputs}
    found: dict[torch.fx.Node, Any] = {}
    for t, dim in zip(_leaves(sub.result), leaf_dims, strict=True):
        if t.node in computed and found.setdefault(t.node, dim) != dim:
            raise Unsupported("functorch", "vmap(): one output with two out_dims")
    return tuple(found[vt.node] for vt in sub.outputs)


def _given_back(
    tx: Translator, stand_ins: _StandIns, t: TensorVariable, out_dim: Any, chunked: bool
) -> VariableTracker:
    """A tensor the body of a vmap returns as it was given, as eager's vmap gives it back: a
    batched argument (a stand-in) is its real tensor itself where its batch dimension stays
    where it was (``out_dim`` the ``in_dim``), else that tensor's ``movedim`` (a view of it); a
    tensor not batched (closed over, an argument with in_dim None) is itself for ``out_dim``
    None, a view expanded over the batch for 0. Refused: other ``out_dim``s of a tensor not
    batched (eager's expand raises or makes sizes of no meaning), a batched one with
    ``out_dim`` None (eager raises), and ``chunk_size`` (eager concatenates the chunks)."""
    if chunked:
        raise Unsupported("functorch", "vmap(): with chunk_size, a tensor the body did not compute")
    real, in_dim = stand_ins.real.get(t.node, (t, None))
    if in_dim is None:
        if out_dim is None:
            return t
        if out_dim != 0:
            raise Unsupported("functorch", f"vmap(): out_dims={out_dim} of a tensor not batched")
        sizes = [stand_ins.batch_size(tx), *[ConstantVariable(-1)] * t.example.dim()]
        return t.call_method(tx, "expand", sizes, {})
    ndim = real.example.dim()
    if out_dim is None or not -ndim <= out_dim < ndim:
        raise Unsupported("functorch", f"vmap(): out_dims={out_dim} of a batched argument")
    if in_dim % ndim == out_dim % ndim:
        return real
    return real.call_method(
        tx, "movedim", [ConstantVariable(in_dim), ConstantVariable(out_dim)], {}
    )


# -- grad, grad_and_value, jacrev, jacfwd ----------------------------------------------------------


def _placed(inputs: tuple, positions: tuple, leaves: tuple) -> list[Any]:
    args = list(inputs)
    for position, leaf in zip(positions, leaves, strict=True):
        args[position] = leaf
    return args


def grad_region(gmod: torch.fx.GraphModule, *inputs: Any, positions: tuple, loss_at: int) -> tuple:
    """What a grad's node runs: the gradients of the subgraph's output ``loss_at`` with respect
    to its inputs at ``positions`` (``torch.func.grad``), then all its outputs (the loss and the
    auxiliary results, as ``has_aux`` gives them)."""

    def loss(*leaves: Any) -> Any:
        outs = gmod(*_placed(inputs, positions, leaves))
        return outs[loss_at], outs

    argnums = tuple(range(len(positions)))
    grads, outs = torch.func.grad(loss, argnums=argnums, has_aux=True)(
        *(inputs[i] for i in positions)
    )
    return (*grads, *outs)


def jacobian_region(
    gmod: torch.fx.GraphModule,
    *inputs: Any,
    positions: tuple,
    transform: str,
    main_at: tuple,
    aux_at: tuple | None = None,
    **options: Any,
) -> tuple:
    """What a jacrev's or jacfwd's node runs: the Jacobian (``torch.func``'s ``transform``) of
    each output of the subgraph at ``main_at`` with respect to each of its inputs at
    ``positions``, output by output; then, with ``has_aux`` (``aux_at`` not None), the outputs at
    ``aux_at`` as the transform gives back its auxiliary result."""

    def outputs(*leaves: Any) -> Any:
        outs = gmod(*_placed(inputs, positions, leaves))
        main = tuple(outs[i] for i in main_at)
        return main if aux_at is None else (main, tuple(outs[i] for i in aux_at))

    argnums = tuple(range(len(positions)))
    transformed = getattr(torch.func, transform)(
        outputs, argnums=argnums, has_aux=aux_at is not None, **options
    )
    jac = transformed(*(inputs[i] for i in positions))
    if aux_at is None:
        return tuple(j for per_output in jac for j in per_output)
    jac, aux = jac
    return (*(j for per_output in jac for j in per_output), *aux)


def _differentiable(example: torch.Tensor, option: Any) -> torch.Tensor:
    """What the body of a grad sees of an argument it differentiates: a leaf requiring grad."""
    return example.detach().requires_grad_(True)


def _differentiated(
    tx: Translator, vt: TransformVariable, args: list[VariableTracker], what: str
) -> tuple[_StandIns, list[VariableTracker], Any]:
    """The stand-ins of the arguments ``argnums`` names, the body's arguments, and the
    differentiated arguments (one tree, or a tuple of them for a tuple ``argnums``)."""
    argnums = vt.options.get("argnums", 0)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums or not all(type(i) is int and -len(args) <= i < len(args) for i in nums):
        raise Unsupported("functorch", f"{what}: argnums={argnums!r} for {len(args)} arguments")
    nums = tuple(i % len(args) for i in nums)
    if len(set(nums)) != len(nums):
        raise Unsupported("functorch", f"{what}: argnums={argnums!r} repeats an argument")
    stand_ins = _StandIns(tx, what, _differentiable)
    body_args = list(args)
    for i in nums:
        body_args[i] = _tree_map(args[i], 0, stand_ins, what)
    if not stand_ins.real:
        raise Unsupported("functorch", f"{what}: no tensor to differentiate")
    trees = [body_args[i] for i in nums]
    return stand_ins, body_args, trees if isinstance(argnums, tuple) else trees[0]


def _call_grad(
    tx: Translator, vt: TransformVariable, args: list[VariableTracker], kwargs: Any
) -> VariableTracker:
    what = f"{vt.transform.__name__}()"
    _check_grad_mode(what)
    has_aux = vt.options.get("has_aux", False)
    stand_ins, body_args, diff = _differentiated(tx, vt, args, what)
    sub = trace_subgraph(tx, vt.fn, body_args, kwargs, what, stand_ins)
    _computed(sub, what)
    result = sub.result
    if has_aux:
        if not (
            isinstance(result, TupleVariable) and result.cls is tuple and len(result.items) == 2
        ):
            raise Unsupported("functorch", f"{what}: has_aux=True but no (output, aux) pair")
        loss = result.items[0]
    else:
        loss = result
    if not isinstance(loss, TensorVariable):
        raise Unsupported("functorch", f"{what}: the function's output is not a tensor")
    inputs, _ = stand_ins.inputs(sub)
    leaves = _leaves(TupleVariable(diff) if isinstance(diff, list) else diff)
    positions = stand_ins.positions(sub, leaves)
    loss_at = [t.node for t in sub.outputs].index(loss.node)
    options = {"positions": positions, "loss_at": loss_at}
    items = _call_region(tx, grad_region, sub, inputs, options)
    grads = _rebuild(TupleVariable(diff) if isinstance(diff, list) else diff, items[: len(leaves)])
    new = _outputs_map(sub, items[len(leaves) :])
    value = replace_tensors(result, lambda t: new[t.node])
    if vt.transform is torch.func.grad:
        return TupleVariable([grads, value.items[1]]) if has_aux else grads
    return TupleVariable([grads, value])  # grad_and_value: (grads, value or (value, aux))


def _split_aux(sub: Subgraph, has_aux: bool, what: str) -> tuple[VariableTracker, Any]:
    """The body's result and, with ``has_aux``, its auxiliary part: ``(output, aux)`` as the body
    gives them (a pair, which torch.func requires); ``aux`` None without ``has_aux``."""
    result = sub.result
    if not has_aux:
        return result, None
    if not (isinstance(result, TupleVariable) and result.cls is tuple and len(result.items) == 2):
        raise Unsupported("functorch", f"{what}: has_aux=True but no (output, aux) pair")
    return result.items[0], result.items[1]


def _at(sub: Subgraph, tree: VariableTracker) -> tuple:
    """Where each tensor of ``tree`` (a part of the body's result) is among the subgraph's
    outputs, each once, in order."""
    where = {vt.node: i for i, vt in enumerate(sub.outputs)}
    return tuple(dict.fromkeys(where[t.node] for t in _leaves(tree)))


def _call_jacobian(
    tx: Translator, vt: TransformVariable, args: list[VariableTracker], kwargs: Any
) -> VariableTracker:
    what = f"{vt.transform.__name__}()"
    options = {k: v for k, v in vt.options.items() if k not in ("argnums", "has_aux")}
    if vt.transform is torch.func.jacrev:
        _check_grad_mode(what)
    stand_ins, body_args, diff = _differentiated(tx, vt, args, what)
    sub = trace_subgraph(tx, vt.fn, body_args, kwargs, what, stand_ins)
    _computed(sub, what)
    main, aux = _split_aux(sub, vt.options.get("has_aux", False), what)
    inputs, _ = stand_ins.inputs(sub)
    tree = TupleVariable(diff) if isinstance(diff, list) else diff
    leaves = _leaves(tree)
    main_at = _at(sub, main)
    aux_at = None if aux is None else _at(sub, aux)
    options.update(
        positions=stand_ins.positions(sub, leaves),
        transform=vt.transform.__name__,
        main_at=main_at,
        aux_at=aux_at,
    )
    items = _call_region(tx, jacobian_region, sub, inputs, options)
    per_output = {
        sub.outputs[at].node: _rebuild(tree, items[i * len(leaves) : (i + 1) * len(leaves)])
        for i, at in enumerate(main_at)
    }
    jacobians = replace_tensors(main, lambda t: per_output[t.node])
    if aux is None:
        return jacobians
    aux_outs = _mapped(sub, aux_at, items[len(main_at) * len(leaves) :])
    return TupleVariable([jacobians, replace_tensors(aux, lambda t: aux_outs[t.node])])


# -- jvp -------------------------------------------------------------------------------------------


def jvp_region(
    gmod: torch.fx.GraphModule,
    *inputs: Any,
    positions: tuple,
    lifted: int,
    strict: bool,
    main_at: tuple,
    aux_at: tuple | None = None,
) -> tuple:
    """What a jvp's node runs: the subgraph's outputs at ``main_at`` and their tangents
    (``torch.func.jvp``), its inputs at ``positions`` the primals, the inputs after its ``lifted``
    ones the tangents; then, with ``has_aux`` (``aux_at`` not None), the outputs at ``aux_at``."""

    def outputs(*leaves: Any) -> Any:
        outs = gmod(*_placed(inputs[:lifted], positions, leaves))
        main = tuple(outs[i] for i in main_at)
        return main if aux_at is None else (main, tuple(outs[i] for i in aux_at))

    primals = tuple(inputs[i] for i in positions)
    has_aux = aux_at is not None
    done = torch.func.jvp(outputs, primals, inputs[lifted:], strict=strict, has_aux=has_aux)
    return tuple(t for part in done for t in part)


def _primal(example: torch.Tensor, option: Any) -> torch.Tensor:
    """What the body of a jvp sees of a primal."""
    return example.detach()


@call_rule(torch.func.jvp)
def _jvp(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``jvp(func, primals, tangents)``: one node giving the outputs and their tangents."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported("functorch", f"jvp() called with {e}") from None
    func, primals, tangents = (bound.arguments.pop(n) for n in ("func", "primals", "tangents"))
    if not all(vt.is_python_constant() for vt in bound.arguments.values()):
        raise Unsupported("functorch", "jvp()'s options are not constants")
    options = {name: vt.as_python_constant() for name, vt in bound.arguments.items()}
    has_aux = options.pop("has_aux", False)
    pairs = (primals, tangents)
    if not (
        all(isinstance(vt, TupleVariable) and vt.cls is tuple for vt in pairs)
        and len(primals.items) == len(tangents.items)
        and all(isinstance(vt, TensorVariable) for vt in [*primals.items, *tangents.items])
    ):
        raise Unsupported("functorch", "jvp(): primals and tangents are not tuples of tensors")
    stand_ins = _StandIns(tx, "jvp()", _primal)
    body_args = [stand_ins(vt, None) for vt in primals.items]
    sub = trace_subgraph(tx, func, body_args, {}, "jvp()", stand_ins)
    _computed(sub, "jvp()")
    main, aux = _split_aux(sub, has_aux, "jvp()")
    inputs, _ = stand_ins.inputs(sub)
    positions = stand_ins.positions(sub, body_args)
    main_at = _at(sub, main)
    aux_at = None if aux is None else _at(sub, aux)
    options.update(
        positions=positions,
        lifted=len(inputs),
        strict=options.get("strict", False),
        main_at=main_at,
        aux_at=aux_at,
    )
    items = _call_region(tx, jvp_region, sub, [*inputs, *tangents.items], options)
    outs = _mapped(sub, main_at, items[: len(main_at)])
    tangent_outs = _mapped(sub, main_at, items[len(main_at) : 2 * len(main_at)])
    made = [
        replace_tensors(main, lambda t: outs[t.node]),
        replace_tensors(main, lambda t: tangent_outs[t.node]),
    ]
    if aux is not None:
        aux_outs = _mapped(sub, aux_at, items[2 * len(main_at) :])
        made.append(replace_tensors(aux, lambda t: aux_outs[t.node]))
    return TupleVariable(made)


def _mapped(sub: Subgraph, at: tuple, items: list[TensorVariable]) -> dict:
    """The subgraph's outputs at ``at`` (their body's nodes) to ``items``, the node's."""
    return {sub.outputs[i].node: item for i, item in zip(at, items, strict=True)}


# -- vjp -------------------------------------------------------------------------------------------


def _vjp(gmod: torch.fx.GraphModule, inputs: tuple, positions: tuple, main_at: tuple, aux_at: Any):
    """``torch.func.vjp`` of the subgraph's outputs at ``main_at`` (``aux_at``: its auxiliary
    outputs, with ``has_aux``) at its inputs at ``positions``: ``(outputs, pullback, aux)``."""

    def outputs(*leaves: Any) -> Any:
        outs = gmod(*_placed(inputs, positions, leaves))
        main = tuple(outs[i] for i in main_at)
        return main if aux_at is None else (main, tuple(outs[i] for i in aux_at))

    primals = tuple(inputs[i] for i in positions)
    if aux_at is None:
        return (*torch.func.vjp(outputs, *primals), ())
    return torch.func.vjp(outputs, *primals, has_aux=True)


def vjp_region(
    gmod: torch.fx.GraphModule, *inputs: Any, positions: tuple, main_at: tuple, aux_at: Any
) -> tuple:
    """What a vjp's node runs: the outputs ``torch.func.vjp`` gives (those at ``main_at``, then
    the auxiliary ones at ``aux_at``); its function is the pullback's node's."""
    outs, _, aux = _vjp(gmod, inputs, positions, main_at, aux_at)
    return (*outs, *aux)


def vjp_pullback_region(
    gmod: torch.fx.GraphModule,
    *inputs: Any,
    positions: tuple,
    main_at: tuple,
    aux_at: Any,
    lifted: int,
    copied: tuple = (),
    **options: Any,
) -> tuple:
    """What the call of the function a vjp gave runs: ``torch.func.vjp`` again on the same inputs
    (a body that draws is refused: the same outputs), its pullback called with the cotangents,
    the node's inputs after its ``lifted`` ones and the ``copied`` ones (``options``:
    ``retain_graph``...). A tensor written in place since the vjp (``copied``: ``("input", i,
    hidden)``, the ``lifted`` input ``i``, given as it was at the vjp; ``("output", k, hidden)``,
    the vjp's output ``k``, aux ones after the main ones) gets its value as it is now before the
    pullback runs, as eager's pullback reads a saved input or output where it lives (functorch's
    wrappers keep their own version counters: no error) and the rest of what it saved as the vjp
    computed it; ``hidden``: written where autograd does not see it (through ``.data``: its
    version unchanged), copied so too."""
    outs, pullback, aux = _vjp(gmod, inputs[:lifted], positions, main_at, aux_at)
    results = (*outs, *aux)
    now = inputs[lifted : lifted + len(copied)]
    for (kind, at, hidden), value in zip(copied, now, strict=True):
        target = inputs[at] if kind == "input" else results[at]
        if hidden:
            target.data.copy_(value.detach())
        else:
            target.copy_(value)
    return tuple(pullback(tuple(inputs[lifted + len(copied) :]), **options))


@dataclass(eq=False)
class PullbackVariable(VariableTracker):
    """The function ``vjp`` gives: the vjp's subgraph and inputs, so that its call is one node
    (``vjp_pullback_region``) computing the vector-Jacobian product on the tensors the vjp read.
    Not rebuilt as a Python value (returned, live at a break): that breaks before the vjp."""

    sub: Subgraph
    inputs: list[VariableTracker]  #: the node's inputs, the primals in the stand-ins' places
    options: dict[str, Any]  #: ``positions``, ``main_at``, ``aux_at``
    primals: VariableTracker  #: the tuple of the body's arguments (stand-ins): the gradients' form
    outputs: VariableTracker  #: the body's output: the cotangents' form
    made: torch.fx.Node  #: the vjp's node: writes after it are the pullback's to see
    results: list[VariableTracker]  #: the vjp's outputs, main then aux (``vjp_region``'s)
    layouts: list[tuple]  #: ``_layout`` of ``inputs`` then ``results`` at the vjp
    source: Source | None = None

    def python_type(self) -> type:
        return types.FunctionType

    def walk_children(self) -> list[VariableTracker]:
        """The outer graph's tensors it holds (the stand-ins in ``primals``, ``outputs`` are the
        subgraph's)."""
        return list(self.inputs)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        bound = _bind(_pullback_signature, args, kwargs, "vjp()'s function")
        cotangents = bound.arguments.pop("cotangents")
        if not all(vt.is_python_constant() for vt in bound.arguments.values()):
            raise Unsupported("functorch", "vjp()'s function: options that are not constants")
        options = {k: vt.as_python_constant() for k, vt in bound.arguments.items()}
        if not _same_form(self.outputs, cotangents):
            raise Unsupported("functorch", "vjp()'s function: cotangents not of the outputs' form")
        inputs, copied, now = self._written_since(tx)
        items = _call_region(
            tx,
            vjp_pullback_region,
            self.sub,
            [*inputs, *now, *_leaves(cotangents)],
            {**self.options, **options, "lifted": len(inputs), "copied": copied},
        )
        return _rebuild(self.primals, items)

    def _written_since(
        self, tx: Translator
    ) -> tuple[list[VariableTracker], tuple, list[VariableTracker]]:
        """The pullback node's inputs where tensors were written in place since the vjp: each
        input sharing storage with a written tensor replaced by its copy made just after the vjp
        (``_snapshot``), and what ``vjp_pullback_region`` copies in (``copied``) and from
        (those inputs and the vjp's outputs sharing such storage, as they are now). A write
        that changed such a tensor's sizes, strides or storage breaks."""
        written = set()
        node = self.made.next
        while node.op != "root":
            if node.op.startswith("call_"):
                for target in written_by(node):
                    example = getattr(target, "meta", {}).get("example_value")
                    if isinstance(example, torch.Tensor):
                        written.add(StorageWeakRef(example.untyped_storage()))
            node = node.next
        inputs = list(self.inputs)
        copied: list[tuple[str, int, bool]] = []
        now: list[VariableTracker] = []
        tensors = [("input", i, vt) for i, vt in enumerate(self.inputs)]
        tensors += [("output", k, vt) for k, vt in enumerate(self.results)]
        for (kind, at, vt), layout in zip(tensors, self.layouts, strict=True):
            if not isinstance(vt, TensorVariable):
                continue
            if StorageWeakRef(vt.example.untyped_storage()) not in written:
                continue
            if not _same_layout(_layout(vt.example), layout):
                raise Unsupported(
                    "functorch",
                    "vjp()'s function called after a write changed the layout of a tensor the "
                    "vjp read or gave",
                )
            if kind == "input":
                inputs[at] = _snapshot(tx, vt, self.made, layout[-1])
            copied.append((kind, at, vt.example._version == layout[-2]))
            now.append(vt)
        return inputs, tuple(copied), now

    def reconstruct(self, cg: Codegen) -> None:
        """``torch.func.vjp`` of the subgraph on the tensors the vjp read, made by the rewritten
        code (returned, live at a break); refused where one was written in place since."""
        _check_unwritten(self.made, "rebuilt")

        def build() -> None:
            forms = (_skeleton(self.primals), _skeleton(self.outputs))
            specs = tuple(pytree.tree_structure(form) for form in forms)
            cg.load_const(functools.partial(rebuilt_pullback, self.sub.module, specs, self.options))
            for vt in self.inputs:
                vt.reconstruct(cg)
            cg.call_function(len(self.inputs), ())

        cg.build_once(self, build)

    def __repr__(self) -> str:
        return "PullbackVariable()"


def _pullback_signature(
    cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None
) -> None:
    """The signature of the function ``torch.func.vjp`` gives."""


def _layout(t: torch.Tensor) -> tuple:
    """What a write may change of a tensor besides its values: sizes, strides, offset, storage,
    its version (a write autograd does not see, through ``.data``, leaves it) and last
    ``requires_grad`` (a write from a tensor requiring grad makes it require grad)."""
    storage = StorageWeakRef(t.untyped_storage())
    shape, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    return (shape, stride, offset, storage, t._version, t.requires_grad)


def _same_layout(now: tuple, then: tuple) -> bool:
    """Is ``now`` the layout ``then`` but for ``requires_grad``? Symbolic sizes compared by
    identity: a write keeps the very objects (no guard made)."""
    numbers = [*now[0], *now[1], now[2]]
    before = [*then[0], *then[1], then[2]]
    return (
        now[3] == then[3]
        and len(numbers) == len(before)
        and all(
            a is b or (type(a) is int and type(b) is int and a == b)
            for a, b in zip(numbers, before, strict=True)
        )
    )


def _snapshot(
    tx: Translator, vt: TensorVariable, made: torch.fx.Node, requires_grad: bool
) -> TensorVariable:
    """A copy of ``vt`` made just after the vjp's node ``made``: its values as the vjp read them;
    ``requires_grad`` its then (a write since may have set it: the copy is then of ``detach``)."""
    output = tx.output
    names = ["detach", "clone"] if vt.example.requires_grad and not requires_grad else ["clone"]
    node, example, after = vt.node, vt.example, made
    for name in names:
        with output.fake_mode:
            example = getattr(example, name)()
        with output.graph.inserting_after(after):
            node = after = output.graph.call_method(name, (node,))
        node.meta["example_value"] = example
        node.meta["stack_trace"] = made.meta.get("stack_trace")
        output.created.append(node)
    return TensorVariable(node, example)


def _same_form(outputs: VariableTracker, cotangents: VariableTracker) -> bool:
    """Are ``cotangents`` tensors in the containers ``outputs`` has (else eager raises)?"""
    if isinstance(outputs, TensorVariable):
        return isinstance(cotangents, TensorVariable)
    if isinstance(outputs, (TupleVariable, ListVariable)):
        return (
            isinstance(cotangents, (TupleVariable, ListVariable))
            and cotangents.python_type() is outputs.python_type()
            and len(cotangents.items) == len(outputs.items)
            and all(_same_form(o, c) for o, c in zip(outputs.items, cotangents.items, strict=True))
        )
    if isinstance(outputs, DictVariable):
        return (
            isinstance(cotangents, DictVariable)
            and cotangents.python_type() is outputs.python_type()
            and list(map(key_value, cotangents.items)) == list(map(key_value, outputs.items))
            and all(_same_form(v, cotangents.items[k]) for k, v in outputs.items.items())
        )
    return False


def _check_unwritten(made: torch.fx.Node, what: str) -> None:
    """Refuse a pullback ``what`` (called, rebuilt) after a tensor was written in place since its
    vjp: eager's pullback holds the values the vjp saw (or raises on a saved tensor written
    since), where the node or the rebuilt function computes it again on the tensors as they are."""
    node = made.next
    while node.op != "root":
        if node.op.startswith("call_") and written_by(node):
            raise Unsupported(
                "functorch",
                f"vjp()'s function {what} after a tensor was written in place ({node.name})",
            )
        node = node.next


def _skeleton(tree: VariableTracker) -> Any:
    """The containers of a tree of tensors (``_tree_map``'s, a body's result) with 0 in each
    tensor's place: what its ``TreeSpec`` is read from."""
    if isinstance(tree, (TupleVariable, ListVariable)):
        return tree.python_type()(_skeleton(item) for item in tree.items)
    if isinstance(tree, DictVariable):
        return {key_value(k): _skeleton(v) for k, v in tree.items.items()}
    return 0


def rebuilt_pullback(
    gmod: torch.fx.GraphModule, specs: tuple, options: dict[str, Any], *inputs: Any
) -> Callable[..., Any]:
    """The function ``torch.func.vjp`` gives for a traced vjp, made again after the graph on the
    tensors its node read: its body the subgraph, its primals the inputs at ``positions`` in
    their trees (``specs``: the primals' and the output's ``TreeSpec``s)."""
    primal_spec, out_spec = specs
    positions, main_at, aux_at = (options[k] for k in ("positions", "main_at", "aux_at"))

    def body(*primals: Any) -> Any:
        outs = gmod(*_placed(inputs, positions, pytree.tree_leaves(primals)))
        main = pytree.tree_unflatten([outs[i] for i in main_at], out_spec)
        return main if aux_at is None else (main, tuple(outs[i] for i in aux_at))

    primals = pytree.tree_unflatten([inputs[i] for i in positions], primal_spec)
    return torch.func.vjp(body, *primals, has_aux=aux_at is not None)[1]


@call_rule(torch.func.vjp)
def _vjp_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``vjp(func, *primals, has_aux=False)``: one node giving the outputs (and aux), and the
    function computing the vector-Jacobian product (``PullbackVariable``)."""
    kwargs = dict(kwargs)
    has_aux = kwargs.pop("has_aux", None)
    if kwargs or not args or (has_aux is not None and not has_aux.is_python_constant()):
        raise Unsupported("functorch", "vjp() called with what is not traced")
    _check_grad_mode("vjp()")
    stand_ins = _StandIns(tx, "vjp()", _differentiable)
    body_args = [_tree_map(arg, 0, stand_ins, "vjp()") for arg in args[1:]]
    output = tx.output
    drew, output.deferred.random = output.deferred.random, False
    try:
        sub = trace_subgraph(tx, args[0], body_args, {}, "vjp()", stand_ins)
    finally:
        drew, output.deferred.random = output.deferred.random, drew or output.deferred.random
    if drew:
        raise Unsupported("functorch", "vjp(): its body draws random numbers")
    _computed(sub, "vjp()")
    main, aux = _split_aux(sub, bool(has_aux and has_aux.as_python_constant()), "vjp()")
    inputs, _ = stand_ins.inputs(sub)
    primals = TupleVariable(body_args)
    where = {vt.node: i for i, vt in enumerate(sub.outputs)}
    options = {
        "positions": stand_ins.positions(sub, _leaves(primals)),
        "main_at": tuple(where[t.node] for t in _leaves(main)),
        "aux_at": None if aux is None else _at(sub, aux),
    }
    items = _call_region(tx, vjp_region, sub, inputs, options)
    main_at = options["main_at"]
    outs = _mapped(sub, main_at, items[: len(main_at)])
    given = {vt.node: vt for vt in output.inputs.values() if isinstance(vt, TensorVariable)}
    held = [given.get(vt.node, vt) if vt.source is None else vt for vt in inputs]
    layouts = [_layout(vt.example) if isinstance(vt, TensorVariable) else () for vt in held]
    layouts += [_layout(vt.example) for vt in items]
    last = output.graph._root.prev
    pullback = PullbackVariable(sub, held, options, primals, main, last, items, layouts)
    made = [replace_tensors(main, lambda t: outs[t.node]), pullback]
    if aux is not None:
        aux_outs = _mapped(sub, options["aux_at"], items[len(main_at) :])
        made.append(replace_tensors(aux, lambda t: aux_outs[t.node]))
    return TupleVariable(made)


# -- functorch's deprecated aliases ----------------------------------------------------------------

#: ``functorch.vmap``...: the names its ``FutureWarning`` gives, the torch.func function it calls.
_ALIASES: dict[Any, tuple[str, str | None, Any]] = {
    deprecated.vmap: ("vmap", "torch.vmap", torch.func.vmap),
    deprecated.grad: ("grad", None, torch.func.grad),
    deprecated.grad_and_value: ("grad_and_value", None, torch.func.grad_and_value),
    deprecated.vjp: ("vjp", None, torch.func.vjp),
    deprecated.jvp: ("jvp", None, torch.func.jvp),
    deprecated.jacrev: ("jacrev", None, torch.func.jacrev),
    deprecated.jacfwd: ("jacfwd", None, torch.func.jacfwd),
    deprecated.hessian: ("hessian", None, torch.func.hessian),
}


@call_rule(*_ALIASES)
def _alias(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``functorch.vmap(f, ...)``: its ``FutureWarning``, given by every compiled call as eager's
    (``run_time_warnings.keep``: the caller's file and line, the filters and registry of the
    call; where the filters make it an error, a break: CPython raises), then the torch.func
    function's call."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported("functorch", f"{fn.__name__}() called with {e}") from None
    api, new_api, target = _ALIASES[fn]
    if not keep(tx, _alias_warning(api, new_api), _alias_warning.__code__):
        raise Unsupported("functorch", f"functorch.{api}()'s warning is not given again")
    return dispatch.call(tx, tx.wrap_static(target), args, kwargs)


def _alias_warning(api: str, new_api: str | None) -> list[warnings.WarningMessage]:
    """The warning functorch's alias gives its caller (``warn_deprecated``, ``stacklevel=3``),
    given here in a frame standing for the alias's caller: this one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_deprecated(api, new_api)
    return caught


def _warn_deprecated(api: str, new_api: str | None) -> None:
    """Stands for the alias: ``warn_deprecated`` names its caller's caller."""
    deprecated.warn_deprecated(api, new_api)


#: How a call of each transform's function is traced.
_CALLS: dict[Any, Callable[..., VariableTracker]] = {
    torch.func.vmap: _call_vmap,
    torch.func.grad: _call_grad,
    torch.func.grad_and_value: _call_grad,
    torch.func.jacrev: _call_jacobian,
    torch.func.jacfwd: _call_jacobian,
}
