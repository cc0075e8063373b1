"""The ``aot_eager`` backend: AOTAutograd splits the graph into separate forward and backward graphs
(functionalised, decomposed to aten), each run as it is.

It is the shape of every training-capable compiler backend: ``aot_module_simplified(gm, inputs,
fw_compiler, bw_compiler)`` traces the joint forward/backward graph, partitions it, hands each half
to its compiler and returns a callable that behaves like ``gm`` under autograd (input mutations such
as BatchNorm's running statistics are copied back to the inputs). ``compile_graphs`` is that recipe
with your own compilers; the graphs each compiler saw are kept on the callable as
``.forward_graphs`` and ``.backward_graphs`` (the backward one is compiled lazily, at the first
``backward()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx
from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

from .registry import IGNORED, register_backend
from .state_nodes import has_runtime_nodes

GraphCompiler = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


def _run_as_is(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward


def compile_graphs(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    fw_compiler: GraphCompiler = _run_as_is,
    bw_compiler: GraphCompiler | None = None,
) -> Callable[..., Any]:
    """AOTAutograd over ``gm`` with ``fw_compiler``/``bw_compiler`` (each ``(gm, inputs) ->
    callable`` taking the inputs unpacked); the returned callable takes ``gm``'s inputs unpacked."""
    forward_graphs: list[torch.fx.GraphModule] = []
    backward_graphs: list[torch.fx.GraphModule] = []

    def boxed(compiler: GraphCompiler, seen: list[torch.fx.GraphModule]):
        def compile_one(graph: torch.fx.GraphModule, inputs: list[Any]):
            seen.append(graph)
            return make_boxed_func(compiler(graph, inputs))

        return compile_one

    compiled = aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=boxed(fw_compiler, forward_graphs),
        bw_compiler=boxed(bw_compiler or fw_compiler, backward_graphs),
    )

    def run(*args: Any) -> Any:
        return compiled(*args)

    run.forward_graphs, run.backward_graphs = forward_graphs, backward_graphs
    return run


@register_backend("aot_eager", options=IGNORED)
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """AOTAutograd with both halves run as they are: the reference for training backends."""
    if has_runtime_nodes(gm):
        return gm.forward
    return compile_graphs(gm, example_inputs)
