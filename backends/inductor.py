"""The ``inductor`` backend: hand the graph to torch's own Inductor, for comparison with ``triton``.

``mode``/``options`` mean what they mean to torch.compile: a mode is Inductor's own option set
(``torch._inductor.list_mode_options``), options are Inductor config names, checked against
``torch._inductor.config`` (an unknown name lists the known ones).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import torch.fx

from .float_inputs import compile_with_float_tensors, float_positions
from .registry import BackendOptions, register_backend
from .state_nodes import has_runtime_nodes
from .tensorify_restart import compile_again_on_restart


def _inductor(module: str) -> Any:
    """A ``torch._inductor`` module, imported on first use (it is heavy)."""
    return importlib.import_module(f"torch._inductor{module}")


def _validate(options: Mapping[str, Any]) -> None:
    known = _inductor(".config").get_config_copy()
    for key, value in options.items():
        name = key.replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            guess = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise ValueError(
                f"unknown Inductor option {key!r}; {guess}known options: {', '.join(known)}"
            )
        default = known[name]
        if isinstance(default, (bool, int, float, str)) and not isinstance(value, type(default)):
            raise ValueError(
                f"Inductor option {key!r} takes a {type(default).__name__}, not {value!r}"
            )


def _mode_options(mode: str) -> dict[str, Any]:
    return dict(_inductor("").list_mode_options(mode))


@register_backend("inductor", options=BackendOptions(_validate, _mode_options))
def inductor(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Mapping[str, Any] | None = None
):
    if has_runtime_nodes(gm):  # run-time state nodes (fork_rng, ...): the graph runs as it is
        return gm.forward
    compile_fx = _inductor(".compile_fx").compile_fx
    patches = {k.replace("-", "_"): v for k, v in (options or {}).items()}
    # AOTAutograd's cache checks an entry's guards on the int sizes alone: an entry compiled with
    # a float input specialised to its value (an operand the float can't be a tensor in, such as
    # ``alpha=``) would be taken for any value. Without it, what Inductor caches holds the value.
    floats = float_positions(gm)
    cache = contextlib.nullcontext() if not floats else _no_autograd_cache()

    def compile(inputs: list[Any]) -> Any:
        return compile_with_float_tensors(
            lambda gm, inputs: compile_again_on_restart(
                lambda: compile_fx(gm, inputs, config_patches=patches)
            ),
            gm,
            inputs,
        )

    compiled, error = None, None
    with warnings.catch_warnings(record=True) as caught, cache:
        try:
            compiled = compile(example_inputs)
        except Exception as e:  # noqa: BLE001 (raised below unless data-dependent)
            error = e
    if error is not None and _data_dependent(error):
        # again with symbols; the warnings were about the failed attempt (autograd's report)
        with cache, _sizes_from_data(gm, example_inputs) as inputs:
            return compile(inputs)
    for w in caught:  # shown as they would have been
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    if error is not None:
        raise error
    return compiled


def _no_autograd_cache() -> contextlib.AbstractContextManager[None]:
    return importlib.import_module("torch._functorch.config").patch(enable_autograd_cache=False)


def _data_dependent(error: BaseException | None) -> bool:
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
def _sizes_from_data(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Iterator[list[Any]]:
    """Inductor's compile of a graph with a data-dependent size: in its forward (``x[mask]``,
    ``nonzero``) or in the backward it derives (a boolean-mask assignment ``h[mask] = v`` with
    ``v`` requiring grad takes ``grad[mask]``). Without a tracing context, AOTAutograd fakes real
    inputs in a mode without symbols, where such an operator raises; torch.compile hands it
    Dynamo's mode and Dynamo's fakes. Here: the trace's fake mode where the graph's metadata holds
    one with a ``ShapeEnv`` (its nodes' ``unbacked_bindings`` name that ``ShapeEnv``'s symbols: a
    new one would issue the same names again, which AOTAutograd takes for a stale memo), else a
    new mode with a ``ShapeEnv``; the inputs, given as fakes of that mode, keep their sizes
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
