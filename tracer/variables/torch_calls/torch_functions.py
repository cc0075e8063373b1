"""Calls to callables from torch's namespaces: ops become graph nodes, a few are understood
specially.

Context managers (``torch.no_grad()``, ``torch.autocast(...)``...) and state setters that are traced
(``set_grad_enabled``, ``set_default_dtype``, ``set_default_device``,
``use_deterministic_algorithms``) go to ``state_contexts.py``; queries of global state are answered
as constants (the state is guarded and, while tracing, really switched); other calls with effects
outside the tensors (seeding, saving, global flags, mode stacks) are ``Unsupported`` so they run in
Python. Everything else is recorded as a node and run on fake tensors; results that are not tensors
are folded to constants by the output graph. Factory calls under a ``torch.device`` context or after
a ``set_default_device`` of the trace get the device as an argument; torch's legacy typed
constructors (``torch.FloatTensor(...)``) are ``LEGACY_CONSTRUCTORS``.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import torch

from ....guards.epoch import HIDDEN_WRAPPERS
from ...effects import InlineInstead
from ...exc import Unsupported
from ..base import VariableTracker
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
from . import optimizers
from .higher_order import bind_functions, is_higher_order

if TYPE_CHECKING:
    from ...translator import Translator

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


def call_torch(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
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
    made = optimizers.call_torch(tx, fn, args, kwargs)
    if made is not None:
        return made
    if fn in state_contexts.STATE_SETTERS:
        return state_contexts.STATE_SETTERS[fn](tx, args, kwargs)
    if fn in (torch.from_numpy, torch.as_tensor, torch.tensor) and len(args) == 1:
        made = numpy_arrays.from_numpy(tx, fn, args[0], kwargs)
        if made is not None:
            return made
    if fn is torch.as_tensor and _as_tensor_of_tensor(args, kwargs):
        return args[0].call_method(tx, "to", [], dict(kwargs))
    if fn is torch._assert:
        return UserFunctionVariable(_assert).call_function(tx, args, kwargs)
    if fn is torch._C._log_api_usage_once:  # telemetry: a no-op in graphs, as in torch.compile
        return ConstantVariable(None)
    if fn is torch.jit.annotate:  # a TorchScript type hint: the value itself
        bound = inspect.signature(fn).bind(*args, **kwargs)
        return bound.arguments["the_value"]
    if fn is torch.is_grad_enabled:
        return ConstantVariable(torch.is_grad_enabled())
    if fn in (torch.compiler.is_compiling, torch.compiler.is_dynamo_compiling):
        # as under torch.compile: libraries pick their traceable path (but not bytegraph's own
        # wrappers that hide their bumps from torch.compile: ``HIDDEN_WRAPPERS``)
        return ConstantVariable(tx.code not in HIDDEN_WRAPPERS)
    if fn is torch.get_default_dtype:
        return ConstantVariable(torch.get_default_dtype())
    if fn is torch.get_default_device:
        return ConstantVariable(tx.output.state.default_device() or torch.get_default_device())
    if fn in state_contexts.STATE_QUERIES:
        return state_contexts.query_state(tx, fn, args, kwargs)
    if fn is torch.is_inference_mode_enabled:
        return state_contexts.inference_mode_query(tx)
    if fn is torch.Size:
        items = dispatch.iterate(tx, args[0]) if args else []
        return TupleVariable(items, is_size=True)
    if fn in LEGACY_CONSTRUCTORS:
        return _legacy_constructor(tx, fn, args, kwargs)
    if fn in (torch.device, torch.dtype, torch.finfo, torch.iinfo, torch.promote_types):
        return _fold_call(tx, fn, args, kwargs)
    if (name in EFFECTFUL or name.lstrip("_").startswith("set_")) and not (
        fn is torch.as_tensor and _python_numbers(_as_tensor_data(args, kwargs))
    ):
        raise Unsupported(
            "torch_effect",
            f"torch.{name}() has effects outside the graph",
            hint="call it outside the compiled function",
        )
    if isinstance(fn, type):
        raise Unsupported(
            "new_object", f"creating a {fn.__qualname__} object in the compiled function"
        )
    if not callable(fn):
        raise Unsupported("call", f"calling {fn!r}")
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


def _fold_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        raise Unsupported("call", f"{fn.__name__}() on non-constant arguments")
    result = fn(
        *[a.as_python_constant() for a in args],
        **{k: v.as_python_constant() for k, v in kwargs.items()},
    )
    return ConstantVariable(result)


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


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
