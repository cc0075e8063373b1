"""``Guard``: one assumption a trace made about one input, e.g. ``TENSOR_MATCH`` on ``L['x']``.

Guards are frozen and ordered: cheap identity/type checks on shallow sources first, so the generated
function fails fast and reads top-down. ``arg`` is what the check compares against (a type, a value, a
``TensorSpec``); ``key`` is the hashable form used to deduplicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .sources import Source

#: Evaluation order of guard kinds (cheapest and most discriminating first).
KIND_ORDER = {
    "TYPE_MATCH": 0, "ID_MATCH": 1, "NONE_MATCH": 1, "EQUALS_MATCH": 2, "LEN_MATCH": 2, "DICT_KEYS": 3,
    "TENSOR_MATCH": 4, "GRAD_MODE": 5, "DEFAULT_DTYPE": 5, "GLOBAL_STATE": 5, "SHAPE_EXPR": 6,
}


@dataclass(frozen=True)
class Guard:
    source: Source | None  #: what is checked (None for global torch state)
    kind: str  #: one of ``KIND_ORDER``
    arg: Any = field(default=None, compare=False, hash=False)  #: the expected value / spec
    key: Any = None  #: hashable identity of ``arg``, for deduplication

    def sort_key(self) -> tuple:
        depth = self.source.depth if self.source is not None else 99
        expr = self.source.expr if self.source is not None else ""
        return (depth, KIND_ORDER[self.kind], expr, repr(self.key))

    def __lt__(self, other: Guard) -> bool:
        return self.sort_key() < other.sort_key()


@dataclass(frozen=True)
class TensorSpec:
    """What ``TENSOR_MATCH`` checks. ``None`` in ``sizes``/``strides`` means "any value" (dynamic dim)."""

    type: type
    dtype: Any
    device: Any
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]
