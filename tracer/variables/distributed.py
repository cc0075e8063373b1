"""``torch.distributed`` in a trace: process groups (constants of the trace, guarded), ranks and
world sizes (folded), collectives as effectful graph nodes (``call_distributed``) and functional
collectives' results. A call it does not model breaks the graph.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..effects import mark_effectful
from ..exc import Unsupported
from .base import ConstantLikeVariable, VariableTracker
from .constants import ConstantVariable
from .containers import ListVariable, TupleVariable
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# ``torch.distributed`` inside a trace: process groups, ranks, and collectives as graph nodes.
#
# - ``ProcessGroupVariable``: a process group, a constant of the trace. One that came from an
#   input is guarded by identity; the default group (``group=None``, ``dist.group.WORLD``) and
#   groups named by a string are guarded by the state of the world (``GLOBAL_STATE`` on
#   ``group_state``), so ranks and world sizes folded into the graph are guarded constants.
#   ``ReduceOp`` values are constants.
# - ``query(tx, fn, args, kwargs)``: ``get_rank``, ``get_world_size``... fold to guarded
#   constants. Collectives themselves are ``call_distributed``'s (which every ``torch.distributed``
#   call reaches).
# - ``WorkVariable``: what ``async_op=True`` returns (the collective already completed in the
#   graph).
# - ``AsyncTensorVariable``: the result of a functional collective (an ``AsyncCollectiveTensor``
#   in eager), already waited on in the graph; ``.wait()`` gives it back.

AVAILABLE = torch.distributed.is_available()
#: torch's functional collectives: imported by what calls them (before, no value of theirs can
#: reach a trace), so not by ``import bytegraph``.
FUNCOL = "torch.distributed._functional_collectives"

if AVAILABLE:
    import torch.distributed.distributed_c10d as c10d
    from torch.distributed.device_mesh import DeviceMesh

    _MESH_TYPES: tuple[type, ...] = (DeviceMesh,)
    _WORLD_TYPES: tuple[type, ...] = (c10d._WorldMeta,)
    _GROUP_TYPES: tuple[type, ...] = (c10d.ProcessGroup,)
    _REDUCE_TYPES: tuple[type, ...] = (c10d.ReduceOp.RedOpType,)
else:  # pragma: no cover (torch built without distributed)
    _WORLD_TYPES = _GROUP_TYPES = _REDUCE_TYPES = _MESH_TYPES = ()

_HINT = "run it outside the compiled function, or use a functional collective"


def is_distributed_value(value: Any) -> bool:
    """Objects ``wrap`` hands to this module (groups, ``dist.group``, reduce ops)."""
    return isinstance(value, _GROUP_TYPES + _REDUCE_TYPES) or type(value) in _WORLD_TYPES


def is_distributed_callable(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return AVAILABLE and (module == "torch.distributed" or module.startswith("torch.distributed."))


# -- guarded state of the world --------------------------------------------------------------------
def group_state(name: str | None = None) -> tuple | None:
    """``(group name, rank, size)`` of the default group (``name`` None) or of the group registered
    as ``name``; None when there is none. Guards compare it with what the trace saw."""
    if not c10d.is_initialized():
        return None
    try:
        pg = c10d._get_default_group() if name is None else c10d._resolve_process_group(name)
    except (ValueError, RuntimeError, KeyError):
        return None
    return (pg.group_name, pg.rank(), pg.size())


@functools.cache
def _state_getter(name: str | None) -> Any:
    return group_state if name is None else functools.partial(group_state, name)


def guard_world(tx: Translator, name: str | None = None) -> tuple | None:
    """Guard the default group (or the group called ``name``) as it is now; returns its state."""
    state = group_state(name)
    tx.output.assume_state(("dist", name), _state_getter(name), state)
    return state


def default_group(tx: Translator) -> Any:
    """The default process group, guarded; a clear break when the world is not initialized."""
    if guard_world(tx) is None:
        raise Unsupported(
            "collective",
            "torch.distributed is not initialized",
            hint="call init_process_group before the compiled function",
        )
    return c10d._get_default_group()


# -- trackers --------------------------------------------------------------------------------------
@dataclass(eq=False)
class ProcessGroupVariable(ConstantLikeVariable):
    """A ``ProcessGroup``: its name, rank and size are constants of the trace (the group is guarded
    where it was wrapped, and a group's rank and size never change)."""

    value: Any
    source: Any = None

    METHODS = frozenset({"rank", "size", "name", "group_name", "group_desc"})

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("group_name", "group_desc"):
            return ConstantVariable(getattr(self.value, name))
        if name in self.METHODS:
            return GroupMethodVariable(self, name)
        raise Unsupported("collective", f"ProcessGroup.{name} is not traced", hint=_HINT)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)  # a static group: the world state it belongs to is guarded
        return None

    def __repr__(self) -> str:
        return f"ProcessGroupVariable({self.value.group_name})"


