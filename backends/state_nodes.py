"""Graph nodes that change torch state only when they run (``fork_rng``, ``set_default_dtype``,
``use_deterministic_algorithms``), which AOT-based backends cannot keep: AOTAutograd traces the
graph once and keeps the tensor operations, so such a node would act while compiling and never at
run time.

The tracer marks them (``node.meta["bytegraph_runtime"]``); ``aot_eager``, ``inductor`` and
``triton`` run a graph holding one as it is (its ``forward``), never dropping the node. Grad mode,
autocast and inference mode need no such care: AOT traces their regions into the graph it keeps
(casts made explicit, no autograd recorded), and every graph leaves them as it found them.
"""

from __future__ import annotations

import logging

import torch.fx

log = logging.getLogger("bytegraph.backends")

#: ``node.meta`` key the tracer sets on nodes that must run when the graph runs.
RUNTIME = "bytegraph_runtime"


def has_runtime_nodes(gm: torch.fx.GraphModule) -> bool:
    """Does ``gm`` hold a node that must run at run time (then it runs as it is)?"""
    marked = [n for n in gm.graph.nodes if n.meta.get(RUNTIME)]
    if marked:
        names = ", ".join(sorted({getattr(n.target, "__name__", str(n.target)) for n in marked}))
        log.info("graph with state-changing nodes (%s) runs as it is", names)
    return bool(marked)
