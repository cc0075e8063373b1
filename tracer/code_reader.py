"""A code object read into the instructions the translator steps through.

``Bytecode.from_code`` (the ``bytecode`` library) makes a concrete instruction for every code unit,
caches included, then the abstract instructions with labels and try-block pseudo-instructions;
the translator keeps only the instructions, where each label lands and each instruction's
exception handler. ``read`` makes those straight from ``co_code`` and ``co_positions()`` (the
handlers from ``codegen/exception_table.py``): the instructions are the library's own ``Instr``
objects with the arguments the library gives them (its tables say which opcode takes a constant, a
name, a flag and a name, ...), in a third of the time. ``tests/tracer/test_code_reader.py`` checks
that both agree on every code object of torch, transformers and the standard library. Where the
library lacks its trusted constructor (``Instr._from_trusted``) or one of the tables read here
(older releases), ``read`` decodes the instructions through ``Bytecode.from_code``.
"""

from __future__ import annotations

import dis
import inspect
import opcode
import types
from typing import Any

from bytecode import Bytecode, Instr, Label
from bytecode import instr as _lib
from bytecode.instr import InstrLocation

from ..codegen import exception_table
from ..codegen.pyversion import INLINE_CACHES, LOCALS_INDEX_CELLS, compare_arg

Linearized = tuple[list[Instr], dict[Label, int], list[int | None], list[int]]

#: What ``read`` uses of the library beyond its public classes (older releases lack some).
_NEEDED = (
    "BINARY_OPS",
    "BITFLAG2_OPCODES",
    "BITFLAG_OPCODES",
    "BinaryOp",
    "CACHE_OPCODE",
    "COMMON_CONSTANT_OPS",
    "CellVar",
    "CommonConstant",
    "Compare",
    "DUAL_ARG_OPCODES",
    "EXTENDEDARG_OPCODE",
    "FORMAT_VALUE_OPS",
    "FormatValue",
    "FreeVar",
    "HAS_ABSOLUTE_JUMP",
    "HAS_BACKWARD_RELATIVE_JUMP",
    "HAS_FORWARD_RELATIVE_JUMP",
    "INTRINSIC_1OP",
    "INTRINSIC_2OP",
    "Intrinsic1Op",
    "Intrinsic2Op",
    "NOP_OPCODE",
    "SPECIAL_OPS",
    "SpecialMethod",
    "UNSET",
    "opcode_has_argument",
)
_FAST = (
    hasattr(Instr, "_from_trusted")
    and hasattr(InstrLocation, "_from_tuple")
    and all(hasattr(_lib, name) for name in _NEEDED)
)

# What the argument of each opcode is, as the library decodes it (same order of tests).
(_INT, _NONE, _CONST, _LOCAL, _LOCAL_PAIR, _NAME, _FLAG_NAME, _FLAGS_NAME, _FREE, _COMPARE,
 _INTRINSIC1, _INTRINSIC2, _BINARY, _COMMON, _SPECIAL, _FORMAT, _FLAG_FORMAT, _FORWARD,
 _BACKWARD, _ABSOLUTE) = range(20)  # fmt: skip


def _arg_kind(op: int) -> int:
    if op in _lib.HAS_FORWARD_RELATIVE_JUMP:
        return _FORWARD
    if op in _lib.HAS_BACKWARD_RELATIVE_JUMP:
        return _BACKWARD
    if op in _lib.HAS_ABSOLUTE_JUMP:
        return _ABSOLUTE
    if not _lib.opcode_has_argument(op):
        return _NONE
    if op in opcode.hasconst:
        return _CONST
    if op in opcode.haslocal:
        return _LOCAL_PAIR if op in _lib.DUAL_ARG_OPCODES else _LOCAL
    if op in opcode.hasname:
        if op in _lib.BITFLAG_OPCODES:
            return _FLAG_NAME
        return _FLAGS_NAME if op in _lib.BITFLAG2_OPCODES else _NAME
    if op in opcode.hasfree:
        return _FREE
    if op in opcode.hascompare:
        return _COMPARE
    kinds = (
        (_lib.INTRINSIC_1OP, _INTRINSIC1),
        (_lib.INTRINSIC_2OP, _INTRINSIC2),
        (_lib.BINARY_OPS, _BINARY),
        (_lib.COMMON_CONSTANT_OPS, _COMMON),
        (_lib.SPECIAL_OPS, _SPECIAL),
    )
    for ops, kind in kinds:
        if op in ops:
            return kind
    if op in _lib.FORMAT_VALUE_OPS:
        return _FLAG_FORMAT if op in _lib.BITFLAG_OPCODES else _FORMAT
    return _INT


_KINDS = [_arg_kind(op) for op in range(256)] if _FAST else []
_OPNAMES = dis.opname
_EXTENDED_ARG = getattr(_lib, "EXTENDEDARG_OPCODE", None)
_NOP = getattr(_lib, "NOP_OPCODE", None)
_CACHE = getattr(_lib, "CACHE_OPCODE", None)


