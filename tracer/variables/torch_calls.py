"""Calls to callables from torch's namespaces: ops become graph nodes, a few are understood specially.

Grad-mode context managers become ``ContextManagerVariable``; queries of global state are answered as
constants (the state is guarded); calls with effects outside the tensors (seeding, saving, setting
global flags) are ``Unsupported`` so they run in Python. Everything else is recorded as a node and run
on fake tensors; results that are not tensors are folded to constants by the output graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable
from .contexts import ContextManagerVariable, set_grad_mode
from .higher_order import bind_functions, is_higher_order
from .tensor import TensorVariable, is_tensor_method

if TYPE_CHECKING:
    from ..translator import Translator

#: Names in torch namespaces whose calls must run in Python (effects outside the graph).
EFFECTFUL = frozenset(
    {
        "manual_seed",
        "seed",
        "initial_seed",
        "save",
        "load",
        "use_deterministic_algorithms",
        "compile",
        "set_default_dtype",
        "set_default_device",
        "set_default_tensor_type",
        "set_printoptions",
        "set_num_threads",
        "set_rng_state",
        "get_rng_state",
        "synchronize",
        "inference_mode",
        "set_anomaly_enabled",
        "is_inference_mode_enabled",
        "from_numpy",
        "as_tensor",
        "set_float32_matmul_precision",
        "profiler",
        "record_function",
        "_assert",
    }
)


def call_torch(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    name = getattr(fn, "__name__", "")
    if is_tensor_method(fn) and args and isinstance(args[0], TensorVariable):
        return args[0].call_method(tx, name, list(args[1:]), kwargs)  # torch.Tensor.add(x, y)
    if (
        fn is torch.set_grad_enabled
        and len(args) == 1
        and not kwargs
        and args[0].is_python_constant()
    ):
        previous, mode = torch.is_grad_enabled(), bool(args[0].as_python_constant())
        set_grad_mode(tx, mode)  # effective at the call, like eager; a with-block restores on exit
        return ContextManagerVariable(mode, previous, applied=True)
    if fn is torch.no_grad:
        return ContextManagerVariable(False)
    if fn is torch.enable_grad:
        return ContextManagerVariable(True)
    if fn is torch.is_grad_enabled:
        return ConstantVariable(torch.is_grad_enabled())
    if fn in (torch.compiler.is_compiling, torch.compiler.is_dynamo_compiling):
        return ConstantVariable(True)  # as under torch.compile: libraries pick their traceable path
    if fn is torch.get_default_dtype:
        return ConstantVariable(torch.get_default_dtype())
    if fn is torch.Size:
        items = tx.dispatch.iterate(tx, args[0]) if args else []
        return TupleVariable(items, is_size=True)
    if fn in (torch.device, torch.dtype, torch.finfo, torch.iinfo):
        return _fold_call(tx, fn, args, kwargs)
    if name in EFFECTFUL or name.startswith("set_"):
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
    return tx.output.call_function(fn, tuple(args), kwargs)


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
