"""Collectives inside a trace: functional collectives as graph nodes, in-place ones rewritten.

``call_distributed(tx, fn, args, kwargs)`` is where every ``torch.distributed`` callable goes (from
``torch_functions.call_torch_function``), before anything runs:

- a functional collective (``funcol.all_reduce(x, "sum", group)``, ``all_gather_single``,
  ``reduce_scatter_single``, ``all_to_all_single``, ``broadcast``, their deprecated ``*_tensor``
  and ``*_autograd`` names, ``wait_tensor``) becomes a ``_c10d_functional`` node followed by
  ``wait_tensor``;
- an in-place collective (``dist.all_reduce(t)``, ``all_gather_into_tensor``,
  ``reduce_scatter_tensor``, ``broadcast``, ``all_to_all_single``, ``all_gather``) becomes the
  same plus an ``aten.copy_`` back into its output tensor, as torch.compile does; it returns None
  or, with ``async_op=True``, a completed ``WorkVariable``;
- the collective, its wait and the copy back are effectful nodes (``effects.mark_effectful``):
  every rank runs them even when nothing reads the result, since the peers wait for them;
- queries of the world fold to guarded constants (``distributed.query``);
- anything else (``barrier``, point-to-point, object collectives...) is ``Unsupported``: a break.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ...effects import mark_effectful
from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import ListVariable, TupleVariable
from ..tensors.tensor import TensorVariable
from .process_groups import (
    AVAILABLE,
    FUNCOL,
    QUERIES,
    AsyncTensorVariable,
    WorkVariable,
    query,
    resolve_group,
)

if AVAILABLE:
    import torch.distributed.distributed_c10d as c10d

if TYPE_CHECKING:
    from ...translator import Translator

Args = dict[str, Any]  #: bound arguments: VariableTrackers, or the raw default values

_HINT = "run it outside the compiled function, or use a functional collective"


def call_distributed(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """A call of a ``torch.distributed`` callable (see the module docstring)."""
    handler = HANDLERS.get(fn)
    if handler is None and FUNCOL in sys.modules and not _FUNCTIONAL_ADDED:
        _add_functional(HANDLERS)  # ``fn`` may be one: they are imported now
        handler = HANDLERS.get(fn)
    if handler is not None:
        return handler(tx, _bind(fn, args, kwargs))
    if fn in QUERIES:
        return query(tx, fn, args, kwargs)
    name = getattr(fn, "__qualname__", repr(fn))
    raise Unsupported(
        "collective", f"{getattr(fn, '__module__', '?')}.{name} is not traced", hint=_HINT
    )


def _bind(fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Args:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported("python_error", f"{fn.__name__}(): {e}") from e
    bound.apply_defaults()
    return dict(bound.arguments)


def _tensor(a: Args, name: str) -> TensorVariable:
    vt = a[name]
    if not isinstance(vt, TensorVariable):
        raise Unsupported("collective", f"collective argument {name!r} is {vt}, not a tensor")
    return vt


def _const(a: Args, name: str) -> Any:
    vt = a[name]
    if not isinstance(vt, VariableTracker):
        return vt  # a default value
    if not vt.is_python_constant():
        raise Unsupported("collective", f"collective argument {name!r} is not a constant: {vt}")
    return vt.as_python_constant()


def _group(tx: Translator, a: Args) -> Any:
    vt = a["group"]
    return resolve_group(tx, vt if isinstance(vt, VariableTracker) else None)


# -- graph nodes -----------------------------------------------------------------------------------
def _emit(tx: Translator, op_name: str, *args: Any) -> TensorVariable:
    """``wait_tensor(_c10d_functional.<op_name>(*args))``: the collective and its wait, both marked
    effectful: every rank runs them even if nothing reads the result (peers wait for them)."""
    op = getattr(torch.ops._c10d_functional, op_name).default
    node_args = tuple(a if isinstance(a, VariableTracker) else tx.fold(a) for a in args)
    issued = tx.output.call_function(op, node_args, {})
    waited = wait(tx, issued)
    mark_effectful(issued.node)
    mark_effectful(waited.node)
    return waited


def wait(tx: Translator, tensor: TensorVariable) -> TensorVariable:
    """A ``wait_tensor`` node, unless ``tensor`` is already one (waiting twice does nothing)."""
    if tensor.node.target is torch.ops._c10d_functional.wait_tensor.default:
        return TensorVariable(tensor.node, tensor.example)
    return tx.output.call_function(torch.ops._c10d_functional.wait_tensor.default, (tensor,), {})


def _as_async(vt: TensorVariable) -> AsyncTensorVariable:
    return AsyncTensorVariable(vt.node, vt.example, sys.modules[FUNCOL].AsyncCollectiveTensor)


def _chunk_cat(
    tx: Translator, x: TensorVariable, parts: int, split_dim: int, cat_dim: int
) -> TensorVariable:
    """``torch.cat(torch.chunk(x, parts, split_dim), cat_dim)``: moves the group's slices between
    dimension 0 and ``gather_dim``/``scatter_dim``, as the functional collectives do."""
    chunks = tx.output.call_function(
        torch.chunk, (x, ConstantVariable(parts), ConstantVariable(split_dim)), {}
    )
    return tx.output.call_function(torch.cat, (chunks,), {"dim": ConstantVariable(cat_dim)})


def _copy_back(tx: Translator, dst: TensorVariable, src: TensorVariable) -> None:
    """``dst.copy_(src)`` (viewed as ``dst`` if shapes differ): an in-place collective's effect."""
    if tuple(dst.example.shape) != tuple(src.example.shape):
        src = tx.output.call_method("view_as", (src, dst), {})
    copied = tx.output.call_function(torch.ops.aten.copy_.default, (dst, src), {})
    mark_effectful(copied.node)  # kept, like the collective, even when ``dst`` is never read


