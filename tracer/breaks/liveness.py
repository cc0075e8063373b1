"""Which local variables are live (may be read before being written) at each instruction.

Resume functions receive only the live locals: fewer arguments, and dead values (large tensors among
them) are not kept alive by the continuation. Classic backward dataflow over the linearized
instructions, with jump targets and exception handlers as successors.
"""

from __future__ import annotations

import dis
import types

from bytecode import Instr, Label

_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"})
_WRITES = frozenset({"STORE_FAST"})
#: NOTE(3.13): superinstructions reading/writing two locals, arg ``(first, second)``, in that order:
#: is each access a write?
_PAIRS = {
    "LOAD_FAST_LOAD_FAST": (False, False),
    "STORE_FAST_LOAD_FAST": (True, False),
    "STORE_FAST_STORE_FAST": (True, True),
}
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
    succ = _successors(instructions, labels, handlers)
    live: list[frozenset[str]] = [frozenset()] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            inst = instructions[i]
            out = frozenset().union(*(live[j] for j in succ[i])) if succ[i] else frozenset()
            for is_write, name in reversed(_accesses(inst)):
                out = out - {name} if is_write else out | {name}
            out = out | cellvars
            if out != live[i]:
                live[i] = out
                changed = True
    return live


def _successors(
    instructions: list[Instr], labels: dict[Label, int], handlers: list[int | None]
) -> list[list[int]]:
    n = len(instructions)
    succ: list[list[int]] = []
    for i, inst in enumerate(instructions):
        nexts = [] if inst.name in _NO_FALLTHROUGH or i + 1 >= n else [i + 1]
        if isinstance(inst.arg, Label):
            nexts.append(labels[inst.arg])
        if handlers[i] is not None:
            nexts.append(handlers[i])
        succ.append(nexts)
    return succ


def cells_written_from(
    instructions: list[Instr], labels: dict[Label, int], handlers: list[int | None], index: int
) -> frozenset[str]:
    """The cell variables the code may write (or delete) from instruction ``index`` on, itself or
    through a function it makes there (``nonlocal``): what a frame resumed at ``index`` may change
    in its cells."""
    succ = _successors(instructions, labels, handlers)
    seen, pending, written = {index}, [index], set()
    while pending:
        i = pending.pop()
        inst = instructions[i]
        if inst.name in _CELL_WRITES or inst.name in _CELL_SWAPS:
            written.add(getattr(inst.arg, "name", inst.arg))
        elif inst.name == "LOAD_CONST" and isinstance(inst.arg, types.CodeType):
            written |= code_cell_writes(inst.arg)
        for j in succ[i]:
            if j not in seen:
                seen.add(j)
                pending.append(j)
    return frozenset(written)


def code_cell_writes(code: types.CodeType) -> frozenset[str]:
    """The cell and free variables ``code`` or a function made in it may write or delete."""
    written: set[str] = set()
    for inst in dis.get_instructions(code):
        if inst.opname in _CELL_WRITES:
            written.add(inst.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            written |= code_cell_writes(const)
    return frozenset(written)


_CELL_WRITES = frozenset({"STORE_DEREF", "DELETE_DEREF"})
#: 3.12's inlined comprehensions replace a cell variable's cell and put it back: as writes
_CELL_SWAPS = frozenset({"MAKE_CELL", "LOAD_FAST_AND_CLEAR", "STORE_FAST", "DELETE_FAST"})


def _accesses(inst: Instr) -> list[tuple[bool, str]]:
    """``(is_write, name)`` for each local ``inst`` reads or writes, in the order it does (3.13's
    ``LOAD_FAST`` of a cell, its spelling of ``LOAD_CLOSURE``, is none: cells are always live)."""
    if inst.name in _PAIRS:
        accesses = list(zip(_PAIRS[inst.name], inst.arg, strict=True))
    elif inst.name in _WRITES or inst.name in _READS:
        accesses = [(inst.name in _WRITES, inst.arg)]
    else:
        return []
    return [(is_write, name) for is_write, name in accesses if isinstance(name, str)]
