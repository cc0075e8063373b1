"""``functools.lru_cache``/``functools.cache`` wrappers: a call with constant arguments is made
once, for real, at trace time, and its (immutable) result becomes a constant of the trace.

That is what the eager program does on its first call: the wrapped function runs once per distinct
arguments (a miss), later calls return the cached result with no effect (hits). Tracing happens
during the first call, so the real call at trace time has the effect eager's would have had (a
``logger.warning_once`` message appears once); the compiled code then skips the call, as eager's
cache hits do. transformers calls ``is_torch_greater_or_equal("2.9.0")`` and
``logger.warning_once(...)`` this way. Arguments must be constants or objects reached through a
source and hashed by identity (the logger of ``warning_once``), guarded by identity; results must
be immutable constants (a cached list or tensor could be changed by its callers). A call with
tensors traces the wrapped function instead, without the cache, as torch.compile does (with a
notice). What does not fit otherwise is a graph break at the call. The cache being cleared later
(``cache_clear()``) is not noticed: the function is assumed to return the same result again, which
is what memoizing it asserts.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....backends.registry import notice_once
from ....guards.sources import AttrSource
from ...exc import Unsupported
from ...polyfills import functools as polyfill_functools
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import CONSTANT_TYPES
from ..containers.builtin_containers import hash_key

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ....guards.sources import Source
    from ...translator import Translator

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
        try:
            real_args = [_argument(tx, a, name) for a in args]
            real_kwargs = {k: _argument(tx, v, name) for k, v in kwargs.items()}
        except Unsupported:
            return self._call_wrapped(tx, args, kwargs, name)
        try:
            result = self.value(*real_args, **real_kwargs)
        except Exception as e:  # noqa: BLE001 (the call runs again in Python, where it raises)
            raise Unsupported("python_error", f"{name}() raised {type(e).__name__}: {e}") from None
        if not _immutable(result):
            raise Unsupported(
                "memoized_call", f"{name}() returned a {type(result).__name__}, not a constant"
            )
        return tx.fold(result)

    def _call_wrapped(
        self,
        tx: Translator,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        name: str,
    ) -> VariableTracker:
        """Arguments that are no constants (tensors): the wrapped function is traced, the cache
        left aside, as torch.compile does (with a notice, as it warns). Eager would store the
        result in the cache and return it again for the same argument objects; the compiled call
        computes it anew, which is the same value unless the function has effects."""
        wrapped = getattr(self.value, "__wrapped__", None)
        if not isinstance(wrapped, types.FunctionType):
            raise Unsupported("memoized_call", f"{name}() called with values that are no constants")
        notice_once(
            f"lru_cache:{id(self.value)}",
            f"{name}() is a functools.lru_cache wrapper called with tensors (or other values "
            "that are no constants): its function is traced, without the cache",
        )
        source = AttrSource(self.source, "__wrapped__") if self.source is not None else None
        fn = tx.wrap(wrapped, source) if source is not None else tx.wrap_static(wrapped)
        return dispatch.call(tx, fn, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.self_vt is None and self.source is not None:
            self.source.reconstruct(cg)
            return
        raise Unsupported("reconstruct", f"a bound {self.value!r} escapes the trace")

    def __repr__(self) -> str:
        return f"MemoizedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


@dataclass(eq=False)
class NewMemoizedVariable(VariableTracker):
    """An ``lru_cache`` wrapper made in the trace (``functools.cache(f)``, ``lru_cache(n)(f)``):
    its cache lives in the tracker, keyed as ``lru_cache`` keys its calls (the arguments as dict
    keys, ``1`` and ``True`` alike unless ``typed``; keyword arguments apart), so a call with
    arguments seen before gives the same result object and runs nothing, as in CPython, and at
    most ``maxsize`` results are kept, the least recently used dropped first. The wrapper cannot
    leave the trace (its cache has no real counterpart)."""

    fn: VariableTracker
    maxsize: int | None
    typed: bool
    cache: dict[Any, VariableTracker] = field(default_factory=dict)
    source: Source | None = None

    def python_type(self) -> type:
        return LRU_CACHE_WRAPPER

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__wrapped__":
            return self.fn
        raise Unsupported(
            "getattr", f"attribute {name!r} of an lru_cache wrapper made in the trace"
        )

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.maxsize == 0:  # CPython's uncached wrapper: no key is made
            return dispatch.call(tx, self.fn, args, kwargs)
        key = self._key(args, kwargs)
        if key in self.cache:
            self.cache[key] = self.cache.pop(key)  # now the most recently used
            return self.cache[key]
        result = dispatch.call(tx, self.fn, args, kwargs)
        self.cache[key] = result
        if self.maxsize is not None and len(self.cache) > self.maxsize:
            del self.cache[next(iter(self.cache))]
        return result

    def _key(self, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Any:
        """CPython's ``lru_cache_make_key``: one exact int or str argument is its own key, other
        calls the tuple of the arguments, then a mark and the keyword pairs, then (``typed``)
        the types of all the values."""
        keys = [hash_key(a) for a in args]
        if not self.typed and not kwargs:
            if len(args) == 1 and args[0].is_python_constant():
                if type(args[0].as_python_constant()) in (int, str):
                    return keys[0]
            return tuple(keys)
        flat = keys
        if kwargs:
            flat.append(_KWD_MARK)
            for name, value in kwargs.items():
                flat += [name, hash_key(value)]
        if self.typed:
            flat += [v.python_type() for v in [*args, *kwargs.values()]]
        return tuple(flat)

    def reconstruct(self, cg: Codegen) -> None:
        raise Unsupported("reconstruct", "an lru_cache wrapper made in the trace leaves it")

    def __repr__(self) -> str:
        return f"NewMemoizedVariable({self.fn!r})"


_KWD_MARK = object()  #: between the positional and the keyword arguments of a key


@call_rule(polyfill_functools.cache_wrapper)
def cache_wrapper(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``lru_cache``'s wrapper of a function, made in the trace (its polyfill calls this)."""
    user_function, maxsize, typed = args
    if kwargs or not (maxsize.is_python_constant() and typed.is_python_constant()):
        return None
    return NewMemoizedVariable(
        user_function, maxsize.as_python_constant(), bool(typed.as_python_constant())
    )


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
        tx.output.assume_identity(source, value)
        return value
    raise Unsupported("memoized_call", f"{name}() called with {vt}, not a constant")


def _immutable(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_immutable(v) for v in value)
    return type(value) in CONSTANT_TYPES


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
