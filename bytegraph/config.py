"""Settings that apply to every compiled function (per-function ones are arguments of ``compile``).

>>> bytegraph.config.recompile_limit = 4
>>> with bytegraph.config.patch(recompile_limit=2):     # also a decorator; patch("name", value)
...     fn(x)

They are read at each compile (each cache miss), so a change applies from the next one. Code
written for torch.compile keeps working: ``torch._dynamo.config`` values changed from torch's
defaults are honoured where bytegraph has the setting (``dynamo_config.py``).
"""

from __future__ import annotations

import os
from contextlib import ContextDecorator
from typing import Any

#: Variants kept per function before it runs eagerly (with one warning).
recompile_limit: int = 8
#: The backend used when ``compile`` is given none: "auto" is ``triton`` for graphs on CUDA tensors
#: (or any tensors under ``TRITON_INTERPRET=1``) and ``eager`` for graphs on CPU tensors.
default_backend: str = "auto"
#: Compare each compile's fingerprint with the other ranks' (``bytegraph.distributed``) when
#: ``torch.distributed`` runs more than one rank: ranks that compiled different code fail with a
#: ``DivergenceError`` instead of hanging in a collective. On by default under the pytest plugin
#: (which sets ``BYTEGRAPH_DISTRIBUTED_CHECK=1`` for the processes a test starts).
distributed_consistency_check: bool = os.environ.get("BYTEGRAPH_DISTRIBUTED_CHECK", "") == "1"
#: Seconds a rank waits for the others' fingerprints before reporting them missing.
distributed_consistency_timeout: float = 300.0
#: ``compile`` returns functions unchanged (``BYTEGRAPH_DISABLE=1``), like
#: ``compile(disable=True)``.
disable: bool = os.environ.get("BYTEGRAPH_DISABLE", "0") == "1"
#: A recompile raises ``BytegraphError`` instead of tracing the function again.
error_on_recompile: bool = False
#: Sizes and ints that change between calls are traced symbolically from then on (False: every
#: new value recompiles; ``mark_dynamic`` still applies).
automatic_dynamic_shapes: bool = True
#: What ``compile(dynamic=None)`` means at first: True traces sizes statically until they change;
#: False traces every size symbolically from the first call (as ``dynamic=True``).
assume_static_by_default: bool = True
#: A branch on tensor data (``if t.any():``, ``while j < n and t1 >= t[j]:``, ``if x.item() > 0:``)
#: does not break the graph: the trace follows the side the call's own values take and the graph
#: checks it; a later call taking the other side reruns in Python
#: (``tracer/breaks/speculation.py``). False: such branches break, as in torch.compile.
speculate: bool = True
#: Misses (calls rerun because a speculated branch went the other way) at one branch after which
#: traces break there instead.
speculation_miss_limit: int = 2
#: Times one branch is speculated on within one trace (the iterations a loop on tensor data is
#: unrolled); past it, the trace breaks there and goes on in a resume function.
speculation_unroll_limit: int = 64

#: The settings, with their values at import (what ``patch`` and the torch bridge compare with).
DEFAULTS: dict[str, Any] = {
    name: globals()[name]
    for name in (
        "recompile_limit",
        "default_backend",
        "disable",
        "error_on_recompile",
        "automatic_dynamic_shapes",
        "assume_static_by_default",
        "speculate",
        "speculation_miss_limit",
        "speculation_unroll_limit",
    )
}


def patch(changes: dict[str, Any] | str | None = None, value: Any = None, **kwargs: Any) -> Patch:
    """Change settings inside a ``with`` block or a decorated function, then restore them.

    ``patch(recompile_limit=2)``, ``patch("recompile_limit", 2)`` or ``patch({"recompile_limit":
    2})``; an unknown name is an ``AttributeError`` listing the settings. The change is
    process-wide while it lasts.
    """
    if isinstance(changes, str):
        changes = {changes: value}
    elif value is not None:
        raise TypeError("patch(name, value): the first argument must be the setting's name")
    merged = {**(changes or {}), **kwargs}
    for name in merged:
        if name not in DEFAULTS:
            raise AttributeError(
                f"bytegraph.config has no setting {name!r}; settings: {', '.join(DEFAULTS)}"
            )
    return Patch(merged)


class Patch(ContextDecorator):
    """What ``patch`` returns: a context manager and decorator (re-entrant, nests)."""

    def __init__(self, changes: dict[str, Any]) -> None:
        self.changes = changes
        self.saved: list[dict[str, Any]] = []

    def __enter__(self) -> Patch:
        module = globals()
        self.saved.append({name: module[name] for name in self.changes})
        module.update(self.changes)
        return self

    def __exit__(self, *exc: Any) -> None:
        globals().update(self.saved.pop())
