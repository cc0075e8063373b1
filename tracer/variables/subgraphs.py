"""Subgraph tracing: a callable's body traced on its arguments into an FX ``GraphModule`` of its
own, which the outer graph calls with one node (a higher-order op), and
``torch.utils.checkpoint.checkpoint`` traced that way.

``trace_subgraph(tx, fn, args, kwargs)`` inlines ``fn`` into the outer graph, takes the nodes it
added out into a graph of their own and undoes the call (``OutputGraph.restore``). Every value of
the outer graph that the body reads (an argument, a parameter of a module it calls, a tensor it
closes over) becomes a placeholder of the subgraph, and is *lifted*: passed to the node that calls
it. The subgraph returns a tuple of the tensors of the body's result; the caller puts the call node
in the outer graph (``call_subgraph``) and gets the result back with the subgraph's outputs in
place of the body's tensors.

A body is refused (``Unsupported``: the call breaks and runs in Python, as without this module)
when it breaks inside, stores to Python objects (attributes, globals, cells, containers it was
given), changes global state (but for ``with`` blocks it leaves again, grad mode or autocast,
and grad mode switched and set back, whose nodes run in the subgraph), defers checks on tensor
data or reads it (``t.item()``), writes in place into a tensor it did not compute (an argument,
a parameter), or returns something other than tensors it computed, constants, and tuples, lists
and dicts of those (a caller may also let it give back tensors it was given, as they are).

``torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False, ...)`` is one such call: its
node runs ``checkpoint_region``, which calls torch's ``checkpoint`` on the subgraph with the
checkpoint's own options when the graph runs as it is (the ``eager`` backend: the same
recomputation, random state preserved as the user asked), and torch's higher-order op
``tag_activation_checkpoint`` when a tracer runs it (AOTAutograd, whose partitioner then
recomputes the tagged region in the backward). A tensor the body gives back without computing
it is that tensor itself, as the non-reentrant checkpoint gives it. The reentrant variant
(``use_reentrant=True``, or not given: torch then warns and uses it) runs as such, on the
subgraph whose inputs include the tensors the body closes over (their gradients come back as
the inputs' ones, equal to eager's accumulated ones); where no tensor argument requires grad,
its body is traced under no_grad and its inputs are detached when it runs
(``reentrant_region_without_grad``: nothing requires grad, as in eager); it is refused where a
keyword goes to the function (torch raises) or the body gives back an argument (eager's autograd
Function takes it over).

Selective checkpointing (``context_fn=functools.partial(create_selective_checkpoint_contexts,
policy)``, ``policy`` a list of operators or a function saying, for each operator the body runs,
whether its result is saved or recomputed) is traced where the partial's parts are values of the
trace: constants, or objects read from globals and attributes, guarded. The subgraph keeps the
``context_fn`` (``gmod.meta``): run as it is, torch's ``checkpoint`` gets it, and the policy is
called as in eager, on the operators eager runs; under AOTAutograd ``tag_activation_checkpoint``
gives it to AOTAutograd, whose partitioner saves what the policy asks. A list of operators needs
nothing more (torch's own policy: no call of it can be seen), but a policy function would be
called only while AOTAutograd traces, on its operators, never when the graph runs, and a body
writing in place would not raise where eager's checkpoint does (a result it saved, written
since): the node is then marked to run when the graph runs (``backends/state_nodes.py``: AOT
backends run such a graph as it is), and so is a checkpoint whose body holds it. A
``context_fn`` that is a function of the user's (``def context_fn(): return
create_selective_checkpoint_contexts(policy)``, a lambda, one giving two ``nullcontext()``) is
kept in the subgraph as it is and its node marked to run when the graph runs: torch's checkpoint
calls it for the forward and each recomputation, as eager does; its call is traced once and
undone to see that its contexts change nothing the body computes (``_user_contexts``). Other
``context_fn``s (contexts that may change what the body computes: autocast, a mode of the
user's), a policy or ``context_fn`` made in the call over its locals (a closure) and a reentrant
checkpoint with a ``context_fn`` (torch raises) break.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
import torch.utils.checkpoint as torch_checkpoint
from torch._higher_order_ops.wrap import tag_activation_checkpoint

from ...backends.state_nodes import RUNTIME
from ..exc import TracedException, Unsupported
from . import dispatch
from .base import VariableTracker, walk
from .call_rules import call_rule, call_rules_for
from .constants import ConstantVariable, SymNodeVariable
from .containers import DictVariable, ListVariable, SetVariable, TupleVariable
from .contexts import NullContextVariable
from .functions import NestedFunctionVariable, PartialVariable, UserFunctionVariable
from .tensors import TensorVariable
from .torch_calls import content_ids

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


#: ``trace_subgraph``'s ``given_back`` where the subgraph returns the tensors its body gives back.
RETURNED = "returned"


@dataclass
class Subgraph:
    """A traced body: its module, the outer trackers it reads (its inputs, in order), the body's
    result and the tensors of that result the module returns (in order)."""

    module: torch.fx.GraphModule
    lifted: list[VariableTracker]
    result: VariableTracker
    outputs: list[TensorVariable]


def trace_subgraph(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    what: str,
    given_back: bool | str = False,
) -> Subgraph:
    """``fn(*args, **kwargs)`` traced into a subgraph (see the module's docstring); the outer
    graph is left as it was. ``what`` names the call in the reasons of a refusal. ``given_back``:
    the caller gives back a tensor the body returns without computing it (an argument) as that
    tensor itself, not as an output of the subgraph; ``RETURNED``: the subgraph returns such a
    tensor (its input) as an output, the caller's node running the body as eager does."""
    output = tx.output
    checkpoint = output.checkpoint()
    grad = torch.is_grad_enabled()
    start = len(output.created)
    deferred = len(output.deferred.checks)
    containers = [vt for vt in walk([fn, args, kwargs]) if isinstance(vt, _CONTAINERS)]
    before = [content_ids(c) for c in containers]
    try:
        try:
            result = dispatch.call(tx, fn, args, kwargs)
        except Unsupported as e:
            raise Unsupported("subgraph", f"{what}: its body breaks ({e})") from None
        except TracedException as e:  # caught outside the body: what it did before stays in eager
            raise Unsupported("subgraph", f"{what}: its body raises {e}") from None
        body = output.created[start:]
        if (
            output.side_effects.changed_since(checkpoint[1])
            or _mutates(tx, checkpoint[1], [fn, args, kwargs])
            or any(content_ids(c) != items for c, items in zip(containers, before, strict=True))
            or not _balanced_blocks(output.state.events[checkpoint[2] :])
            or torch.is_grad_enabled() != grad
        ):
            raise Unsupported(
                "subgraph",
                f"{what}: its body has side effects on Python objects or global state",
                hint="keep the body free of stores, container mutations and state changes",
            )
        sub = _extract(body, result, what, output.subgraphs, given_back)
        # the result's containers as they are now: undoing the call empties a list it filled
        sub.result = replace_tensors(result, lambda vt: vt)
        if len(output.deferred.checks) != deferred:
            raise Unsupported("subgraph", f"{what}: its body branches on tensor data")
        # what a rerun of the graph would repeat (draws, effects) is the call node's now
        drawn = output.deferred.drawn()
    finally:
        output.restore(checkpoint)
    output.deferred.carry(drawn)
    return sub


_CONTAINERS = (ListVariable, DictVariable, SetVariable)


def _mutates(tx: Translator, snapshot: tuple, called: list[Any]) -> bool:
    """Did the body change, in place, a container or object that outlives it: one made in the
    trace before it (``changed_since`` leaves those out) and reachable from the frames, from what
    was called (``called``: the function, arguments) or from the side-effect log? What the body
    made and dropped (a list it filled, an iterator it ran) may have changed."""
    effects = tx.output.side_effects
    *stores, undo_len = snapshot
    changed = {id(c) for c, _ in effects.undo[undo_len:]}
    changed |= {
        id(obj)
        for key, (obj, _, value) in effects.attr_stores.items()
        if key not in stores[0] or stores[0][key][2] is not value
    }
    if not changed:
        return False
    roots: list[Any] = [called, list(effects.global_stores.values())]
    roots += [list(effects.cell_stores.items())]
    frame = tx
    while frame is not None:
        roots += [list(frame.symbolic_locals.values()), list(frame.stack)]
        frame = frame.parent
    reached: set[int] = set()
    while roots:
        found = {id(vt) for vt in walk(roots)} - reached
        reached |= found
        roots = [[obj, v] for obj, _, v in effects.attr_stores.values() if id(obj) in found]
    return bool(changed & reached)


def _balanced_blocks(events: list[Any]) -> bool:
    """Do the state events of a body only enter and leave contexts (grad mode, autocast), each
    left in the body (``with torch.no_grad():``), or switch grad mode
    (``torch.set_grad_enabled(m)``, which switches when called)? Their nodes then run in the
    subgraph, which ends in the state it began in where the grad mode is back as the body found
    it (``trace_subgraph`` checks; nodes that act only at run time are refused by
    ``_check_node``; a context setting the default dtype or deterministic algorithms, which a
    graph's end resets, refuses the body)."""
    opened: list[Any] = []
    for event in events:
        if event.kind == "create" and event.touches == {"grad"}:
            continue
        if event.touches - {"grad"} or event.kind not in ("enter", "exit"):
            return False
        if event.kind == "enter":
            opened.append(event.ctx)
        elif not opened or opened.pop() is not event.ctx:
            return False
    return not opened


def _extract(
    body: list[torch.fx.Node],
    result: VariableTracker,
    what: str,
    subgraphs: dict[str, torch.nn.Module],
    given_back: bool | str,
) -> Subgraph:
    """The subgraph of the nodes ``body`` (in order), returning the tensors of ``result`` it
    computes (``given_back``: see ``trace_subgraph``); the subgraphs its ``get_attr`` nodes name
    (``subgraphs``: the outer graph's) go with it."""
    inside = set(body)
    for node in body:
        if not (node.op == "get_attr" and node.target in subgraphs):
            _check_node(node, inside, what)
    outputs = _result_tensors(result, inside, what, given_back)
    outer: dict[torch.fx.Node, None] = {}
    for node in body:
        torch.fx.node.map_arg((node.args, node.kwargs), lambda n: outer.setdefault(n) or n)
    for vt in outputs:  # a tensor given back as an output (``RETURNED``): an input too
        outer.setdefault(vt.node)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    lifted: list[VariableTracker] = []
    for node in (n for n in outer if n not in inside):
        placeholder = graph.placeholder(f"lifted_{len(lifted)}")
        placeholder.meta.update(node.meta)
        env[node] = placeholder
        lifted.append(_tracker(node))
    for node in body:
        env[node] = graph.node_copy(node, lambda n: env[n])
    unique = list(dict.fromkeys(vt.node for vt in outputs))
    graph.output(tuple(env[n] for n in unique))
    root = torch.nn.Module()
    for node in body:
        if node.op == "get_attr":  # a subgraph called inside (a nested checkpoint)
            root.add_module(node.target, subgraphs[node.target])
    module = torch.fx.GraphModule(root, graph, class_name="subgraph")
    return Subgraph(module, lifted, result, [_tracker(n) for n in unique])


def _tracker(node: torch.fx.Node) -> VariableTracker:
    example = node.meta.get("example_value")
    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return SymNodeVariable(node, example)
    raise Unsupported("subgraph", f"the body reads {node.name}, which is not a tensor or number")


#: Targets that store into their first argument although their names do not end in ``_``.
_STORES = frozenset({operator.setitem, torch.Tensor.__setitem__, "__setitem__"})


def _in_place(node: torch.fx.Node) -> bool:
    """Does ``node`` store into its first argument (``add_``, ``setitem``)?"""
    name = _target_name(node)
    return node.target in _STORES or (name.endswith("_") and not name.endswith("__"))


def _written(node: torch.fx.Node) -> list[Any]:
    """The arguments ``node`` writes into: its first where it stores in place, its ``out=``."""
    written = [node.args[0]] if _in_place(node) and node.args else []
    if "out" in node.kwargs:
        written.append(node.kwargs["out"])
    return written


def _target_name(node: torch.fx.Node) -> str:
    return node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")


def _check_node(node: torch.fx.Node, inside: set[torch.fx.Node], what: str) -> None:
    """Refuse a node that changes state or writes into a tensor the body did not compute, or
    that must run when the graph runs (but a selective checkpoint's: its caller's runs too)."""
    if node.op not in ("call_function", "call_method") or (
        node.meta.get(RUNTIME) and node.target is not checkpoint_region
    ):
        raise Unsupported("subgraph", f"{what}: its body changes global state ({node.name})")
    if node.meta.get("bytegraph_state"):
        return  # a grad-mode block's (``_balanced_blocks``)
    name = _target_name(node)
    for target in _written(node):
        if isinstance(target, torch.fx.Node) and target not in inside:
            raise Unsupported(
                "subgraph", f"{what}: its body writes in place into a tensor it was given ({name})"
            )
    if "unbacked_bindings" in node.meta:
        raise Unsupported("subgraph", f"{what}: its body reads tensor data ({name})")
    if node.meta.get("effectful") and not _in_place(node):
        raise Unsupported("subgraph", f"{what}: its body calls {name}, which has effects")


def _result_tensors(
    result: VariableTracker, inside: set[torch.fx.Node], what: str, given_back: bool | str
) -> list[TensorVariable]:
    """The tensors of ``result`` the body computed, in order (``given_back``: one it did not
    compute is left out, given back as it is; ``RETURNED``: it is returned too); ``Unsupported``
    for a result of another kind."""
    if isinstance(result, TensorVariable):
        if len(result.objects()) > 1:  # one of several tensors, which one known at run time
            raise Unsupported("subgraph", f"{what}: its body returns {result}, picked at run time")
        if result.node in inside or given_back == RETURNED:
            return [result]
        if given_back:
            return []
        raise Unsupported("subgraph", f"{what}: its body returns a tensor it did not compute")
    if isinstance(result, (TupleVariable, ListVariable)):
        return [t for i in result.items for t in _result_tensors(i, inside, what, given_back)]
    if isinstance(result, DictVariable) and type(result.items) is dict:
        items = result.items.values()
        return [t for i in items for t in _result_tensors(i, inside, what, given_back)]
    if isinstance(result, ConstantVariable):
        return []
    raise Unsupported("subgraph", f"{what}: its body returns {result}, which is not traced")


def replace_tensors(
    result: VariableTracker, new: Callable[[TensorVariable], VariableTracker]
) -> Any:
    """``result`` in new containers, with each tensor replaced by ``new(tensor)``."""
    if isinstance(result, TensorVariable):
        return new(result)
    if isinstance(result, (TupleVariable, ListVariable)):
        return result.clone(items=[replace_tensors(item, new) for item in result.items])
    if isinstance(result, DictVariable):
        return result.clone(items={k: replace_tensors(v, new) for k, v in result.items.items()})
    return result


def call_subgraph(
    tx: Translator, target: Any, sub: Subgraph, kwargs: dict[str, Any], runtime: bool = False
) -> VariableTracker:
    """One node of the outer graph calling ``target(subgraph, *lifted, **kwargs)`` (``kwargs``:
    constants), and the body's result with the node's outputs in place of its tensors.
    ``runtime``: the node must run when the graph runs, never traced by AOTAutograd
    (``backends/state_nodes.py``)."""
    output = tx.output
    graph = output.graph
    attr = graph.create_node("get_attr", output.add_subgraph(sub.module))
    output.created.append(attr)
    args = (attr, *(vt.node for vt in sub.lifted))
    node = graph.create_node("call_function", target, args, kwargs)
    node.meta["example_value"] = tuple(vt.example for vt in sub.outputs)
    node.meta["stack_trace"] = output._stack_trace()
    if runtime:
        node.meta[RUNTIME] = True
    output.created.append(node)
    new: dict[torch.fx.Node, VariableTracker] = {}
    for i, vt in enumerate(sub.outputs):
        item = graph.create_node("call_function", operator.getitem, (node, i), {})
        item.meta["example_value"] = vt.example
        item.meta["stack_trace"] = node.meta["stack_trace"]
        output.created.append(item)
        new[vt.node] = TensorVariable(item, vt.example, vt.python_type())
    return replace_tensors(sub.result, lambda vt: new.get(vt.node, vt))  # else given back as it is


# -- torch.utils.checkpoint.checkpoint -------------------------------------------------------------


_TRACING_MODES = (
    torch._C._TorchDispatchModeKey.PROXY,
    torch._C._TorchDispatchModeKey.FAKE,
    torch._C._TorchDispatchModeKey.FUNCTIONAL,
)


#: Where a selective checkpoint's ``context_fn`` sits in its subgraph's ``meta``: the key torch's
#: ``tag_activation_checkpoint`` reads it from, to give AOTAutograd the policy's choices.
CONTEXT_FN = "_checkpoint_context_fn"


def checkpoint_region(gmod: torch.fx.GraphModule, *args: Any, **options: Any) -> Any:
    """What a checkpoint's node runs: torch's ``checkpoint`` of the subgraph with the user's
    options (``use_reentrant`` as given, the ``context_fn`` kept in ``gmod.meta``) when the graph
    runs as it is (a user's dispatch mode may be on), the higher-order op
    ``tag_activation_checkpoint`` when a tracer runs it (AOTAutograd's proxy and functional modes,
    fake tensors; the op reads the ``context_fn`` from ``gmod.meta`` itself)."""
    if not any(torch._C._get_dispatch_mode(key) is not None for key in _TRACING_MODES):
        if CONTEXT_FN in gmod.meta:
            options = {**options, "context_fn": gmod.meta[CONTEXT_FN]}
        return torch_checkpoint.checkpoint(gmod, *args, **options)
    return tag_activation_checkpoint(gmod, *args, use_reentrant=False)


#: The keywords ``checkpoint`` takes for itself (the rest go to the function).
_CHECKPOINT_KEYWORDS = frozenset(
    name
    for name in inspect.signature(torch_checkpoint.checkpoint).parameters
    if name not in ("function", "args", "kwargs")
) | {"preserve_rng_state"}


@call_rule(torch_checkpoint.checkpoint)
def _checkpoint(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``checkpoint(function, *args, **kwargs)`` as one node calling its traced body."""
    if not args:
        raise Unsupported("subgraph", "checkpoint() without a function")
    function, fn_args = args[0], list(args[1:])
    context_fn = _selective_contexts(tx, kwargs.get("context_fn"))
    options: dict[str, Any] = {}
    for name in sorted(set(kwargs) & _CHECKPOINT_KEYWORDS - {"context_fn"}):
        if not kwargs[name].is_python_constant():
            raise Unsupported("subgraph", f"checkpoint()'s {name} is not a constant")
        options[name] = kwargs[name].as_python_constant()
    fn_kwargs = {k: v for k, v in kwargs.items() if k not in _CHECKPOINT_KEYWORDS}
    reentrant = options.get("use_reentrant") is not False
    if reentrant and context_fn is not None:  # torch raises
        raise Unsupported(
            "subgraph",
            "a reentrant checkpoint() with a context_fn",
            hint="pass use_reentrant=False",
        )
    if reentrant and fn_kwargs:  # torch raises
        raise Unsupported(
            "subgraph",
            "a reentrant checkpoint() with keywords for the function",
            hint="pass use_reentrant=False",
        )
    region = checkpoint_region
    if reentrant and not _some_requires_grad(fn_args):
        # ``CheckpointFunction.forward``: the body under no_grad; nothing it gives requires grad
        fn_args, function = [function, *fn_args], tx.wrap_static(_without_grad)
        region = reentrant_region_without_grad
    # a tensor the body gives back without computing it: itself, as the non-reentrant
    # checkpoint gives it (the reentrant one makes it an output of its autograd Function)
    sub = trace_subgraph(tx, function, fn_args, fn_kwargs, "checkpoint()", given_back=not reentrant)
    for name, value in options.items():
        if not isinstance(value, (bool, str, int, type(None))):
            raise Unsupported("subgraph", f"checkpoint()'s {name}={value!r}")
    # a selective checkpoint in the body that runs when the graph runs: so does this one
    runtime = any(node.meta.get(RUNTIME) for node in sub.module.graph.nodes)
    if context_fn is not None:
        sub.module.meta[CONTEXT_FN] = context_fn
        runtime = runtime or _policy_is_code(context_fn) or _writes_in_place(sub.module)
    return call_subgraph(tx, region, sub, options, runtime=runtime)


def _selective_contexts(tx: Translator, vt: VariableTracker | None) -> Callable[[], Any] | None:
    """A checkpoint's ``context_fn`` as the value its node runs with, None for the default:
    ``functools.partial(create_selective_checkpoint_contexts, policy, ...)`` whose parts are values
    of the trace (constants, or read from globals and attributes and guarded), whose contexts are
    dispatch modes that cache and replay the body's results, never changing what it computes; or
    a function of the user's giving such contexts (``_user_contexts``). Other contexts may
    (autocast, a mode of the user's) and break."""
    if vt is None or (
        vt.is_python_constant() and vt.as_python_constant() is torch_checkpoint.noop_context_fn
    ):
        return None
    if isinstance(vt, UserFunctionVariable | NestedFunctionVariable):
        return _user_contexts(tx, vt)
    if not (
        isinstance(vt, PartialVariable)
        and vt.cls is functools.partial
        and vt.fn.is_python_constant()
        and vt.fn.as_python_constant() is torch_checkpoint.create_selective_checkpoint_contexts
    ):
        raise Unsupported(
            "subgraph",
            f"checkpoint()'s context_fn {vt} is not selective checkpointing's",
            hint="only functools.partial(create_selective_checkpoint_contexts, policy) is "
            "traced; other contexts may change what the body computes, and run in Python",
        )
    if not all(part.is_python_constant() for part in [*vt.args, *vt.kwargs.values()]):
        raise Unsupported(
            "subgraph",
            "checkpoint()'s selective checkpointing policy is not a value known when tracing",
            hint="define the policy function at module level or pass a list of ops; a function "
            "made in the call (a closure) is called in Python, as in eager",
        )
    return functools.partial(
        torch_checkpoint.create_selective_checkpoint_contexts,
        *(arg.as_python_constant() for arg in vt.args),
        **{name: value.as_python_constant() for name, value in vt.kwargs.items()},
    )


def _policy_is_code(context_fn: Callable[[], Any]) -> bool:
    """Is the ``context_fn`` or its policy Python code of the user's, called on each forward and
    recomputation (not a list of operators, which torch's own policy looks operators up in)?
    Its calls are then eager's only where torch's checkpoint runs when the graph runs:
    AOTAutograd would call it only while tracing, on its own operators."""
    if not isinstance(context_fn, functools.partial):
        return True  # the user's function, called by torch's checkpoint
    policy = context_fn.args[0] if context_fn.args else context_fn.keywords.get("policy_fn_or_list")
    ops = (torch._ops.OpOverload, torch._ops.HigherOrderOperator)
    return not (type(policy) is list and all(isinstance(op, ops) for op in policy))


def _user_contexts(
    tx: Translator, vt: UserFunctionVariable | NestedFunctionVariable
) -> Callable[[], Any]:
    """A ``context_fn`` that is a function of the user's: the node keeps the function itself, and
    torch's checkpoint calls it where the node runs, for the forward and each recomputation, as in
    eager (fresh contexts each time, the policy's calls eager's). It must be the same function on
    every call: one the trace reads from a global or an attribute (its identity guarded), or a
    function made in the call that closes over nothing (made once here, from its code and
    globals). Its call is traced once here and undone, to see what it gives: the contexts of
    ``create_selective_checkpoint_contexts`` (in their places) or ``contextlib.nullcontext()``,
    which never change what the body computes; what it reads is guarded. Anything else breaks."""
    if isinstance(vt, UserFunctionVariable) and vt.self_vt is None and vt.source is not None:
        fn = vt.fn
    elif isinstance(vt, NestedFunctionVariable) and not (
        vt.closure or vt.defaults or vt.kwdefaults or vt.attrs
    ):
        fn = types.FunctionType(vt.code, vt.f_globals, vt.code.co_name)
    else:
        raise Unsupported(
            "subgraph",
            f"checkpoint()'s context_fn {vt} is not the same function on every call",
            hint="define the context_fn at module level; a closure made in the call runs in "
            "Python, as in eager",
        )
    checkpoint = tx.output.checkpoint()
    try:
        contexts = dispatch.iterate(tx, dispatch.call(tx, vt, [], {}))
    except (Unsupported, TracedException):
        contexts = None
    finally:
        tx.output.restore(checkpoint)
    if contexts is None or not _harmless_contexts(contexts):
        raise Unsupported(
            "subgraph",
            f"checkpoint()'s context_fn {vt} gives contexts that may change what the body "
            "computes, or cannot be traced",
            hint="only selective checkpointing's contexts and nullcontext() are traced",
        )
    return fn


def _harmless_contexts(contexts: list[VariableTracker]) -> bool:
    """Are ``contexts`` a forward and a recomputation context that change nothing the body
    computes: ``nullcontext()``, or the modes of one ``create_selective_checkpoint_contexts``
    call, each in its own place?"""
    made = {id(vt.made) for vt in contexts if isinstance(vt, SelectiveModeVariable)}
    return (
        len(contexts) == 2
        and len(made) <= 1
        and all(
            isinstance(vt, NullContextVariable)
            or (isinstance(vt, SelectiveModeVariable) and vt.index == place)
            for place, vt in enumerate(contexts)
        )
    )


@dataclass(eq=False)
class SelectiveModeVariable(VariableTracker):
    """One of the two dispatch modes ``create_selective_checkpoint_contexts(...)`` gives in a
    trace (``index`` 0: the forward's caching mode, 1: the recomputation's), whose policy is a
    value of the trace. Rebuilt as the item of the pair made by the real call, once for both."""

    made: functools.partial  #: ``create_selective_checkpoint_contexts`` with the real arguments
    index: int

    def python_type(self) -> type:
        modes = (
            torch_checkpoint._CachingTorchDispatchMode,
            torch_checkpoint._CachedTorchDispatchMode,
        )
        return modes[self.index]

    def reconstruct(self, cg: Codegen) -> None:
        cg.build_once(self.made, lambda: cg.load_const(self.made).call_function(0))
        cg.load_const(self.index)
        cg.subscr()


@call_rule(torch_checkpoint.create_selective_checkpoint_contexts)
def _selective_modes(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The pair of modes, where the policy and options are values of the trace."""
    if not all(vt.is_python_constant() for vt in [*args, *kwargs.values()]):
        return None
    made = functools.partial(
        fn,
        *(vt.as_python_constant() for vt in args),
        **{name: vt.as_python_constant() for name, vt in kwargs.items()},
    )
    return TupleVariable([SelectiveModeVariable(made, 0), SelectiveModeVariable(made, 1)])


def _writes_in_place(module: torch.fx.GraphModule) -> bool:
    """Does a node of ``module`` (or of a subgraph it calls) write in place? Eager's selective
    checkpoint raises in the backward where a result it saved was written since; AOTAutograd's
    functional graph would not."""
    graphs = [m.graph for m in module.modules() if isinstance(m, torch.fx.GraphModule)]
    calls = [n for g in graphs for n in g.nodes if n.op in ("call_function", "call_method")]
    return any(_written(node) for node in calls)


def _without_grad(function: Callable[..., Any], *args: Any) -> Any:
    """What a reentrant checkpoint none of whose arguments requires grad computes, traced as the
    body: ``function`` under ``torch.no_grad()``."""
    with torch.no_grad():
        return function(*args)


def reentrant_region_without_grad(gmod: torch.fx.GraphModule, *args: Any, **options: Any) -> Any:
    """What the node of a reentrant checkpoint none of whose arguments requires grad runs:
    ``checkpoint_region`` on the subgraph's inputs detached. Eager's outputs do not require grad
    (its body runs under no_grad, in an autograd Function none of whose inputs requires grad),
    where the subgraph's lifted inputs (a parameter the body closes over) would make them; torch
    warns that none of the inputs requires grad, as in eager (under a tracing backend, when the
    graph is compiled)."""
    detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    if any(torch._C._get_dispatch_mode(key) is not None for key in _TRACING_MODES):
        torch_checkpoint.check_backward_validity(detached)
    return checkpoint_region(gmod, *detached, **options)


def _some_requires_grad(args: list[VariableTracker]) -> bool:
    return any(isinstance(a, TensorVariable) and a.example.requires_grad for a in args)


#: ``checkpoint_sequential(functions, segments, input, ...)``: its Python body is traced (it calls
#: ``checkpoint`` once per segment, each traced by the rule above), not recorded as a torch op.
call_rules_for(
    torch_checkpoint.checkpoint_sequential,
    owner=__name__,
    substitute=torch_checkpoint.checkpoint_sequential,
)
