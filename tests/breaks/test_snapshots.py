"""Snapshots of the code a graph break produces, for the seeds' ``print("Hi")`` example: the
rewritten function (graph call, stack and locals rebuilt, print run in Python, its result dropped
and the resume function called at the instruction after the drop: nothing passed or guarded for
it), the resume function (prefix jumping into the original code) and the
resume function's own rewritten code. One snapshot per Python version (3.11 has PRECALL; 3.13 puts
the NULL above the callable and has LOAD_FAST_LOAD_FAST)."""

from __future__ import annotations

import dis
import re

import torch
from bytegraph.codegen.pyversion import VERSION
from difftest import check_breaks

import bytegraph


def normalise(fn) -> str:
    """``dis`` of ``fn`` as ``OPNAME argrepr`` lines: no offsets, addresses or caches; jump targets
    as instruction indices."""
    instrs = [i for i in dis.get_instructions(fn) if i.opname not in ("CACHE", "EXTENDED_ARG")]
    index = {i.offset: n for n, i in enumerate(instrs)}
    lines = []
    for i in instrs:
        arg = re.sub(r" at 0x[0-9a-f]+", "", i.argrepr)
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            arg = f"to #{index[i.argval]}"
        lines.append(f"{i.opname} {arg}".rstrip())
    return "\n".join(lines) + "\n"


def fn(a):
    b = a + 2
    print("Hi")
    return b + a


REWRITTEN_311 = """\
COPY_FREE_VARS
RESUME
PUSH_NULL
LOAD_DEREF __compiled_fn_0
LOAD_FAST a
PRECALL
CALL
STORE_FAST __graph_out
PUSH_NULL
LOAD_CONST <built-in function print>
LOAD_CONST 'Hi'
LOAD_FAST a
LOAD_FAST __graph_out
LOAD_CONST 0
BINARY_SUBSCR
STORE_FAST b
STORE_FAST a
PRECALL
CALL
POP_TOP
PUSH_NULL
LOAD_DEREF __resume_at_10_0
LOAD_FAST a
LOAD_FAST b
PRECALL
CALL
RETURN_VALUE
"""

REWRITTEN_312 = """\
COPY_FREE_VARS
RESUME
PUSH_NULL
LOAD_DEREF __compiled_fn_0
LOAD_FAST a
CALL
STORE_FAST __graph_out
PUSH_NULL
LOAD_CONST <built-in function print>
LOAD_CONST 'Hi'
LOAD_FAST a
LOAD_FAST __graph_out
LOAD_CONST 0
BINARY_SUBSCR
STORE_FAST b
STORE_FAST a
CALL
POP_TOP
PUSH_NULL
LOAD_DEREF __resume_at_9_0
LOAD_FAST a
LOAD_FAST b
CALL
RETURN_VALUE
"""

REWRITTEN_313 = """\
COPY_FREE_VARS
RESUME
LOAD_DEREF __compiled_fn_0
PUSH_NULL
LOAD_FAST a
CALL
STORE_FAST __graph_out
LOAD_CONST <built-in function print>
PUSH_NULL
LOAD_CONST 'Hi'
LOAD_FAST a
LOAD_FAST __graph_out
LOAD_CONST 0
BINARY_SUBSCR
STORE_FAST b
STORE_FAST a
CALL
POP_TOP
LOAD_DEREF __resume_at_9_0
PUSH_NULL
LOAD_FAST a
LOAD_FAST b
CALL
RETURN_VALUE
"""

RESUME_311 = """\
RESUME
JUMP_FORWARD to #11
LOAD_FAST a
LOAD_CONST 2
BINARY_OP +
STORE_FAST b
LOAD_GLOBAL NULL + print
LOAD_CONST 'Hi'
PRECALL
CALL
POP_TOP
LOAD_FAST b
LOAD_FAST a
BINARY_OP +
RETURN_VALUE
"""

RESUME_312 = """\
RESUME
JUMP_FORWARD to #10
LOAD_FAST a
LOAD_CONST 2
BINARY_OP +
STORE_FAST b
LOAD_GLOBAL NULL + print
LOAD_CONST 'Hi'
CALL
POP_TOP
LOAD_FAST b
LOAD_FAST a
BINARY_OP +
RETURN_VALUE
"""

# NOTE(3.13): the resume function spells the original's LOAD_FAST_LOAD_FAST as two LOAD_FASTs.
RESUME_313 = """\
RESUME
JUMP_FORWARD to #10
LOAD_FAST a
LOAD_CONST 2
BINARY_OP +
STORE_FAST b
LOAD_GLOBAL print + NULL
LOAD_CONST 'Hi'
CALL
POP_TOP
LOAD_FAST b
LOAD_FAST a
BINARY_OP +
RETURN_VALUE
"""

RESUME_REWRITTEN_311 = """\
COPY_FREE_VARS
RESUME
PUSH_NULL
LOAD_DEREF __compiled_fn_1
LOAD_FAST a
LOAD_FAST b
PRECALL
CALL
STORE_FAST __graph_out
LOAD_FAST __graph_out
LOAD_CONST 0
BINARY_SUBSCR
RETURN_VALUE
"""

RESUME_REWRITTEN_312 = RESUME_REWRITTEN_311.replace("PRECALL\n", "")

RESUME_REWRITTEN_313 = """\
COPY_FREE_VARS
RESUME
LOAD_DEREF __compiled_fn_1
PUSH_NULL
LOAD_FAST a
LOAD_FAST b
CALL
STORE_FAST __graph_out
LOAD_FAST __graph_out
LOAD_CONST 0
BINARY_SUBSCR
RETURN_VALUE
"""

#: Python version -> (rewritten function, resume function name, resume, rewritten resume)
SNAPSHOTS = {
    (3, 11): (REWRITTEN_311, "__resume_at_10_0", RESUME_311, RESUME_REWRITTEN_311),
    (3, 12): (REWRITTEN_312, "__resume_at_9_0", RESUME_312, RESUME_REWRITTEN_312),
    (3, 13): (REWRITTEN_313, "__resume_at_9_0", RESUME_313, RESUME_REWRITTEN_313),
}
REWRITTEN, RESUME_NAME, RESUME, RESUME_REWRITTEN = SNAPSHOTS[VERSION]


def _compiled():
    compiled, _, _ = check_breaks(fn, lambda: (torch.randn(4),), graphs=2, breaks=1)
    (resume,) = bytegraph.state_of(compiled).resumes.values()
    return compiled, resume


def test_rewritten_function_snapshot():
    compiled, _ = _compiled()
    assert normalise(bytegraph.cache_entries(compiled)[0].fn) == REWRITTEN


def test_resume_function_snapshot():
    _, resume = _compiled()
    assert resume.__name__ == RESUME_NAME
    assert normalise(bytegraph.state_of(resume).fn) == RESUME


def test_resume_function_rewritten_snapshot():
    _, resume = _compiled()
    assert normalise(bytegraph.cache_entries(resume)[0].fn) == RESUME_REWRITTEN
