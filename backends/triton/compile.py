"""The ``triton`` backend entry: FX graph -> aot_autograd -> lowering -> scheduler -> kernels.

``compile_triton(gm, example_inputs, options)`` hands the graph to ``aot_module_simplified``
(forward and backward graphs, core-ATen decompositions); each ATen graph goes through
``compile_aten_graph``, which returns a ``CompiledGraph`` (boxed call; replayed as a CUDA graph
with ``options.cudagraphs``, its kernels autotuned with ``options.max_autotune``). If anything in
our pipeline fails for a graph, that graph runs eagerly (logged), so compiling never breaks a
program. The callable handed back, ``TritonCompiledFunction``, shows what was generated:
``.kernels`` (``.name``/``.source``), ``.source`` (wrapper + kernels), ``.fallback_ops``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch._functorch.aot_autograd import aot_module_simplified
from torch._functorch.partitioners import default_partition

from ..sizes_from_data import compile_with_symbols
from ..state_nodes import has_runtime_nodes
from ..tensorify_restart import compile_again_on_restart
from . import cudagraphs
from .config import Options
from .decompositions import decomposition_table
from .float_scalars import widen_float_scalars
from .graph import GraphLowering
from .launch import KernelLauncher
from .scheduler import FusedGroup, schedule
from .wrapper import generate_wrapper

log = logging.getLogger("bytegraph.output_code")
fusion_log = logging.getLogger("bytegraph.fusion")


class CompiledGraph:
    """One ATen graph compiled to a wrapper plus kernels; called boxed (``fn(list_of_args)``)."""

    _boxed_call = True

    def __init__(
        self,
        name: str,
        source: str,
        call: Callable[[list], Any],
        kernels: list[KernelLauncher],
        fallback_ops: Counter[str],
    ) -> None:
        self.name = name
        self.source = source  #: the wrapper's Python source
        self.call = call
        self.kernels = kernels
        self.fallback_ops = fallback_ops
        self.runner: cudagraphs.CudaGraphRunner | None = None  #: set with ``cudagraphs``

    def __call__(self, args: list) -> Any:
        return self.call(args)


class EagerGraph:
    """An ATen graph our pipeline could not compile: run it with torch (boxed)."""

    _boxed_call = True

    def __init__(self, gm: torch.fx.GraphModule, reason: str) -> None:
        self.gm = gm
        self.reason = reason
        self.source = f"# eager: {reason}\n"
        self.kernels: list[KernelLauncher] = []
        self.fallback_ops: Counter[str] = Counter()

    def __call__(self, args: list) -> Any:
        values = list(args)
        args.clear()
        return self.gm(*values)


class TritonCompiledFunction:
    """What the backend returns: calls the aot-compiled function, shows the generated code."""

    def __init__(
        self, fn: Callable[..., Any], graphs: list[CompiledGraph | EagerGraph], unwrap: bool
    ) -> None:
        self.fn = fn
        self.graphs = graphs  #: forward first, backward once it has been compiled
        self.unwrap = unwrap

    def __call__(self, *args: Any) -> Any:
        out = self.fn(*args)
        return out[0] if self.unwrap else out

    @property
    def kernels(self) -> list[KernelLauncher]:
        return [k for g in self.graphs for k in g.kernels]

    @property
    def source(self) -> str:
        parts = []
        for g in self.graphs:
            parts.append(g.source)
            parts += [k.source for k in g.kernels]
        return "\n\n".join(parts)

    @property
    def fallback_ops(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for g in self.graphs:
            total.update(g.fallback_ops)
        return total


_GRAPH_COUNTER = [0]


def compile_aten_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Options | None = None
) -> CompiledGraph:
    """Lower, schedule and generate one ATen graph (CUDA-graphed with ``options.cudagraphs``)."""
    options = options or Options()
    widen_float_scalars(gm)
    graph = GraphLowering(gm, example_inputs).run()
    steps = schedule(graph.buffers, graph.output_buffers())
    code = generate_wrapper(graph, steps, autotune=options.max_autotune)
    name = f"__compiled_graph_{_GRAPH_COUNTER[0]}"
    _GRAPH_COUNTER[0] += 1
    namespace = dict(code.globals)
    exec(compile(code.source, f"<{name}>", "exec"), namespace)
    groups = [s for s in steps if isinstance(s, FusedGroup)]
    fusion_log.info(
        "%s: %d kernels for %d computed buffers, %d extern calls, fallbacks: %s",
        name,
        len(groups),
        sum(len(g.nodes) for g in groups),
        len(steps) - len(groups),
        dict(graph.fallback_ops) or "none",
    )
    if log.isEnabledFor(logging.INFO):
        log.info("%s wrapper:\n%s", name, code.source)
        for k in code.kernels:
            log.info("%s kernel %s:\n%s", name, k.name, k.source)
    compiled = CompiledGraph(name, code.source, namespace["call"], code.kernels, graph.fallback_ops)
    if options.cudagraphs:
        ops = list(graph.fallback_ops) + list(graph.extern_ops)
        reason = cudagraphs.skip_reason(example_inputs, ops)
        if reason is None:
            capture = cudagraphs.capture_for(example_inputs)
            assert capture is not None
            compiled.call = compiled.runner = cudagraphs.CudaGraphRunner(compiled.call, capture)
        else:
            log.info("%s runs without CUDA graphs: %s", name, reason)
    return compiled


def _sizes_from_data(gm: torch.fx.GraphModule) -> bool:
    """Does a value of ``gm`` have a size read from tensor data (an unbacked symbol: ``x[mask]``,
    ``nonzero``)? The lowering does not bind those: such a graph runs with torch."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return any(free_unbacked_symbols(node.meta.get("val")) for node in gm.graph.nodes)


