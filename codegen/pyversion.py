"""The one place that reads ``sys.version_info``: version flags and opcode-name alias tables.

Everything else asks these flags (``PY311``, ``PY312``) or the tables below instead of comparing
versions. Supported: CPython 3.11 and 3.12.
"""

from __future__ import annotations

import dis
import sys

PY311 = sys.version_info[:2] == (3, 11)
PY312 = sys.version_info[:2] == (3, 12)
VERSION = sys.version_info[:2]
SUPPORTED = ((3, 11), (3, 12))

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
    """.split()
)

#: NOTE(3.12): calls are ``CALL n`` alone; 3.11 needs ``PRECALL n`` before each ``CALL n``.
CALL_NEEDS_PRECALL = PY311
#: NOTE(3.12): ``LOAD_ATTR`` takes ``(is_method, name)``; 3.11 has a separate ``LOAD_METHOD``.
LOAD_ATTR_TAKES_METHOD_FLAG = PY312
#: NOTE(3.12): 3.11 spells conditional jumps POP_JUMP_FORWARD_IF_* / POP_JUMP_BACKWARD_IF_*.
JUMPS_HAVE_DIRECTION = PY311
#: NOTE(3.12): comprehensions are inlined (PEP 709); 3.11 compiles them to nested functions.
INLINED_COMPREHENSIONS = PY312


def check_supported() -> None:
    if VERSION not in SUPPORTED:
        raise RuntimeError(f"bytegraph supports Python 3.11 and 3.12, not {sys.version.split()[0]}")
