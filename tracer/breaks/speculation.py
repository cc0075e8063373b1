"""Speculation: a branch on tensor data follows the side this call's own values take.

``if x.sum() > 0:``, ``while mask.any():``, ``while j < n and t1 >= t[j]:`` need a tensor's data
to go on, which a trace on fake tensors does not have. Instead of breaking the graph, the trace
asks what the branch does *on the values of the call being traced* (``Shadow``: the graph so far
run for real, incrementally, on the call's inputs), follows that side and records the condition as
a check (``deferred_checks``): a boolean graph output the rewritten code tests right after the
graph, before anything visible. A later call taking the other side fails the check: the call reruns
as plain Python (exactly eager) and the miss is counted on its ``Site``. A site that missed
``miss_limit`` times is not speculated on again: the variants that did carry a guard
(``Site.speculating``) that now fails, and the next trace breaks there as torch.compile does.
A loop unrolls this way while one site is speculated at most ``unroll_limit`` times in a trace.

What makes a miss invisible (nothing mutated before the check, the RNG put back) is
``deferred_checks``'s concern; this module predicts, counts and reports. Entry points: ``site``,
``Shadow.truth``, ``SiteRecord`` (what the rewritten code calls), ``sites`` and ``reset``.
"""

from __future__ import annotations

import linecache
import logging
import threading
import types
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

if TYPE_CHECKING:
    from ..output_graph import OutputGraph

log = logging.getLogger("bytegraph.speculation")


@dataclass(frozen=True)
class Policy:
    """What the driver allows (``bytegraph.config``: ``speculate``, ``speculation_miss_limit``,
    ``speculation_unroll_limit``)."""

    enabled: bool = False
    miss_limit: int = 2  #: misses at one site before traces break there
    unroll_limit: int = 64  #: speculations at one site within one trace (loop iterations)


@dataclass(eq=False)
class Site:
    """One conditional jump in user code (code object and instruction index) that a trace
    speculated on, with what happened at run time."""

    code: types.CodeType
    index: int
    filename: str
    lineno: int
    function: str
    hits: int = 0  #: calls whose check held here
    misses: int = 0  #: calls whose check failed here (each reran the call in Python)
    limit: int = 2  #: misses after which no trace speculates here
    variants: int = 0  #: traces that speculated here

    @property
    def line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    @property
    def disabled(self) -> bool:
        return self.misses >= self.limit

    def __post_init__(self) -> None:
        def speculating() -> bool:
            return self.misses < self.limit

        # the guard function reads ``___speculating_<function>_line<n>() == True``
        speculating.__name__ = f"speculating_{self.function}_line{self.lineno}"
        #: the guard of each variant that speculates here: False once the site is disabled, so
        #: that the next call traces again and breaks here
        self.speculating = speculating

    def __str__(self) -> str:
        state = ", no longer speculated" if self.disabled else ""
        return (
            f"{self.filename}:{self.lineno} in {self.function}: {self.hits} hits, "
            f"{self.misses} misses{state}\n    {self.line}"
        )


_SITES: dict[tuple[types.CodeType, int], Site] = {}
_lock = threading.Lock()


def site(code: types.CodeType, index: int, lineno: int, limit: int) -> Site:
    """The site of instruction ``index`` of ``code`` (made on first use; ``limit`` is updated to the
    setting the current trace reads)."""
    with _lock:
        found = _SITES.get((code, index))
        if found is None:
            found = _SITES[code, index] = Site(
                code, index, code.co_filename, lineno, code.co_name, limit=limit
            )
        found.limit = limit
        return found


def sites() -> list[Site]:
    """Every site speculated on since the last ``reset``, in the order first seen."""
    with _lock:
        return list(_SITES.values())


def reset() -> None:
    with _lock:
        _SITES.clear()


