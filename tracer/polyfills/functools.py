"""``functools`` in pure Python."""

from __future__ import annotations

import functools

from .registry import polyfill

_MISSING = object()


@polyfill(functools.reduce)
def reduce(function, iterable, initial=_MISSING):
    """``functools.reduce``."""
    it = iter(iterable)
    value = initial
    if value is _MISSING:
        value = next(it, _MISSING)
        if value is _MISSING:
            raise TypeError("reduce() of empty iterable with no initial value")
    for element in it:
        value = function(value, element)
    return value


@polyfill(functools.lru_cache)
def lru_cache(maxsize=128, typed=False):
    """``functools.lru_cache``: its argument checks, then ``cache_wrapper`` (a cache the tracer
    keeps for a wrapper made in the trace)."""
    if isinstance(maxsize, int):
        maxsize = max(maxsize, 0)
    elif callable(maxsize) and isinstance(typed, bool):
        return cache_wrapper(maxsize, 128, typed)
    elif maxsize is not None:
        raise TypeError("Expected first argument to be an integer, a callable, or None")

    def decorating_function(user_function):
        return cache_wrapper(user_function, maxsize, typed)

    return decorating_function


@polyfill(functools.cache)
def cache(user_function, /):
    """``functools.cache``: ``lru_cache(maxsize=None)``."""
    return cache_wrapper(user_function, None, False)


def cache_wrapper(user_function, maxsize, typed):
    """The wrapper ``lru_cache`` makes (run as it is in Python; the tracer has a call rule for
    it, ``functions.py``)."""
    wrapper = functools._lru_cache_wrapper(user_function, maxsize, typed, functools._CacheInfo)
    wrapper.cache_parameters = lambda: {"maxsize": maxsize, "typed": typed}
    return functools.update_wrapper(wrapper, user_function)
