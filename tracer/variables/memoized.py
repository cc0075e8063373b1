"""``functools.lru_cache``/``functools.cache`` wrappers: a call with constant arguments is made
once, for real, at trace time, and its (immutable) result becomes a constant of the trace.

That is what the eager program does on its first call: the wrapped function runs once per distinct
arguments (a miss), later calls return the cached result with no effect (hits). Tracing happens
during the first call, so the real call at trace time has the effect eager's would have had (a
``logger.warning_once`` message appears once); the compiled code then skips the call, as eager's
cache hits do. transformers calls ``is_torch_greater_or_equal("2.9.0")`` and
``logger.warning_once(...)`` this way. Arguments must be constants or objects reached through a
source and hashed by identity (the logger of ``warning_once``), guarded by identity; results must
be immutable constants (a cached list or tensor could be changed by its callers). What does not fit
is a graph break at the call. The cache being cleared later (``cache_clear()``) is not noticed: the
function is assumed to return the same result again, which is what memoizing it asserts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...guards.guard import Guard
from ..exc import Unsupported
from .base import VariableTracker
from .constant import CONSTANT_TYPES

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ...guards.sources import Source
    from ..translator import Translator

LRU_CACHE_WRAPPER = functools._lru_cache_wrapper


@dataclass(eq=False)
class MemoizedFunctionVariable(VariableTracker):
    """An ``lru_cache`` wrapper (``value``), or one bound to ``self_vt`` as a method."""

    value: Any
    source: Source | None = None
    self_vt: VariableTracker | None = None

    def python_type(self) -> type:
        return type(self.value)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.self_vt is not None:
            args = [self.self_vt, *args]
        name = getattr(self.value, "__qualname__", repr(self.value))
        real_args = [_argument(tx, a, name) for a in args]
        real_kwargs = {k: _argument(tx, v, name) for k, v in kwargs.items()}
        try:
            result = self.value(*real_args, **real_kwargs)
        except Exception as e:  # noqa: BLE001 (the call runs again in Python, where it raises)
            raise Unsupported("python_error", f"{name}() raised {type(e).__name__}: {e}") from None
        if not _immutable(result):
            raise Unsupported(
                "memoized_call", f"{name}() returned a {type(result).__name__}, not a constant"
            )
        return tx.fold(result)

    def reconstruct(self, cg: Codegen) -> None:
        if self.self_vt is None and self.source is not None:
            self.source.reconstruct(cg)
            return
        raise Unsupported("reconstruct", f"a bound {self.value!r} escapes the trace")

    def __repr__(self) -> str:
        return f"MemoizedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


def _argument(tx: Translator, vt: VariableTracker, name: str) -> Any:
    """The real value of one argument: a constant, or an object hashed by identity (guarded)."""
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if _immutable(value):
            return value
    value = getattr(vt, "value", None)
    source = getattr(vt, "source", None)
    if (
        source is not None
        and value is not None
        and type(value).__hash__ is object.__hash__
        and type(value).__eq__ is object.__eq__
    ):
        tx.output.add_guard(Guard(source, "ID_MATCH", value, ("id", id(value))))
        return value
    raise Unsupported("memoized_call", f"{name}() called with {vt}, not a constant")


def _immutable(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_immutable(v) for v in value)
    return type(value) in CONSTANT_TYPES
