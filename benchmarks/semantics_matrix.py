"""The Python-semantics conformance matrix (``tests/python_semantics``): every builtin operation
of the builtin types and of builtins, operator, functools, itertools, collections and copy,
crossed with the catalogue of value kinds, through CPython, bytegraph and torch.compile.

    python benchmarks/semantics_matrix.py [--filter REGEX] [--list wrong crashed gaps breaking]

Prints one table by type (cells clean / breaking / wrong / crashed, and where torch.compile is
cleaner) and the operations not exercised; ``--help`` lists the options (baselines, placements).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from python_semantics import matrix  # noqa: E402

if __name__ == "__main__":
    matrix.main()
