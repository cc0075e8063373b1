"""Effects of recorded calls: which calls the output graph may fold away, which stay as effectful
nodes, and which must run in Python (a dropped ``dist.all_reduce`` is a wrong result).

Every call recorded in the graph runs once on fake tensors; the output graph's fake mode
(``ProbedFakeTensorMode``) tells an ``EffectProbe`` each operator the call dispatches that mutates
a tensor, communicates (``c10d``) or carries a registered effect. ``classify`` then decides about
a call whose result is not a tensor (None or a Python constant, which the output graph would
otherwise fold and erase):

- ``PURE``: fold it (erase the node). Only when the probe saw no effect, and, for a None result,
  only for the checks listed in ``PURE_NONE``: a call returning None is run for its effect.
- ``GRAPH``: keep it as an effectful node (``mark_effectful``), when it is one operator whose effect
  (mutating its tensor arguments) the graph carries: an ``OpOverload``, a torch C function, a
  ``Tensor`` method, ``operator.setitem``, a target marked ``mutates_only_arguments`` (NumPy code
  over tensors, ``np.put_along_axis(a, ...)``).
- ``INLINE``: a Python function returning None with no operator effect: its body is traced
  instead (``InlineInstead``), so a C call with an effect inside it breaks there and a helper that
  just returns None folds;
- ``BREAK``: anything else (a Python function with effects, a legacy collective, a C function
  returning None with no visible operator): the caller raises ``Unsupported`` so it runs in Python.

Entry points: ``ProbedFakeTensorMode``, ``EffectProbe``, ``classify``, ``mark_effectful``,
``is_effectful``. What is not
here: collectives the tracer understands (``variables/distributed/`` rewrites them before any call
is recorded).
"""

from __future__ import annotations

import contextlib
import enum
import operator
import types
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx
from torch._library.utils import is_impure
from torch._subclasses.fake_tensor import FakeTensorMode

from .exc import Unsupported
from .fakes import fast_meta
from .graph_naming import graph_target


class Verdict(enum.Enum):
    PURE = "pure"
    GRAPH = "graph"
    INLINE = "inline"
    BREAK = "break"


class InlineInstead(Unsupported):
    """A Python function from a torch namespace returned None without running an operator with an
    effect: returned None as a value (``F._canonical_mask(None)``) or called for an effect no
    operator shows (a C call)? Its caller traces its body instead, which tells."""


#: Namespaces of the legacy (in-place, ``Work``-returning) collectives; these never run inside a
#: recorded call: in a graph they would bypass the collective trackers.
LEGACY_COLLECTIVE_NAMESPACES = frozenset({"c10d"})
#: Namespaces of functional collectives (graph nodes in their own right).
FUNCTIONAL_COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional"})


def _checks() -> set[Any]:
    names = [
        "_check",
        "_check_with",
        "_check_index",
        "_check_value",
        "_check_type",
        "_check_is_size",
        "_check_not_implemented",
        "_check_tensor_all",
        "_check_tensor_all_with",
    ]
    found = {getattr(torch, n) for n in names if hasattr(torch, n)}
    found.add(torch._C._get_tracing_state)  # a query that answers None outside jit tracing
    found.update(
        getattr(torch.nn.functional, n)
        for n in ("_verify_batch_size", "_verify_spatial_size")
        if hasattr(torch.nn.functional, n)
    )
    return found


#: Calls returning None that are known to have no effect (checks that raise or return None).
PURE_NONE = frozenset(_checks())

_EFFECT_OF_OP: dict[Any, str | None] = {}


def op_effect(op: Any) -> str | None:
    """``"collective"``, ``"mutation"``/``"effect"`` or None for a dispatched operator (cached)."""
    known = _EFFECT_OF_OP.get(op, _EFFECT_OF_OP)
    if known is not _EFFECT_OF_OP:
        return known
    effect: str | None = None
    namespace = getattr(op, "namespace", "")
    if namespace in LEGACY_COLLECTIVE_NAMESPACES or namespace in FUNCTIONAL_COLLECTIVE_NAMESPACES:
        effect = "collective"
    elif isinstance(op, torch._ops.OpOverload) and op._schema.is_mutable:
        effect = "mutation"
    elif is_impure(op, impure_random=False):
        effect = "effect"
    _EFFECT_OF_OP[op] = effect
    return effect


_RANDOM_OPS: dict[Any, bool] = {}


def is_random(op: Any) -> bool:
    """Does the dispatched operator draw from a random generator (cached)?"""
    known = _RANDOM_OPS.get(op)
    if known is None:
        known = _RANDOM_OPS[op] = torch.Tag.nondeterministic_seeded in getattr(op, "tags", ())
    return known


