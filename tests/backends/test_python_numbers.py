"""Numbers the trace computes by Python arithmetic from the numbers it was given, which only the
code after the graph reads (stored into a dict, returned), are computed in Python beside the graph,
not returned by it (``tracer/python_numbers.py``): a backend cannot specialise them (Inductor
guarded a float its graph returned on its value, so a learning rate stored back at every call
compiled the graph again at every call), and they are CPython's numbers, bit for bit."""

from __future__ import annotations

import torch

import bytegraph


def _number_outputs(graphs: list[torch.fx.GraphModule]) -> list[object]:
    """The symbolic numbers the graphs return."""
    found = []
    for gm in graphs:
        [out] = [n for n in gm.graph.nodes if n.op == "output"]
        for arg in torch.fx.node.map_arg(out.args[0], lambda n: n) or ():
            value = arg.meta.get("example_value") if isinstance(arg, torch.fx.Node) else None
            if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                found.append(value)
    return found


def _schedule(state: dict, x: torch.Tensor) -> torch.Tensor:
    """A learning-rate step: the rate read from a dict scales a tensor and is stored back decayed
    (``lr * 0.9 - 0.003`` rounds differently from ``lr * (0.9 - 0.003 / lr)`` and from ``0.9 * lr -
    0.003`` rounded once), with an int counter beside it."""
    lr = state["lr"]
    y = torch.sin(x) * lr
    state["lr"] = lr * 0.9 - 0.003
    state["step"] = state["step"] * 3 + 1
    return y


def _run(fn, calls: int) -> tuple[list[torch.Tensor], list[dict]]:
    state = {"lr": 0.1, "step": 1}
    outs, states = [], []
    torch.manual_seed(0)
    for _ in range(calls):
        outs.append(fn(state, torch.randn(3)))
        states.append(dict(state))
    return outs, states


def _check_against_eager(compiled, calls: int) -> None:
    outs, states = _run(compiled, calls)
    want_outs, want_states = _run(_schedule, calls)
    for got, want in zip(states, want_states, strict=True):  # the same floats, bit for bit
        assert got == want and all(type(got[k]) is type(want[k]) for k in want)
        assert got["lr"].hex() == want["lr"].hex()
    for got, want in zip(outs, want_outs, strict=True):
        assert torch.equal(got, want)
        assert (got.dtype, got.shape, got.requires_grad) == (want.dtype, want.shape, False)


def test_numbers_stored_for_python_are_not_graph_outputs():
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    _check_against_eager(bytegraph.compile(_schedule, backend=recording), 5)
    assert graphs and not _number_outputs(graphs)  # the variant with symbolic numbers included
    assert any(
        isinstance(n.meta.get("example_value"), torch.SymFloat)
        for gm in graphs
        for n in gm.graph.nodes
        if n.op == "placeholder"
    )
    assert bytegraph.stats().get("frames") == 2  # constants, then symbolic numbers


def test_a_learning_rate_stored_back_compiles_once_with_aot_autograd():
    """AOTAutograd (Inductor's front, ``aot_eager`` here) specialised the stored rate to its value:
    the variant guarded on it failed at every call."""
    _check_against_eager(bytegraph.compile(_schedule, backend="aot_eager"), 6)
    stats = bytegraph.stats()
    assert stats.get("frames") == 2 and not any(k.startswith("fallback") for k in stats), stats