@dataclass(eq=False)
class SiteRecord:
    """What the rewritten code of one trace calls after its checks: ``hit()`` when all held,
    ``missed(checks)`` before it reruns the call (``checks``: each check's truth, in the order
    made; ``owners``: the site of each, None for a validation check)."""

    sites: list[Site] = field(default_factory=list)
    owners: list[Site | None] = field(default_factory=list)
    function: str = ""

    def hit(self) -> None:
        for s in self.sites:
            s.hits += 1

    def missed(self, checks: torch.Tensor) -> None:
        held = checks.reshape(-1).tolist()
        failed = {owner for owner, ok in zip(self.owners, held, strict=True) if not ok}
        for s in self.sites:
            if s not in failed:
                s.hits += 1
                continue
            s.misses += 1
            log.info(
                "speculation missed in %s at %s:%s (miss %d of %d%s): the call reruns in Python\n"
                "    %s",
                self.function,
                s.filename,
                s.lineno,
                s.misses,
                s.limit,
                "; later traces break here" if s.disabled else "",
                s.line,
            )


class Shadow:
    """The real values of a trace's graph nodes on the inputs of the call being traced, computed
    on demand in the order the nodes were recorded (so in-place operations on intermediate values
    happen as in the graph). Only used while the graph has changed nothing a second run would see
    (``deferred_checks``): it never runs an operation on an input in place. Random operators draw
    from a copy of the default generators' states as they were when the trace began, so that the
    call's own draws are untouched. Any failure makes the prediction unknown (None)."""

    def __init__(self) -> None:
        self.values: dict[torch.fx.Node, Any] = {}
        self.rng = save_rng()
        self.broken = False

    def truth(self, output: OutputGraph, node: torch.fx.Node) -> bool | None:
        """``bool()`` of ``node``'s real value, or None if it cannot be computed."""
        if self.broken:
            return None
        try:
            self._advance(output)
            return bool(self.values[node])
        except Exception:  # noqa: BLE001 (no prediction: the site breaks as without speculation)
            log.debug("no prediction for %s", node, exc_info=True)
            self.broken = True
            return None

    def _advance(self, output: OutputGraph) -> None:
        values = self.values
        for vt, value in zip(output.inputs.values(), output.input_values, strict=True):
            values.setdefault(vt.node, value)
        pending = [n for n in output.created if n not in values]
        if not pending:
            return
        saved = save_rng()
        restore_rng(self.rng)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the graph warns when it runs, as eager
                for node in pending:
                    values[node] = self._run(node)
        finally:
            self.rng = save_rng()
            restore_rng(saved)

    def _run(self, node: torch.fx.Node) -> Any:
        if "bytegraph_state" in node.meta:
            return None  # the state the trace is in is real already; values barely depend on it
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), self.values.__getitem__)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "call_function" and _torch_owned(node.target):
            return node.target(*args, **kwargs)
        # user code kept whole in the graph (``allow_in_graph``, an autograd Function) may do
        # something visible: it runs only when the graph does
        raise _NoPrediction(f"{node.op} {node.target}")


class _NoPrediction(Exception):
    pass


#: Modules whose functions the shadow may run: torch's own and Python's operators and math.
_OWNED_MODULES = ("torch", "_operator", "operator", "math", "builtins", "_functools")


def _torch_owned(target: Any) -> bool:
    """Is ``target`` torch's or Python's own (an ATen operator, a ``torch`` function, an operator),
    not a user's function or a method bound to a user's class?"""
    target = getattr(target, "wrapped_target", target)  # ``graph_naming``'s wrapper by object
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    owner = getattr(target, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        owner_type = owner if isinstance(owner, type) else type(owner)
        if not _owned(getattr(owner_type, "__module__", None)):
            return False
    return _owned(getattr(target, "__module__", None))


def _owned(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in _OWNED_MODULES


def save_rng() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The states of the default generators: the CPU's and, once CUDA is in use, each GPU's."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def restore_rng(state: tuple[torch.Tensor, list[torch.Tensor] | None]) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
