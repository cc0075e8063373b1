"""Float inputs of a graph given to AOTAutograd's backends as 0-d float64 tensors.

A float the trace reads as a symbol (``SymFloat`` placeholder: a scale or an eps passed as an
argument, once it has changed value) reaches the backend as a Python number. AOTAutograd's pass
turning floats into tensor operations (``tensorify_python_scalars``) expects each float to come in
as a 0-d float64 tensor read by ``.item()``, as torch.compile gives it; given a bare ``SymFloat``
it makes the tensor with ``scalar_tensor`` in the default dtype, float32, so a float64 graph
computed with the float rounded to float32, and Inductor's C++ code names the symbol without
declaring it (a compile error). ``compile_with_float_tensors`` gives the backend that form: the
placeholder takes a 0-d float64 tensor (its fake example answers ``.item()`` with the symbol, so
the symbol and its guards stay those of the trace) whose ``.item()`` the graph reads where it read
the float, and the compiled callable, given the float, passes it as such a tensor (exact: a Python
float is a float64). The pass then computes with the tensor, converted to each operation's dtype
as eager converts a Python scalar, and the graph serves every value of the float.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

Compiler = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


class FloatsAsTensors:
    """``compiled`` called with the floats at ``positions`` as 0-d float64 tensors; other
    attributes are ``compiled``'s."""

    def __init__(self, compiled: Callable[..., Any], positions: tuple[int, ...]) -> None:
        self.compiled = compiled
        self.positions = positions

    def __call__(self, *args: Any) -> Any:
        given = list(args)
        for i in self.positions:
            given[i] = torch.tensor(given[i], dtype=torch.float64)
        return self.compiled(*given)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)


def float_positions(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """Positions of the placeholders that stand for a symbolic float the graph reads."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return tuple(
        i
        for i, n in enumerate(placeholders)
        if n.users and isinstance(n.meta.get("example_value"), torch.SymFloat)
    )


def compile_with_float_tensors(
    compile: Compiler, gm: torch.fx.GraphModule, example_inputs: list[Any]
) -> Callable[..., Any]:
    """``compile(gm, example_inputs)``, with ``gm``'s float inputs taken as 0-d float64 tensors
    (a copy of ``gm`` is compiled; ``gm`` is left as it is)."""
    positions = float_positions(gm)
    if not positions:
        return compile(gm, example_inputs)
    gm, example_inputs = _tensorified(gm, example_inputs, positions)
    return FloatsAsTensors(compile(gm, example_inputs), positions)


def _tensorified(
    gm: torch.fx.GraphModule, example_inputs: list[Any], positions: tuple[int, ...]
) -> tuple[torch.fx.GraphModule, list[Any]]:
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    copy = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    copy.meta.update(gm.meta)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    mode = _fake_mode(example_inputs, [example_inputs[i] for i in positions])
    inputs = list(example_inputs)
    for i in positions:
        node, symbol = placeholders[i], example_inputs[i]
        with mode:
            tensor = torch.empty((), dtype=torch.float64)
        tensor.item_memo = symbol  # ``.item()`` of the fake gives the trace's symbol back
        with graph.inserting_after(placeholders[-1]):
            item = graph.call_method("item", (node,))
        node.replace_all_uses_with(item, delete_user_cb=lambda user, item=item: user is not item)
        item.meta = {"example_value": symbol, "val": symbol}
        node.meta = {**node.meta, "example_value": tensor, "val": tensor}
        inputs[i] = tensor
    copy.recompile()
    return copy, inputs


def _fake_mode(example_inputs: list[Any], floats: list[torch.SymFloat]) -> Any:
    """The fake mode of the example tensors (over the floats' ShapeEnv), else a new one over it."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    shape_env = floats[0].node.shape_env
    for x in example_inputs:
        if isinstance(x, FakeTensor) and x.fake_mode.shape_env is shape_env:
            return x.fake_mode
    return FakeTensorMode(shape_env=shape_env)