@dataclass(eq=False)
class GroupMethodVariable(VariableTracker):
    """``pg.rank`` before the call: calling it folds to a constant."""

    group: ProcessGroupVariable
    name: str
    source: Any = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("collective", f"ProcessGroup.{self.name} with arguments")
        return ConstantVariable(getattr(self.group.value, self.name)())


@dataclass(eq=False)
class WorldVariable(ConstantLikeVariable):
    """``dist.group`` / ``dist.GroupMember``: ``.WORLD`` is the default group, guarded."""

    value: Any
    source: Any = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "WORLD":
            state = guard_world(tx)
            if state is None:
                return ConstantVariable(None)
            return ProcessGroupVariable(c10d._get_default_group())
        raise Unsupported("collective", f"dist.group.{name} is not traced", hint=_HINT)


@dataclass(eq=False)
class WorkVariable(VariableTracker):
    """What an in-place collective with ``async_op=True`` returns. The graph ran the collective and
    waited for it where it was called, so ``wait()`` has nothing left to do."""

    source: Any = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("wait", "is_completed", "is_success", "synchronize"):
            return WorkMethodVariable(name)
        raise Unsupported("collective", f"Work.{name} is not traced", hint=_HINT)

    def reconstruct(self, cg: Codegen) -> None:
        raise Unsupported(
            "collective",
            "a Work handle made in the compiled function escapes it",
            hint="wait on it inside the compiled function",
        )


@dataclass(eq=False)
class WorkMethodVariable(VariableTracker):
    name: str
    source: Any = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.name in ("is_completed", "is_success"):
            return ConstantVariable(True)
        if self.name == "wait" and all(a.is_python_constant() for a in args):
            return ConstantVariable(True)
        return ConstantVariable(None)


@dataclass(eq=False)
class AsyncTensorVariable(TensorVariable):
    """A functional collective's result (an ``AsyncCollectiveTensor`` in eager), already waited on
    in the graph: ``wait()`` and ``trigger_wait()`` give the same tensor, as a plain tensor."""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("wait", "trigger_wait"):
            return AsyncWaitVariable(self)
        if name == "elem":
            return self.as_plain()
        return super().var_getattr(tx, name)

    def as_plain(self) -> TensorVariable:
        return TensorVariable(self.node, self.example)


@dataclass(eq=False)
class AsyncWaitVariable(VariableTracker):
    tensor: AsyncTensorVariable
    source: Any = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return self.tensor.as_plain()


# -- wrapping --------------------------------------------------------------------------------------
def wrap(tx: Translator, value: Any, source: Any) -> VariableTracker:
    """A group, ``dist.group`` or reduce op, from an input (``source``) or from torch (None)."""
    if type(value) in _WORLD_TYPES:
        if source is not None:
            tx.output.assume_identity(source, value)
        return WorldVariable(value, source)
    if isinstance(value, _REDUCE_TYPES):  # pybind enum members are singletons
        if source is not None:
            tx.output.assume_identity(source, value)
        return ConstantVariable(value, source)
    if source is not None:
        tx.output.assume_identity(source, value)
    elif value is c10d.GroupMember.WORLD:
        guard_world(tx)
    else:
        guard_world(tx, value.group_name)
    return ProcessGroupVariable(value, source)


def resolve_group(tx: Translator, vt: VariableTracker | None) -> Any:
    """The real process group a collective's ``group`` argument names (None: the default group)."""
    if vt is None or (vt.is_python_constant() and vt.as_python_constant() is None):
        return default_group(tx)
    if isinstance(vt, ProcessGroupVariable):
        return vt.value
    if isinstance(vt, ConstantVariable) and isinstance(vt.value, str):
        if guard_world(tx, vt.value) is None:
            raise Unsupported("collective", f"no process group named {vt.value!r}")
        return c10d._resolve_process_group(vt.value)
    mesh, dim = _mesh_and_dim(vt)
    if mesh is not None and mesh.source is not None and (dim is not None or mesh.value.ndim == 1):
        # a mesh's groups are fixed when it is made: guarding the mesh guards them
        tx.output.assume_identity(mesh.source, mesh.value)
        return mesh.value.get_group(dim)
    raise Unsupported(
        "collective",
        f"collective over {vt}: only process groups, group names and device meshes (a 1-D mesh,"
        " or (mesh, dim)) reached from the function's inputs are traced",
        hint="pass a ProcessGroup (dist.new_group(...)) instead of a rank list",
    )


