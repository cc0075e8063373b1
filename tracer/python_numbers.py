"""Symbolic numbers the code after a graph reads, computed in Python beside the graph.

A number the trace computed by Python arithmetic alone from numbers it was given (``lr * gamma``
on a learning rate read from a dict, ``n + 1`` on an int traced as dynamic) and that the code after
the graph reads (stored into a dict or an attribute, returned, live at a break) is not an output of
the compiled graph: a backend may specialise a number its graph returns (AOTAutograd's
``tensorify_python_scalars`` guards a float output on its value, so every new learning rate would
compile the graph again). The nodes computing such numbers are copied into a graph of their own,
run as plain Python on the real numbers the graph is called with (``operator.mul`` on two floats is
CPython's float product, bit for bit, as the user's code computes it), and ``PythonNumbers`` gives
the rewritten code one tuple of outputs, in the order it reads them. A number input the backend's
graph then no longer reads is not passed to it either (Inductor's generated code names a float
input that it turned into a tensor by its symbol, and misses it where an unused int input sits
among the arguments; AOTAutograd restarts, an internal error here, on a float input it reads
nowhere), nor is a tensor input it never reads (``Split.prune_inputs``).

Entry points: ``split(graph, outputs)``, called before the graph is closed, and
``Split.prune_inputs(gm, example_inputs)`` before it is compiled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from . import effects
from .variables.constants import SYMBOLIC_TYPES


def computed_in_python(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The graph's nodes that Python computes from its number inputs alone: number placeholders,
    and calls giving a number whose every input is one of those (no tensor in their history: a
    number read from tensor data or a tensor's size stays in the graph)."""
    found: set[torch.fx.Node] = set()
    for node in graph.nodes:
        if not isinstance(node.meta.get("example_value"), SYMBOLIC_TYPES):
            continue
        if node.op == "placeholder" or (
            node.op == "call_function"
            and not effects.is_effectful(node)
            and "bytegraph_state" not in node.meta
            and all(arg in found for arg in node.all_input_nodes)
        ):
            found.add(node)
    return found


@dataclass
class PythonNumbers:
    """The compiled graph (``graph``, returning what the backend's graph returns) with the numbers
    ``numbers`` computes in Python from the same arguments: called as the whole graph was, it
    returns the outputs in the order ``places`` gives (``(True, i)``: the graph's output ``i``,
    ``(False, i)``: number ``i``), then the graph's outputs past them (effects nothing reads)."""

    graph: Callable[..., Any]
    numbers: Callable[..., tuple[Any, ...]] | None
    places: tuple[tuple[bool, int], ...]
    kept: int  #: how many of the graph's outputs ``places`` reads
    passed: tuple[int, ...] | None  #: the arguments the graph takes (None: all)

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        out = self.graph(*args if self.passed is None else [args[i] for i in self.passed])
        if self.numbers is None:
            return out
        numbers = self.numbers(*args)
        merged = [out[i] if from_graph else numbers[i] for from_graph, i in self.places]
        merged.extend(out[self.kept :])
        return tuple(merged)


@dataclass
class Split:
    graph_outputs: list[torch.fx.Node]  #: what the backend's graph returns
    numbers: torch.fx.GraphModule | None  #: the numbers computed in Python, None if none
    places: tuple[tuple[bool, int], ...]
    passed: tuple[int, ...] | None = None  #: set by ``prune_inputs`` where it drops an input

    def prune_inputs(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> list[Any]:
        """Drop from ``gm`` the inputs nothing in it reads: numbers, and tensors whose size
        symbols (if any) another input left also holds (the backend binds each symbol to an
        input); return the example inputs of those left.

        An unread tensor is one the trace was handed (a resume function's stack value, a dict of
        ``state_dict()`` detached views) that the graph never uses. Passed anyway, it can alias
        an input the graph writes (``running_mean`` and its ``detach()``), which AOTAutograd
        refuses as a mutation of a non-differentiable view."""
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        values = [n.meta.get("example_value") for n in placeholders]
        unread = {
            i
            for i, n in enumerate(placeholders)
            if not n.users and isinstance(values[i], SYMBOLIC_TYPES + (torch.Tensor,))
        }
        kept = {s for i, v in enumerate(values) if i not in unread for s in _symbols(v)}
        unread = {
            i
            for i in unread
            if not isinstance(values[i], torch.Tensor) or _symbols(values[i]) <= kept
        }
        if not unread:
            return example_inputs
        for i in sorted(unread, reverse=True):
            gm.graph.erase_node(placeholders[i])
        gm.recompile()
        self.passed = tuple(i for i in range(len(placeholders)) if i not in unread)
        if "bytegraph_sources" in gm.meta:
            gm.meta["bytegraph_sources"] = [gm.meta["bytegraph_sources"][i] for i in self.passed]
        return [example_inputs[i] for i in self.passed]

    def around(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """``compiled`` as the rewritten code calls it: with every argument, every output in its
        place."""
        if self.numbers is None and self.passed is None:
            return compiled
        numbers = self.numbers.forward if self.numbers is not None else None
        return PythonNumbers(compiled, numbers, self.places, len(self.graph_outputs), self.passed)


def _symbols(value: Any) -> set[Any]:
    """The free symbols of a fake tensor's sizes, strides and offset, or of a symbolic number."""
    if isinstance(value, torch.Tensor):
        parts = [*value.shape, *value.stride(), value.storage_offset()]
    else:
        parts = [value]
    return {s for v in parts if isinstance(v, SYMBOLIC_TYPES) for s in v.node.expr.free_symbols}


def split(graph: torch.fx.Graph, outputs: list[torch.fx.Node]) -> Split:
    """Part ``outputs`` into those the backend's graph returns and the numbers Python computes."""
    python = computed_in_python(graph)
    in_graph = [n for n in outputs if n not in python]
    numbers = [n for n in outputs if n in python]
    if not numbers:
        return Split(outputs, None, ())
    graph_at = {n: i for i, n in enumerate(in_graph)}
    number_at = {n: i for i, n in enumerate(numbers)}
    places = tuple((n in graph_at, graph_at.get(n, number_at.get(n, -1))) for n in outputs)
    return Split(in_graph, _numbers_module(graph, numbers), places)


def _numbers_module(graph: torch.fx.Graph, numbers: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """A module taking the graph's arguments and returning ``numbers``, computed by copies of the
    nodes that compute them."""
    needed: set[torch.fx.Node] = set()
    pending = list(numbers)
    while pending:
        node = pending.pop()
        if node not in needed:
            needed.add(node)
            pending.extend(node.all_input_nodes)
    copy = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in graph.nodes:
        if node.op == "placeholder" or node in needed:
            env[node] = copy.node_copy(node, lambda n: env[n])
    copy.output(tuple(env[n] for n in numbers))
    return torch.fx.GraphModule(torch.nn.Module(), copy, class_name="PythonNumbers")
