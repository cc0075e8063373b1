"""Calls into torch: ``TorchVariable`` for its namespaces' functions (``call_torch_function``,
``record_torch_op``: a graph node, or a break for what has effects), custom autograd Functions
(``Function.apply`` as one node), higher-order functions and scans, torch.optim's step wrappers,
and the call-rule entries for torch's callables (state queries, constructors).
"""

from __future__ import annotations

import dis
import functools
import inspect
import sys
import types
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.optim.optimizer as optim_optimizer
import torch.utils._foreach_utils as foreach_utils
import torch.utils._pytree as pytree

from ...guards.epoch import HIDDEN_WRAPPERS
from ...guards.sources import AttrSource, ItemSource, ModuleGlobalSource, Source
from ..context_runtime import ContextRecipe
from ..effects import InlineInstead
from ..exc import Unsupported
from . import contexts, dispatch, numpy_arrays, objects
from .base import ConstantLikeVariable, VariableTracker, walk
from .call_rules import call_rule, call_rules_for
from .constants import ConstantVariable, SymNodeVariable
from .containers import DictVariable, ListVariable, SetVariable, TupleVariable, hash_key
from .contexts import CARRIED_KINDS, NONE, CarriedKind, ContextVariable, constant_args
from .distributed import call_distributed, is_distributed_callable
from .functions import CALL_HOOKS, NestedFunctionVariable, UserFunctionVariable
from .iterators import IteratorVariable
from .tensors import TensorVariable, is_tensor_method

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator
    from .base import VariableTracker
    from .contexts import CarriedContextVariable


# Custom ``torch.autograd.Function`` subclasses called through ``Function.apply``.
#
# The call becomes one graph node running the real ``apply``, so at run time autograd records the
# user's ``backward`` exactly as in eager. Before that node is added, the user's ``forward`` is
# inlined once as a check (its nodes are then discarded): a forward that cannot be traced, or that
# has side effects the trace would have to replay, makes the call a graph break instead, so the
# fake-tensor run of ``apply`` that gives the node its shapes never executes user code with
# effects. ``FunctionCtx`` calls made by the forward (``save_for_backward``, attributes set on
# ``ctx``) only matter to the backward and are accepted as no-ops during the check.


def is_autograd_function(cls: Any) -> bool:
    return (
        isinstance(cls, type)
        and issubclass(cls, torch.autograd.Function)
        and cls is not torch.autograd.Function
    )


#: torch's ``Function.apply`` as the class stores it: a ``classmethod`` up to torch 2.14, from 2.15
#: ``torch._C._FunctionBase``'s C ``classmethod_descriptor`` (its bound form has no ``__func__``).
_TORCH_APPLY = inspect.getattr_static(torch.autograd.Function, "apply")


def apply_overriders(cls: type) -> list[type]:
    """The classes of ``cls``'s MRO before ``torch.autograd.Function`` (``cls`` first): the ones
    that could define their own ``apply``."""
    mro = cls.__mro__
    return list(mro[: mro.index(torch.autograd.Function)])


def has_torch_apply(cls: type) -> bool:
    """Whether ``cls.apply`` is torch's own (no class of its MRO overrides it)."""
    return inspect.getattr_static(cls, "apply") is _TORCH_APPLY


