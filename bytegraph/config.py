"""Settings that apply to every compiled function (per-function ones are arguments of ``compile``).

>>> bytegraph.config.recompile_limit = 4
"""

from __future__ import annotations

#: Variants kept per function before it runs eagerly (with one warning).
recompile_limit: int = 8
#: The backend used when ``compile`` is given none: "auto" is ``triton`` for graphs on CUDA tensors
#: (or any tensors under ``TRITON_INTERPRET=1``) and ``eager`` for graphs on CPU tensors.
default_backend: str = "auto"
