"""Trace one call of a function into a ``TraceResult``: the FX graph, guards and the rewritten
function.

``convert_call(fn, L, backend)`` runs the ``Translator`` over ``fn``'s code with the real arguments
``L``, closes the graph over the tensors the return value (or, at a graph break, the live frames)
and side effects need, compiles it with the backend and emits the rewritten function that calls it.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from ..codegen.emit import Codegen
from ..codegen.resume import resume_origin
from ..codegen.transform import Numbering, make_function
from ..guards import kinds
from ..guards.guard import Guard
from ..guards.module_tree import traced_modules, tree_guards
from ..guards.sources import (
    AttrSource,
    ClosureSource,
    DictItemSource,
    GlobalSource,
    ItemSource,
    LocalSource,
    Source,
)
from . import python_numbers
from .breaks import deferred_checks
from .breaks.break_frames import call_start, cells_written_after, live_values, passed_cells
from .breaks.continuation import ResumeFactory, continues_in_callee, emit_break
from .context_runtime import StateSafeGraph
from .exc import NumbersAdvance, Unsupported
from .fakes.shapes import DynamicPolicy
from .global_state import function_modes_supported, keep_dispatch_keys
from .output_graph import OutputGraph
from .translator import FrameState, GraphBreak, Translator, root_closure
from .variables import iterators
from .variables.base import VariableTracker, walk
from .variables.builder import keep_changed_inputs_apart
from .variables.constants import SymNodeVariable
from .variables.contexts import enter_carried
from .variables.functions import ClosureCellVariable
from .variables.iterators import GeneratorVariable, ResumedItemsVariable
from .variables.modules import HOOK_TABLES, BlockInput, input_order, plan_inputs
from .variables.tensors import TensorVariable


@dataclass
class TraceResult:
    fn: types.FunctionType  #: the rewritten function (same signature as the original)
    guards: list[Guard]
    graphs: list[torch.fx.GraphModule] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)  #: call nodes per graph
    breaks: list[Unsupported] = field(
        default_factory=list
    )  #: why the trace stopped early, if it did
    #: where it stopped, when in the traced function's own frame: the original function's code
    #: and instruction index (``resume_origin``: a resume function's instructions map back; a
    #: CALL counts as the PRECALL/KW_NAMES before it, where a resume function would start)
    stopped_at: tuple[types.CodeType, int] | None = None
    #: the branches on tensor data it speculated on (``speculation.Site``), checked after its graph
    speculated: list[Any] = field(default_factory=list)
    #: the places of the program's objects the compiled call changes (``_written_places``)
    writes: frozenset[Source] = frozenset()


def convert_call(
    fn: types.FunctionType,
    L: dict[str, Any],
    backend: Any,
    *,
    fullgraph: bool = False,
    error_on_graph_break: bool = False,
    resume: ResumeFactory | None = None,
    policy: DynamicPolicy | None = None,
    numbering: Numbering | None = None,
    callee: Any = None,
    speculation: Any = None,
) -> TraceResult:
    """Trace ``fn`` called with the arguments ``L`` (name -> value) and compile what it does. A
    graph break becomes resume calls (``breaks.py``) unless ``fullgraph``, ``error_on_graph_break``
    (or the region the break is in, ``Unsupported.is_error``) or no ``resume`` factory says it may
    not, in which case the ``Unsupported`` reason is raised. Graphs are named from ``numbering``
    (that of the compiled function ``fn`` belongs to); ``callee`` compiles a function that a break
    calls in plain Python (``callees.py``); ``speculation`` is the ``speculation.Policy`` for
    branches on tensor data (default: no speculation)."""
    numbering = numbering or Numbering()
    output = OutputGraph(policy=policy)
    if speculation is not None:
        output.deferred.policy = speculation
    grad_mode, put_back_dispatch_keys = torch.is_grad_enabled(), keep_dispatch_keys()
    try:
        tx = Translator(fn.__code__, fn.__globals__, output, {}, root_closure(fn, output), fn=fn)
        output.current_tx = tx
        if not function_modes_supported():
            depth = torch._C._len_torch_function_stack()
            output.assume_state(("modes",), _mode_depth, depth)
            raise Unsupported("torch_function_mode", "a torch function mode is active")
        rests = getattr(getattr(fn, "__bytegraph_resume__", None), "iter_args", ())
        output.shapes.arguments = dict(_tensor_arguments(L))
        tx.symbolic_locals = {name: _argument(tx, name, value, rests) for name, value in L.items()}
        enter_carried(tx)  # a resume function starting inside with blocks (variables/contexts/)
        try:
            result, frames, reason = tx.run(), None, None
        except GraphBreak as gb:
            if resume is None or gb.reason.is_error(fullgraph, error_on_graph_break):
                raise gb.reason from None
            result, frames, reason = None, gb.frames, gb.reason
        return _finish(fn, output, result, frames, backend, resume, reason, numbering, callee)
    except Exception as e:
        # Whatever stopped the trace (a break under fullgraph, an unsupported construct, a bug in
        # bytegraph), the driver remembers it under what the trace had assumed so far.
        if getattr(e, "guards", None) is None:
            e.guards = _guards_so_far(output)
        raise
    finally:
        output.state.unwind()  # the state the trace entered or set was real while tracing
        output.fake_mode.forget_real_tensors()  # the inputs are the caller's again
        torch._C._set_grad_enabled(grad_mode)
        put_back_dispatch_keys()


def _argument(tx: Translator, name: str, value: Any, rests: tuple[str, ...]) -> VariableTracker:
    """An argument's tracker: where a resume function's prefix iterates it (``rests``: the rest
    of a loop's items, a tuple or a range), that iterator, its items guarded only as far as the
    loop takes them (``ResumedItemsVariable``); else the value wrapped."""
    source = LocalSource(name)
    if name in rests and type(value) in (tuple, range):
        tx.output.assume_type(source, type(value))
        return ResumedItemsVariable([], rest=value, rest_source=source)
    return tx.wrap(value, source)


def _tensor_arguments(L: dict[str, Any]) -> Iterator[tuple[int, tuple[torch.Tensor, Source]]]:
    """``(id(t), (t, source))`` for the tensors among the arguments, and in their tuples and
    lists (``*args``) two levels down: a view among them whose base is another one is faked on
    that base's sizes (``ShapeTracker.arguments``)."""
    stack: list[tuple[Any, Source, int]] = [(v, LocalSource(k), 0) for k, v in L.items()]
    while stack:
        value, source, depth = stack.pop()
        if isinstance(value, torch.Tensor):
            yield id(value), (value, source)
        elif type(value) in (tuple, list) and depth < 2 and len(value) <= 16:
            stack += [(v, ItemSource(source, i), depth + 1) for i, v in enumerate(value)]


_mode_depth = torch._C._len_torch_function_stack


def _finish(
    fn: types.FunctionType,
    output: OutputGraph,
    result: VariableTracker | None,
    frames: list[FrameState] | None,
    backend: Any,
    resume: ResumeFactory | None,
    reason: Unsupported | None,
    numbering: Numbering,
    callee: Any = None,
) -> TraceResult:
    if output.exc_info:
        raise Unsupported(
            "exception", "a graph break while an exception is handled (resume code cannot re-enter)"
        )
    advanced = _advanced_numbers(output) | _loop_counters(fn, output, frames)
    if advanced and output.shapes.policy.foresee(advanced):
        raise NumbersAdvance(advanced)  # before anything is compiled: the driver traces again
    output.state.unwind()  # the backend compiles (AOT: traces) the graph in the call's state
    cg = Codegen(lineno=fn.__code__.co_firstlineno)
    cg.resumes = frames is not None
    if frames is not None:
        cg.shared_cells = cells_written_after(frames)
        cg.passed_cells = passed_cells(frames)  # cells resume functions take as cells
        cg.passed_cell_vts = [
            f.tx.local_cells[name] for f in frames for name in cg.passed_cells.get(id(f), ())
        ]
    live = [result] if frames is None else live_values(frames)
    replayed = output.side_effects.plan(live)  # which objects made in the trace escape
    # before the graph is compiled: forcing a generator may add to it, and to what escapes
    if frames is None and _finish_escaping_generators(output, [*live, *replayed]):
        replayed = output.side_effects.plan(live)
    keep_changed_inputs_apart(output)  # its guards follow from all the trace changed
    checked = deferred_checks.finish(output)
    if checked:
        deferred_checks.emit_before(cg, output)
    outputs = [*live, *replayed, *checked]
    graphs, ops = _emit_graph_call(cg, output, outputs, backend, numbering, fn.__code__.co_flags)
    if checked:  # before anything the call does outside the graph
        deferred_checks.emit(cg, output, checked)
    output.side_effects.emit_memo_calls(cg)
    swapped = _preload_stale(cg, output, [*live, *replayed, *output.side_effects.targets()])
    try:
        output.side_effects.codegen(cg)
        output.state.codegen(cg)  # contexts left open, or state set, by the trace: for real now
        if frames is None:
            result.reconstruct(cg)
            cg.return_value()
        else:
            emit_break(cg, frames, resume, callee)
    finally:
        for vt, source in swapped:
            vt.source = source
    # modules made in the trace, built before all the code, which says which of them it reads
    for label, getter, value in output.side_effects.emit_prologue(cg):
        output.assume_state(label, getter, value)
    code = (
        fn.__code__
    )  # the frames show the function's own code name (a resume function's: the user's)
    new_fn = make_function(
        fn, cg.instrs, name=fn.__name__, cells=cg.cells, code_name=(code.co_name, code.co_qualname)
    )
    if reason is not None and callee is not None and continues_in_callee(frames, reason):
        reason = None  # reported by the callee's own compile (``callees.py``)
    breaks = [reason.detach()] if reason is not None else []
    stopped_at = None
    if frames is not None and len(frames) == 1 and frames[0].tx.fn is not None:
        leaf = frames[0]
        template, index = resume_origin(leaf.tx.fn, call_start(leaf.tx, leaf.index))
        stopped_at = (template.__code__, index)
    speculated = output.deferred.speculated()
    guards = tree_guards(_all_guards(output, storages=not _runs_graph_as_is(backend)))
    writes = _written_places(output)
    return TraceResult(new_fn, guards, graphs, ops, breaks, stopped_at, speculated, writes)


def _written_places(output: OutputGraph) -> frozenset[Source]:
    """Where the compiled call changes objects of the program's: the attributes it stores, the
    containers it changes in place, the globals it assigns."""
    effects = output.side_effects
    places: set[Source] = {source for source, _ in effects.stored_attributes()}
    places.update(vt.source for vt in effects.mutated.values() if vt.source is not None)
    places.update(GlobalSource(name) for name in effects.global_stores)
    return frozenset(places)


def _advanced_numbers(output: OutputGraph) -> frozenset[str]:
    """The numbers the trace read from an object's attributes as constants (guarded by value)
    that it stores another value into: a counter the call advances, which the next identical
    call finds changed (``torchmetrics``' ``self._update_count = _update_count + 1``)."""
    read = {
        g.source: g.arg
        for g in output.guards
        if g.kind is kinds.EQUALS_MATCH and type(g.arg) in (int, float)
    }
    if not read:
        return frozenset()
    return frozenset(
        source.expr
        for source, value in output.side_effects.stored_attributes()
        if source in read and not _same_number(value, read[source])
    )


def _loop_counters(
    fn: types.FunctionType, output: OutputGraph, frames: list[FrameState] | None
) -> frozenset[str]:
    """The ints a resume function took as arguments and read as constants that its break, in the
    same function it continues (a loop whose body breaks), passes on changed: a loop's counter
    (``i += 1`` then ``print(i)``), which the next iteration's call finds changed, so it is
    traced symbolically from the first iteration."""
    origin = getattr(fn, "__bytegraph_resume__", None)
    if origin is None or frames is None or len(frames) != 1 or frames[0].tx.fn is not fn:
        return frozenset()
    if resume_origin(fn, frames[0].index)[0] is not origin.template:
        return frozenset()
    read = {
        g.source.name: g.arg
        for g in output.guards
        if g.kind is kinds.EQUALS_MATCH and type(g.arg) is int and type(g.source) is LocalSource
    }
    passed = frames[0].locals
    return frozenset(
        LocalSource(name).expr
        for name, number in read.items()
        if name in passed and not _same_number(passed[name], number)
    )


def _same_number(vt: VariableTracker, number: int | float) -> bool:
    if not vt.is_python_constant():
        return False
    value = vt.as_python_constant()
    return type(value) is type(number) and (value == number or value != value and number != number)


@dataclass(frozen=True)
class PreloadedSource(Source):
    """A value loaded into the rewritten code's local ``name`` before the side effects were
    replayed."""

    name: str

    def render(self, roots: dict[str, str]) -> str:
        return self.name

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_local(self.name)


def _preload_stale(
    cg: Codegen, output: OutputGraph, values: list[VariableTracker]
) -> list[tuple[VariableTracker, Source]]:
    """Values read through something the replayed side effects change (``a = lst[0]; lst.pop(0)``,
    ``a = obj.w; obj.w = t``, a stored global or cell) must be loaded before the replay: load each
    into a local now and point its ``source`` there until the code is emitted. The replay's own
    targets too (``o = lst[0]; lst.clear(); o.val = 5`` stores into the object the trace saw, not
    what ``lst[0]`` is by then). An attribute is found through many paths (``o.k``,
    ``o.__dict__['k']``, ``vars(o)['k']``, a class attribute read on an instance, a module's
    ``__dict__``), so a read of an attribute, or of an item of a ``__dict__``, is stale when the
    replay stores an attribute of that name on any object. Returns what to restore."""
    effects = output.side_effects
    if not effects:
        return []
    containers = {vt.source for vt in effects.mutated.values()}  # only what lies below them changes
    stored_names = {name for _, name, _ in effects.attr_stores.values()}  # a cell's: cell_contents
    changed = {GlobalSource(n) for n in effects.global_stores}
    changed |= {ClosureSource(n) for n in effects.cell_stores}
    hooks_removed = bool(effects.hook_removals)  # which tables they change is not known by source

    def stale(source: Source) -> bool:
        below = False
        while source is not None:
            if source in changed or (below and source in containers):
                return True
            if _attribute_read(source) in stored_names:
                return True
            if below and hooks_removed and getattr(source, "attr", None) in HOOK_TABLES:
                return True
            # a position read at run time (``L['grads'][<an enumerate's count>]``): stale
            # where the number is, though the sequence is not
            if any(map(stale, source.operands())):
                return True
            source, below = getattr(source, "base", None), True
        return False

    swapped: list[tuple[VariableTracker, Source]] = []

    def preload_stale() -> None:
        for vt in walk(values):
            if isinstance(vt, ClosureCellVariable):  # pushed as the cell, found where it was
                if (base := vt.cell_source()) is not None and stale(base):
                    raise Unsupported("closure_store", "a cell found through what the call changes")
                continue
            source = vt.source
            if source is not None and stale(source):
                name = f"__bg_pre{len(swapped)}"
                source.reconstruct(cg)
                cg.store_local(name)
                swapped.append((vt, source))
                vt.source = PreloadedSource(name)

    try:
        preload_stale()
    except BaseException:
        for vt, source in swapped:
            vt.source = source
        raise
    return swapped


def _attribute_read(source: Source) -> str | None:
    """The attribute name ``source`` reads (``X.name``, ``X.__dict__['name']``), or None."""
    if isinstance(source, AttrSource):
        return source.attr
    if isinstance(source, (ItemSource, DictItemSource)):
        base = source.base
        if isinstance(base, AttrSource) and base.attr == "__dict__":
            key = source.index if isinstance(source, ItemSource) else source.key
            return key if isinstance(key, str) else None
    return None


def _finish_escaping_generators(output: OutputGraph, values: list[VariableTracker]) -> bool:
    """A generator made in the trace that escapes the call (returned, stored) is run to its end
    now, while its tensor operations can still join the graph, and escapes as a generator of the
    items it had left (``iterators.rest_of``); one not started is made again by its function.
    Only if that has no effect outside the generator:
    otherwise the effects would happen too early, and the function runs in Python. Returns whether
    it ran one (the trace's state may have changed)."""
    reachable = list(walk(values))
    seen = {id(vt) for vt in reachable}
    forced = False
    for vt in reachable:
        if not isinstance(vt, GeneratorVariable) or vt.spoiled or vt.escapes_as_is():
            continue
        vt.escaping = True  # rebuilt as a generator (``rest_of``)
        if vt.done or iterators.restartable(vt):  # one not started is made again by its function
            continue
        effects = output.side_effects
        before = effects.snapshot()
        vt.force()
        changed = [obj for obj, _ in effects.undo[before[-1] :] if id(obj) in seen]
        if changed or effects.snapshot()[:4] != before[:4]:
            raise Unsupported(
                "generator",
                "a generator with side effects escapes the compiled function",
                hint="consume the generator inside the compiled function",
            )
        forced = True
    return forced


def _guards_so_far(output: OutputGraph) -> list[Guard]:
    """The guards of a trace that stopped: the trace reaches its stopping point whenever they hold.
    Empty if they cannot even be listed (the fallback then covers every call)."""
    try:
        return _all_guards(output)
    except Exception:  # noqa: BLE001 (a broken trace state: remember the failure unconditionally)
        return []


def _all_guards(output: OutputGraph, storages: bool = False) -> list[Guard]:
    """Input guards plus the shape facts the trace relied on (rendered last: they need every
    size), and with ``storages`` which tensor inputs share storage where the graph writes into
    one (``OutputGraph.storage_sharing_guards``)."""
    facts = [*output.shapes.guards(), *(output.storage_sharing_guards() if storages else ())]
    return sorted(output.guards | set(facts), key=Guard.sort_key)


def _runs_graph_as_is(backend: Any) -> bool:
    """Whether ``backend`` (or the one a ``TimedBackend`` times) runs the graph's operators as
    they are on the real inputs (``eager``): a write into one input is then seen through every
    input sharing its storage, whichever share it in a call."""
    inner = getattr(backend, "backend", backend)
    return getattr(inner, "runs_graph_as_is", False) is True


def _emit_graph_call(
    cg: Codegen,
    output: OutputGraph,
    live: list[VariableTracker],
    backend: Any,
    numbering: Numbering,
    code_flags: int,
) -> tuple[list[torch.fx.GraphModule], list[int]]:
    """Compile the graph (if it does anything) and emit ``__graph_out =
    __compiled_fn_N(*inputs)``."""
    if output.count_calls() == 0:
        return [], []
    outputs = _graph_outputs(live)
    name = f"__compiled_fn_{next(numbering.graphs)}"
    ops = output.count_calls()
    plan = plan_inputs(list(output.inputs), output.input_values, traced_modules(output.guards))
    blocked = len(plan) < len(output.inputs)
    if blocked:
        output.reorder_inputs(input_order(plan))
    output.state.close_graph(output.graph)  # the graph leaves global state as it found it
    numbers = python_numbers.split(output.graph, outputs)  # numbers Python computes beside it
    gm = output.graph_module(numbers.graph_outputs, name)
    example_inputs = numbers.prune_inputs(gm, output.example_inputs())
    compiles = not _does_nothing(gm)
    with output.state.outside_carried():  # the state the graph is called in (see below)
        compiled = numbers.around(backend(gm, example_inputs) if compiles else _nothing)
    if output.state.needs_safe_call(gm.graph):  # if it raises, its state changes are undone
        compiled = StateSafeGraph(compiled, name)
    if deferred_checks.rerun_on_error(output, code_flags):  # side effects wait for it
        written = deferred_checks.written_positions(output)
        compiled = deferred_checks.RerunOnError(compiled, name, output.deferred.random, written)
    if output.state.carried:  # contexts open at the start are left here and entered in the graph
        output.state.codegen_exit_carried(cg)
    cg.push_callable(lambda: cg.load_cell_value(name, compiled))
    if not blocked:
        for source in output.inputs:
            source.reconstruct(cg)
        cg.call(len(output.inputs))
    else:  # f(*[a, *block(root), b, ...])
        cg.build_list(0)
        for step in plan:
            if isinstance(step, BlockInput):
                cg.push_callable(
                    lambda step=step: cg.load_cell_value(f"__params_{len(cg.cells)}", step.block)
                )
                step.root.reconstruct(cg)
                cg.call(1)
                cg.add("LIST_EXTEND", 1)
            else:
                step.reconstruct(cg)
                cg.add("LIST_APPEND", 1)
        cg.call_ex(has_kwargs=False)
    cg.store_local(cg.output_var)
    cg.graph_outputs = {node: i for i, node in enumerate(outputs)}
    return ([gm], [ops]) if compiles else ([], [])


def _does_nothing(gm: torch.fx.GraphModule) -> bool:
    """Is ``gm`` left with nothing to do once Python computes its numbers (``python_numbers``):
    inputs, no operation, no output? The trace recorded number arithmetic only (``self.count -=
    1`` on a count the call advances): no backend compiles it, no graph is counted, and a frame
    whose trace made only such graphs records no tensor operation (``driver._tensor_free``)."""
    nodes = gm.graph.nodes
    return all(n.op == "placeholder" or (n.op == "output" and not n.args[0]) for n in nodes)


def _nothing(*_: Any) -> tuple[()]:
    return ()


def _rebuilt_from_fields(vt: VariableTracker) -> bool:
    """Is ``vt`` rebuilt from what its fields hold? A generator only once done (from its items;
    one that has not started is rebuilt from its function and arguments: ``walk_live``)."""
    return not isinstance(vt, GeneratorVariable) or vt.done


def _graph_outputs(values: list[VariableTracker]) -> list[torch.fx.Node]:
    """The graph-computed nodes (tensors and symbolic numbers, not inputs) reachable from ``values``
    through any tracker's fields (containers, iterators, bound methods, partials...), each once, in
    a stable order: everything the code after the graph may have to rebuild."""
    nodes: dict[torch.fx.Node, None] = {}
    for vt in iterators.walk_live(values, descend=_rebuilt_from_fields):
        if isinstance(vt, (TensorVariable, SymNodeVariable)) and vt.node.op != "placeholder":
            nodes[vt.node] = None
    return list(nodes)
