"""A code object's exception table (``co_exceptiontable``), read once for the tracer and codegen.

CPython's format (``Objects/exception_handling_notes.txt``): per entry, four numbers (first code
unit, length in code units, handler's code unit, ``depth << 1 | lasti``), each a big-endian varint
of 6-bit chunks with bit 6 set on every chunk but the last and bit 7 on an entry's first byte.
Regions never nest: an instruction is covered by at most one entry. ``entries`` gives each entry
both in code units and as instruction indices (counted as the translator and ``bytecode``'s
abstract instructions count them: no ``EXTENDED_ARG``, no inline caches); ``covering`` gives each
instruction its entry. Both are cached per code object. ``encode`` writes a table back (resume
functions patch the handlers' depths).
"""

from __future__ import annotations

import dis
import opcode
import types
import weakref
from typing import Any, NamedTuple

from bytecode import Instr, TryBegin

from .pyversion import INLINE_CACHES


class Entry(NamedTuple):
    """One region of the exception table."""

    start: int  #: first instruction covered (index)
    end: int  #: last instruction covered (index, inclusive)
    target: int  #: the handler's first instruction (index)
    depth: int  #: the stack depth the handler unwinds to before pushing the exception
    lasti: bool  #: whether the raising instruction's offset is pushed below the exception
    start_unit: int  #: first code unit covered
    end_unit: int  #: last code unit covered (inclusive)
    target_unit: int  #: the handler's first code unit


#: The depth ``bytecode`` gives the handlers of a try block it never reached (the code it builds
#: would unwind to it and corrupt memory).
UNREACHED = 32768

Region = tuple[int, int, int, int, bool]  #: (first unit, last unit, handler unit, depth, lasti)


def parse(table: bytes) -> list[Region]:
    """The regions of a ``co_exceptiontable``, in code units."""
    values: list[int] = []
    value = 0
    for byte in table:
        value = (value << 6) | (byte & 63)
        if not byte & 64:
            values.append(value)
            value = 0
    regions = []
    for i in range(0, len(values) - 3, 4):
        start, length, target, depth_lasti = values[i : i + 4]
        regions.append((start, start + length - 1, target, depth_lasti >> 1, bool(depth_lasti & 1)))
    return regions


def encode(regions: list[Region]) -> bytes:
    """The ``co_exceptiontable`` holding ``regions`` (``parse``'s inverse)."""
    out = bytearray()
    for start, end, target, depth, lasti in regions:
        for n, value in enumerate((start, end - start + 1, target, depth << 1 | int(lasti))):
            chunks = [value & 63]
            value >>= 6
            while value:
                chunks.append(value & 63)
                value >>= 6
            chunks.reverse()
            for k, chunk in enumerate(chunks):
                more = 64 if k < len(chunks) - 1 else 0
                out.append(chunk | more | (128 if n == 0 and k == 0 else 0))
    return bytes(out)


_EXTENDED_ARG = dis.EXTENDED_ARG
_CACHE = opcode.opmap.get("CACHE")


def unit_index(code: types.CodeType) -> dict[int, int]:
    """Each code unit of ``code``'s instructions (their ``EXTENDED_ARG`` prefixes and inline caches
    included) to the instruction's index."""
    return _read(code)[0]


def entries(code: types.CodeType) -> tuple[Entry, ...]:
    """The exception table of ``code``, in table order."""
    return _read(code)[1]


def covering(code: types.CodeType) -> tuple[Entry | None, ...]:
    """For each instruction of ``code`` (by index), the entry whose region covers it (None
    outside try/with blocks)."""
    return _read(code)[2]


#: ``_read``'s results per code object (read-only once made).
_READ: weakref.WeakKeyDictionary[types.CodeType, tuple] = weakref.WeakKeyDictionary()


def _read(code: types.CodeType) -> tuple[dict[int, int], tuple[Entry, ...], tuple]:
    cached = _READ.get(code)
    if cached is not None:
        return cached
    raw = code.co_code
    index_of: dict[int, int] = {}
    count = unit = 0
    first: int | None = None  # the first EXTENDED_ARG before the instruction at ``unit``
    units = len(raw) // 2
    while unit < units:
        op = raw[2 * unit]
        if op == _EXTENDED_ARG:
            first = unit if first is None else first
            unit += 1
            continue
        if op == _CACHE:  # an inline cache word outside any instruction's count
            unit += 1
            continue
        after = unit + 1 + INLINE_CACHES[op]
        for u in range(unit if first is None else first, after):
            index_of[u] = count
        first, count, unit = None, count + 1, after
    table = tuple(
        Entry(index_of[start], index_of[end], index_of[target], depth, lasti, start, end, target)
        for start, end, target, depth, lasti in parse(code.co_exceptiontable)
    )
    cover: list[Entry | None] = [None] * count
    for entry in table:
        for i in range(entry.start, entry.end + 1):
            cover[i] = entry
    cached = _READ[code] = (index_of, table, tuple(cover))
    return cached


def set_try_depths(items: list[Any], code: types.CodeType) -> bool:
    """Give every ``TryBegin`` of ``items`` (``code`` decoded, then changed only where the stack is
    as it was) its handler's stack depth, read from the code's own table: ``bytecode`` cannot
    compute it for a block entered in the middle, and decoding does not keep it. False when the
    instructions cannot be matched with the table's (the caller falls back)."""
    cover = covering(code)
    instrs = [item for item in items if isinstance(item, Instr)]
    if len(cover) != len(instrs):
        return False
    position = {id(instr): n for n, instr in enumerate(instrs)}
    pending: list[TryBegin] = []
    for item in items:
        if isinstance(item, TryBegin):
            pending.append(item)
        elif isinstance(item, Instr) and pending:
            entry = cover[position[id(item)]]
            if entry is None or len(pending) != 1:
                return False  # (two blocks opening at one instruction: depths not told apart)
            pending[0].stack_depth = entry.depth
            pending = []
    return not pending
