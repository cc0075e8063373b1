"""Scheduler: orders buffers into steps and fuses computed buffers into kernels.

Each ``ComputedBuffer`` becomes a ``SchedulerNode`` (its ``LoopBody``: reads, store index, merged
ranges); each extern call an ``ExternNode``. Nodes are fused greedily in graph order into a
``FusedGroup`` sharing one iteration space ``(numel, rnumel)``: pointwise chains, pointwise
producers into reductions, reduction epilogues and reductions over the same rows (softmax, layer
norm). A node joins a group only if every in-kernel read sees exactly the element the same program
just wrote; scans get kernels of their own, and a scatter may only end the kernel that computes
its values (the kernel filling its target moved before that one), never share one with that fill.
Every rejection is logged on ``bytegraph.fusion`` with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import sympy

from . import config
from .indexing import Expr, product, same, simplify_index, unflatten
from .ir import Buffer, BufferView, ComputedBuffer, ExternBuffer, LoopBody, MultiOutput

log = logging.getLogger("bytegraph.fusion")

XINDEX = sympy.Symbol("xindex", integer=True, nonnegative=True)
RINDEX = sympy.Symbol("rindex", integer=True, nonnegative=True)


class SchedulerNode:
    """A computed buffer with its analysed body and iteration sizes."""

    def __init__(self, buffer: ComputedBuffer) -> None:
        self.buffer = buffer
        self.name = buffer.name
        self.body = LoopBody.analyse(buffer)
        self.reads = {name for name, _ in self.body.reads}
        if buffer.mutates is not None:  # runs after the kernel that filled the buffer it updates
            self.reads.add(buffer.mutates)
        self.numel = product(self.body.xsizes)
        self.rnumel = product(self.body.rsizes) if self.body.is_reduction else sympy.Integer(1)

    def __repr__(self) -> str:
        kind = {"reduction": "red", "pointwise": "poi"}.get(self.body.kind, self.body.kind)
        return f"{self.name}({kind} {self.numel}x{self.rnumel})"


class ExternNode:
    """A torch call (or a MultiOutput unpacking one); never fused."""

    def __init__(self, buffer: ExternBuffer | MultiOutput) -> None:
        self.buffer = buffer
        self.name = buffer.name
        if isinstance(buffer, MultiOutput):
            self.reads = {buffer.parent.name}
        else:
            self.reads = {v.buffer.name for v in iter_views((buffer.args, buffer.kwargs))}


def iter_views(obj: object) -> Iterator[BufferView]:
    """Every BufferView inside a nested args structure."""
    if isinstance(obj, BufferView):
        yield obj
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from iter_views(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from iter_views(item)


@dataclass
class FusedGroup:
    """Nodes generated as one kernel over ``numel`` rows of ``rnumel`` reduction elements."""

    nodes: list[SchedulerNode]
    numel: Expr
    rnumel: Expr
    removable: set[str] = field(default_factory=set)  #: buffers no one outside reads

    @property
    def is_reduction(self) -> bool:
        return not same(self.rnumel, 1)


Step = FusedGroup | ExternNode


def place(body: LoopBody, numel: Expr, rnumel: Expr) -> tuple[list[Expr], list[Expr], str]:
    """Kernel expressions for ``body``'s merged dims in a ``(numel, rnumel)`` kernel, and its level.

    Levels: ``"red"`` (a reduction), ``"scan"`` (a scan), ``"x"`` (one value per row), ``"r"``
    (one per row element).
    """
    if body.is_reduction:
        level = "scan" if body.kind == "scan" else "red"
        return unflatten(XINDEX, body.xsizes), unflatten(RINDEX, body.rsizes), level
    own = product(body.xsizes)
    if same(rnumel, 1) or same(own, numel):
        return unflatten(XINDEX, body.xsizes), [], "x"
    prefix: Expr = sympy.Integer(1)
    for j in range(len(body.xsizes) + 1):
        if same(prefix, numel):
            xs, rs = body.xsizes[:j], body.xsizes[j:]
            return unflatten(XINDEX, xs) + unflatten(RINDEX, rs), [], "r"
        if j < len(body.xsizes):
            prefix = prefix * body.xsizes[j]
    return unflatten(XINDEX * rnumel + RINDEX, body.xsizes), [], "r"


def kernel_index(node: SchedulerNode, expr: Expr, numel: Expr, rnumel: Expr) -> Expr:
    xs, rs, _ = place(node.body, numel, rnumel)
    return simplify_index(node.body.rewrite(expr, xs, rs))


def fused_shape(group: FusedGroup, node: SchedulerNode) -> tuple[Expr, Expr] | None:
    """The iteration space of ``group`` plus ``node``, or None if they do not share one."""
    n, r = group.numel, group.rnumel
    if node.body.is_reduction:
        if group.is_reduction:
            return (n, r) if same(node.numel, n) and same(node.rnumel, r) else None
        rows = node.numel
        ok = same(n, rows * node.rnumel) or same(n, rows)
        return (rows, node.rnumel) if ok else None
    if not group.is_reduction:
        return (n, r) if same(node.numel, n) else None
    return (n, r) if same(node.numel, n) or same(node.numel, n * r) else None


def fusion_rejection(group: FusedGroup, node: SchedulerNode) -> str | None:
    """Why ``node`` cannot join ``group`` (None when it can)."""
    if len(group.nodes) >= config.max_fused_nodes:
        return "kernel already holds max_fused_nodes buffers"  # keeps kernels compilable
    if group.nodes[0].buffer.layout.device != node.buffer.layout.device:
        return "different devices"  # one kernel runs on one device
    alone = [m for m in group.nodes if m.body.kind in ("scan", "scatter")]
    alone += [node] if node.body.kind == "scan" else []
    if alone:
        # a scatter writes elements that other programs read, and a fused scan would need its
        # consumers placed at the scanned element: nothing follows them in a kernel, and a scan
        # is a kernel of its own
        return f"{alone[0].name} is a {alone[0].body.kind} (generated alone)"
    if node.body.kind == "scatter":
        # a scatter may end a kernel whose programs each produce the values it writes, as long
        # as no program of that kernel fills or reads the buffer it writes into
        target = {node.name, node.buffer.mutates}
        if any(m.name in target or m.reads & target for m in group.nodes):
            return f"{node.name} writes into a buffer this kernel fills or reads"
    shape = fused_shape(group, node)
    if shape is None:
        return (
            f"iteration spaces differ: kernel {group.numel}x{group.rnumel}, "
            f"node {node.numel}x{node.rnumel}"
        )  # no common (rows, row length)
    numel, rnumel = shape
    changed = not (same(numel, group.numel) and same(rnumel, group.rnumel))
    members = group.nodes + [node]
    writers = {m.name: m for m in members}
    for consumer in members if changed else [node]:
        for name, expr in consumer.body.reads:
            producer = writers.get(name)
            if producer is None or producer is consumer:
                continue
            written = kernel_index(producer, producer.body.store_index, numel, rnumel)
            if kernel_index(consumer, expr, numel, rnumel) != written:
                # another program instance would have to produce the element: needs a global sync
                return f"{consumer.name} reads {name} at an index other programs write"
    return None


def schedule(buffers: list[Buffer], output_names: set[str]) -> list[Step]:
    """Group buffers into kernel and extern steps, in an order that respects every dependency."""
    nodes = _live_nodes(buffers, output_names)
    steps: list[Step] = []
    step_of: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ExternNode):
            steps.append(node)
            step_of[node.name] = len(steps) - 1
            continue
        index = _place_in_group(steps, step_of, node)
        if index is None and node.body.kind == "scatter":
            index = _place_scatter_early(steps, step_of, node)
        if index is None:
            steps.append(FusedGroup([node], node.numel, node.rnumel))
            index = len(steps) - 1
        step_of[node.name] = index
    _mark_removable(steps, nodes, output_names)
    return steps


def _place_in_group(steps: list[Step], step_of: dict[str, int], node: SchedulerNode) -> int | None:
    earliest = max((step_of[r] for r in node.reads if r in step_of), default=-1)
    candidates = [earliest] if earliest >= 0 else []
    candidates += [
        i
        for i in range(max(earliest + 1, 0), len(steps))
        if isinstance(steps[i], FusedGroup) and any(node.reads & m.reads for m in steps[i].nodes)
    ]
    for i in candidates:
        group = steps[i]
        if not isinstance(group, FusedGroup):
            continue
        reason = fusion_rejection(group, node)
        if reason is None:
            shape = fused_shape(group, node)
            assert shape is not None
            group.numel, group.rnumel = shape
            group.nodes.append(node)
            log.debug("fused %s into kernel with %s", node.name, [m.name for m in group.nodes])
            return i
        log.debug("not fusing %s with %s: %s", node.name, [m.name for m in group.nodes], reason)
    return None


def _place_scatter_early(
    steps: list[Step], step_of: dict[str, int], node: SchedulerNode
) -> int | None:
    """Fuse a scatter into the kernel producing its values, moving the kernel that fills its
    target (a copy of the base, zeros for an embedding's gradient) to just before that kernel:
    the fill reads nothing computed in between, and nothing but the scatter reads what it fills.
    """
    target = node.buffer.mutates
    fill = steps[step_of[target]] if target in step_of else None
    values = [step_of[r] for r in node.reads - {target} if r in step_of]
    if not isinstance(fill, FusedGroup) or len(fill.nodes) != 1 or not values:
        return None
    at, fill_at = max(values), step_of[target]
    producer = steps[at]
    if at >= fill_at or not isinstance(producer, FusedGroup):
        return None
    if any(step_of.get(r, -1) >= at for r in fill.nodes[0].reads):
        return None  # the fill needs something the producer's kernel or a later step computes
    reason = fusion_rejection(producer, node)
    if reason is not None:
        log.debug("not fusing %s with %s: %s", node.name, [m.name for m in producer.nodes], reason)
        return None
    steps.insert(at, steps.pop(fill_at))
    for name, i in step_of.items():
        step_of[name] = at if name == target else i + 1 if at <= i < fill_at else i
    shape = fused_shape(producer, node)
    assert shape is not None
    producer.numel, producer.rnumel = shape
    producer.nodes.append(node)
    log.debug("fused %s into kernel with %s", node.name, [m.name for m in producer.nodes])
    return at + 1


def _live_nodes(buffers: list[Buffer], output_names: set[str]) -> list[SchedulerNode | ExternNode]:
    """Nodes in graph order, without computed buffers nothing reads (dead code)."""
    nodes = [
        SchedulerNode(b) if isinstance(b, ComputedBuffer) else ExternNode(b)
        for b in buffers
        if isinstance(b, ComputedBuffer | ExternBuffer | MultiOutput)
    ]
    needed = set(output_names)
    live: list[SchedulerNode | ExternNode] = []
    for node in reversed(nodes):
        if isinstance(node, ExternNode) or node.name in needed:
            live.append(node)
            needed |= node.reads
    return list(reversed(live))


def _mark_removable(steps: list[Step], nodes: list, output_names: set[str]) -> None:
    readers: dict[str, set[int]] = {}
    for i, step in enumerate(steps):
        for node in step.nodes if isinstance(step, FusedGroup) else [step]:
            for name in node.reads:
                readers.setdefault(name, set()).add(i)
    for i, step in enumerate(steps):
        if isinstance(step, FusedGroup):
            step.removable = {
                n.name
                for n in step.nodes
                if n.name not in output_names and readers.get(n.name, set()) <= {i}
            }
