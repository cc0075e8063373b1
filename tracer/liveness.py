"""Which local variables are live (may be read before being written) at each instruction.

Resume functions receive only the live locals: fewer arguments, and dead values (large tensors among
them) are not kept alive by the continuation. Classic backward dataflow over the linearized
instructions, with jump targets and exception handlers as successors.
"""

from __future__ import annotations

from bytecode import Instr, Label

_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"})
_WRITES = frozenset({"STORE_FAST"})
_NO_FALLTHROUGH = frozenset(
    {
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
    }
)


def live_locals(
    instructions: list[Instr],
    labels: dict[Label, int],
    handlers: list[int | None],
    cellvars: frozenset[str] = frozenset(),
) -> list[frozenset[str]]:
    """``result[i]``: the locals that may be read at or after instruction ``i`` before a write.
    Cell variables are always treated as live (closures may read them at any time)."""
    n = len(instructions)
    succ: list[list[int]] = []
    for i, inst in enumerate(instructions):
        nexts = [] if inst.name in _NO_FALLTHROUGH or i + 1 >= n else [i + 1]
        if isinstance(inst.arg, Label):
            nexts.append(labels[inst.arg])
        if handlers[i] is not None:
            nexts.append(handlers[i])
        succ.append(nexts)
    live: list[frozenset[str]] = [frozenset()] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            inst = instructions[i]
            out = frozenset().union(*(live[j] for j in succ[i])) if succ[i] else frozenset()
            if inst.name in _WRITES:
                out = out - {inst.arg}
            if inst.name in _READS:
                out = out | {inst.arg}
            out = out | cellvars
            if out != live[i]:
                live[i] = out
                changed = True
    return live
