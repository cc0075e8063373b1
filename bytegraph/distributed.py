"""``bytegraph.distributed``: compile fingerprints compared across ranks, so that ranks which
compiled different code (and would reach collectives in different orders) fail with a clear error
instead of hanging.

While ``torch.distributed`` is initialized with more than one rank, every compile (graph, break,
fallback, recompile) records a ``Fingerprint``: the function, why it was compiled (the guards that
failed), its breaks (kind and location), and the collectives of each graph in order.

- ``check_consistency()``: every rank of the default group calls it at the same point; fingerprints
  are exchanged through the default store (no collective, so a diverged rank cannot hang it) and a
  ``DivergenceError`` names, per rank, the function and the break or guard that differs.
- ``bytegraph.config.distributed_consistency_check``: the same check after every compile (on by
  default under the pytest plugin); a rank that does not compile the same thing within
  ``config.distributed_consistency_timeout`` seconds is reported too.
- ``collectives(gm)``: the collectives of one graph (``explain`` and the pytest plugin count them).

Definition → example → printed output::

    def step(x):
        if x.sum() > 0:          # data-dependent: rank 1 takes the branch, rank 0 does not
            dist.all_reduce(x)
        return x

    bytegraph.config.distributed_consistency_check = True   # or check_consistency() later
    bytegraph.compile(step)(x)
    # DivergenceError: bytegraph: ranks compiled different code (after each compile: compile #1
    # differs); they would reach collectives in different orders and hang:
    #   rank 0: step resumed at line 4 (__resume_at_12_1, train.py:1); collectives per graph: -; ...
    #   rank 1: step resumed at line 3 (__resume_at_7_0, train.py:1); collectives per graph:
    #           all_reduce(sum, 0); breaks: none
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.fx
from bytecode import Bytecode, Instr

from . import config
from .tracer import driver
from .tracer.exc import BytegraphError

_AVAILABLE = torch.distributed.is_available()


class DivergenceError(BytegraphError):
    """Ranks compiled different code (or one rank compiled and another did not in time)."""


@dataclass(frozen=True)
class Fingerprint:
    """What one compile of one function produced, comparable across ranks."""

    function: str  #: qualified name and ``file:line`` of the compiled function
    reason: str  #: "first call" or the guards that failed (a recompile)
    breaks: list[str] = field(default_factory=list)  #: "kind at file:line", in order
    #: per graph, e.g. "all_reduce(sum, 0)" (the last argument is the group's name)
    collectives: list[list[str]] = field(default_factory=list)
    fell_back: str = ""  #: "kind at file:line" when the whole call ran in Python
    #: the collectives with each group named by its size: ranks of different subgroups (each its
    #: own tensor-parallel group, say) run the "same" collective on groups of other names
    collective_keys: list[list[str]] = field(default_factory=list)

    def key(self) -> tuple:
        """What must agree across ranks (break details can hold addresses: kind and place only)."""
        return (
            self.function,
            self.reason,
            tuple(self.breaks),
            _nested(self.collective_keys),
            self.fell_back,
        )

    def describe(self) -> str:
        parts = [self.function]
        if self.reason != "first call":
            parts.append(f"recompiled, failed guard: {self.reason}")
        colls = "; ".join(", ".join(g) or "-" for g in self.collectives) or "none"
        parts.append(f"collectives per graph: {colls}")
        parts.append(f"breaks: {', '.join(self.breaks) or 'none'}")
        if self.fell_back:
            parts.append(f"ran in Python: {self.fell_back}")
        return "; ".join(parts)


def _nested(groups: list[list[str]]) -> tuple:
    return tuple(tuple(g) for g in groups)


def collective_name(node: torch.fx.Node) -> str | None:
    """``"all_reduce"`` for a ``_c10d_functional.all_reduce`` node (None for waits and others)."""
    target = node.target
    namespace = getattr(target, "namespace", None)
    if node.op != "call_function" or namespace not in ("_c10d_functional", "c10d_functional"):
        return None
    name = target._opname if hasattr(target, "_opname") else str(target)
    return None if name == "wait_tensor" else name


def collectives(gm: torch.fx.GraphModule, group_sizes: bool = False) -> list[str]:
    """The collectives ``gm`` runs in order: ``"all_reduce(sum, 0)"`` (reduce op and group name;
    per-rank arguments such as all-to-all split sizes are left out). With ``group_sizes`` the
    group (every functional collective's last argument) is given by its size instead:
    ``all_reduce(sum, 2 ranks)``."""
    out = []
    for node in gm.graph.nodes:
        name = collective_name(node)
        if name is not None:
            consts = [str(a) for a in node.args[1:-1] if isinstance(a, (str, int))]
            consts.append(_group_size(node.args[-1]) if group_sizes else str(node.args[-1]))
            out.append(f"{name}({', '.join(consts)})")
    return out


def _group_size(group_name: Any) -> str:
    try:
        return (
            f"{torch.distributed.distributed_c10d._resolve_process_group(group_name).size()} ranks"
        )
    except Exception:  # noqa: BLE001 (a group destroyed since: compare by name)
        return str(group_name)


def fingerprint(state: driver.CompiledCode, event: driver.CompileEvent) -> Fingerprint:
    reason = "first call" if not event.failures else "; ".join(event.failures)
    return Fingerprint(
        describe_function(state.fn),
        reason,
        [_where(e) for e in event.breaks],
        [collectives(gm) for gm in event.graphs],
        _where(event.unsupported) if event.unsupported is not None else "",
        [collectives(gm, group_sizes=True) for gm in event.graphs],
    )


_RESUME_NAME = re.compile(r"__resume_at_(\d+)_\d+$")


def describe_function(fn: Any) -> str:
    """``step (train.py:12)``; for a resume function, the function and line it resumes at
    (``step resumed at line 15 (__resume_at_23_1, train.py:12)``): where two ranks diverged."""
    code = fn.__code__
    where = f"{code.co_filename}:{code.co_firstlineno}"
    origin, match = getattr(fn, "__bytegraph_resume__", None), _RESUME_NAME.match(fn.__name__)
    if origin is None or match is None:
        return f"{fn.__qualname__} ({where})"
    template, index = origin.template, int(match.group(1))
    instrs = [i for i in Bytecode.from_code(template.__code__) if isinstance(i, Instr)]
    line = instrs[index].lineno if index < len(instrs) else "?"
    return f"{template.__qualname__} resumed at line {line} ({fn.__name__}, {where})"


def _where(e: Any) -> str:
    loc = e.location
    return f"{e.kind} at {loc.filename}:{loc.lineno}" if loc is not None else e.kind


# -- recording -------------------------------------------------------------------------------------
class _History:
    """This process's fingerprints since the last ``bytegraph.reset()`` (an epoch)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.epoch = 0
        self.prints: list[Fingerprint] = []
        self.checks = itertools.count()  #: ``check_consistency`` calls in this epoch

    def reset(self) -> None:
        with self.lock:
            self.epoch += 1
            self.prints = []
            self.checks = itertools.count()


_HISTORY = _History()


def _world() -> tuple[int, int] | None:
    """``(rank, world size)`` of the default group when there is more than one real rank (the
    ``fake`` backend simulates one rank of a world in a single process: nothing to compare)."""
    if not _AVAILABLE or not torch.distributed.is_initialized():
        return None
    size = torch.distributed.get_world_size()
    if size < 2 or torch.distributed.get_backend() == "fake":
        return None
    return torch.distributed.get_rank(), size


def _on_compile(state: driver.CompiledCode, event: driver.CompileEvent) -> None:
    world = _world()
    if world is None:
        return
    fp = fingerprint(state, event)
    with _HISTORY.lock:
        _HISTORY.prints.append(fp)
        index, epoch = len(_HISTORY.prints) - 1, _HISTORY.epoch
    if config.distributed_consistency_check:
        _compare(f"bytegraph/fp/{epoch}/{index}", [fp], world, "after each compile", index)


def history() -> list[Fingerprint]:
    """The fingerprints this process recorded since the last ``bytegraph.reset()``."""
    with _HISTORY.lock:
        return list(_HISTORY.prints)


def reset() -> None:
    """Start a new epoch (``bytegraph.reset()`` calls it; every rank must, at the same point)."""
    _HISTORY.reset()


# -- comparing -------------------------------------------------------------------------------------
def check_consistency(timeout: float | None = None) -> None:
    """Compare the fingerprints of every compile so far (this epoch) with the other ranks of the
    default group; raise ``DivergenceError`` if they differ or a rank does not arrive within
    ``timeout`` seconds (default ``config.distributed_consistency_timeout``). Every rank must call
    it; with one rank (or no process group) it does nothing."""
    world = _world()
    if world is None:
        return
    with _HISTORY.lock:
        prints, epoch, n = list(_HISTORY.prints), _HISTORY.epoch, next(_HISTORY.checks)
    _compare(f"bytegraph/check/{epoch}/{n}", prints, world, "check_consistency", 0, timeout)


def _compare(
    key: str,
    mine: list[Fingerprint],
    world: tuple[int, int],
    what: str,
    first_index: int,
    timeout: float | None = None,
) -> None:
    """Publish ``mine`` (compiles number ``first_index``...) under ``key``, read every rank's and
    raise ``DivergenceError`` unless they agree."""
    rank, size = world
    store = torch.distributed.distributed_c10d._get_default_store()
    store.set(f"{key}/{rank}", json.dumps([asdict(fp) for fp in mine]))
    wait = timeout if timeout is not None else config.distributed_consistency_timeout
    others = [f"{key}/{r}" for r in range(size)]
    try:
        store.wait(others, timedelta(seconds=wait))
    except Exception as e:  # noqa: BLE001 (a store timeout: name who is missing)
        missing = [r for r in range(size) if not store.check([f"{key}/{r}"])]
        where = what if what == "check_consistency" else f"compile #{first_index}"
        raise DivergenceError(_missing_message(where, rank, missing, wait, mine)) from e
    per_rank = [
        [Fingerprint(**d) for d in json.loads(store.get(f"{key}/{r}"))] for r in range(size)
    ]
    if any([fp.key() for fp in fps] != [fp.key() for fp in per_rank[0]] for fps in per_rank):
        raise DivergenceError(_divergence_message(what, per_rank, first_index))


def _divergence_message(what: str, per_rank: list[list[Fingerprint]], offset: int) -> str:
    length = max(len(fps) for fps in per_rank)
    first = next(
        i
        for i in range(length)
        if len({fps[i].key() if i < len(fps) else None for fps in per_rank}) > 1
    )
    lines = [
        f"bytegraph: ranks compiled different code ({what}: compile #{first + offset} differs); "
        "they would reach collectives in different orders and hang:"
    ]
    for r, fps in enumerate(per_rank):
        text = fps[first].describe() if first < len(fps) else "(no such compile)"
        lines.append(f"  rank {r}: {text}")
    lines.append(
        "  hint: make the ranks take the same path (no data-dependent branch around "
        "collectives, the same shapes and flags on every rank)"
    )
    return "\n".join(lines)


def _missing_message(
    what: str, rank: int, missing: list[int], wait: float, mine: list[Fingerprint]
) -> str:
    last = mine[-1].describe() if mine else "(nothing compiled)"
    return (
        f"bytegraph: rank(s) {missing} did not reach {what} within {wait:.0f} s while rank {rank} "
        f"compiled: {last}. The ranks are compiling different code (or one is stuck); "
        "see bytegraph.distributed.history() on each rank"
    )


driver.LISTENERS.append(_on_compile)

__all__ = [
    "DivergenceError",
    "Fingerprint",
    "check_consistency",
    "collectives",
    "fingerprint",
    "history",
    "reset",
]