def read(code: types.CodeType) -> Linearized:
    """Instructions without pseudo-instructions, each label's index, and for each instruction the
    index of its exception handler (None outside try/with blocks) and how many handler regions
    cover it (0 or 1: CPython's exception table never nests)."""
    if not _FAST:
        return _read_with_library(code)
    raw = code.co_code
    positions = list(code.co_positions())
    pending: list[tuple[int, int, Any, int, int]] = []  # (op, kind, arg, unit, next unit)
    extended: int | None = None
    unit = 0
    units = len(raw) // 2
    while unit < units:
        op = raw[2 * unit]
        arg = raw[2 * unit + 1]
        if op == _EXTENDED_ARG:
            extended = arg if extended is None else (extended << 8) + arg
            unit += 1
            continue
        if op == _CACHE:  # an inline cache word outside any instruction's count
            unit += 1
            continue
        if extended is not None and op != _NOP:
            arg = (extended << 8) + arg
        kind = _KINDS[op]
        if kind == _NONE or (extended is not None and op == _NOP):
            arg = _lib.UNSET
        extended = None
        after = unit + 1 + INLINE_CACHES[op]
        pending.append((op, kind, arg, unit, after))
        unit = after
    if extended is not None:
        raise ValueError("EXTENDED_ARG at the end of the code")

    # Each unit of an instruction, its EXTENDED_ARG prefix and caches included, to its index.
    index_of = exception_table.unit_index(code)
    labels_at: dict[int, Label] = {}

    def label(target: int) -> Label:
        found = labels_at.get(target)
        if found is None:
            found = labels_at[target] = Label()
        return found

    consts, names = code.co_consts, code.co_names
    varnames = code.co_varnames
    cells = [*varnames, *(_lib.CellVar(n) for n in code.co_cellvars if n not in varnames)]
    locals_lookup = (
        [*cells, *(_lib.FreeVar(n) for n in code.co_freevars if n not in varnames)]
        if LOCALS_INDEX_CELLS
        else varnames
    )
    trusted = Instr._from_trusted
    opname = _OPNAMES
    instructions: list[Instr] = []
    last_pos: Any = None
    location: Any = None
    for op, kind, arg, unit, after in pending:
        if kind == _INT or kind == _NONE:
            pass
        elif kind == _CONST:
            arg = consts[arg]
        elif kind == _LOCAL:
            arg = locals_lookup[arg]
        elif kind == _NAME:
            arg = names[arg]
        elif kind == _FLAG_NAME:
            arg = (bool(arg & 1), names[arg >> 1])
        elif kind == _FORWARD:
            arg = label(after + arg)
        elif kind == _BACKWARD:
            arg = label(after - arg)
        else:
            arg = _decode(kind, arg, code, locals_lookup, cells, label)
        pos = positions[unit]
        if pos != last_pos:
            last_pos = pos
            location = InstrLocation._from_tuple(*pos)
        instructions.append(trusted(opname[op], op, arg, location))

    for entry in exception_table.entries(code):
        label(entry.target_unit)
    labels = {lbl: index_of[target] for target, lbl in labels_at.items()}
    return (instructions, labels, *_handlers(code))


def _handlers(code: types.CodeType) -> tuple[list[int | None], list[int]]:
    """Each instruction's handler (None outside try/with blocks) and how many regions cover it (0
    or 1: CPython's exception table never nests), from ``codegen.exception_table``."""
    cover = exception_table.covering(code)
    return [None if e is None else e.target for e in cover], [0 if e is None else 1 for e in cover]


#: Argument kinds that are one of the library's enums.
_ENUM_ARGS = (
    {
        _INTRINSIC1: _lib.Intrinsic1Op,
        _INTRINSIC2: _lib.Intrinsic2Op,
        _BINARY: _lib.BinaryOp,
        _COMMON: _lib.CommonConstant,
        _SPECIAL: _lib.SpecialMethod,
        _FORMAT: _lib.FormatValue,
    }
    if _FAST
    else {}
)


def _decode(
    kind: int, arg: int, code: types.CodeType, locals_lookup: Any, cells: list, label: Any
) -> Any:
    """The rarer argument kinds."""
    if kind == _LOCAL_PAIR:
        return (locals_lookup[arg >> 4], locals_lookup[arg & 15])
    if kind == _FLAGS_NAME:
        return (bool(arg & 1), bool(arg & 2), code.co_names[arg >> 2])
    if kind == _FREE:
        if arg < len(cells):
            cell = cells[arg]
            return cell if isinstance(cell, _lib.CellVar) else _lib.CellVar(cell)
        return _lib.FreeVar(code.co_freevars[arg - len(cells)])
    if kind == _COMPARE:
        return _lib.Compare(compare_arg(arg))
    enum = _ENUM_ARGS.get(kind)
    if enum is not None:
        return enum(arg)
    if kind == _FLAG_FORMAT:
        return (bool(arg & 1), _lib.FormatValue(arg >> 1))
    if kind == _ABSOLUTE:
        return label(arg)
    raise AssertionError(f"argument kind {kind}")


def _read_with_library(code: types.CodeType) -> Linearized:
    instructions: list[Instr] = []
    labels: dict[Label, int] = {}
    for item in Bytecode.from_code(code):
        if isinstance(item, Label):
            labels[item] = len(instructions)
        elif isinstance(item, Instr):
            instructions.append(item)
    return (instructions, labels, *_handlers(code))


def parameters(code: types.CodeType) -> list[tuple[str, Any]]:
    """The parameters of ``code`` in order, with their kinds (read from the code object itself, so
    any decorator's ``__signature__``/``__wrapped__`` is ignored)."""
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    kinds = [
        (
            n,
            inspect.Parameter.POSITIONAL_ONLY
            if i < code.co_posonlyargcount
            else inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        for i, n in enumerate(names[:n_pos])
    ]
    index = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        kinds.append((names[index], inspect.Parameter.VAR_POSITIONAL))
        index += 1
    kinds += [(n, inspect.Parameter.KEYWORD_ONLY) for n in names[n_pos : n_pos + n_kw]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kinds.append((names[index], inspect.Parameter.VAR_KEYWORD))
    return kinds
