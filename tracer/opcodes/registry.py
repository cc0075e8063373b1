"""The opcode handler registry: ``@handler("NAME", ...)`` registers a module-level function.

The handler modules of this package register at import (``opcodes/__init__`` imports them all).
Registration checks each name against the opcodes of every supported Python (names absent on the
running one are skipped), that ``fn.__name__`` is the first name lower-cased, and that nothing
registers twice.
``pops=`` declares the stack items the instruction consumes, for ``breaks`` (``operand_count``);
``frame_only=True`` that the handler reads and writes only its frame (``FRAME_ONLY``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...codegen.pyversion import KNOWN_OPNAMES, OPNAMES, VERSION

Handler = Callable[[Any, Any], None]
HANDLERS: dict[str, Handler] = {}
Pops = int | Callable[[Any], int]
#: Stack items an instruction consumes, where its handler declares them: ``breaks`` keeps what lies
#: below them when the rewritten code runs the instruction again after a graph break.
POPS: dict[str, Pops] = {}

#: Opcodes whose handlers read and write only the frame (its stack, locals, cells, jump target)
#: and call nothing: they record nothing in the output (no node, side effect, state event,
#: exception or deferred check), so the translator takes no output checkpoint before them (the
#: output after one is as before it).
FRAME_ONLY: set[str] = set()

#: Opcodes bytegraph does not trace, with the reason (they raise ``Unsupported`` with that reason).
UNSUPPORTED: dict[str, str] = {}


def handler(
    *names: str,
    until: tuple[int, int] | None = None,
    pops: Pops | None = None,
    frame_only: bool = False,
) -> Callable[[Handler], Handler]:
    """``pops``: the stack items the instruction consumes, a number or a function of the
    instruction (``inst.arg + 2``); left out where unknown (see ``operand_count``).
    ``frame_only``: the handler touches only the frame (``FRAME_ONLY``)."""

    def register(fn: Handler) -> Handler:
        expected = names[0].lower()
        assert fn.__name__ == expected, f"handler for {names[0]} must be named {expected}"
        if until is not None and VERSION > until:
            return fn
        for name in names:
            assert name in KNOWN_OPNAMES, f"unknown opcode {name}"
            assert name not in HANDLERS, f"{name} registered twice"
            if name in OPNAMES:
                HANDLERS[name] = fn
                if pops is not None:
                    POPS[name] = pops
                if frame_only:
                    FRAME_ONLY.add(name)
        return fn

    return register


def operand_count(inst: Any) -> int | None:
    """How many stack items ``inst`` consumes, as its handler declares (None where it does not)."""
    pops = POPS.get(inst.name)
    return pops(inst) if callable(pops) else pops


def unsupported(reason: str, *names: str) -> None:
    for name in names:
        assert name in KNOWN_OPNAMES, f"unknown opcode {name}"
        UNSUPPORTED[name] = reason
