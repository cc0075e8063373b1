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
    Cell variables are always treated as live (closures may read them at any time).

    The sets are bit masks while the dataflow runs (one bit per local name): each instruction's
    effect is ``live = (after & keeps) | gens``, its accesses composed in reverse order."""
    n = len(instructions)
    succ = _successors(instructions, labels, handlers)
    bits: dict[str, int] = {}
    keeps, gens = [0] * n, [0] * n
    cells = 0
    for name in cellvars:
        cells |= bits.setdefault(name, 1 << len(bits))
    for i, inst in enumerate(instructions):
        kill = gen = 0
        for is_write, name in reversed(_accesses(inst)):
            bit = bits.setdefault(name, 1 << len(bits))
            if is_write:
                kill, gen = kill | bit, gen & ~bit
            else:
                gen |= bit
        keeps[i], gens[i] = ~kill, gen | cells
    live = [0] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            after = 0
            for j in succ[i]:
                after |= live[j]
            out = (after & keeps[i]) | gens[i]
            if out != live[i]:
                live[i] = out
                changed = True
    return _as_sets(live, bits)


def _as_sets(masks: list[int], bits: dict[str, int]) -> list[frozenset[str]]:
    """The name sets of bit masks (one set made per distinct mask)."""
    sets: dict[int, frozenset[str]] = {}
    result = []
    for mask in masks:
        named = sets.get(mask)
        if named is None:
            named = sets[mask] = frozenset(name for name, bit in bits.items() if mask & bit)
        result.append(named)
    return result


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
