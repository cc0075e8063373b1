"""``GlobalStateLog``: the torch global state a trace changes, and what each change becomes.

Context managers entered and left, and state set by calls (grad mode, autocast, inference mode,
default dtype, deterministic algorithms, ``torch.device`` contexts, ``fork_rng``), are
``StateEvent``s. Each:

1. changes the real state now, while tracing, so fake tensors get eager's dtypes and
   ``requires_grad`` (``restore`` undoes events when an instruction is rolled back, ``unwind`` all
   of them at the end);
2. is a node at its place in the graph (the context trackers add them);
3. is undone at the end of the graph (``close_graph``): a compiled graph always leaves the state as
   it found it, which AOT backends need (they trace the graph once, in the state of the call);
4. is replayed for real by the rewritten code after the graph (``codegen``): a context still open at
   a graph break is built from its recipe and entered (its ``ContextExit`` then fills the ``with``
   block's exit slot), an exit or a set runs again. A context entered and left with nothing between
   (the usual case) cancels out and is not replayed. The trackers themselves live in
   ``variables/contexts/``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext

from ..backends.state_nodes import RUNTIME
from .context_runtime import (
    ContextExit,
    apply_state,
    read_state,
    set_default_dtype,
    set_deterministic,
)

if TYPE_CHECKING:
    from ..codegen.emit import Codegen

#: Aspects of the state that the end of a graph sets back to their start value (``touches``).
_RESET = {
    "grad": lambda start: (torch._C._set_grad_enabled, (start["grad"],)),
    "dtype": lambda start: (set_default_dtype, (start["dtype"],)),
    "deterministic": lambda start: (set_deterministic, start["deterministic"]),
}


def function_modes_supported() -> bool:
    """Torch function modes active at the call: ``torch.device`` contexts are traced (factory calls
    get the device); any other mode would run its ``__torch_function__`` on the trace's fake tensors
    and be skipped by compiled graphs, so the call runs in Python (guarded on the stack's depth)."""
    if not torch._C._len_torch_function_stack():
        return True
    return all(isinstance(m, DeviceContext) for m in _get_current_function_mode_stack())


@dataclass(eq=False)
class StateEvent:
    #: "create" (building the context changed state), "enter", "exit", "set", or "region" (only
    #: opens a region: the tracer's own view of the state, nothing to replay)
    kind: str
    ctx: Any = None  #: the context tracker (create/enter/exit)
    call: tuple[Callable[..., Any], tuple] | None = None  #: "set": what the rewritten code repeats
    undo: Callable[[], None] | None = None  #: undoes the real change made while tracing
    #: an open region (a context entered, or left before the graph started): the nodes ending it at
    #: the end of the graph (None: nothing to end in the graph)
    close: Callable[[torch.fx.Graph], None] | None = None
    opens: bool = False  #: starts a region (closed by the "exit" event of the same context)
    touches: frozenset[str] = frozenset()  #: aspects of ``_RESET`` it may change
    device: Any = None  #: ``torch.device`` contexts: the default device from here on
    key: tuple = ()  #: "create"/"enter": the ``ContextExit`` key (see ``variables/contexts/``)
    rollback: Any = None  #: contexts that cannot be re-entered: where their ``with`` began
    data: dict[str, Any] = field(default_factory=dict)  #: per-kind values (prev state, nodes...)


class GlobalStateLog:
    """Events of one trace, in order (shared by every frame of the trace)."""

    def __init__(self) -> None:
        self.events: list[StateEvent] = []
        self.start = read_state()
        self.call_state = self.start  #: the state the graph is called in (see ``outside_carried``)
        self.start_inference = torch.is_inference_mode_enabled()
        self._names = 0
        self._unwound = False
        self._replayed: set[int] | None = None  #: ids of contexts the rewritten code builds
        self.carried: list[Any] = []  #: contexts entered before the trace (``ContextExit`` inputs)
        #: the rewritten code exits the carried contexts before the graph and enters them again in
        #: it (set when a graph is emitted; see ``variables.contexts.CarriedKind``)
        self.reentered = False

    def new_name(self) -> str:
        """A local of the rewritten code for one context's ``ContextExit``."""
        self._names += 1
        return f"__bg_ctx{self._names}"

    def add(self, event: StateEvent) -> StateEvent:
        self.events.append(event)
        return event

    # -- rollback ----------------------------------------------------------------------------------
    def checkpoint(self) -> int:
        return len(self.events)

    def restore(self, checkpoint: int) -> None:
        for event in reversed(self.events[checkpoint:]):
            if event.undo is not None:
                event.undo()
        del self.events[checkpoint:]

    def unwind(self) -> None:
        """Put the real state back as it was when the trace began (once; events are kept)."""
        if self._unwound:
            return
        self._unwound = True
        for event in reversed(self.events):
            if event.undo is not None:
                event.undo()
        apply_state(self.start)

    # -- queries -----------------------------------------------------------------------------------
    def find(self, ctx: Any, kind: str) -> StateEvent | None:
        for event in reversed(self.events):
            if event.ctx is ctx and event.kind == kind:
                return event
        return None

    def open_regions(self) -> list[StateEvent]:
        """Events whose region is still open, outermost first."""
        closed = {id(e.ctx) for e in self.events if e.kind == "exit"}
        return [
            e for e in self.events if e.opens and not (e.kind == "enter" and id(e.ctx) in closed)
        ]

    def default_device(self) -> Any:
        """The device factory calls get from what the trace did: the innermost ``torch.device``
        context entered in it and still open, else the last ``torch.set_default_device`` call (a
        "set" event with a ``device``: ``cpu`` for ``None``), else None (the call's own state)."""
        open_ids = {id(e) for e in self.open_regions()}
        for event in reversed(self.events):
            if event.device is not None and (event.kind == "set" or id(event) in open_ids):
                return event.device
        return None

    def rollback_point(self, tx: Any) -> Any:
        """The outermost open context entered by frame ``tx`` that cannot be re-entered by rewritten
        code: a break inside it must be taken at its ``with`` instead (see ``Translator.step``)."""
        for event in self.open_regions():
            if event.rollback is not None and event.rollback[0] is tx:
                return event.rollback
        return None

    def needs_safe_call(self, graph: torch.fx.Graph) -> bool:
        """Must the graph be called through ``StateSafeGraph``? If it changes state."""
        return any("bytegraph_state" in n.meta for n in graph.nodes)

    def codegen_exit_carried(self, cg: Codegen) -> None:
        """Before the graph: leave the contexts the trace began in (the graph enters them again)."""
        self.reentered = True
        for ctx in reversed(self.carried):
            ctx.source.reconstruct(cg)
            for _ in range(3):
                cg.load_const(None)
            cg.call_function(3)
            cg.pop_top()

    def note_carried(self) -> None:
        """Contexts were carried in: the graph is called outside them (``codegen_exit_carried``)."""
        with self.outside_carried():
            self.call_state = read_state()

    @contextlib.contextmanager
    def outside_carried(self) -> Any:
        """While the backend compiles the graph: the real state as at the graph's call, outside the
        carried contexts (AOT backends trace the graph from there)."""
        undos = [ctx.kind.leave(ctx.key) for ctx in reversed(self.carried)]
        try:
            yield
        finally:
            for undo in reversed(undos):
                undo()

    def holds_rollback(self) -> bool:
        """Is a region open whose break rolls back to its start? Asked after every instruction of
        the root frame: a trace without events answers without building the open regions."""
        return bool(self.events) and any(e.rollback is not None for e in self.open_regions())

    # -- the end of the trace ----------------------------------------------------------------------
    def close_graph(self, graph: torch.fx.Graph) -> None:
        """Append the nodes that bring the state back to the graph's start (before its output)."""
        for event in reversed(self.open_regions()):
            if event.close is not None:
                event.close(graph)
        touched = set().union(*(e.touches for e in self.events)) if self.events else set()
        for aspect in sorted(touched):
            fn, args = _RESET[aspect](self.call_state)
            node = graph.call_function(fn, args)
            node.meta["bytegraph_state"] = True
            if aspect != "grad":  # AOT backends keep grad mode regions themselves
                node.meta[RUNTIME] = True

    def replayed(self) -> list[StateEvent]:
        """The events the rewritten code repeats: a context's enter and exit with nothing between
        (its create too, if any) cancel out. Contexts that are not re-enterable are left out: their
        effects were traced like any code (and none is open at a break, see ``rollback_point``)."""
        kept: list[StateEvent] = []
        for event in self.events:
            if event.kind == "region" or (event.ctx is not None and not event.ctx.reenterable):
                continue  # traced through (generator, user methods): nothing to build again
            if not self.reentered and event.ctx in self.carried and event.kind == "enter":
                continue  # no graph: the real context was never left
            if (
                event.kind == "exit"
                and kept
                and kept[-1].kind == "enter"
                and kept[-1].ctx is event.ctx
            ):
                kept.pop()
                if kept and kept[-1].kind == "create" and kept[-1].ctx is event.ctx:
                    kept.pop()
                continue
            kept.append(event)
        return kept

    def is_replayed(self, ctx: Any) -> bool:
        """Does the rewritten code build ``ctx``'s ``ContextExit`` (in its local ``ctx.name``)?"""
        if self._replayed is None:
            self._replayed = {id(e.ctx) for e in self.replayed() if e.kind in ("create", "enter")}
        return id(ctx) in self._replayed

    def codegen(self, cg: Codegen) -> None:
        """Emit the replay (after the graph call and the other side effects)."""
        built: set[int] = set()
        for event in self.replayed():
            if event.kind == "set":
                fn, args = event.call
                cg.load_const(fn)
                for arg in args:
                    cg.load_const(arg)
                cg.call_function(len(args))
                cg.pop_top()
            elif event.kind in ("create", "enter"):
                if id(event.ctx) not in built:
                    built.add(id(event.ctx))
                    given = getattr(event.ctx, "given", None) is not None
                    cg.load_const(ContextExit.around if given else ContextExit)
                    if given:  # entered for real, its own state kept on it
                        event.ctx.source.reconstruct(cg)
                    else:
                        cg.load_const(event.ctx.recipe())
                    cg.load_const(event.key)
                    cg.call_function(2)
                    cg.store_local(event.ctx.name)
                if event.kind == "enter":
                    cg.load_local(event.ctx.name)
                    cg.load_attr("enter")
                    cg.call_function(0)
                    cg.pop_top()
            else:
                event.ctx.load_exit(cg)
                for _ in range(3):
                    cg.load_const(None)
                cg.call_function(3)
                cg.pop_top()


def keep_dispatch_keys() -> Callable[[], None]:
    """Keep the thread's local dispatch-key sets (included, excluded) as a trace starts; the
    function returned puts them back as it ends. Code the trace runs for real can leave keys
    excluded: a frame of torch's, kept alive by an exception the trace caught, holding a C guard
    that restores the sets it saw when the frame dies, later (a transform's fake run stopped by
    eager's error); eager calls then dispatch wrongly (``fwAD.make_dual`` failing an internal
    assert). torch's own guard saves and restores them whole, keys Python has no name for too."""
    guard = torch._C._PreserveDispatchKeyGuard()
    guard.__enter__()
    return lambda: guard.__exit__(None, None, None)