class EffectProbe:
    """Records the effectful operators one call dispatches (``effects``: ``(kind, op name)``).

    ``with probe.watching(fake_mode):`` around the call, ``fake_mode`` a ``ProbedFakeTensorMode``:
    the fake mode reports the operators the call runs (not those it runs itself to fake them)."""

    def __init__(self) -> None:
        self.effects: list[tuple[str, str]] = []
        self.state_changed: list[str] = []  #: global torch state the call changed (then undone)
        self.random = False  #: the call draws random numbers (``deferred_checks.note_op``)
        #: the tensors mutable operators wrote to (their schemas' written arguments)
        self.written: list[torch.Tensor] = []

    @contextlib.contextmanager
    def watching(self, fake_mode: ProbedFakeTensorMode) -> Iterator[EffectProbe]:
        previous, fake_mode.probe = fake_mode.probe, self
        before = _global_state()
        try:
            yield self
        finally:
            fake_mode.probe = previous
            self.state_changed = _restore_global_state(before)

    def kinds(self) -> set[str]:
        return {kind for kind, _ in self.effects}

    def legacy_collectives(self) -> list[str]:
        return [
            name
            for kind, name in self.effects
            if kind == "collective" and name.split(".")[0] in LEGACY_COLLECTIVE_NAMESPACES
        ]


def _global_state() -> dict[str, Any]:
    return {
        "grad mode": torch.is_grad_enabled(),
        "inference mode": torch.is_inference_mode_enabled(),
        "default dtype": torch.get_default_dtype(),
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "autocast": torch._C._is_any_autocast_enabled(),
    }


def _restore_global_state(before: dict[str, Any]) -> list[str]:
    """Undo what a call changed of the global state recorded in ``before``; returns what it was.
    (Inference mode and autocast are entered through objects: they are only reported.)"""
    after = _global_state()
    changed = [key for key in before if after[key] != before[key]]
    if "grad mode" in changed:
        torch._C._set_grad_enabled(before["grad mode"])
    if "default dtype" in changed:
        torch.set_default_dtype(before["default dtype"])
    if "deterministic algorithms" in changed:
        torch.use_deterministic_algorithms(before["deterministic algorithms"])
    return changed


#: ``FakeTensorMode.__torch_dispatch__`` without the ``torch._disable_dynamo`` wrapper torch puts on
#: every dispatch mode's (its first call imports all of Dynamo; Dynamo never runs in our traces).
_FAKE_DISPATCH = getattr(
    FakeTensorMode.__dict__["__torch_dispatch__"],
    "__wrapped__",
    FakeTensorMode.__dict__["__torch_dispatch__"],
)


class ProbedFakeTensorMode(FakeTensorMode):
    """The output graph's fake mode: reports each operator a recorded call dispatches to the
    active ``EffectProbe``. (A probe of its own, a second dispatch mode, cost a third of the
    tracing time; this is one dictionary lookup per operator.)"""

    probe: EffectProbe | None = None
    _depth = 0  #: > 0 while faking an operator (its decompositions are not the call's operators)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Without torch's dispatch cache: it checks each entry it makes by building the output a
        # second time from it, and in a trace it seldom hits (a repeated call is replayed by
        # ``fake_reuse.py`` first, common operators decided by ``fast_meta.py``): 16 hits for 119
        # entries made in torch_geometric's GAT, whose entries (symbolic sizes) were a quarter of
        # its first call.
        self.cache_enabled = False

    def forget_real_tensors(self) -> None:
        """Drop the weak references torch's converter keeps to each real tensor it made a fake of
        (its describer's memo): the graph's fakes keep this mode alive after the trace, and a
        real tensor with a weak reference cannot be given to ``torch.utils.swap_tensors`` (which
        ``nn.Module.to`` uses with ``torch.__future__.set_swap_module_params_on_conversion``).
        A later trace has a mode of its own."""
        describer = self.fake_tensor_converter.meta_converter.describer
        describer.lookup_tensor.clear()
        describer.lookup_storage.clear()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """False: torch would wrap our ``__torch_dispatch__`` in ``torch._dynamo.disable``, whose
        first call imports all of Dynamo; this mode is only entered by bytegraph's traces, where
        Dynamo never runs."""
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = fast_meta.run(self, func, args, kwargs)  # no listed operator has an effect
        if result is not fast_meta.NOT_FAST:
            return result
        probe = self.probe
        if probe is None or self._depth:
            return _FAKE_DISPATCH(self, func, types, args, kwargs)
        effect = op_effect(func)
        if effect is not None:
            probe.effects.append((effect, str(func)))
            if effect == "mutation":
                probe.written += written_arguments(func, args, kwargs)
        if is_random(func):
            probe.random = True
        self._depth += 1
        try:
            return _FAKE_DISPATCH(self, func, types, args, kwargs)
        finally:
            self._depth -= 1


