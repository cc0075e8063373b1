"""Calls to callables from torch's namespaces: ``TorchVariable`` and what its call does.

Callables with an entry in ``call_rules`` are answered there first (``torch.Size``, queries of
global state as constants, ``torch.device``/``finfo`` folded, ``as_tensor``/``from_numpy`` of
arrays and tensors, torch's legacy typed constructors ``LEGACY_CONSTRUCTORS``, ``torch._assert``,
the ``EFFECTFUL`` names ``torch`` has): those entries are registered in this module.
``call_torch_function`` takes the rest: tensor methods read from the class, collectives, context
managers (``state_contexts.py``), other calls with effects outside the tensors (``EFFECTFUL`` names
and ``set_*`` functions of any torch namespace: ``Unsupported``, so they run in Python), and
otherwise ``record_torch_op``: a graph node run on fake tensors (results that are not tensors are
folded to constants by the output graph; factory calls under a ``torch.device`` context of the
trace get the device as an argument).
"""

from __future__ import annotations

import inspect
import sys
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ....guards.epoch import HIDDEN_WRAPPERS
from ....guards.sources import ModuleGlobalSource, Source
from ...effects import InlineInstead
from ...exc import Unsupported
from ..base import ConstantLikeVariable, VariableTracker
from ..call_rules import call_rule, call_rules_for
from ..constants.constant import ConstantVariable
from ..constants.symbolic import SymNodeVariable
from ..containers.builtin_containers import ListVariable, TupleVariable
from ..contexts import state_contexts
from ..distributed.collectives import call_distributed
from ..distributed.process_groups import is_distributed_callable
from ..functions.callables import UserFunctionVariable
from ..iterators.iterator_trackers import IteratorVariable
from ..tensors import numpy_arrays
from ..tensors.tensor import TensorVariable, is_tensor_method
from . import optimizers  # noqa: F401 (registers its call rules)
from .higher_order import bind_functions, is_higher_order

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


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
        vt = tx.wrap_static(attr)
        if _module_like(self.value, name, attr, vt):
            # a module-like object of torch's (``torch.backends.cuda.matmul``) has no tracker of
            # its own: at a graph break it is loaded again from its module
            vt = vt.clone(source=ModuleGlobalSource(self.value.__name__, name))
        return vt

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return call_torch_function(tx, self.value, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(self.value)

    def __repr__(self) -> str:
        return f"TorchVariable({getattr(self.value, '__name__', self.value)!s})"


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
        # global state and mode stacks that the tracer does not model (``state_contexts.py`` does
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
    ctx = state_contexts.construct(tx, fn, args, kwargs)
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
    device = state_contexts.device_for(tx, fn, kwargs)
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


@call_rule(torch.from_numpy, torch.tensor)
def _from_array(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """Of a traced NumPy array: ``numpy_arrays.from_numpy``; ``torch.tensor`` of anything else is
    a graph node, ``torch.from_numpy`` of anything else runs in Python."""
    made = numpy_arrays.from_numpy(tx, fn, args[0], kwargs) if len(args) == 1 else None
    if made is not None:
        return made
    if fn is torch.from_numpy:
        raise _effect(fn.__name__)
    return None


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


@call_rule(*LEGACY_CONSTRUCTORS)
def _legacy_constructor(
    tx: Translator, cls: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``cls(...)`` for a class of ``LEGACY_CONSTRUCTORS``, parsed as torch's ``legacy_tensor_ctor``
    parses it, always a CPU tensor of ``cls``'s dtype (whatever the default dtype and device):

    - no argument: an empty 1-d tensor; sizes (ints, or one ``torch.Size``): an *uninitialised*
      tensor of that size, as in eager (``torch.empty``);
    - a tensor of that dtype on the CPU: an alias of it (``aten.alias``, a view, as eager's);
    - a list or tuple of numbers (a tuple is data, not sizes): ``torch.tensor(data, dtype=...)``.

    ``device=`` may only say ``cpu`` (not with a tensor). Any other argument (a storage, an array,
    a tensor of another dtype, bad data) runs in Python, which raises what eager raises, as does a
    default device other than cpu/meta (whose behaviour here is not checked)."""
    dtype, name = LEGACY_CONSTRUCTORS[cls], cls.__name__
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


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
