"""The one place that reads ``sys.version_info``: version flags and opcode-name alias tables.

Everything else asks these flags (``PY311``, ``PY312``, ``PY313``) or the feature flags and tables
below instead of comparing versions. Supported: CPython 3.11, 3.12 and 3.13.
"""

from __future__ import annotations

import dis
import sys
import types
from collections.abc import Iterator
from typing import Any

PY311 = sys.version_info[:2] == (3, 11)
PY312 = sys.version_info[:2] == (3, 12)
PY313 = sys.version_info[:2] == (3, 13)
VERSION = sys.version_info[:2]
SUPPORTED = ((3, 11), (3, 12), (3, 13))

#: Opcode names of the running interpreter (``dis.opmap`` keys).
OPNAMES: frozenset[str] = frozenset(dis.opmap)

#: Opcode names of every supported version, so handler registration can check spelling on any
#: Python.
KNOWN_OPNAMES: frozenset[str] = OPNAMES | frozenset(
    """
    BINARY_SLICE CALL_INTRINSIC_1 CALL_INTRINSIC_2 END_FOR END_SEND LOAD_FAST_AND_CLEAR
    LOAD_FAST_CHECK LOAD_FROM_DICT_OR_DEREF LOAD_FROM_DICT_OR_GLOBALS LOAD_LOCALS LOAD_SUPER_ATTR
    POP_JUMP_IF_FALSE POP_JUMP_IF_NONE POP_JUMP_IF_NOT_NONE POP_JUMP_IF_TRUE RETURN_CONST
    STORE_SLICE CLEANUP_THROW
    INSTRUMENTED_LINE
    LOAD_METHOD PRECALL POP_JUMP_FORWARD_IF_FALSE POP_JUMP_FORWARD_IF_TRUE POP_JUMP_FORWARD_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE POP_JUMP_BACKWARD_IF_FALSE POP_JUMP_BACKWARD_IF_TRUE
    POP_JUMP_BACKWARD_IF_NONE POP_JUMP_BACKWARD_IF_NOT_NONE JUMP_IF_FALSE_OR_POP JUMP_IF_TRUE_OR_POP
    BINARY_OP_ADAPTIVE ASYNC_GEN_WRAP LIST_TO_TUPLE UNARY_POSITIVE PRINT_EXPR LOAD_CLASSDEREF
    KW_NAMES FORMAT_VALUE LOAD_CLOSURE
    CALL_KW CONVERT_VALUE ENTER_EXECUTOR EXIT_INIT_CHECK FORMAT_SIMPLE FORMAT_WITH_SPEC
    LOAD_FAST_LOAD_FAST SET_FUNCTION_ATTRIBUTE STORE_FAST_LOAD_FAST STORE_FAST_STORE_FAST TO_BOOL
    STORE_FAST_MAYBE_NULL
    """.split()
)

#: NOTE(3.12): calls are ``CALL n`` alone; 3.11 needs ``PRECALL n`` before each ``CALL n``.
CALL_NEEDS_PRECALL = PY311
#: NOTE(3.12): ``LOAD_ATTR`` takes ``(is_method, name)``; 3.11 has a separate ``LOAD_METHOD``.
LOAD_ATTR_TAKES_METHOD_FLAG = VERSION >= (3, 12)
#: NOTE(3.12): 3.11 spells conditional jumps POP_JUMP_FORWARD_IF_* / POP_JUMP_BACKWARD_IF_*.
JUMPS_HAVE_DIRECTION = PY311
#: NOTE(3.12): an exhausted ``SEND`` leaves its receiver below the result (``END_SEND`` pops it);
#: 3.13 too.
SEND_KEEPS_RECEIVER = VERSION >= (3, 12)
#: NOTE(3.13): the CALL convention is ``[callable, self_or_NULL, *args]`` (also for
#: ``CALL_FUNCTION_EX``, and what ``LOAD_GLOBAL``/``LOAD_ATTR``/``LOAD_SUPER_ATTR`` push); 3.11 and
#: 3.12 put the NULL below: ``[NULL|method, callable|self, *args]``.
NULL_ABOVE_CALLABLE = PY313
#: NOTE(3.13): keyword calls are ``CALL_KW n`` with the names tuple on the stack; 3.11/3.12 put
#: ``KW_NAMES names`` before ``CALL n``.
CALL_KW_ON_STACK = PY313
#: NOTE(3.13): conditional jumps and ``UNARY_NOT`` take exact bools (``TO_BOOL`` converts first).
JUMPS_NEED_BOOL = PY313
#: NOTE(3.13): ``MAKE_FUNCTION`` takes only the code; defaults, kwdefaults, annotations and closure
#: are each attached by a ``SET_FUNCTION_ATTRIBUTE flag`` (3.11/3.12: ``MAKE_FUNCTION flags``).
MAKE_FUNCTION_TAKES_FLAGS = not PY313
#: NOTE(3.12): functions have ``__type_params__`` (PEP 695); 3.11's have no such attribute.
FUNCTIONS_HAVE_TYPE_PARAMS = VERSION >= (3, 12)
#: Instructions an exhausted ``FOR_ITER`` jumps over at its target. NOTE(3.13): ``END_FOR`` pops one
#: item and a ``POP_TOP`` follows it; 3.12's ``END_FOR`` pops two; 3.11 has no ``END_FOR``.
FOR_ITER_EXIT_SKIPS: tuple[str, ...] = (
    ("END_FOR", "POP_TOP") if PY313 else ("END_FOR",) if PY312 else ()
)