def written_arguments(op: Any, args: tuple, kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The tensors a mutable operator writes to, as its schema marks them (``Tensor(a!)``)."""
    written: list[torch.Tensor] = []
    for i, arg in enumerate(op._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        written += [v for v in values if isinstance(v, torch.Tensor)]
    return written


def operand_grads(operands: tuple) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Each leaf tensor among ``operands`` (nested in lists, tuples and dicts) with its ``.grad``
    now: what ``grads_changed`` compares after the call."""
    found: list[tuple[torch.Tensor, torch.Tensor | None]] = []
    stack = list(operands)
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            if value.is_leaf:
                found.append((value, value._grad))
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return found


def grads_changed(before: list[tuple[torch.Tensor, Any]], probe: EffectProbe) -> bool:
    """Did the call replace the ``.grad`` of a tensor it was given, or write into one
    (``clip_grad_norm_`` scales the gradients in place)? That is state a graph node does not
    carry: AOTAutograd runs it on functional tensors that have no ``.grad``, so the effect and
    whatever the call computes from the gradients are lost. Each replaced one is put back."""
    grads = {id(g) for _, g in before if g is not None}
    changed = any(id(w) in grads or id(w._base) in grads for w in probe.written)
    for tensor, grad in before:
        if tensor._grad is not grad:
            tensor.grad = grad
            changed = True
    return changed


def is_single_operator(op: str, target: Any) -> bool:
    """Whether a node is one operator whose effects its schema states (so the graph can keep it)."""
    if op == "call_method":
        return True  # a Tensor method: one ATen operator
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    if target is operator.setitem or getattr(target, "mutates_only_arguments", False):
        return True
    module = getattr(target, "__module__", None) or ""
    return isinstance(target, types.BuiltinFunctionType) and (
        module == "torch" or module.startswith("torch._C")
    )


def classify(op: str, target: Any, example: Any, probe: EffectProbe) -> Verdict:
    """What to do with a call of ``target`` whose fake result ``example`` is not a tensor."""
    kinds = probe.kinds()
    if "collective" in kinds:
        return Verdict.BREAK
    if kinds:
        return Verdict.GRAPH if is_single_operator(op, target) else Verdict.BREAK
    if example is None and not _pure_none(target):
        return Verdict.INLINE if isinstance(target, types.FunctionType) else Verdict.BREAK
    return Verdict.PURE


def _pure_none(target: Any) -> bool:
    try:
        return target in PURE_NONE
    except TypeError:  # unhashable target
        return False


def describe(target: Any, probe: EffectProbe) -> str:
    """Why a call was not folded, for the ``Unsupported`` detail."""
    name = target if isinstance(target, str) else getattr(target, "__qualname__", str(target))
    if probe.state_changed:
        return f"{name}() changes torch's global state ({', '.join(probe.state_changed)})"
    if probe.effects:
        ops = sorted({n for _, n in probe.effects})
        shown = ", ".join(ops[:3]) + (", ..." if len(ops) > 3 else "")
        return f"{name}() has effects the graph does not model (it runs {shown})"
    return f"{name}() returned None: it is called for an effect the tracer does not model"


def mark_effectful(node: torch.fx.Node) -> None:
    """Keep ``node`` in every graph: flagged in its meta and known to fx as side-effectful (so
    ``eliminate_dead_code`` and the backends' dead-code checks keep it although nothing uses it)."""
    if node.op == "call_method":  # fx never treats call_method as impure: call the method itself
        node.op, node.target = "call_function", graph_target(getattr(torch.Tensor, node.target))
    node.meta["effectful"] = True
    if not isinstance(node.target, torch._ops.OpOverload):
        torch.fx.node.has_side_effect(node.target)


def is_effectful(node: torch.fx.Node) -> bool:
    return bool(node.meta.get("effectful"))


def unread_effects(graph: torch.fx.Graph, outputs: list[torch.fx.Node]) -> list[torch.fx.Node]:
    """Effectful nodes producing a tensor that nothing reads: extra graph outputs, so that a
    backend extracting what the outputs need (AOTAutograd's partitioner) still runs them."""
    kept = set(outputs)
    return [
        n
        for n in graph.nodes
        if is_effectful(n)
        and not n.users
        and n not in kept
        and isinstance(n.meta.get("example_value"), torch.Tensor)
    ]