def _compiler(graphs: list[CompiledGraph | EagerGraph], options: Options) -> Callable[..., Any]:
    def compile_one(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        if _sizes_from_data(gm):
            graphs.append(EagerGraph(gm, "a size read from tensor data is not lowered"))
            return graphs[-1]
        try:
            compiled: CompiledGraph | EagerGraph = compile_aten_graph(gm, example_inputs, options)
        except Exception as e:  # never fail the program: this graph runs with torch instead
            log.warning(
                "triton backend could not compile a graph (%s: %s); running it eagerly",
                type(e).__name__,
                e,
            )
            fusion_log.debug("compile failure", exc_info=True)
            compiled = EagerGraph(gm, f"{type(e).__name__}: {e}")
        graphs.append(compiled)
        return compiled

    return compile_one


def tuple_output(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, bool]:
    """aot_autograd wants a tuple of outputs: wrap a single output (and unwrap at call time)."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    if isinstance(output.args[0], tuple | list):
        return gm, False
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "output":
            graph.output((torch.fx.node.map_arg(node.args[0], env.__getitem__),))
        else:
            env[node] = graph.node_copy(node, env.__getitem__)
    return torch.fx.GraphModule(gm, graph), True


def _partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
    """The default partition of the joint graph, its float inputs widened first: a float the
    backward reads is saved as the float64 the forward computes with."""
    widen_float_scalars(joint)
    return default_partition(joint, joint_inputs, **kwargs)


def compile_triton(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Options | None = None
) -> TritonCompiledFunction:
    """Compile ``gm`` for ``example_inputs`` (real or fake tensors, SymInts) with ``options``
    (``mode="reduce-overhead"``: ``Options(cudagraphs=True)``; ``"max-autotune"``: both)."""
    if has_runtime_nodes(gm):  # state changes that only exist when they run
        return gm.forward
    gm, unwrap = tuple_output(gm)
    graphs: list[CompiledGraph | EagerGraph] = []
    compiler = _compiler(graphs, options or Options())
    fn = compile_with_symbols(
        lambda inputs: compile_again_on_restart(
            lambda: aot_module_simplified(
                gm,
                list(inputs),
                fw_compiler=compiler,
                bw_compiler=compiler,
                partition_fn=_partition,
                decompositions=decomposition_table(),
            )
        ),
        gm,
        example_inputs,
    )
    return TritonCompiledFunction(fn, graphs, unwrap)
