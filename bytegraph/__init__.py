"""bytegraph: a pure-Python TorchDynamo. ``@bytegraph.compile`` traces a function's bytecode into
torch.fx graphs guarded by generated Python, with no frame-evaluation hook.

Public API: ``compile``, ``reset``, ``config``, and the inspection helpers ``cache_entries(fn)``,
``guard_source(fn)`` and ``why(fn, *args, **kwargs)``.
"""

from __future__ import annotations

from .codegen.pyversion import check_supported

check_supported()

from . import config  # noqa: E402
from .backends.registry import list_backends, lookup_backend, register_backend  # noqa: E402
from .compiler import compile, reset, state_of  # noqa: E402
from .introspect import cache_entries, guard_source, why  # noqa: E402

__all__ = [
    "cache_entries", "compile", "config", "guard_source", "list_backends", "lookup_backend",
    "register_backend", "reset", "state_of", "why",
]
