"""Settings that apply to every compiled function (per-function ones are arguments of ``compile``).

>>> bytegraph.config.recompile_limit = 4
"""

from __future__ import annotations

import os

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
