"""Enum members and classes in the compiled function: a member's own methods (inlined), a
``str`` or ``int`` mixin's C methods (folded), ``Flag(3)`` and ``A | B`` (the ``enum`` module's
own ``_missing_``: computed), ``Color(5)`` raising CPython's ValueError where the code catches it,
and the class's protocol (iteration, ``len``, ``in``, ``[name]``, ``__members__``). Results
compared with eager's; 0 breaks, as torch.compile (before: a member's method, ``Flag(0)``, a
mixin's ``upper()`` and a caught ``Color(5)`` each broke)."""

from __future__ import annotations

import enum

import pytest
import torch
from difftest import check_breaks


class Color(enum.Enum):
    RED = 1
    GREEN = 2

    def describe(self, prefix="c:"):
        return prefix + self.name.lower()

    @property
    def twice(self):
        return self.value * 2


class Perm(enum.Flag):
    R = 1
    W = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mode(str, enum.Enum):  # noqa: UP042 (the mixin form libraries use)
    TRAIN = "train"
    EVAL = "eval"


def _caught(value):
    try:
        return Color(value)
    except ValueError as e:
        return str(e)


OPS = {
    "method": lambda c: (c.describe(), c.describe(prefix="p:"), Color.GREEN.describe()),
    "property": lambda c: (c.name, c.value, c.twice),
    "class protocol": lambda c: (
        [m.name for m in Color],
        len(Color),
        c in Color,
        Color["GREEN"],
        Color(2),
        list(Color.__members__),
        list(reversed(Color)),
    ),
    "flag": lambda c: (Perm.R | Perm.W, Perm.R in (Perm.R | Perm.W), bool(Perm(0)), Perm(3)),
    "int mixin": lambda c: (Level.LOW + 1, Level.LOW < Level.HIGH, int(Level.HIGH), Level(1)),
    "str mixin": lambda c: (
        Mode.TRAIN == "train",
        Mode("eval"),
        Mode.TRAIN.upper(),
        Mode.EVAL.startswith("e"),
    ),
    "missing value": lambda c: (_caught(5), _caught(1)),
    "as keys": lambda c: ({c: 1}[Color.RED], {m.value: m for m in Color}[2]),
}


@pytest.mark.parametrize("op", OPS)
def test_enum_operation(op):
    use = OPS[op]

    def fn(x, member):
        return x + 1, use(member)

    check_breaks(fn, lambda: (torch.zeros(2), Color.RED), graphs=1, breaks=0)
