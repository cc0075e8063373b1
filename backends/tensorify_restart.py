"""AOTAutograd's request to trace a graph again, answered by compiling it again.

AOTAutograd's pass turning float inputs into tensors (``tensorify_python_scalars``, run by
``aot_eager`` and Inductor) ends by asking Dynamo to trace again (it raises
``TensorifyScalarRestartAnalysis``) wherever the ``ShapeEnv`` holds a float symbol it did not turn
into a tensor, after marking the symbol to be specialised (``TensorifyState``). In bytegraph that
symbol is one the graph does not read (a float the trace read for Python alone: a learning rate the
optimizer's step reads while the forward graph is compiled) or one the pass has specialised already
(its guard is then in the ``ShapeEnv``, so among the variant's guards): the graph to compile is the
same either way, and the second compile, the symbols now marked, goes through. Entry point:
``compile_again_on_restart(compile)``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def compile_again_on_restart(compile: Callable[[], T]) -> T:
    """``compile()``, once more where AOTAutograd asked for the trace to restart."""
    try:
        return compile()
    except Exception as e:
        if not _asks_restart(e):
            raise
    return compile()


def _asks_restart(error: BaseException) -> bool:
    exc = sys.modules.get("torch._dynamo.exc")  # loaded by whatever raised it, if anything did
    kind = getattr(exc, "TensorifyScalarRestartAnalysis", None)
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if kind is not None and isinstance(error, kind):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
