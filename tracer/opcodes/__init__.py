"""Opcode handlers, one module per family (``load_store``, ``stack``, ``arith``, ``build``,
``calls``, ``control``, ``blocks``, ``exceptions``, ``matching``), registered in
``registry.HANDLERS`` when imported here. The translator looks an instruction's handler up by
name; ``unsupported`` opcodes raise ``Unsupported`` with their reason.
"""

from __future__ import annotations

from . import (  # noqa: F401 (each registers its handlers)
    arith,
    blocks,
    build,
    calls,
    control,
    exceptions,
    load_store,
    matching,
    stack,
)
from .registry import FRAME_ONLY as FRAME_ONLY
from .registry import HANDLERS as HANDLERS
from .registry import POPS as POPS
from .registry import UNSUPPORTED as UNSUPPORTED
from .registry import handler as handler
from .registry import operand_count as operand_count
from .registry import unsupported as unsupported
