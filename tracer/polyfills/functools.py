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
