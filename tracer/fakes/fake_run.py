"""Running a recorded call on fake tensors: its arguments' fake values (``as_fake``), the call under
the trace's fake mode with the probe watching (``run``), and the unbacked symbols its result binds
(``unbacked_bindings``). ``OutputGraph`` records the node; this module only computes its example
value.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch._dispatch.python import enable_python_dispatcher

from ..exc import Unsupported
from ..variables.constants import SliceVariable, SymNodeVariable
from ..variables.containers import DictVariable, ListVariable, TupleVariable
from ..variables.tensors import TensorVariable
from .shapes import ShapeTracker, is_data_dependent_guard, unbacked_symbols

#: What fake tensors raise for an op whose output depends on data, without a ShapeEnv to give it
#: a symbol (``t.item()``, ``nonzero``): the trace then makes one and runs the op again.
_DATA_DEPENDENT = tuple(
    getattr(torch._subclasses.fake_tensor, name)
    for name in ("DataDependentOutputException", "DynamicOutputShapeException")
    if hasattr(torch._subclasses.fake_tensor, name)
)


def run(
    fake_mode: Any,
    shapes: ShapeTracker,
    op: str,
    target: Any,
    args: tuple,
    kwargs: dict[str, Any],
    probe: Any,
) -> Any:
    """The fake result of ``target(*args, **kwargs)`` (``args[0].target(...)`` for a method) under
    the trace's fake mode, ``probe`` watching which operators it runs. The first number computed
    from tensor data gives the trace its ShapeEnv and runs the call again; what fails is
    ``Unsupported`` (``data_dependent`` or ``op_error``), never an error in the user's run."""
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    args = _fake_scalars(target, args)
    try:
        # On symbolic sizes, the Python dispatcher runs composite ops' Python decompositions,
        # which keep them symbolic (torch 2.11's C++ ``matmul`` reads them as ints), as Dynamo.
        symbolic = _symbolic(args) or _symbolic_float((*args, *kwargs.values()))
        dispatcher = enable_python_dispatcher() if symbolic else contextlib.nullcontext()
        with fake_mode, dispatcher, probe.watching(fake_mode):
            if op == "call_method":
                result = getattr(args[0], target)(*args[1:], **kwargs)
            else:
                result = target(*args, **kwargs)
        _check_inference_writes(probe, name)
        _check_overlapping_writes(probe, name)
        return result
    except _DATA_DEPENDENT as e:
        if shapes.shape_env is None:  # the first number computed from data: a symbol
            shapes.ensure_env()
            probe.effects.clear()
            return run(fake_mode, shapes, op, target, args, kwargs, probe)
        raise Unsupported(
            "data_dependent",
            f"{name} has an output shape that depends on data",
            hint="this op cannot be traced into a graph",
        ) from e
    except Unsupported:
        raise
    except Exception as e:
        if is_data_dependent_guard(e):
            raise Unsupported(
                "data_dependent",
                f"{name} has an output shape that depends on data",
                hint="this op cannot be traced into a graph",
            ) from e
        raise Unsupported(
            "op_error", f"{name} failed on fake inputs: {type(e).__name__}: {e}"
        ) from e


def _check_inference_writes(probe: Any, name: str) -> None:
    """What autograd refuses and fake tensors let through: an operator writing into an inference
    tensor (or a view of one: fakes raise only for the tensor itself) while inference mode is off
    raises in eager, at run time, which a graph must not do (what the call did before it, waiting
    for the graph's end, would be lost): ``op_error``, so the call runs in Python."""
    if torch.is_inference_mode_enabled():
        return
    if any(t.is_inference() for t in probe.written):
        raise Unsupported(
            "op_error",
            f"{name} writes into an inference tensor outside inference mode, which raises",
        )


def _check_overlapping_writes(probe: Any, name: str) -> None:
    """What eager's kernels refuse and fake kernels let through: an operator writing into a tensor
    whose elements share memory (an ``expand``ed one: a stride 0 over a size above 1) raises in
    eager ("more than one element of the written-to tensor refers to a single memory location"),
    or only warns (``fill_``, ``masked_fill_``, ``index_put_``); AOTAutograd's functional graph
    would write it element by element, without an error. ``op_error``: the call runs in Python,
    which does what eager does."""
    for t in probe.written:
        if any(
            type(stride) is int and stride == 0 and type(size) is int and size > 1
            for size, stride in zip(t.shape, t.stride(), strict=True)
        ):
            raise Unsupported(
                "op_error", f"{name} writes into a tensor whose elements share memory (expanded)"
            )


