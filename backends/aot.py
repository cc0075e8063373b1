"""The ``aot_eager`` backend: AOTAutograd splits the graph into separate forward and backward graphs
(functionalised, decomposed to aten), each run as it is.

It is the shape of every training-capable compiler backend: ``aot_module_simplified(gm, inputs,
fw_compiler, bw_compiler)`` traces the joint forward/backward graph, partitions it, hands each half
to its compiler and returns a callable that behaves like ``gm`` under autograd (input mutations such
as BatchNorm's running statistics are copied back to the inputs). ``compile_graphs`` is that recipe
with your own compilers (a float input is given to AOTAutograd as a 0-d float64 tensor:
``float_inputs``); the graphs each compiler saw are kept on the callable as
``.forward_graphs`` and ``.backward_graphs`` (the backward one is compiled lazily, at the first
``backward()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx
from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func
from torch._functorch.partitioners import default_partition

from .float_inputs import compile_with_float_tensors
from .registry import IGNORED, register_backend
from .size_inputs import lift_size_symbols
from .sizes_from_data import compile_with_symbols
from .state_nodes import has_runtime_nodes
from .tensorify_restart import compile_again_on_restart

GraphCompiler = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


def _run_as_is(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward


def _traced_in_forward(node: torch.fx.Node) -> bool | None:
    """Whether AOTAutograd traced ``node`` while running the forward (it tags those nodes), or
    None where this torch release does not say."""
    tag = node.meta.get("partitioner_tag")
    return None if tag is None else tag == "is_forward"


def _drop_copied_draws(gm: torch.fx.GraphModule, *, backward: bool, tagged: bool) -> None:
    """Remove from one half of the graph the random operators the other half draws.

    The partitioner copies into each half every joint-graph node whose inputs that half has, and a
    draw such as ``randn([4])`` has none; dead-code elimination keeps the copy, since a draw
    changes the generator, so the draw would run in both halves and advance the RNG state twice.
    A copy's result is unused (a result the other half needs is saved and passed, never drawn
    again). A draw whose result the code itself discards (``torch.rand(3)`` as a statement) stays
    in the half that traced it. Without AOTAutograd's forward tags (``tagged``: the joint graph has
    them), unused draws in the backward are taken for copies and the forward is left as it is.
    """
    seeded = torch.Tag.nondeterministic_seeded
    dropped = False
    for node in reversed(gm.graph.nodes):
        target = node.target
        if not (
            node.op == "call_function"
            and not node.users
            and isinstance(target, torch._ops.OpOverload)
            and seeded in target.tags
        ):
            continue
        in_forward = bool(_traced_in_forward(node))
        copied = (in_forward or not tagged) if backward else (tagged and not in_forward)
        if copied:
            gm.graph.erase_node(node)
            dropped = True
    if dropped:
        gm.graph.eliminate_dead_code()
        gm.recompile()


def _partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any):
    tagged = any(_traced_in_forward(node) for node in joint.graph.nodes)
    forward, backward = default_partition(joint, joint_inputs, **kwargs)
    _drop_copied_draws(forward, backward=False, tagged=tagged)
    _drop_copied_draws(backward, backward=True, tagged=tagged)
    return forward, backward


def _raised_by_autograd(e: BaseException) -> bool:
    """Did autograd's engine raise ``e`` (while AOTAutograd ran the graph's backward)?"""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_engine_run_backward":
            return True
        tb = tb.tb_next
    return False


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

    def compile(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        try:
            return compile_again_on_restart(
                lambda: aot_module_simplified(
                    gm,
                    example_inputs,
                    fw_compiler=boxed(fw_compiler, forward_graphs),
                    bw_compiler=boxed(bw_compiler or fw_compiler, backward_graphs),
                    partition_fn=_partition,
                )
            )
        except RuntimeError as e:
            if not _raised_by_autograd(e):
                raise
            # AOTAutograd differentiates the graph as it compiles it. Where autograd refuses that
            # backward (a tensor it saved was written in place since), eager's ``backward()``
            # raises the same error later: the graph runs as it is, under autograd, as eager's.
            return gm.forward

    lifted = lift_size_symbols(gm, example_inputs)
    args_of = None
    if lifted is not None:
        gm, example_inputs, args_of = lifted
    compiled = compile_with_symbols(
        lambda inputs: compile_with_float_tensors(compile, gm, inputs), gm, example_inputs
    )

    def run(*args: Any) -> Any:
        return compiled(*args) if args_of is None else compiled(*args_of(args))

    run.forward_graphs, run.backward_graphs = forward_graphs, backward_graphs
    return run


@register_backend("aot_eager", options=IGNORED)
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """AOTAutograd with both halves run as they are: the reference for training backends."""
    if has_runtime_nodes(gm):
        return gm.forward
    return compile_graphs(gm, example_inputs)
