"""The Python wrapper: one generated ``call(args)`` that runs a lowered graph step by step.

It binds inputs and size symbols, checks input strides, allocates outputs (reusing a dead buffer of
the same size, dtype and strides when one is free), launches each kernel, calls extern ops and
returns the graph outputs. The text is kept (``WrapperCode.source``) and logged on
``bytegraph.output_code`` together with every kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch

from .graph import GraphLowering
from .indexing import pyexpr
from .ir import Buffer, BufferView, ComputedBuffer, ExternBuffer, InputBuffer, MultiOutput
from .kernel import GeneratedKernel, TritonKernel
from .launch import KernelLauncher, ensure_strides
from .scheduler import ExternNode, FusedGroup, Step, iter_views


def reinterpret(t: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
    """A strided view of ``t``'s storage, ``offset`` elements past ``t``'s own start."""
    return t.as_strided(size, stride, t.storage_offset() + offset)


@dataclass
class WrapperCode:
    source: str
    globals: dict[str, Any]
    kernels: list[KernelLauncher]


@dataclass
class _State:
    lines: list[str] = field(default_factory=list)
    globals: dict[str, Any] = field(default_factory=dict)
    pool: dict[tuple, list[str]] = field(default_factory=dict)
    reusable: set[str] = field(default_factory=set)


def generate_wrapper(
    graph: GraphLowering, steps: list[Step], autotune: bool = False
) -> WrapperCode:
    """Generate kernels for ``steps`` and the ``call`` function running them (each kernel's
    block sizes autotuned per shape with ``autotune``)."""
    state = _State()
    state.globals.update(
        torch=torch,
        empty_strided=torch.empty_strided,
        reinterpret=reinterpret,
        ensure_strides=ensure_strides,
        constants=graph.constants,
    )
    dtypes = {b.name: b.layout.dtype for b in graph.buffers if b.layout is not None}
    dtypes.update({n: b.layout.dtype for n, b in graph.placeholders if isinstance(b, Buffer)})
    dtypes.update({n: t.dtype for n, t in graph.constants.items()})
    numels = {b.name: b.layout.numel for b in graph.buffers if b.layout is not None}
    numels.update({n: b.layout.numel for n, b in graph.placeholders if isinstance(b, Buffer)})
    launchers = []
    step_reads: list[set[str]] = []
    generated: list[GeneratedKernel | None] = []
    aligned = _aligned(graph)
    for step in steps:
        if isinstance(step, FusedGroup):
            gen = TritonKernel(step, len(launchers), dtypes, numels).generate()
            launchers.append(KernelLauncher(gen, autotune=autotune, aligned=aligned))
            generated.append(gen)
            mutated = {n.buffer.mutates for n in step.nodes if n.buffer.mutates is not None}
            step_reads.append(set(gen.pointer_args) - set(gen.stored) | mutated)
        else:
            generated.append(None)
            step_reads.append(set(step.reads))
    _prologue(graph, state)
    last_use = _last_uses(step_reads, graph)
    computed = [b for b in graph.buffers if isinstance(b, ComputedBuffer)]
    state.reusable = {b.name for b in computed} - {
        v.buffer.name
        for s in steps
        if isinstance(s, ExternNode)
        for v in iter_views((getattr(s.buffer, "args", ()), getattr(s.buffer, "kwargs", {})))
    }
    state.reusable -= {b.mutates for b in computed}  # its storage lives on in the scatter result
    buffers = {b.name: b for b in graph.buffers}
    launcher_iter = iter(launchers)
    for i, step in enumerate(steps):
        gen = generated[i]
        if gen is not None:
            _kernel_call(state, gen, next(launcher_iter), buffers)
        else:
            _extern_call(state, step)
        _free(state, [n for n, last in last_use.items() if last == i], buffers)
    outs = ", ".join(_arg(state, v) for v in graph.outputs)
    state.lines.append(f"return ({outs}{',' if len(graph.outputs) == 1 else ''})")
    source = "def call(args):\n" + "\n".join("    " + line for line in state.lines) + "\n"
    return WrapperCode(source, state.globals, launchers)


def _aligned(graph: GraphLowering) -> frozenset[str]:
    """Buffers whose data is 16-byte aligned on every call: those ``empty_strided`` allocates
    here (not the ones written in place into another) and constants that are aligned now."""
    computed = {
        b.name for b in graph.buffers if isinstance(b, ComputedBuffer) and b.mutates is None
    }
    constants = {n for n, t in graph.constants.items() if t.data_ptr() % 16 == 0}
    return frozenset(computed | constants)


def _prologue(graph: GraphLowering, state: _State) -> None:
    names = [n for n, _ in graph.placeholders]
    if names:
        state.lines.append(f"{', '.join(names)}, = args")
    state.lines.append("args.clear()")
    for name in graph.constants:
        state.lines.append(f"{name} = constants[{name!r}]")
    for sym, source in graph.symbol_sources.items():
        state.lines.append(f"{sym} = {source}")
    for name, buf in graph.placeholders:
        if isinstance(buf, InputBuffer) and any(s != 1 for s in buf.layout.size):
            stride = ", ".join(pyexpr(s) for s in buf.layout.stride)
            state.lines.append(f"{name} = ensure_strides({name}, ({stride},))")


def _last_uses(step_reads: list[set[str]], graph: GraphLowering) -> dict[str, int]:
    outputs = graph.output_buffers()
    last: dict[str, int] = {}
    for i, reads in enumerate(step_reads):
        for name in reads:
            last[name] = i
    inputs = {n for n, _ in graph.placeholders} | set(graph.constants)
    return {n: i for n, i in last.items() if n not in outputs and n not in inputs}


def _alloc(state: _State, buf: Buffer) -> None:
    if isinstance(buf, ComputedBuffer) and buf.mutates is not None:
        state.lines.append(f"{buf.name} = {buf.mutates}  # written in place")
        return
    layout = buf.layout
    key = (tuple(layout.size), tuple(layout.stride), layout.dtype, layout.device)
    if buf.name in state.reusable and state.pool.get(key):
        old = state.pool[key].pop()
        state.lines.append(f"{buf.name} = {old}; del {old}  # reuse")
        return
    size = ", ".join(pyexpr(s) for s in layout.size)
    stride = ", ".join(pyexpr(s) for s in layout.stride)
    device = _global(state, layout.device, "device")
    state.lines.append(
        f"{buf.name} = empty_strided(({size}{',' if len(layout.size) == 1 else ''}),"
        f" ({stride}{',' if len(layout.size) == 1 else ''}), device={device}, "
        f"dtype={layout.dtype})"
    )


def _free(state: _State, names: list[str], buffers: dict[str, Buffer]) -> None:
    for name in names:
        buf = buffers.get(name)
        if name in state.reusable and buf is not None:
            layout = buf.layout
            key = (tuple(layout.size), tuple(layout.stride), layout.dtype, layout.device)
            state.pool.setdefault(key, []).append(name)
        else:
            state.lines.append(f"del {name}")


def _kernel_call(
    state: _State, gen: GeneratedKernel, launcher: KernelLauncher, buffers: dict[str, Buffer]
) -> None:
    for name in gen.stored:
        _alloc(state, buffers[name])
    state.globals[gen.name] = launcher.entry
    args = list(gen.pointer_args) + [pyexpr(e) for _, e in gen.size_args] + [pyexpr(gen.numel)]
    if gen.is_reduction:
        args.append(pyexpr(gen.rnumel))
    state.lines.append(f"{gen.name}({', '.join(args)})")


def _extern_call(state: _State, node: ExternNode) -> None:
    buf = node.buffer
    if isinstance(buf, MultiOutput):
        state.lines.append(f"{buf.name} = {buf.parent.name}[{buf.path[0]}]")
    else:
        assert isinstance(buf, ExternBuffer)
        fn = _global(state, buf.kernel, "extern")
        args = [_arg(state, a) for a in buf.args]
        args += [f"{k}={_arg(state, v)}" for k, v in buf.kwargs.items()]
        state.lines.append(f"{buf.name} = {fn}({', '.join(args)})  # {buf.origin}")
    if buf.layout is not None:
        # Inputs we realized may be laid out unlike the fake ones, and an op's output strides can
        # follow its inputs' (attention does): the code after this assumes the meta strides.
        stride = ", ".join(pyexpr(s) for s in buf.layout.stride)
        state.lines.append(
            f"{buf.name} = ensure_strides({buf.name}, ({stride}"
            f"{',' if len(buf.layout.stride) == 1 else ''}))"
        )


def _arg(state: _State, obj: Any) -> str:
    """Python text for an extern argument or graph output."""
    if isinstance(obj, BufferView):
        if obj.is_whole_buffer():
            return obj.buffer.name
        lay = obj.layout
        comma = "," if len(lay.size) == 1 else ""
        return (
            f"reinterpret({obj.buffer.name}, ({', '.join(pyexpr(s) for s in lay.size)}{comma}),"
            f" ({', '.join(pyexpr(s) for s in lay.stride)}{comma}), {pyexpr(lay.offset)})"
        )
    if isinstance(obj, sympy.Expr):
        return pyexpr(obj) if obj.is_integer or obj.free_symbols else repr(float(obj))
    if isinstance(obj, list):
        return "[" + ", ".join(_arg(state, o) for o in obj) + "]"
    if isinstance(obj, tuple):
        return "(" + "".join(_arg(state, o) + ", " for o in obj) + ")"
    if obj is None or isinstance(obj, bool | int | str):
        return repr(obj)
    if isinstance(obj, float) and math.isfinite(obj):
        return repr(obj)
    return _global(state, obj, "const")


def _global(state: _State, value: Any, prefix: str) -> str:
    for name, existing in state.globals.items():
        if name.startswith(prefix) and (
            existing is value
            or (isinstance(value, torch.device | torch.dtype) and existing == value)
        ):
            return name
    name = f"{prefix}{sum(n.startswith(prefix) for n in state.globals)}"
    state.globals[name] = value
    return name
