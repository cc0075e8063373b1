"""Compiling a graph with a size read from tensor data through AOTAutograd (``aot_eager``,
``inductor``): ``x[mask]``, ``nonzero`` in its forward, or in the backward it derives (a
boolean-mask assignment ``h[mask] = v`` with ``v`` requiring grad takes ``grad[mask]``).

Without a tracing context, AOTAutograd fakes real inputs in a mode without symbols, where such an
operator raises; torch.compile hands it Dynamo's mode and Dynamo's fakes. ``compile_with_symbols``
makes the usual attempt and, where it raises so, a second one in the trace's fake mode.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch.fx

T = TypeVar("T")


def compile_with_symbols(
    compile: Callable[[list[Any]], T], gm: torch.fx.GraphModule, example_inputs: list[Any]
) -> T:
    """``compile(example_inputs)``; where it raises because a size depends on data, ``compile``
    again on the inputs ``sizes_from_data`` gives, under its tracing context. The warnings of a
    failed first attempt (autograd's report) are dropped, those of a good one shown."""
    compiled, error = None, None
    with warnings.catch_warnings(record=True) as caught:
        try:
            compiled = compile(example_inputs)
        except Exception as e:  # noqa: BLE001 (raised below unless data-dependent)
            error = e
    if error is not None and data_dependent(error):
        with sizes_from_data(gm, example_inputs) as inputs:
            return compile(inputs)
    for w in caught:  # shown as they would have been
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    if error is not None:
        raise error
    return compiled


def data_dependent(error: BaseException | None) -> bool:
    """Whether ``error`` (or one it was raised from) is torch's fake tensors meeting an operator
    whose output size depends on tensor data (``nonzero``, boolean-mask indexing)."""
    from torch._subclasses import fake_tensor

    kinds = (fake_tensor.DynamicOutputShapeException, fake_tensor.DataDependentOutputException)
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, kinds):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


@contextlib.contextmanager
def sizes_from_data(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Iterator[list[Any]]:
    """The tracing context of the second attempt: the trace's fake mode where the graph's metadata
    holds one with a ``ShapeEnv`` (its nodes' ``unbacked_bindings`` name that ``ShapeEnv``'s
    symbols: a new one would issue the same names again, which AOTAutograd takes for a stale memo),
    else a new mode with a ``ShapeEnv``; the inputs, given as fakes of that mode, keep their sizes
    static (``static_shapes``), so only the data-dependent sizes become (unbacked) symbols.
    Yields the inputs to compile with."""
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = _traced_fake_mode(gm)
    if mode is None:
        mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
        inputs = list(example_inputs)
    else:
        inputs = [
            mode.from_tensor(x, static_shapes=True)
            if isinstance(x, torch.Tensor) and not isinstance(x, FakeTensor)
            else x
            for x in example_inputs
        ]
    with tracing(TracingContext(mode)):
        yield inputs


def _traced_fake_mode(gm: torch.fx.GraphModule) -> Any:
    """The fake mode (with a ``ShapeEnv``) of the tensors in ``gm``'s metadata, or None."""
    from torch._subclasses.fake_tensor import FakeTensor

    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(v, FakeTensor) and v.fake_mode.shape_env is not None:
                return v.fake_mode
    return None
