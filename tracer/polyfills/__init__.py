"""Pure-Python equivalents of C builtins that would block tracing (STYLE.md section 11).

Each module mirrors standard modules (``itertools``, ``functools``, ``operator``, ``builtins``,
``heapq`` with ``bisect``) or torch's type checks (``torch_checks``): one short function per
builtin, its docstring naming the function it replaces, registered with ``registry.polyfill``.
The tracer inlines them like user code, so what they call (user functions, tensor operations) is
traced and what they build (generators, closures) behaves lazily, as the C version would.
Importing this package registers them all; ``lookup`` finds one.
"""

from __future__ import annotations

from . import (  # noqa: F401 (registration)
    builtins,
    collections,
    copy,
    functools,
    heapq,
    itertools,
    operator,
    slots,
    torch_checks,
    type_hooks,
)
from .registry import KINDS, REBUILD, RESUME, SEEK, lookup

__all__ = ["KINDS", "REBUILD", "RESUME", "SEEK", "lookup"]