def _done(a: Args) -> VariableTracker:
    return WorkVariable() if _const(a, "async_op") else ConstantVariable(None)


def _reduce_name(op: Any) -> str:
    name = getattr(op, "name", None)
    if name not in _REDUCE_NAMES:
        raise Unsupported("collective", f"reduce op {op!r} is not traced", hint=_HINT)
    return _REDUCE_NAMES[name]


_REDUCE_NAMES = {
    "SUM": "sum",
    "AVG": "avg",
    "PRODUCT": "product",
    "MIN": "min",
    "MAX": "max",
    "BAND": "band",
    "BOR": "bor",
    "BXOR": "bxor",
}


def _equal_splits(x: TensorVariable, size: int) -> list[int]:
    rows = x.example.shape[0]
    if not isinstance(rows, int):
        raise Unsupported("collective", "all_to_all_single with equal splits of a dynamic size")
    return [rows // size] * size


# -- functional collectives ------------------------------------------------------------------------
def funcol_all_reduce(tx: Translator, a: Args) -> VariableTracker:
    pg = _group(tx, a)
    op = str(_const(a, "reduceOp")).lower()
    return _as_async(_emit(tx, "all_reduce", _tensor(a, "self"), op, pg.group_name))


def funcol_all_gather(tx: Translator, a: Args) -> VariableTracker:
    pg, dim = _group(tx, a), _const(a, "gather_dim")
    out = _emit(tx, "all_gather_into_tensor", _tensor(a, "self"), pg.size(), pg.group_name)
    if dim != 0:
        out = _chunk_cat(tx, out, pg.size(), 0, dim)
    return _as_async(out)


def funcol_reduce_scatter(tx: Translator, a: Args) -> VariableTracker:
    pg, dim, x = _group(tx, a), _const(a, "scatter_dim"), _tensor(a, "self")
    if x.example.shape[dim] % pg.size() != 0:
        raise Unsupported("python_error", f"reduce_scatter: dimension {dim} not divisible by group")
    if dim != 0:
        x = _chunk_cat(tx, x, pg.size(), dim, 0)
    op = str(_const(a, "reduceOp")).lower()
    return _as_async(_emit(tx, "reduce_scatter_tensor", x, op, pg.size(), pg.group_name))


def funcol_all_to_all(tx: Translator, a: Args) -> VariableTracker:
    pg, x = _group(tx, a), _tensor(a, "self")
    out_splits, in_splits = a["output_split_sizes"], a["input_split_sizes"]
    if _is_none(out_splits) != _is_none(in_splits):
        raise Unsupported("python_error", "all_to_all_single: give both split sizes or neither")
    if _is_none(out_splits):
        out_splits = in_splits = _equal_splits(x, pg.size())
    return _as_async(_emit(tx, "all_to_all_single", x, out_splits, in_splits, pg.group_name))


def funcol_broadcast(tx: Translator, a: Args) -> VariableTracker:
    pg = _group(tx, a)
    return _as_async(_emit(tx, "broadcast", _tensor(a, "self"), _const(a, "src"), pg.group_name))


def funcol_wait(tx: Translator, a: Args) -> VariableTracker:
    return wait(tx, _tensor(a, "tensor"))


def _is_none(value: Any) -> bool:
    return value is None or (
        isinstance(value, VariableTracker)
        and value.is_python_constant()
        and value.as_python_constant() is None
    )


# -- in-place collectives (rewritten to functional ones plus a copy back) --------------------------
def inplace_all_reduce(tx: Translator, a: Args) -> VariableTracker:
    pg, t = _group(tx, a), _tensor(a, "tensor")
    result = _emit(tx, "all_reduce", t, _reduce_name(_const(a, "op")), pg.group_name)
    _copy_back(tx, t, result)
    return _done(a)


def inplace_all_gather_into_tensor(tx: Translator, a: Args) -> VariableTracker:
    pg, out = _group(tx, a), _tensor(a, "output_tensor")
    result = _emit(
        tx, "all_gather_into_tensor", _tensor(a, "input_tensor"), pg.size(), pg.group_name
    )
    _copy_back(tx, out, result)
    return _done(a)


def inplace_reduce_scatter_tensor(tx: Translator, a: Args) -> VariableTracker:
    pg, out, x = _group(tx, a), _tensor(a, "output"), _tensor(a, "input")
    if x.example.dim() == out.example.dim() + 1:  # stacked form: (group size, *output shape)
        x = tx.output.call_method("flatten", (x, ConstantVariable(0), ConstantVariable(1)), {})
    op = _reduce_name(_const(a, "op"))
    result = _emit(tx, "reduce_scatter_tensor", x, op, pg.size(), pg.group_name)
    _copy_back(tx, out, result)
    return _done(a)


def inplace_broadcast(tx: Translator, a: Args) -> VariableTracker:
    pg, t = _group(tx, a), _tensor(a, "tensor")
    src, group_src = _const(a, "src"), _const(a, "group_src")
    if group_src is None:
        if src is None:
            raise Unsupported("python_error", "broadcast needs src or group_src")
        group_src = torch.distributed.get_group_rank(pg, src)
    _copy_back(tx, t, _emit(tx, "broadcast", t, group_src, pg.group_name))
    return _done(a)


def inplace_all_to_all_single(tx: Translator, a: Args) -> VariableTracker:
    pg, out, x = _group(tx, a), _tensor(a, "output"), _tensor(a, "input")
    out_splits, in_splits = a["output_split_sizes"], a["input_split_sizes"]
    if _is_none(out_splits):
        out_splits = _equal_splits(out, pg.size())
    if _is_none(in_splits):
        in_splits = _equal_splits(x, pg.size())
    result = _emit(tx, "all_to_all_single", x, out_splits, in_splits, pg.group_name)
    _copy_back(tx, out, result)
    return _done(a)


def inplace_all_gather(tx: Translator, a: Args) -> VariableTracker:
    pg, x, outs = _group(tx, a), _tensor(a, "tensor"), a["tensor_list"]
    if not isinstance(outs, (ListVariable, TupleVariable)) or len(outs.items) != pg.size():
        raise Unsupported("collective", "all_gather needs a list of group-size tensors")
    flat = tx.output.call_method("reshape", (x, ConstantVariable(-1)), {})
    gathered = _emit(tx, "all_gather_into_tensor", flat, pg.size(), pg.group_name)
    chunks = tx.output.call_function(
        torch.chunk, (gathered, ConstantVariable(pg.size()), ConstantVariable(0)), {}
    )
    for dst, part in zip(outs.items, chunks.items, strict=True):
        if not isinstance(dst, TensorVariable):
            raise Unsupported("collective", f"all_gather output {dst} is not a tensor")
        _copy_back(tx, dst, part)
    return _done(a)


def _handlers() -> dict[Any, Callable[[Translator, Args], VariableTracker]]:
    """The in-place (``c10d``) collectives; the functional ones join on first use
    (``_add_functional``)."""
    if not AVAILABLE:
        return {}
    table: dict[Any, Callable[[Translator, Args], VariableTracker]] = {
        c10d.all_reduce: inplace_all_reduce,
        c10d.broadcast: inplace_broadcast,
        c10d.all_to_all_single: inplace_all_to_all_single,
        c10d.all_gather: inplace_all_gather,
    }
    for name in ("all_gather_into_tensor", "all_gather_single", "_all_gather_base"):
        if hasattr(c10d, name):
            table[getattr(c10d, name)] = inplace_all_gather_into_tensor
    for name in ("reduce_scatter_tensor", "reduce_scatter_single", "_reduce_scatter_base"):
        if hasattr(c10d, name):
            table[getattr(c10d, name)] = inplace_reduce_scatter_tensor
    return table


_FUNCTIONAL_ADDED = False


def _add_functional(table: dict[Any, Callable[[Translator, Args], VariableTracker]]) -> None:
    """The functional collectives' handlers, once their module is imported."""
    global _FUNCTIONAL_ADDED
    _FUNCTIONAL_ADDED = True
    funcol = sys.modules[FUNCOL]
    table[funcol.all_reduce] = funcol_all_reduce
    table[funcol.broadcast] = funcol_broadcast
    table[funcol.wait_tensor] = funcol_wait
    groups = {
        funcol_all_gather: ("all_gather_single", "all_gather_tensor"),
        funcol_reduce_scatter: ("reduce_scatter_single", "reduce_scatter_tensor"),
        funcol_all_to_all: ("all_to_all_single",),
    }
    for handler, names in groups.items():
        for name in names:
            for suffix in ("", "_autograd"):
                if hasattr(funcol, name + suffix):
                    table[getattr(funcol, name + suffix)] = handler


#: ``torch.distributed`` callables traced as collectives.
HANDLERS = _handlers()