def as_fake(vt: Any) -> Any:
    """The fake value a tracker stands for, as a recorded call's argument."""
    return map_argument(vt, _fake_leaf)


def map_argument(vt: Any, leaf: Callable[[Any], Any]) -> Any:
    """A recorded call's argument ``vt`` as Python values: its slices, tuples, lists and dicts
    rebuilt as such, ``leaf`` applied to what they hold (a fake value, an fx node...)."""
    if isinstance(vt, SliceVariable):
        return slice(*(map_argument(p, leaf) for p in vt.parts))
    if isinstance(vt, (TupleVariable, ListVariable)):
        items = [map_argument(i, leaf) for i in vt.items]
        return items if isinstance(vt, ListVariable) else tuple(items)
    if isinstance(vt, DictVariable):
        return {k: map_argument(v, leaf) for k, v in vt.items.items()}
    return leaf(vt)


def _fake_leaf(vt: Any) -> Any:
    if isinstance(vt, TensorVariable):
        return vt.example
    if isinstance(vt, SymNodeVariable):
        return vt.value
    return vt.as_python_constant()


def _symbolic(args: tuple) -> bool:
    """Does a tensor among ``args`` (or in a list or tuple there) have a symbolic size?"""
    for a in args:
        items = a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            if isinstance(t, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in t.shape):
                return True
    return False


def _symbolic_float(args: tuple) -> bool:
    """Is a symbolic float computed from sizes among ``args`` (or in a list or tuple there)?
    torch's C++ argument parser refuses one for a Scalar (``torch.arange(n * 1.5)``: an internal
    assert); the Python dispatcher takes it (``arange``'s Python reference computes its length
    symbolically). Not one computed from tensor data (``t.item()``, no hint): the length would
    be unknown to the trace, and every later use of it a break (torchdiffeq's time grid), where
    the operator failing breaks once, before it."""
    return any(
        isinstance(t, torch.SymFloat) and t.node.has_hint()
        for a in args
        for t in (a if isinstance(a, (list, tuple)) else (a,))
    )


def unbacked_bindings(shape_env: Any, example: Any) -> Any:
    """``compute_unbacked_bindings``, except that symbols an op made only inside itself and that
    none of its outputs carry are dropped: nothing outside the op sees them. A 0-dim tensor
    passed as a scalar (``addcdiv_(value=t)`` in torch.optim's Adam) or as an index
    (``timesteps[i]``, whose result's storage offset is a symbol of its own) is read with
    ``item()`` inside the op."""
    if shape_env is None:
        return None
    pending = getattr(shape_env, "pending_fresh_unbacked_symbols", None)
    if pending:
        carried = unbacked_symbols(example)
        pending[:] = [s for s in pending if s in carried]
        if not pending:
            return None
    return sys.modules[shape_env.__module__].compute_unbacked_bindings(shape_env, example)


#: Foreach ops taking their scalars as a 1-d CPU tensor (torch.optim's foreach Adam passes the
#: stacked step sizes), whose fake kernel rejects that tensor (it is meta-backed under fake mode).
_SCALARS_TENSOR_OPS = frozenset(
    {
        torch._foreach_addcdiv_,
        torch._foreach_addcdiv,
        torch._foreach_addcmul_,
        torch._foreach_addcmul,
    }
)


def _fake_scalars(target: Any, args: tuple) -> tuple:
    """For the fake run only: Python numbers in place of such a scalars tensor (the outputs'
    metadata does not depend on the values); the graph node keeps the tensor."""
    if target not in _SCALARS_TENSOR_OPS or len(args) != 4:
        return args
    scalars = args[3]
    if not isinstance(scalars, torch.Tensor) or scalars.dim() != 1:
        return args
    return (*args[:3], [1.0] * int(scalars.shape[0]))
