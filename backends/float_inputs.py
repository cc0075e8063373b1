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

Where a float reaches an operand the pass cannot make a tensor (``alpha=``, ``x ** s``,
``clamp(max=s)``), Inductor specialises it instead: a graph per value. ``taken_as_tensors(gm)``
says, from the graph alone, whether every float it reads is an operand the pass makes a tensor.
"""

from __future__ import annotations

import operator
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


#: Operators on a tensor and a float that AOTAutograd's pass computes with the float as a tensor
#: (its ``SUPPORTED_OPS``, as they appear in a traced graph: ``x * s``, ``torch.mul(x, s)``,
#: ``x.mul_(s)``); given positionally, without keyword arguments (``alpha=`` is specialised).
TENSOR_OPERATORS = frozenset(
    {
        operator.add, operator.sub, operator.mul, operator.truediv,
        operator.gt, operator.lt, operator.ge, operator.le, operator.eq, operator.ne,
        torch.add, torch.sub, torch.mul, torch.div,
        torch.gt, torch.lt, torch.ge, torch.le, torch.eq, torch.ne,
    }
)  # fmt: skip
TENSOR_METHODS = frozenset(
    {
        "add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_",
        "gt", "lt", "ge", "le", "eq", "ne",
    }
)  # fmt: skip
#: Arithmetic on floats whose result (a float symbol) the pass rewrites as tensor arithmetic
#: where a tensor operator reads it (``x * (-s * 2)``).
NUMBER_OPERATORS = frozenset(
    {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg}
)


def taken_as_tensors(gm: torch.fx.GraphModule) -> bool:
    """Whether every float input ``gm`` reads ends, through arithmetic on numbers, only in
    operands of ``TENSOR_OPERATORS``/``TENSOR_METHODS`` computing a tensor: then AOTAutograd's
    pass makes each a tensor and a compiled graph serves every value. Any other use (a keyword
    argument, ``pow``, ``clamp``, a factory, the graph's output, a node without metadata) may be
    specialised by Inductor: False."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    pending = [placeholders[i] for i in float_positions(gm)]
    seen: set[torch.fx.Node] = set()
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        for user in node.users:
            if user.kwargs:
                return False
            value = user.meta.get("example_value")
            if isinstance(value, torch.SymFloat) and _is_float_arithmetic(user):
                pending.append(user)
            elif not (isinstance(value, torch.Tensor) and _is_tensor_operator(user)):
                return False
    return True


def _is_float_arithmetic(node: torch.fx.Node) -> bool:
    """``node`` is arithmetic on floats alone: float symbols and constants (no size)."""
    return (
        node.op == "call_function"
        and node.target in NUMBER_OPERATORS
        and all(
            isinstance(a, (int, float))
            or (
                isinstance(a, torch.fx.Node)
                and isinstance(a.meta.get("example_value"), torch.SymFloat)
            )
            for a in node.args
        )
    )


def _is_tensor_operator(node: torch.fx.Node) -> bool:
    if node.op == "call_function":
        return node.target in TENSOR_OPERATORS
    return node.op == "call_method" and node.target in TENSOR_METHODS


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
