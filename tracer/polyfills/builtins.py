"""Builtins and methods of builtin types in pure Python."""

from __future__ import annotations

from .registry import polyfill


@polyfill(dict.fromkeys)
def fromkeys(iterable, value=None):
    """``dict.fromkeys`` (on ``dict`` itself: a subclass's ``fromkeys`` builds the subclass)."""
    d = {}
    for key in iterable:
        d[key] = value
    return d


def callable_iterator(fn, sentinel):
    """``iter(fn, sentinel)``: calls ``fn`` until it returns ``sentinel``."""
    while True:
        value = fn()
        if value == sentinel:
            return
        yield value