#: Inline cache words that follow each opcode in ``co_code`` (index: opcode). NOTE(3.13): ``dis``
#: keys its table by opcode name; 3.11/3.12 by opcode.
INLINE_CACHES: tuple[int, ...] = tuple(
    dis._inline_cache_entries.get(dis.opname[op], 0)  # type: ignore[attr-defined]
    if isinstance(dis._inline_cache_entries, dict)  # type: ignore[attr-defined]
    else dis._inline_cache_entries[op]  # type: ignore[attr-defined]
    for op in range(256)
)
#: NOTE(3.13): ``LOAD_FAST`` and friends index cell and free variables too (after the plain
#: locals); 3.11/3.12 index ``co_varnames`` only.
LOCALS_INDEX_CELLS = PY313
#: NOTE(3.13): ``locals()`` in a function returns a new dict at each call (PEP 667); 3.11/3.12
#: return the frame's one dict, updated in place at each call.
LOCALS_SNAPSHOT = VERSION >= (3, 13)
#: NOTE(3.13): a warning whose ``stacklevel`` passes the outermost frame is named by file ``<sys>``
#: at line 0; 3.11/3.12 name file ``sys`` at line 1 (all with ``sys``'s module and registry).
WARNING_PAST_THE_STACK: tuple[str, int] = ("<sys>", 0) if PY313 else ("sys", 1)


def returned_constants(code: types.CodeType) -> Iterator[tuple[Any, ...]]:
    """Each ``return`` of ``code``: ``(value,)`` where it returns a constant, ``()`` where it
    returns a value computed at run time. NOTE(3.12): ``return <constant>`` is one
    ``RETURN_CONST``; 3.11 loads the constant before ``RETURN_VALUE``. A ``RETURN_VALUE`` that a
    jump reaches returns what the jump left, whatever comes before it (``return a or False``)."""
    instructions = list(dis.get_instructions(code))
    for i, inst in enumerate(instructions):
        if inst.opname == "RETURN_CONST":
            yield (inst.argval,)
        elif inst.opname == "RETURN_VALUE":
            before = instructions[i - 1] if i and not inst.is_jump_target else None
            yield (before.argval,) if before is not None and before.opname == "LOAD_CONST" else ()


def compare_arg(raw: int) -> int:
    """The comparison a ``COMPARE_OP`` argument names, as the ``bytecode`` library's ``Compare``
    value. NOTE(3.12): the operator sits above 4 bits of cache hints (3.11: the argument is the
    operator); NOTE(3.13): above 5 bits, of which bit 16 asks for a bool (``Compare`` adds 16)."""
    if PY313:
        return (raw >> 5) + (16 if raw & 16 else 0)
    return raw >> 4 if PY312 else raw


def check_supported() -> None:
    if VERSION not in SUPPORTED:
        raise RuntimeError(
            f"bytegraph supports Python 3.11, 3.12 and 3.13, not {sys.version.split()[0]}"
        )
