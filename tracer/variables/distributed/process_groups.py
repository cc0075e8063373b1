"""``torch.distributed`` inside a trace: process groups, ranks, and collectives as graph nodes.

- ``ProcessGroupVariable``: a process group, a constant of the trace. One that came from an input
  is guarded by identity; the default group (``group=None``, ``dist.group.WORLD``) and groups named
  by a string are guarded by the state of the world (``GLOBAL_STATE`` on ``group_state``), so ranks
  and world sizes folded into the graph are guarded constants. ``ReduceOp`` values are constants.
- ``query(tx, fn, args, kwargs)``: ``get_rank``, ``get_world_size``... fold to guarded constants.
  Collectives themselves are in ``collectives.py`` (which every ``torch.distributed`` call reaches).
- ``WorkVariable``: what ``async_op=True`` returns (the collective already completed in the graph).
- ``AsyncTensorVariable``: the result of a functional collective (an ``AsyncCollectiveTensor`` in
  eager), already waited on in the graph; ``.wait()`` gives it back.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...exc import Unsupported
from ..base import ConstantLikeVariable, VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import TupleVariable
from ..tensors.tensor import TensorVariable

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

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
