"""The stack items a breaking instruction consumes come from its handler's ``pops=`` declaration
(``opcodes.operand_count``), the one per-opcode table; ``breaks`` keeps what lies below them."""

from __future__ import annotations

import torch
from bytecode import Bytecode, Instr
from bytegraph.codegen.pyversion import VERSION
from bytegraph.tracer.opcodes import HANDLERS, POPS, operand_count
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def _counts(fn) -> dict[str, set[int | None]]:
    counts: dict[str, set[int | None]] = {}
    for inst in Bytecode.from_code(fn.__code__):
        if isinstance(inst, Instr):
            counts.setdefault(inst.name, set()).add(operand_count(inst))
    return counts


def _sample(a, b, obj, d):
    x = obj.meth(a, b) + a[b]
    d[a] = -x
    return (a, b, x), [a, b], f"{a!r:>3}", not x, a in b, a is b


def test_handlers_declare_the_operands_of_instructions():
    counts = _counts(_sample)
    assert counts["BINARY_OP"] == {2} and counts["BINARY_SUBSCR"] == {2}
    assert counts["CALL"] == {4}  # two arguments, the callable and its NULL|self slot
    assert counts["BUILD_TUPLE"] == {3, 6} and counts["BUILD_LIST"] == {2}
    assert counts["UNARY_NEGATIVE"] == {1} and counts["CONTAINS_OP"] == {2}
    assert counts["IS_OP"] == {2}
    assert counts["STORE_SUBSCR"] == {None}  # a container store: the conservative path
    if VERSION >= (3, 13):
        assert counts["FORMAT_WITH_SPEC"] == {2} and counts["CONVERT_VALUE"] == {1}
    else:
        assert counts["FORMAT_VALUE"] == {2}


def test_only_handled_opcodes_declare_operands():
    assert set(POPS) <= set(HANDLERS)


def test_break_keeps_the_call_operands_below():
    def fn(x, items):
        y = x + 1
        return len(items), dict(a=y * 2, b=print("mid"), c=y - 1)

    check_breaks(fn, lambda: (torch.randn(3), [1, 2]), graphs=2, breaks=1)
    assert_no_more_breaks(1, fn, torch.randn(3), [1, 2])