def _mesh_and_dim(vt: VariableTracker) -> tuple[Any, Any]:
    """``(mesh tracker, dim)`` for a ``DeviceMesh`` (dim None) or a ``(DeviceMesh, dim)`` tuple."""
    items = vt.items if isinstance(vt, TupleVariable) and len(vt.items) == 2 else [vt, None]
    mesh, dim = items
    if not isinstance(getattr(mesh, "value", None), _MESH_TYPES):
        return None, None
    if dim is not None:
        if not dim.is_python_constant():
            return None, None
        dim = dim.as_python_constant()
    return mesh, dim


# -- queries of the world ------------------------------------------------------------------------
def _queries() -> frozenset:
    if not AVAILABLE:
        return frozenset()
    return frozenset(
        {
            c10d.get_rank,
            c10d.get_world_size,
            c10d.get_backend,
            c10d.get_process_group_ranks,
            c10d.get_global_rank,
            c10d.get_group_rank,
            c10d.is_initialized,
            c10d._get_default_group,
            c10d._rank_not_in_group,
            c10d._get_group_size_by_name,
            c10d._resolve_process_group,
            c10d._get_process_group_name,
            c10d._get_group_tag,
        }
    )


def _build_queries() -> frozenset:
    names = ("is_available", "is_gloo_available", "is_nccl_available", "is_mpi_available")
    return frozenset(getattr(torch.distributed, n) for n in names if hasattr(torch.distributed, n))


#: Queries answered by this torch build (no guard needed).
BUILD_QUERIES = _build_queries()
#: Queries of the world answered at trace time (their group, or the default one, is guarded).
QUERIES = _queries() | BUILD_QUERIES


def query(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``fn`` (one of ``QUERIES``) called at trace time; what it read is guarded."""
    real_args = [_query_arg(tx, a) for a in args]
    real_kwargs = {k: _query_arg(tx, v) for k, v in kwargs.items()}
    group = real_kwargs.get("group", real_args[0] if real_args else None)
    if fn in BUILD_QUERIES:
        pass  # properties of this torch build: nothing to guard
    elif group is None or isinstance(group, str) or fn is c10d.is_initialized:
        guard_world(tx, group if isinstance(group, str) else None)
    try:
        result = fn(*real_args, **real_kwargs)
    except Exception as e:  # the same call raises again when it runs in Python
        raise Unsupported("python_error", f"{fn.__name__} raised {type(e).__name__}: {e}") from e
    if isinstance(result, _GROUP_TYPES):
        return ProcessGroupVariable(result)
    if isinstance(result, str):
        return ConstantVariable(str(result))  # ``Backend`` is a str subclass
    return tx.fold(result)


def _query_arg(tx: Translator, vt: VariableTracker) -> Any:
    if isinstance(vt, ProcessGroupVariable):
        return vt.value
    if not vt.is_python_constant():
        raise Unsupported("collective", f"torch.distributed query on {vt}")
    return vt.as_python_constant()


# Collectives inside a trace: functional collectives as graph nodes, in-place ones rewritten.
#
# ``call_distributed(tx, fn, args, kwargs)`` is where every ``torch.distributed`` callable goes
# (from ``torch_calls.call_torch_function``), before anything runs:
#
# - a functional collective (``funcol.all_reduce(x, "sum", group)``, ``all_gather_single``,
#   ``reduce_scatter_single``, ``all_to_all_single``, ``broadcast``, their deprecated ``*_tensor``
#   and ``*_autograd`` names, ``wait_tensor``) becomes a ``_c10d_functional`` node followed by
#   ``wait_tensor``;
# - an in-place collective (``dist.all_reduce(t)``, ``all_gather_into_tensor``,
#   ``reduce_scatter_tensor``, ``broadcast``, ``all_to_all_single``, ``all_gather``) becomes the
#   same plus an ``aten.copy_`` back into its output tensor, as torch.compile does; it returns
#   None or, with ``async_op=True``, a completed ``WorkVariable``;
# - the collective, its wait and the copy back are effectful nodes (``effects.mark_effectful``):
#   every rank runs them even when nothing reads the result, since the peers wait for them;
# - queries of the world fold to guarded constants (``distributed.query``);
# - anything else (``barrier``, point-to-point, object collectives...) is ``Unsupported``: a
#   break.

if AVAILABLE:
    import torch.distributed.distributed_c10d as c10d


Args = dict[str, Any]  #: bound arguments: VariableTrackers, or the raw default values


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
    # kept, like the collective, even when ``dst`` is never read
    tx.output.call_effectful(torch.ops.aten.copy_.default, (dst, src), {})


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
