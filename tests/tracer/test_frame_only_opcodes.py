"""Opcodes registered ``frame_only`` (``opcodes.FRAME_ONLY``) read and write only their frame, so
the translator takes no output checkpoint before them: a break at one undoes its frame only. A
handler so registered that recorded anything in the output (a node, an input, a side effect, a
state event, an exception being handled, a deferred check) would leave that record behind. Here
each frame-only handler runs with the output compared before and after it, in traces that have
nodes, side effects, state changes, a caught exception, a deferred check and breaks around it.
"""

from __future__ import annotations

import pytest
import torch
from bytegraph.tracer import opcodes
from difftest import check, check_breaks


def _output_state(output) -> tuple:
    """What ``OutputGraph.checkpoint`` keeps, as the output holds it now: the side effects' stores
    by identity (``SideEffects.snapshot`` makes new copies only after a store)."""
    *stores, undo = output.side_effects.snapshot()
    return (
        len(output.created),
        len(output.graph.nodes),
        len(output.inputs),
        tuple(id(s) for s in stores),
        undo,
        len(output.state.events),
        tuple(output.exc_info),
        output.deferred.checkpoint(),
    )


@pytest.fixture
def watched(monkeypatch) -> set[str]:
    """Each frame-only handler wrapped to assert that it left the output as it found it; gives
    the set of names that ran."""
    ran: set[str] = set()
    for name in opcodes.FRAME_ONLY:
        handler = opcodes.HANDLERS[name]

        def checked(tx, inst, handler=handler, name=name):
            before = _output_state(tx.output)
            handler(tx, inst)
            assert _output_state(tx.output) == before, f"{name} changed the output"
            ran.add(name)

        monkeypatch.setitem(opcodes.HANDLERS, name, checked)
    return ran


def _scale(t, *, by):
    return t * by


def _loop_with_effects(x, log):
    total = x.sin()
    for i in range(3):
        step = _scale(total, by=i + 1)  # a keyword call
        log.append(i)  # a side effect, kept for the replay
        if 0 < i < 2:  # a chained comparison (COPY, SWAP)
            total = total + step
    with torch.no_grad():  # state events
        total = total * 2
    try:
        raise ValueError("caught")
    except ValueError:  # an exception being handled
        total = total - 1
    return total


def _closure_and_break(x, log):
    offset = x.cos()

    def shifted(t):  # a cell and a closure (MAKE_CELL, LOAD_CLOSURE, COPY_FREE_VARS)
        return t + offset

    y = shifted(x)
    log.append(len(log))
    print("break")  # a graph break, after frame-only instructions
    z = shifted(y)
    return z, [v for v in log]


def _deferred_check(x):
    y = x.abs() + 1
    if y.min() > 0:  # a check on tensor data, deferred past the graph
        y = y * 2
    w = y
    return w + 1


def test_frame_only_handlers_leave_the_output_alone(watched):
    check(_loop_with_effects, torch.randn(3), [], graphs=1, breaks=0)
    check_breaks(_closure_and_break, lambda: (torch.randn(3), [1]), graphs=2, breaks=1)
    check(_deferred_check, torch.randn(3), graphs=1, breaks=0)
    # the common frame-only opcodes ran checked (some others sit on paths no trace runs here)
    assert {"LOAD_FAST", "STORE_FAST", "LOAD_CONST", "POP_TOP", "JUMP_BACKWARD"} <= watched
