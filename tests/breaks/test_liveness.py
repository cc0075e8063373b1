"""``tracer/breaks/liveness.py``: the locals live at each instruction (what a resume function is
given), computed on bit masks, are the sets the textbook dataflow gives, on code with loops, try and
with blocks, deletions, cells and 3.13's two-local instructions."""

from __future__ import annotations

import pytest
from bytegraph.tracer.breaks import liveness
from bytegraph.tracer.translator import _linearize


def _reference(instructions, labels, handlers, cells):
    """The definition: live before ``i`` = (live after ``i``, its accesses undone last to first)
    | the cells; live after = the union over its successors; iterated to the least fixpoint."""
    succ = liveness._successors(instructions, labels, handlers)
    live = [frozenset()] * len(instructions)
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(instructions))):
            out = frozenset().union(*(live[j] for j in succ[i]))
            for is_write, name in reversed(liveness._accesses(instructions[i])):
                out = out - {name} if is_write else out | {name}
            out |= cells
            if out != live[i]:
                live[i], changed = out, True
    return live


def _loop(xs, scale):
    total, unused = 0, scale
    for x in xs:
        total, x = x, total  # 3.13: STORE_FAST_STORE_FAST
        total = total + x * scale
    del unused
    return total


def _handlers(d, key):
    try:
        value = d[key]
    except KeyError:
        value = None
    finally:
        d = None
    with open(key) as f:
        text = f.read()
    return value, text, d


def _cells(n):
    count = 0

    def bump():
        nonlocal count
        count += n

    bump()
    squares = [i * i for i in range(n)]
    return count, squares


@pytest.mark.parametrize("fn", [_loop, _handlers, _cells])
def test_live_locals_are_the_dataflow_fixpoint(fn):
    code = fn.__code__
    instructions, labels, handlers, _, _ = _linearize(code)
    cells = frozenset(code.co_cellvars)
    live = liveness.live_locals(instructions, labels, handlers, cells)
    assert live == _reference(instructions, labels, handlers, cells)
    assert all(cells <= names for names in live)


def test_what_the_loop_reads_later_is_live_in_it():
    """At the loop's last addition: ``scale`` (read by the next iteration) and ``unused``
    (``del``, a read, after the loop); not ``total`` (written first) nor ``x`` (set by the loop)."""
    instructions, labels, handlers, _, _ = _linearize(_loop.__code__)
    live = liveness.live_locals(instructions, labels, handlers)
    at = {inst.name: k for k, inst in enumerate(instructions)}  # the last of each name
    assert live[at["BINARY_OP"]] == {"scale", "unused"}
    assert live[at["RETURN_VALUE"]] == frozenset()
