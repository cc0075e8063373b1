"""bytegraph: a pure-Python TorchDynamo. ``@bytegraph.compile`` traces a function's bytecode into
torch.fx graphs guarded by generated Python, with no frame-evaluation hook.

Public API: ``compile``, ``reset``, ``config`` (``config.patch``), torch.compiler's decorators
(``disable``, ``allow_in_graph``, ``assume_constant_result``, ``substitute_in_graph``,
``error_on_graph_break``), the
inspection helpers ``cache_entries(fn)``, ``guard_source(fn)``, ``why(fn, *args, **kwargs)`` and
``stats()``, the report ``explain(fn)(*args)``, the HTML compile report
(``report.write_html(path)``; ``BYTEGRAPH_TRACE_DIR`` records every compile) and
``set_logs("graph_code,guards")`` (or ``BYTEGRAPH_LOGS``). The pytest plugin is ``pytest_plugin``.
``distributed``: compile fingerprints compared across ranks (``check_consistency()``).
"""

from __future__ import annotations

import gc
import importlib

from .codegen.pyversion import check_supported

check_supported()

# The cyclic garbage collector waits while bytegraph's modules load: they leave no garbage, and
# each collection walks every object torch has made (half the CPU ``import bytegraph`` took).
_collecting = gc.isenabled()
gc.disable()
try:
    from . import config, distributed
    from .backends.registry import list_backends, lookup_backend, register_backend
    from .compiler import compile, reset, state_of
    from .decorators import (
        allow_in_graph,
        assume_constant_result,
        disable,
        error_on_graph_break,
        substitute_in_graph,
    )
    from .dynamic import mark_dynamic, mark_static, maybe_mark_dynamic
    from .explain import ExplainOutput, explain
    from .introspect import cache_entries, guard_source, stats, why
    from .logs import set_logs
    from .trace_records import start as _start_trace  # noqa: F401 (BYTEGRAPH_TRACE_DIR)
    from .tracer.markers import graph_break
finally:
    if _collecting:
        gc.enable()


def __getattr__(name: str) -> object:
    """``bytegraph.report`` on first use: not imported with the package, so that
    ``python -m bytegraph.report`` runs it as a fresh ``__main__``."""
    if name == "report":
        return importlib.import_module(".report", __name__)
    raise AttributeError(f"module 'bytegraph' has no attribute {name!r}")


__all__ = [
    "ExplainOutput",
    "allow_in_graph",
    "assume_constant_result",
    "disable",
    "error_on_graph_break",
    "cache_entries",
    "compile",
    "config",
    "distributed",
    "explain",
    "graph_break",
    "guard_source",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "lookup_backend",
    "register_backend",
    "reset",
    "set_logs",
    "state_of",
    "substitute_in_graph",
    "stats",
    "why",
]