@dataclass(eq=False)
class AutogradFunctionApplyVariable(VariableTracker):
    """``MyFunction.apply`` (``cls`` is the Function subclass)."""

    cls: type
    cls_source: Source | None = None  #: where the class was read (None: a constant of the trace)
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        _check_forward(tx, self.cls, self.cls_source, args, kwargs)
        return tx.output.call_function(self.cls.apply, tuple(args), kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.cls_source is not None:
            self.cls_source.reconstruct(cg)
        else:
            cg.load_const(self.cls)
        cg.load_attr("apply")

    def __repr__(self) -> str:
        return f"AutogradFunctionApplyVariable({self.cls.__qualname__})"


@dataclass(eq=False)
class FunctionCtxVariable(VariableTracker):
    """The ``ctx`` a forward receives during the check: records attributes, ignores the rest."""

    needs_input_grad: tuple[bool, ...]
    attrs: dict[str, VariableTracker] = field(default_factory=dict)
    source: Source | None = None
    #: the class ``apply`` makes the ctx of (the Function's ``_backward_cls``)
    ctx_type: type = torch.autograd.function.FunctionCtx

    def python_type(self) -> type:
        return self.ctx_type

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return TupleVariable([ConstantVariable(v) for v in self.needs_input_grad])
        if name in _CTX_METHODS:
            return _CtxMethodVariable(name)
        raise Unsupported("autograd_function", f"ctx.{name} in an autograd.Function forward")

    def store_attr(self, name: str, value: VariableTracker) -> None:
        self.attrs[name] = value


#: ``ctx`` methods whose effect only concerns the backward pass (the real ``apply`` runs them).
_CTX_METHODS = frozenset(
    {"save_for_backward", "save_for_forward", "mark_non_differentiable", "set_materialize_grads"}
)


@dataclass(eq=False)
class _CtxMethodVariable(VariableTracker):
    name: str
    source: Source | None = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return ConstantVariable(None)


def _check_forward(
    tx: Translator,
    cls: type,
    cls_source: Source | None,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> None:
    """Inline ``cls.forward`` on the arguments and undo it; ``Unsupported`` if it has effects. A
    graph break inside it propagates: the caller then breaks at the ``apply`` call. A
    classmethod ``forward`` gets the class first, as ``apply`` gives it."""
    forward = inspect.getattr_static(cls, "forward")
    if not isinstance(forward, (staticmethod, classmethod)) or not inspect.isfunction(
        forward.__func__
    ):
        raise Unsupported(
            "autograd_function",
            f"{cls.__qualname__}.forward is neither a staticmethod nor a classmethod",
        )
    bound = []
    if isinstance(forward, classmethod):
        bound.append(tx.wrap_static(cls) if cls_source is None else tx.wrap(cls, cls_source))
    uses_ctx = inspect.getattr_static(cls, "setup_context") is inspect.getattr_static(
        torch.autograd.Function, "setup_context"
    )
    needs = tuple(isinstance(a, TensorVariable) and a.example.requires_grad for a in args)
    ctx = FunctionCtxVariable(needs, ctx_type=cls._backward_cls)
    forward_args = [*bound, ctx, *args] if uses_ctx else [*bound, *args]
    output = tx.output
    checkpoint = output.checkpoint()
    containers = [vt for vt in walk([args, kwargs]) if isinstance(vt, _CONTAINERS)]
    before = [content_ids(c) for c in containers]
    try:
        UserFunctionVariable(forward.__func__).call_function(tx, forward_args, kwargs)
        mutated = any(content_ids(c) != items for c, items in zip(containers, before, strict=True))
        if mutated or output.side_effects.changed_since(checkpoint[1]):
            raise Unsupported(
                "autograd_function",
                f"the forward of {cls.__qualname__} has side effects",
                hint="keep autograd.Function forwards free of effects on Python objects",
            )
    finally:
        output.restore(checkpoint)


_CONTAINERS = (ListVariable, DictVariable, SetVariable)


def content_ids(container: VariableTracker) -> list[tuple[Any, int]]:
    """What identifies a container's contents: its keys (or positions) and item trackers (to
    tell whether a traced body changed a container it was given: ``subgraphs.py`` too)."""
    items = container.items
    if isinstance(items, set):  # of constants
        return sorted((repr(v), 0) for v in items)
    pairs = items.items() if isinstance(items, dict) else enumerate(items)
    return [(k, id(v)) for k, v in pairs]


# torch.optim's wrappers around ``Optimizer.step``/``zero_grad``, traced without their breaks.
#
# - ``torch.autograd.profiler.record_function(name)`` (every ``step`` and ``zero_grad`` runs in
#   one): while no profiler is on it records nothing, so it is traced as a context without nodes,
#   guarded on the profiler staying off (with a profiler on, the block runs in Python).
# - ``_use_grad_for_differentiable``'s wrapper switches grad mode to ``defaults["differentiable"]``
#   around ``step`` and calls ``torch._dynamo.graph_break()`` (only so that torch's AOT sees an
#   inference graph): traced as a grad-mode block around the call, without the breaks.
# - ``torch._disable_dynamo`` wrappers (``zero_grad``, ``state_dict``, ``add_param_group``...):
#   the call runs in Python (one break), except for ``Optimizer.zero_grad``, whose body (``p.grad =
#   None`` or zeroing the gradients in place) is traced.
# Entry points: the ``CALL_HOOKS`` and ``call_rules`` entries registered at import.

_USE_GRAD_CODE = optim_optimizer._use_grad_for_differentiable(lambda self: None).__code__
_DISABLE_DYNAMO_CODE = torch._disable_dynamo(lambda: None).__code__
#: ``_disable_dynamo``-wrapped functions whose body is traced all the same.
TRACED_DESPITE_DISABLE = frozenset({torch.optim.Optimizer.zero_grad.__wrapped__})


def _profiler_enabled() -> bool:
    return bool(torch.autograd._profiler_enabled())


@dataclass(eq=False)
class RecordFunctionVariable(ContextVariable):
    """``record_function(name)`` with no profiler on: enters and exits without nodes."""

    label: str = ""

    def enter(self, tx: Translator) -> VariableTracker:
        self.record(tx, "enter", key=("record_function", self.label))
        return NONE

    def exit(self, tx: Translator) -> VariableTracker:
        self.record(tx, "exit")
        return NONE

    def recipe(self) -> ContextRecipe:
        return ContextRecipe(torch.autograd.profiler.record_function, (self.label,))


#: Functions of the process's build (device lists) that torch.optim asks: folded to constants.
@call_rule(
    foreach_utils._get_fused_kernels_supported_devices,
    foreach_utils._get_foreach_kernels_supported_devices,
)
def _build_constant(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    return tx.fold(fn()) if not args and not kwargs else None


@call_rule(
    foreach_utils._group_tensors_by_device_and_dtype,
    torch._C._group_tensors_by_device_and_dtype,
    torch.optim.Optimizer._group_tensors_by_device_and_dtype,
)
def _group_by_device_and_dtype(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """torch's grouping of lists of tensors by the device and dtype of the first list's
    (``clip_grad_norm_``, the foreach helpers): computed at trace time from those tensors'
    device and dtype, which their guards fix; the groups hold the same trackers (None where
    a later list has None). The key order is torch's: asked of empty tensors standing for the
    first list's. Anything else (lists of unequal lengths...) runs torch's, which raises."""
    names = ("tensorlistlist", "with_indices")
    given = dict(zip(names, args, strict=False))
    if len(args) > 2 or set(kwargs) - set(names) or set(kwargs) & set(given):
        return None
    given.update(kwargs)
    outer, with_indices = given.get("tensorlistlist"), given.get("with_indices", NONE)
    if not isinstance(outer, (ListVariable, TupleVariable)) or not outer.items:
        return None
    if not with_indices.is_python_constant():
        return None
    lists = [lst.items for lst in outer.items if isinstance(lst, (ListVariable, TupleVariable))]
    first = lists[0] if len(lists) == len(outer.items) else []
    if not first or any(len(lst) != len(first) for lst in lists):
        return None
    if not all(isinstance(t, TensorVariable) for t in first):
        return None
    stand_ins = [torch.empty(0, dtype=t.example.dtype, device=t.example.device) for t in first]
    groups = torch._C._group_tensors_by_device_and_dtype([stand_ins], True)
    result = {}
    for key, (_, indices) in groups.items():
        members = ListVariable([ListVariable([lst[i] for i in indices]) for lst in lists])
        kept = indices if with_indices.as_python_constant() else []
        result[hash_key(tx.fold(key))] = TupleVariable([members, tx.fold(list(kept))])
    return DictVariable(result)


def _scaled(t1: list, t2: list, scalars: torch.Tensor, divide: bool) -> list:
    """``value * t1 / t2`` or ``value * t1 * t2`` per tensor, in the order of torch's CPU kernels
    (``self + value * t1 / t2``), each value a 0-dim tensor of ``scalars``."""
    products = torch._foreach_mul(t1, list(scalars.unbind(0)))
    return torch._foreach_div(products, t2) if divide else torch._foreach_mul(products, t2)


def foreach_addcdiv_(self: list, t1: list, t2: list, scalars: torch.Tensor) -> list:
    """The in-place ops return ``self``, the list object given."""
    torch._foreach_add_(self, _scaled(t1, t2, scalars, divide=True))
    return self


def foreach_addcdiv(self: list, t1: list, t2: list, scalars: torch.Tensor) -> list:
    return torch._foreach_add(self, _scaled(t1, t2, scalars, divide=True))


def foreach_addcmul_(self: list, t1: list, t2: list, scalars: torch.Tensor) -> list:
    torch._foreach_add_(self, _scaled(t1, t2, scalars, divide=False))
    return self


def foreach_addcmul(self: list, t1: list, t2: list, scalars: torch.Tensor) -> list:
    return torch._foreach_add(self, _scaled(t1, t2, scalars, divide=False))


_SCALARS_TENSOR_FORMS = {
    torch._foreach_addcdiv_: foreach_addcdiv_,
    torch._foreach_addcdiv: foreach_addcdiv,
    torch._foreach_addcmul_: foreach_addcmul_,
    torch._foreach_addcmul: foreach_addcmul,
}


@call_rule(*_SCALARS_TENSOR_FORMS)
def _foreach_scalars_tensor(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``torch._foreach_addcdiv_(params, t1, t2, scalars)`` with the scalars as a 1-d tensor
    (torch.optim's foreach Adam, AdamW, NAdam stack their step sizes when compiling): traced as
    the same arithmetic in foreach ops (``foreach_addcdiv_``...), which AOTAutograd traces; the
    fused op's fake kernel rejects that tensor (aot_eager raised on it and the call fell back).
    Any other form is the op itself."""
    if kwargs or len(args) != 4 or not isinstance(args[3], TensorVariable):
        return None
    if args[3].example.dim() != 1:
        return None
    return UserFunctionVariable(_SCALARS_TENSOR_FORMS[fn]).call_function(tx, args, kwargs)


@call_rule(torch.amp.autocast_mode._cast)
def _autocast_cast(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``custom_fwd(cast_inputs=...)``'s cast of a forward's arguments (the ctx among them, kept
    as it is): its body is traced, as a user function's; as one graph op its ctx argument was no
    value a node can take (a break)."""
    return UserFunctionVariable(fn).call_function(tx, args, kwargs)


@call_rule(torch.autograd.profiler.record_function)
def _record_function(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The tracker of ``record_function(name)`` while no profiler runs, else None."""
    if _profiler_enabled():
        return None
    values, named = constant_args("record_function", args, kwargs)
    if named or len(values) != 1 or not isinstance(values[0], str):
        return None
    tx.output.assume_state(("profiler",), _profiler_enabled, False)
    return RecordFunctionVariable(log=tx.output.state, label=values[0])


def _carried_enter(tx: Translator, ctx: CarriedContextVariable) -> None:
    ctx.record(tx, "enter", key=ctx.key)


def _carried_exit(tx: Translator, ctx: CarriedContextVariable) -> VariableTracker:
    ctx.record(tx, "exit")
    return NONE


CARRIED_KINDS["record_function"] = CarriedKind(
    _carried_enter,
    _carried_exit,
    lambda key: ContextRecipe(torch.autograd.profiler.record_function, (key[1],)),
    lambda key, expected: None,
    lambda key: lambda: None,
)


def _use_grad_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``_use_grad(self, ...)``: ``func(self, ...)`` under ``set_grad_enabled(differentiable)``."""
    if vt.self_vt is not None:
        args = [vt.self_vt, *args]
    if not args:
        raise Unsupported("call", "an optimizer step called without self")
    defaults = args[0].var_getattr(tx, "defaults")
    differentiable = dispatch.getitem(tx, defaults, ConstantVariable("differentiable"))
    func = vt.clone(self_vt=None).closure_value(tx, "func")
    grad_mode = contexts.set_grad_enabled(tx, torch.set_grad_enabled, [differentiable], {})
    grad_mode.call_method(tx, "__enter__", [], {})
    result = func.call_function(tx, args, kwargs)
    grad_mode.call_method(tx, "__exit__", [NONE, NONE, NONE], {})
    return result


def _disabled_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """A ``torch._disable_dynamo`` wrapper: runs in Python, unless its function is traced anyway."""
    wrapped = vt.fn.__wrapped__
    if wrapped not in TRACED_DESPITE_DISABLE:
        raise Unsupported(
            "disabled",
            f"{wrapped.__qualname__} is marked with torch._disable_dynamo: it runs in Python",
            hint="call it outside the compiled function",
        )
    inner = vt.clone(self_vt=None).closure_value(tx, "fn")
    if vt.self_vt is not None:
        args = [vt.self_vt, *args]
    return inner.call_function(tx, args, kwargs)


def _init_group_call(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> None:
    """``opt._init_group(group, lists...)``: before it is traced, the real method runs on every
    param group of the real optimizer (with fresh lists), creating the state eager's first step
    would create (``step``, ``exp_avg``...), so that the trace reads that state as inputs and the
    next call hits the cache instead of tracing the state's creation again. Skipped where the real
    objects may not be what the trace sees: the trace already read ``opt.state``, or changed a
    ``.grad`` or a container before this point."""
    opt_vt = vt.self_vt if vt.self_vt is not None else (args[0] if args else None)
    opt = getattr(opt_vt, "value", None)
    if opt_vt is None or opt_vt.source is None or not isinstance(opt, torch.optim.Optimizer):
        return None
    effects = tx.output.side_effects
    if effects.mutated or any(
        isinstance(obj, TensorVariable) for obj, _, _ in effects.attr_stores.values()
    ):
        return None
    if id(opt.state) in tx.output.wrapped or _state_ready(opt):
        return None
    lists = [
        p
        for p in list(inspect.signature(vt.fn).parameters.values())[2:]
        if p.default is inspect.Parameter.empty
    ]
    with torch.set_grad_enabled(bool(opt.defaults.get("differentiable", False))):  # as step's
        for group in opt.param_groups:
            vt.fn(opt, group, *[[] for _ in lists])
    return None


def _state_ready(opt: torch.optim.Optimizer) -> bool:
    """Every parameter with a gradient has its state (the real ``_init_group`` would add none)."""
    return all(
        p in opt.state and opt.state[p]
        for group in opt.param_groups
        for p in group["params"]
        if p.grad is not None
    )


def _optimizer_classes() -> list[type]:
    found, todo = [], [torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("torch.optim."):
            found.append(cls)
    return found


for _cls in _optimizer_classes():
    _init = vars(_cls).get("_init_group")
    _init = getattr(_init, "__wrapped__", _init)  # torch.compile may have wrapped it already
    if isinstance(_init, types.FunctionType):
        CALL_HOOKS[_init.__code__] = _init_group_call
_init_group_call.accepts_bound = True  # type: ignore[attr-defined]
_use_grad_call.accepts_bound = True  # type: ignore[attr-defined]
_disabled_call.accepts_bound = True  # type: ignore[attr-defined]
CALL_HOOKS[_USE_GRAD_CODE] = _use_grad_call
CALL_HOOKS[_DISABLE_DYNAMO_CODE] = _disabled_call


# ``associative_scan(combine_fn, xs, dim, combine_mode="generic")`` without ``torch.vmap`` where
# that computes the same thing.
#
# torch's generic mode runs ``combine_fn`` under ``torch.vmap`` over the scan dimension, at every
# level of its odd/even recursion; on CPU that wrapping costs five times the scan itself (1.9 ms
# against 0.38 ms for one scan of Mamba's tiny config), and transformers' Mamba takes this path
# whenever a compiler traces it. When ``combine_fn`` is *elementwise* and every leaf of ``xs`` has
# the same shape, calling it on the whole batch is what vmap computes slice by slice, so
# ``elementwise_scan`` runs torch's own recursion (``generic_associative_scan``) on the unwrapped
# function: the same operations in the same order, with equal results.
#
# *Elementwise* is decided by running ``combine_fn`` once on probes, stand-ins for its tensors that
# allow only the arithmetic operators, with each other and with Python numbers: indexing, iterating,
# ``@`` or anything else fails, and so does an output that is not one probe per leaf in the input's
# structure. The higher-order section above has already allowed only functions made of locals,
# constants, operators and packing; the in-place operators (``a += b`` writes into the slices it is
# given) are refused from the bytecode. Everything else goes to torch's ``associative_scan``
# unchanged.

try:
    from torch._higher_order_ops.associative_scan import (
        associative_scan,
        generic_associative_scan,
        wrap_combine_fn_flat,
    )
except ImportError:  # a torch without them: ``faster`` keeps the function it is given
    associative_scan = None


class _Probe:
    """Stands for one tensor leaf while ``combine_fn`` runs once: arithmetic operators only."""

    __slots__ = ()


def _operator(self: _Probe, other: Any) -> Any:
    if isinstance(other, (_Probe, bool, int, float)):
        return _Probe()
    return NotImplemented


def _unary(self: _Probe) -> _Probe:
    return _Probe()


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    setattr(_Probe, f"__{_name}__", _operator)
    setattr(_Probe, f"__r{_name}__", _operator)
for _name in ("lshift", "rshift"):
    setattr(_Probe, f"__{_name}__", _operator)
    setattr(_Probe, f"__r{_name}__", _operator)
_Probe.__neg__ = _Probe.__invert__ = _unary


def faster(fn: Any) -> Any:
    """The implementation a graph node runs for the higher-order function ``fn``."""
    if associative_scan is not None and fn is associative_scan:
        return elementwise_scan
    return fn


def elementwise_scan(
    combine_fn: Any, xs: Any, dim: int, reverse: bool = False, combine_mode: str = "pointwise"
) -> Any:
    """``associative_scan`` with the same arguments; without vmap where that is equal."""
    leaves, spec = pytree.tree_flatten(xs)
    if not (_plain(leaves, dim, reverse, combine_mode) and _elementwise(combine_fn, spec)):
        return associative_scan(combine_fn, xs, dim, reverse=reverse, combine_mode=combine_mode)
    dim %= leaves[0].ndim
    moved = [torch.movedim(leaf, dim, 0) for leaf in leaves]
    if reverse:
        moved = [leaf.flip([0]) for leaf in moved]
    flat = functools.partial(
        wrap_combine_fn_flat, combine_fn=combine_fn, spec=spec, num_leaves=len(leaves)
    )
    out = generic_associative_scan(flat, moved)
    if reverse:
        out = [leaf.flip([0]) for leaf in out]
    return pytree.tree_unflatten([torch.movedim(leaf, 0, dim) for leaf in out], spec)


def _plain(leaves: list[Any], dim: Any, reverse: Any, combine_mode: Any) -> bool:
    """Arguments torch accepts, in generic mode, with dense leaves of one shape."""
    if combine_mode != "generic" or type(dim) is not int or type(reverse) is not bool:
        return False
    if not leaves or not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return False
    shape = leaves[0].shape
    return (
        all(leaf.layout == torch.strided and leaf.shape == shape for leaf in leaves)
        and -len(shape) <= dim < len(shape)
        and shape[dim] > 0
    )


#: Per function, per input structure: whether it is elementwise (decided once).
_DECIDED: weakref.WeakKeyDictionary[types.FunctionType, dict[pytree.TreeSpec, bool]] = (
    weakref.WeakKeyDictionary()
)


def _elementwise(combine_fn: Any, spec: pytree.TreeSpec) -> bool:
    if not isinstance(combine_fn, types.FunctionType):
        return False
    decided = _DECIDED.setdefault(combine_fn, {})
    if spec not in decided:
        decided[spec] = _probe(combine_fn, spec)
    return decided[spec]


def _probe(combine_fn: types.FunctionType, spec: pytree.TreeSpec) -> bool:
    if _writes_in_place(combine_fn.__code__):
        return False
    count = spec.num_leaves
    left = pytree.tree_unflatten([_Probe() for _ in range(count)], spec)
    right = pytree.tree_unflatten([_Probe() for _ in range(count)], spec)
    try:
        out = combine_fn(left, right)
    except Exception:  # noqa: BLE001 (it did something probes do not allow: not elementwise)
        return False
    out_leaves, out_spec = pytree.tree_flatten(out)
    return out_spec == spec and all(isinstance(leaf, _Probe) for leaf in out_leaves)


def _writes_in_place(code: types.CodeType) -> bool:
    return any(
        i.opname == "BINARY_OP" and i.argrepr.endswith("=") for i in dis.get_instructions(code)
    )


# torch's higher-order functions (``associative_scan``, ``scan``) called with a function made in
# the trace: one graph node whose target carries that function.
#
# transformers' Mamba, under a compiler (``is_torchdynamo_compiling()`` is true while bytegraph
# traces), scans with ``associative_scan(combine_fn, (A, B), dim=2, combine_mode="generic")``, where
# ``combine_fn`` is a ``def`` inside the forward. The node cannot take a function as an argument (FX
# writes arguments as literals), so the function is made for real once, at trace time, and bound
# into a target referenced by object (``bind_functions``). That is only sound for *pure* functions:
# no closure cells, no default values, no global reads and no calls, only arithmetic, indexing and
# packing/unpacking of their arguments (``combine_fn`` is ``a_l * a_r, a_r * b_l + b_r``), so that
# the function made now computes the same thing on every later call. Anything else is
# ``Unsupported``. The node runs ``faster(fn)``: for ``associative_scan``, the same scan
# without ``torch.vmap`` where the function is elementwise.

#: ``(module, name)`` of the higher-order functions handled here.
HIGHER_ORDER = frozenset(
    {
        ("torch._higher_order_ops.associative_scan", "associative_scan"),
        ("torch._higher_order_ops.scan", "scan"),
    }
)

#: Opcodes a pure function may use: locals, constants, operators, subscripts, packing.
_PURE_OPCODES = frozenset(
    {
        "RESUME",
        "NOP",
        "CACHE",
        "EXTENDED_ARG",
        "LOAD_FAST",
        "LOAD_FAST_CHECK",
        "LOAD_FAST_LOAD_FAST",
        "STORE_FAST",
        "STORE_FAST_STORE_FAST",
        "STORE_FAST_LOAD_FAST",
        "LOAD_CONST",
        "RETURN_VALUE",
        "RETURN_CONST",
        "POP_TOP",
        "COPY",
        "SWAP",
        "UNPACK_SEQUENCE",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BINARY_OP",
        "BINARY_SUBSCR",
        "UNARY_NEGATIVE",
        "UNARY_INVERT",
    }
)


def is_higher_order(fn: Any) -> bool:
    return (getattr(fn, "__module__", None), getattr(fn, "__name__", None)) in HIGHER_ORDER


def bind_functions(
    fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> tuple[Any, list[VariableTracker], dict[str, VariableTracker]]:
    """``fn`` with the functions among its arguments bound in: a new target and the remaining
    arguments (positional functions are taken out of ``args``, keyword ones out of ``kwargs``)."""
    positional = {i: _materialize(a) for i, a in enumerate(args) if _is_function(a)}
    keyword = {k: _materialize(v) for k, v in kwargs.items() if _is_function(v)}
    if not positional and not keyword:
        return fn, args, kwargs
    rest = [a for i, a in enumerate(args) if i not in positional]
    nargs = len(args)
    run = faster(fn)

    @functools.wraps(fn, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    def call(*values: Any, **named: Any) -> Any:
        it = iter(values[: nargs - len(positional)])
        full = [positional[i] if i in positional else next(it) for i in range(nargs)]
        return run(*full, *values[nargs - len(positional) :], **named, **keyword)

    rest_kwargs = {k: v for k, v in kwargs.items() if k not in keyword}
    return call, rest, rest_kwargs


def _is_function(vt: VariableTracker) -> bool:
    return isinstance(vt, NestedFunctionVariable)


def _materialize(vt: NestedFunctionVariable) -> types.FunctionType:
    code = vt.code
    if vt.closure or vt.defaults or vt.kwdefaults or code.co_freevars or code.co_cellvars:
        raise Unsupported(
            "higher_order", f"{code.co_name} made in the trace has a closure or defaults"
        )
    impure = {i.opname for i in dis.get_instructions(code)} - _PURE_OPCODES
    if impure:
        raise Unsupported(
            "higher_order",
            f"{code.co_name} made in the trace uses {', '.join(sorted(impure))}",
            hint="a function passed to a higher-order op may only compute on its arguments",
        )
    return types.FunctionType(code, vt.f_globals, code.co_name)


# Calls to callables from torch's namespaces: ``TorchVariable`` and what its call does.
#
# Callables with an entry in ``call_rules`` are answered there first (``torch.Size``, queries of
# global state as constants, ``torch.device``/``finfo`` folded, ``as_tensor``/``from_numpy`` of
# arrays and tensors, torch's legacy typed constructors ``LEGACY_CONSTRUCTORS``, ``torch._assert``,
# the ``EFFECTFUL`` names ``torch`` has): those entries are registered in this module.
# ``call_torch_function`` takes the rest: tensor methods read from the class, collectives, context
# managers (``contexts.py``), other calls with effects outside the tensors (``EFFECTFUL`` names
# and ``set_*`` functions of any torch namespace: ``Unsupported``, so they run in Python), and
# otherwise ``record_torch_op``: a graph node run on fake tensors (results that are not tensors are
# folded to constants by the output graph; factory calls under a ``torch.device`` context of the
# trace get the device as an argument).


@dataclass(eq=False)
class TorchVariable(ConstantLikeVariable):
    """``torch``, ``torch.nn.functional``, a torch op or class: attributes stay torch values."""

    value: Any
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            raise Unsupported("getattr", f"{self.value!r} has no attribute {name!r}") from None
        state = _module_state_source(self.value, name, attr)
        if state is not None:
            return tx.wrap(attr, state)
        vt = tx.wrap_static(attr)
        if _module_like(self.value, name, attr, vt):
            # a module-like object of torch's (``torch.backends.cuda.matmul``) has no tracker of
            # its own: at a graph break it is loaded again from its module
            vt = vt.clone(source=ModuleGlobalSource(self.value.__name__, name))
        return vt

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        cls = self.value
        if isinstance(cls, type) and any("_fields" in vars(k) for k in cls.__mro__):
            # a namedtuple class of torch's written in Python (``_IncompatibleKeys``): made as
            # the user's are
            return objects.construct_namedtuple_object(tx, self, args, kwargs)
        return call_torch_function(tx, self.value, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(self.value)

    def __repr__(self) -> str:
        return f"TorchVariable({getattr(self.value, '__name__', self.value)!s})"


@dataclass(eq=False)
class TorchMadeFunctionVariable(UserFunctionVariable):
    """A function torch made at run time over tensors of its own (``holds_tensors``): the one
    ``torch.func.vjp`` gives, ``torch.func.linearize``'s ``jvp_fn``. No torch op: its closure's
    tensors are real, not the trace's (its fake run would compute on them, or change its state:
    ``linearize``'s graph folds its constants at its first call), and it is a new object at each
    call. Nor inlined (torch's internals). Guarded as a user's function is, by what it is made of
    (``builder._guard_function``), so the next call's matches; its call breaks and runs in
    Python, as eager."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        raise Unsupported(
            "call",
            f"{self.fn.__module__}.{self.fn.__qualname__}: a function torch made over tensors "
            "of its own runs in Python",
        )

    def __repr__(self) -> str:
        return f"TorchMadeFunctionVariable({self.fn.__qualname__})"


def holds_tensors(fn: types.FunctionType, budget: int = 1000) -> bool:
    """Does the function ``fn`` hold a tensor or a module (among its closure's and defaults'
    values, through containers, partials and the functions among them; ``budget`` values at
    most)?"""
    todo = _held_by(fn)
    seen: set[int] = set()
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        budget -= 1
        if budget < 0:
            return False
        if isinstance(value, (torch.Tensor, torch.nn.Module)):
            return True
        if isinstance(value, (tuple, list, set, frozenset)):
            todo += value
        elif isinstance(value, dict):
            todo += value.values()
        elif isinstance(value, functools.partial):
            todo += [value.func, *value.args, *value.keywords.values()]
        elif isinstance(value, types.FunctionType):
            todo += _held_by(value)
    return False


def _held_by(fn: types.FunctionType) -> list[Any]:
    """The values of ``fn``'s closure cells (those bound) and of its defaults."""
    held = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    for cell in fn.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            pass
    return held


#: Values a torch module's attribute may hold as a setting a program changes between calls.
_SETTING_TYPES = (bool, int, float, str, type(None))


def _module_state_source(module: Any, name: str, attr: Any) -> Source | None:
    """Where ``attr``, a scalar read as ``module.name`` of a torch module, is read again by the
    guards: torch keeps settings there (``torch.backends.cudnn.enabled``, a property of the
    module's class reading the C flag; ``torch.backends.opt_einsum.strategy``; module globals),
    which a program may set between calls, so the value is guarded as an input is. None for
    anything else (functions, classes, dtypes: torch's own objects, static)."""
    if (
        type(attr) not in _SETTING_TYPES
        or not isinstance(module, types.ModuleType)
        or sys.modules.get(module.__name__) is not module
    ):
        return None
    static = inspect.getattr_static(type(module), name, None)
    if static is None or not hasattr(type(static), "__get__"):
        in_dict = vars(module).get(name, _MISSING)
        return ModuleGlobalSource(module.__name__, name) if in_dict is attr else None
    parent, _, last = module.__name__.rpartition(".")
    holder = sys.modules.get(parent)
    if holder is not None and vars(holder).get(last) is module:
        return AttrSource(ModuleGlobalSource(parent, last), name)  # a property of its class
    return None


_MISSING = object()


def _module_like(module: Any, name: str, attr: Any, vt: VariableTracker) -> bool:
    """Is ``attr``, the global ``name`` of the torch module ``module``, a plain object that
    ``wrap_static`` made a sourceless object tracker of (not a function, class, container or
    constant: those have trackers that rebuild them)?"""
    return (
        isinstance(module, types.ModuleType)
        and sys.modules.get(module.__name__) is module
        and vars(module).get(name) is attr
        and not callable(attr)
        and not isinstance(attr, (types.ModuleType, tuple, list, dict, set))
        and getattr(vt, "value", None) is attr
        and getattr(vt, "source", False) is None
        and not vt.is_python_constant()
    )


#: Names in torch namespaces whose calls must run in Python (effects outside the graph).
EFFECTFUL = frozenset(
    {
        "manual_seed",
        "seed",
        "initial_seed",
        "save",
        "load",
        "compile",
        "set_default_tensor_type",
        "set_printoptions",
        "set_num_threads",
        "set_rng_state",
        "get_rng_state",
        "synchronize",
        "set_anomaly_enabled",
        "from_numpy",
        "as_tensor",
        "set_float32_matmul_precision",
        "profiler",
        "record_function",
        # global state and mode stacks that the tracer does not model (``contexts.py`` does
        # grad/inference mode, autocast contexts, default dtype, deterministic algorithms)
        "autocast_increment_nesting",
        "autocast_decrement_nesting",
        "clear_autocast_cache",
        "_enter_autocast",
        "_exit_autocast",
        "_enter_inference_mode",
        "_exit_inference_mode",
        "_push_mode",
        "_pop_mode",
        "_push_on_torch_function_stack",
        "_pop_torch_function_stack",
        "_set_torch_function_mode",
        "_set_dispatch_mode",
    }
)


def call_torch_function(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """A call of a callable from torch's namespaces that has no entry in ``call_rules`` (or whose
    entry declined it): a tensor method, a collective, a context, an effect, or a graph node."""
    name = getattr(fn, "__name__", "")
    try:
        hash(fn)  # the tables below are looked up by it
    except TypeError:
        raise Unsupported("call", f"calling a {type(fn).__name__} object") from None
    if is_tensor_method(fn) and args and isinstance(args[0], TensorVariable):
        return args[0].call_method(tx, name, list(args[1:]), kwargs)  # torch.Tensor.add(x, y)
    if is_distributed_callable(fn):  # collectives and world queries, before any run
        return call_distributed(tx, fn, args, kwargs)
    ctx = contexts.construct(tx, fn, args, kwargs)
    if ctx is not None:
        return ctx
    if name in EFFECTFUL or name.lstrip("_").startswith("set_"):
        raise _effect(name)
    if isinstance(fn, type):
        raise Unsupported(
            "new_object", f"creating a {fn.__qualname__} object in the compiled function"
        )
    if not callable(fn):
        raise Unsupported("call", f"calling {fn!r}")
    return record_torch_op(tx, fn, args, kwargs)


def record_torch_op(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``fn(*args, **kwargs)`` as a graph node, run on fake tensors (a result that is not a tensor
    is folded to a constant by the output graph)."""
    if is_higher_order(fn):  # ``associative_scan(combine_fn, ...)``
        fn, args, kwargs = bind_functions(fn, args, kwargs)
    # an iterator argument (``clip_grad_norm_(model.parameters())``, a generator) is consumed by
    # the call: the graph node takes the list of its remaining items
    args = [ListVariable(a.unpack(tx)) if isinstance(a, IteratorVariable) else a for a in args]
    device = contexts.device_for(tx, fn, kwargs)
    if device is not None:  # under ``with torch.device(d):`` entered in the trace
        kwargs = {**kwargs, "device": ConstantVariable(device)}
    try:
        return tx.output.call_function(fn, tuple(args), kwargs)
    except InlineInstead:  # returned None with no operator effect; its body tells why
        return UserFunctionVariable(fn).call_function(tx, args, kwargs)


def _effect(name: str) -> Unsupported:
    return Unsupported(
        "torch_effect",
        f"torch.{name}() has effects outside the graph",
        hint="call it outside the compiled function",
    )


# -- call rules of torch's callables ---------------------------------------------------------------
call_rules_for(
    torch.device,
    torch.dtype,
    torch.finfo,
    torch.iinfo,
    torch.promote_types,
    torch.is_grad_enabled,
    torch.get_default_dtype,
    owner=__name__,
    fold=True,
)
call_rules_for(torch._C._log_api_usage_once, owner=__name__, effect="none")  # telemetry
# ``torch.manual_seed``, ``torch.save``...: the ``EFFECTFUL`` names that ``torch`` itself has (the
# same names in other namespaces, and ``set_*`` functions, are refused by ``call_torch_function``)
call_rules_for(
    *{
        getattr(torch, name)
        for name in sorted(EFFECTFUL - {"as_tensor", "from_numpy"})
        if callable(getattr(torch, name, None))
    },
    owner=__name__,
    effect="python",
)


def _of_array(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``fn(array)`` of a traced NumPy array: ``numpy_arrays.from_numpy``; None otherwise."""
    return numpy_arrays.from_numpy(tx, fn, args[0], kwargs) if len(args) == 1 else None


@call_rule(torch.tensor)
def _tensor(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """Of a traced NumPy array: its data; of symbolic numbers ``_of_symbolic_numbers``; of
    anything else a graph node (the call goes on)."""
    made = _of_array(tx, fn, args, kwargs)
    if made is None and _symbolic_numbers(_as_tensor_data(args, kwargs)):
        return _of_symbolic_numbers(tx, args, kwargs)
    return made


def _of_symbolic_numbers(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.tensor(n)``, ``torch.as_tensor([n, 1])`` of numbers some of which are symbolic
    (an int argument made dynamic, ``t.item()``): a graph node running ``torch._refs.tensor``,
    which builds the tensor with ``scalar_tensor`` and ``stack``, operators AOTAutograd traces.
    ``torch.tensor`` itself is traced by AOTAutograd into a constant made from the example's
    value: the graph then gave that value for every later one (an int past 2**31 wrapped)."""
    return record_torch_op(tx, torch._refs.tensor, args, kwargs)


def _symbolic_numbers(vt: VariableTracker | None) -> bool:
    """Numbers, or lists/tuples of them, at least one of them symbolic."""
    if isinstance(vt, (ListVariable, TupleVariable)):
        return any(_symbolic_numbers(item) for item in vt.items) and all(
            _python_numbers(item) or _symbolic_numbers(item) for item in vt.items
        )
    return isinstance(vt, SymNodeVariable)


@call_rule(torch.from_numpy)
def _from_numpy(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """Of a traced NumPy array: its tensor; of anything else it runs in Python."""
    made = _of_array(tx, fn, args, kwargs)
    if made is None:
        raise _effect(fn.__name__)
    return made


@call_rule(torch.as_tensor)
def _as_tensor(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``torch.as_tensor`` of a traced NumPy array (``numpy_arrays.from_numpy``), of a tensor
    (``_as_tensor_of_tensor``) or of Python numbers (a new tensor, a graph node as ``torch.tensor``
    is); of anything else it runs in Python."""
    made = numpy_arrays.from_numpy(tx, fn, args[0], kwargs) if len(args) == 1 else None
    if made is not None:
        return made
    if _as_tensor_of_tensor(args, kwargs):
        return args[0].call_method(tx, "to", [], dict(kwargs))
    if _python_numbers(_as_tensor_data(args, kwargs)):
        return record_torch_op(tx, fn, args, kwargs)
    if _symbolic_numbers(_as_tensor_data(args, kwargs)):
        return _of_symbolic_numbers(tx, args, kwargs)
    raise _effect(fn.__name__)


@call_rule(torch.jit.annotate)
def _annotate(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """A TorchScript type hint: the value itself."""
    return inspect.signature(fn).bind(*args, **kwargs).arguments["the_value"]


@call_rule(torch.compiler.is_compiling, torch.compiler.is_dynamo_compiling)
def _is_compiling(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """True, as under torch.compile: libraries pick their traceable path (but not bytegraph's own
    wrappers that hide their bumps from torch.compile: ``HIDDEN_WRAPPERS``)."""
    return ConstantVariable(tx.code not in HIDDEN_WRAPPERS)


@call_rule(torch.get_default_device)
def _default_device(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """The default device as the trace has set it, else the real one."""
    return ConstantVariable(tx.output.state.default_device() or torch.get_default_device())


@call_rule(torch.Size)
def _size(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    items = dispatch.iterate(tx, args[0]) if args else []
    return TupleVariable(items, is_size=True)


#: torch's legacy typed constructors (``torch.FloatTensor([1.0, 2.0])``, ``torch.LongTensor(3)``),
#: all of CPU tensors: class -> the dtype it makes (its ``dtype``).
LEGACY_CONSTRUCTORS = {
    cls: cls.dtype
    for cls in (
        torch.FloatTensor,
        torch.DoubleTensor,
        torch.HalfTensor,
        torch.BFloat16Tensor,
        torch.LongTensor,
        torch.IntTensor,
        torch.ShortTensor,
        torch.CharTensor,
        torch.ByteTensor,
        torch.BoolTensor,
    )
}
#: ``torch.Tensor(...)`` itself parses its arguments the same way, and makes CPU tensors of the
#: default dtype (guarded with the rest of the global state, ``kinds.DEFAULT_DTYPE``)
LEGACY_CONSTRUCTORS[torch.Tensor] = None


@call_rule(*LEGACY_CONSTRUCTORS)
def _legacy_constructor(
    tx: Translator, cls: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``cls(...)`` for a class of ``LEGACY_CONSTRUCTORS``, parsed as torch's ``legacy_tensor_ctor``
    parses it, always a CPU tensor of ``cls``'s dtype (``torch.Tensor``: the default dtype),
    whatever the default device:

    - no argument: an empty 1-d tensor; sizes (ints, or one ``torch.Size``): an *uninitialised*
      tensor of that size, as in eager (``torch.empty``);
    - a tensor of that dtype on the CPU: an alias of it (``aten.alias``, a view, as eager's);
    - a list or tuple of numbers (a tuple is data, not sizes): ``torch.tensor(data, dtype=...)``.

    ``device=`` may only say ``cpu`` (not with a tensor). Any other argument (a storage, an array,
    a tensor of another dtype, bad data) runs in Python, which raises what eager raises, as does a
    default device other than cpu/meta (whose behaviour here is not checked)."""
    dtype, name = LEGACY_CONSTRUCTORS[cls] or torch.get_default_dtype(), cls.__name__
    device = kwargs.get("device")
    default = tx.output.state.default_device() or torch.get_default_device()
    if (
        set(kwargs) - {"device"}
        or not (device is None or _constant_cpu_device(device))
        or default.type not in ("cpu", "meta")
    ):
        raise Unsupported("new_object", f"{name}() with these arguments")
    cpu = {"dtype": ConstantVariable(dtype), "device": ConstantVariable(torch.device("cpu"))}
    sizes = args[0].items if len(args) == 1 and _is_size(args[0]) else args
    if all(_legacy_size(a) for a in sizes):  # no argument: sizes ``(0,)``
        return tx.output.call_function(torch.empty, tuple(sizes or [ConstantVariable(0)]), cpu)
    if len(args) == 1 and isinstance(args[0], TensorVariable):
        tensor = args[0].example
        if (
            kwargs
            or args[0].python_type() not in (torch.Tensor, torch.nn.Parameter)
            or (tensor.dtype, tensor.device.type, tensor.layout) != (dtype, "cpu", torch.strided)
        ):
            raise Unsupported("new_object", f"{name}() of a {tensor.dtype} {tensor.device} tensor")
        return tx.output.call_function(torch.ops.aten.alias.default, (args[0],), {})
    data = args[0] if len(args) == 1 else None
    if not (isinstance(data, (ListVariable, TupleVariable)) and _python_numbers(data)):
        raise Unsupported("new_object", f"{name}() of {', '.join(map(str, args))}")
    try:  # bad data (ragged lists, overflow) raises in eager: let it
        cls(data.as_python_constant())
    except Exception as e:  # noqa: BLE001 (it raises again when the call runs in Python)
        raise Unsupported("new_object", f"{name}() raised {e!r}") from None
    return tx.output.call_function(torch.tensor, (data,), cpu)


def _is_size(vt: VariableTracker) -> bool:
    return isinstance(vt, TupleVariable) and vt.is_size


def _legacy_size(vt: VariableTracker) -> bool:
    """A size a legacy constructor takes: an int (not a bool) that is not negative (a negative
    one raises), or a symbolic int of the trace known while tracing."""
    if isinstance(vt, SymNodeVariable):
        return vt.python_type() is int and not vt.unbacked
    return isinstance(vt, ConstantVariable) and type(vt.value) is int and vt.value >= 0


def _constant_cpu_device(vt: VariableTracker) -> bool:
    if not vt.is_python_constant():
        return False
    value = vt.as_python_constant()
    try:
        return value is not None and torch.device(value).type == "cpu"
    except (RuntimeError, TypeError):
        return False


def _assert(condition, message):
    """``torch._assert`` as traced: its check, which the trace evaluates like any ``assert``: a
    Python bool raises as eager does, a symbolic one is guarded, a tensor's value is data the
    trace does not know (a break, as in torch.compile, whose ``torch._assert`` breaks there too).
    Not an ``assert`` statement: pytest rewrites those in this package (its plugin's distribution)
    into code calling ``locals()``; ``__debug__`` keeps ``python -O``'s no-op."""
    if __debug__ and not condition:
        raise AssertionError(message)


def _as_tensor_data(
    args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    return args[0] if args else kwargs.get("data")


def _as_tensor_of_tensor(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """``torch.as_tensor(t, dtype=None, device=None)`` of a tensor ``t`` is ``t.to(device=...,
    dtype=...)``: ``t`` itself where both match, as ``as_tensor`` returns it, else a copy.
    (``as_tensor`` of Python numbers is a new tensor, a graph node as ``torch.tensor`` is; of a
    NumPy array, ``numpy_arrays.from_numpy``'s; anything else runs in Python: ``EFFECTFUL``.)"""
    return (
        len(args) == 1
        and isinstance(args[0], TensorVariable)
        and set(kwargs) <= {"dtype", "device"}
    )


def _python_numbers(vt: VariableTracker | None) -> bool:
    """Python numbers, or lists/tuples of them: what ``as_tensor`` copies into a new tensor."""
    if isinstance(vt, (ListVariable, TupleVariable)):
        return all(_python_numbers(item) for item in vt.items)
    return isinstance(vt, ConstantVariable) and type(vt.value) in (int, float, bool, complex)


call_rules_for(torch._assert, owner=__name__, substitute=_assert)


def _function_apply(tx: Translator, cls_vt: VariableTracker) -> VariableTracker | None:
    """``Function.apply`` of a custom autograd Function: one graph node (see above), while the
    class still has torch's ``apply`` (guarded: no class of its MRO defines its own)."""
    cls = cls_vt.value
    if not is_autograd_function(cls):
        return None
    if cls_vt.source is not None:
        for i in range(len(apply_overriders(cls))):
            cls_source = (
                cls_vt.source if i == 0 else ItemSource(AttrSource(cls_vt.source, "__mro__"), i)
            )
            tx.output.assume_key_absent(AttrSource(cls_source, "__dict__"), "apply")
    if not has_torch_apply(cls):
        raise Unsupported("autograd_function", f"{cls.__qualname__}.apply overridden")
    return AutogradFunctionApplyVariable(cls, cls_vt.source)


objects.CLASS_ATTRIBUTES["apply"] = _function_apply
