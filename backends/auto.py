"""The default backend: per graph, what pays where it runs.

- Graphs on CUDA tensors (a usable GPU) go to our Triton compiler, as do graphs on CPU tensors under
  ``TRITON_INTERPRET=1`` (kernels then run on the CPU: that is how CI tests the triton backend).
- Graphs on CPU tensors otherwise run with ``eager`` or go to torch's Inductor, which turns them
  into fused C++ loops, as ``torch.compile``'s default does, by a fixed rule read from the graph
  (``choose_cpu_backend``; the same graph always gets the same answer, nothing is timed).

The CPU rule. Inductor pays by fusing: a chain of pointwise operations and reductions becomes one
loop, so the chain's dispatch overhead (a few µs per operation in eager) and its passes over memory
are paid once. It costs a fixed few µs per call (its wrapper) and seconds of compiling on the first
call, and gains nothing on library kernels (matrix products, convolutions, attention: both call the
same ones) or layout operations (views). So the graph's operations on tensors are sorted into
those three kinds, and a graph goes to Inductor when it has ``MIN_FUSED_OPS`` fusible operations,
or at least one on a tensor of ``MIN_FUSED_ELEMENTS`` elements (then the passes over memory
outweigh the call's fixed cost), unless it reads a float input (``choose_cpu_backend``'s
``float_inputs``) that Inductor cannot take as a 0-d tensor (``float_inputs.taken_as_tensors``):
there Inductor turns the float into a constant, guarded on its value (a keyword argument such as
``add_(g, alpha=-lr)``), so a number that changes at every call, a learning rate under a
scheduler, compiled the graph again at every call until the recompile limit; with ``eager`` the
graph serves every value. A float that is only an operand of arithmetic (``x * scale + eps``)
goes to Inductor as a tensor: one graph for every value. A small MLP (``Linear,
ReLU, Linear``) on small inputs stays eager, where Inductor's kernels lose (0.6x on a 2-core CPU);
a transformer block goes to Inductor (2-4x on a chain of 5-12 pointwise operations).
``torch._inductor`` is imported only when a graph goes there; random numbers are drawn as eager
draws them (``INDUCTOR_OPTIONS``); if Inductor fails on a graph, it runs with ``eager`` (a one-time
notice says why).

``mode``/``options`` are the triton backend's (CUDA graphs, autotuning); a graph that goes to
Inductor gets them under the same names (Inductor's own), one that runs with ``eager`` gives a
one-time notice that they have no effect. ``backend="eager"`` skips the choice and every compile:
the fastest first call.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch.fx

from .eager import eager
from .float_inputs import float_positions, taken_as_tensors
from .registry import MODES, lookup_backend, notice_once, register_backend

log = logging.getLogger("bytegraph.backends")

#: What each option the modes set does, for the notice on graphs that run with ``eager``.
_WHAT = {"triton.cudagraphs": "CUDA graphs", "max_autotune": "autotuning"}

#: A CPU graph with this many fusible operations goes to Inductor (``choose_cpu_backend``). On a
#: 2-core CPU, one thread, 8x32 floats, ``x @ w`` followed by n pointwise operations took with
#: Inductor 0.92x eager's time for n=2, 1.6x for n=5, 4x for n=12; ``Linear, ReLU, Linear`` 0.6x.
MIN_FUSED_OPS = 4
#: ... or at least one fusible operation whose result has this many elements (same measurement
#: with 16384x32 floats: ``x @ w`` then 2 pointwise operations took 1.6x with Inductor).
MIN_FUSED_ELEMENTS = 2**18

#: Inductor options of the graphs ``auto`` sends there: random numbers drawn by torch's own
#: operators, as eager draws them (Inductor's in-kernel generator gives other numbers for the same
#: seed: a model with dropout would then train differently from eager).
INDUCTOR_OPTIONS = {"fallback_random": True}

#: Operations that call the same library kernel under Inductor as in eager (by function or method
#: name): nothing to fuse.
LIBRARY_OPS = frozenset(
    {
        "linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot",
        "einsum", "tensordot", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
        "conv_transpose2d", "conv_transpose3d", "convolution", "scaled_dot_product_attention",
        "lstm", "gru", "rnn_tanh", "rnn_relu", "fft_fft", "fft_rfft", "fft_irfft",
    }
)  # fmt: skip
#: Operations that only describe memory differently (or read metadata): cheap in eager, free
#: in Inductor's code, nothing to fuse.
LAYOUT_OPS = frozenset(
    {
        "getitem", "view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t",
        "unsqueeze", "squeeze", "expand", "expand_as", "flatten", "unflatten", "narrow",
        "select", "chunk", "split", "unbind", "movedim", "swapaxes", "contiguous", "detach",
        "size", "dim", "stride", "numel", "alias",
    }
)  # fmt: skip
#: Library layers (``call_module`` nodes) by class.
_LIBRARY_MODULES = (
    torch.nn.Linear,
    torch.nn.modules.conv._ConvNd,
    torch.nn.MultiheadAttention,
    torch.nn.RNNBase,
)


#: ``example_value`` of a node traced without it (``torch.fx.symbolic_trace``): counted as a tensor.
_UNKNOWN = object()


@dataclass(frozen=True)
class CpuChoice:
    """What ``choose_cpu_backend`` decided for a graph, and what it counted."""

    backend: str  #: "eager" or "inductor"
    fused_ops: int  #: operations Inductor would fuse (pointwise, reductions, norms, ...)
    largest: int  #: elements of the largest result of one of them (0 if unknown or none)
    float_inputs: int = 0  #: float inputs (``SymFloat`` placeholders) the graph reads
    #: whether Inductor would specialise one of them (a graph per value) rather than take it as
    #: a tensor (``float_inputs.taken_as_tensors``)
    floats_specialised: bool = False

    def __str__(self) -> str:
        floats = f", {self.float_inputs} float inputs" if self.float_inputs else ""
        floats += " (specialised by Inductor)" if self.floats_specialised else ""
        return (
            f"{self.backend} ({self.fused_ops} fusible operations, largest {self.largest}{floats})"
        )


def choose_cpu_backend(gm: torch.fx.GraphModule) -> CpuChoice:
    """``eager`` or ``inductor`` for a graph on CPU tensors, by the rule of this module's docstring
    (operations counted from the graph's nodes and their ``example_value`` metadata)."""
    fused, largest = 0, 0
    for node in gm.graph.nodes:
        if _kind(gm, node) != "fused":
            continue
        fused += 1
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            numel = value.numel()
            if isinstance(numel, int):  # a symbolic size counts as unknown
                largest = max(largest, numel)
    floats = len(float_positions(gm))
    specialised = bool(floats) and not taken_as_tensors(gm)
    wins = _fusion_pays(fused, largest) and not specialised
    return CpuChoice("inductor" if wins else "eager", fused, largest, floats, specialised)


def _fusion_pays(fused: int, largest: int) -> bool:
    """The size rule: enough fusible operations, or one on a large tensor."""
    return fused >= MIN_FUSED_OPS or (fused > 0 and largest >= MIN_FUSED_ELEMENTS)


def _kind(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """The node's kind: ``fused``, ``library``, ``layout`` or ``other`` (no tensor operation:
    inputs, output, sizes)."""
    if node.op == "call_module":
        library = isinstance(gm.get_submodule(node.target), _LIBRARY_MODULES)
        return "library" if library else "fused"
    if node.op not in ("call_function", "call_method"):
        return "other"
    value = node.meta.get("example_value", _UNKNOWN)
    if value is not _UNKNOWN and not isinstance(value, (torch.Tensor, tuple, list)):
        return "other"  # a size, a Python number: no kernel
    if node.target is operator.matmul:
        return "library"
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]  # the in-place form
    if name in LIBRARY_OPS:
        return "library"
    return "layout" if name in LAYOUT_OPS else "fused"


def validate_triton_options(options: Mapping[str, Any]) -> None:
    """The triton backend's check of ``options`` (``Options.from_dict``); where triton is not
    installed, the names the modes use, each taking a bool."""
    try:
        from .triton.config import Options  # triton may not be installed
    except ImportError:
        Options = None
    if Options is not None:
        Options.from_dict(options)
        return
    known = sorted({name for opts in MODES.values() for name in opts})
    for key, value in options.items():
        if key not in known:
            raise ValueError(f"unknown option {key!r}; known options: {', '.join(known)}")
        if not isinstance(value, bool):
            raise ValueError(f"option {key!r} takes a bool, not {value!r}")


@register_backend("auto", options=validate_triton_options)
def auto(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    options: Mapping[str, Any] | None = None,
):
    try:
        from .triton import is_available_for  # triton may not be installed
    except ImportError:
        is_available_for = None
    if is_available_for is not None and is_available_for(example_inputs):
        triton = lookup_backend("triton")
        if options:
            return triton(gm, example_inputs, options=options)
        return triton(gm, example_inputs)
    if not _on_cpu(example_inputs):
        why = "triton is not installed" if is_available_for is None else "no usable CUDA GPU"
        return _eager(gm, example_inputs, options, why)
    choice = choose_cpu_backend(gm)
    log.info("CPU graph %s: %s", gm.__class__.__name__, choice)
    if choice.backend == "eager":
        why = "the graph is too small to gain from Inductor"
        if _fusion_pays(choice.fused_ops, choice.largest):
            why = "the graph reads a float input, which Inductor would compile again for each value"
        return _eager(gm, example_inputs, options, why)
    return _inductor(gm, example_inputs, options)


def _on_cpu(example_inputs: list[Any]) -> bool:
    """Every tensor input on the CPU (a graph without tensor inputs counts: it makes its own)."""
    return all(x.device.type == "cpu" for x in example_inputs if isinstance(x, torch.Tensor))


def _inductor(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Mapping[str, Any] | None
):
    inductor = lookup_backend("inductor")  # imports torch._inductor's config, not before
    try:
        return inductor(gm, example_inputs, options={**INDUCTOR_OPTIONS, **(options or {})})
    except Exception as e:  # noqa: BLE001 (the graph still runs, as eager runs it)
        notice_once(
            f"auto:inductor-failed:{type(e).__name__}",
            f"Inductor could not compile a CPU graph ({type(e).__name__}: {str(e)[:200]}), "
            "so it runs with the eager backend",
        )
        return eager(gm, example_inputs)


def _eager(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    options: Mapping[str, Any] | None,
    why: str,
):
    wanted = [f"{_WHAT.get(k, k)} ({k})" for k, v in (options or {}).items() if v]
    if wanted:
        notice_once(
            "auto:eager:" + ",".join(sorted(wanted)),
            f"{' and '.join(wanted)} have no effect here: {why}, so the graph runs with the "
            "eager backend",
        )
    return eager(gm, example_inputs)
