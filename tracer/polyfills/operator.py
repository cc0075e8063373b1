"""``operator``'s callable factories in pure Python (each returns a closure doing the same), and
``countOf``/``indexOf``."""

from __future__ import annotations

import operator

from .registry import polyfill
from .slots import has_slot


@polyfill(operator.itemgetter)
def itemgetter(item, *items):
    """``operator.itemgetter``."""
    if not items:

        def get_one(obj):
            return obj[item]

        return get_one

    def get_many(obj):
        return tuple(obj[i] for i in (item, *items))

    return get_many


@polyfill(operator.attrgetter)
def attrgetter(attr, *attrs):
    """``operator.attrgetter`` (dotted names included)."""
    names = [name.split(".") for name in (attr, *attrs)]

    def resolve(obj, parts):
        for part in parts:
            obj = getattr(obj, part)
        return obj

    if not attrs:
        return lambda obj: resolve(obj, names[0])
    return lambda obj: tuple(resolve(obj, parts) for parts in names)


@polyfill(operator.methodcaller)
def methodcaller(name, /, *args, **kwargs):
    """``operator.methodcaller``."""

    def call(obj):
        return getattr(obj, name)(*args, **kwargs)

    return call


@polyfill(operator.countOf)
def countOf(a, b, /):  # noqa: N802 (operator's name)
    """``operator.countOf``: items that are ``b`` or equal it."""
    return sum(1 for item in a if item is b or item == b)


@polyfill(operator.indexOf)
def indexOf(a, b, /):  # noqa: N802 (operator's name)
    """``operator.indexOf``: the first item that is ``b`` or equals it."""
    for i, item in enumerate(a):
        if item is b or item == b:
            return i
    raise ValueError("sequence.index(x): x not in sequence")


@polyfill(operator.length_hint)
def length_hint(obj, default=0, /):
    """``operator.length_hint``: ``len(obj)`` where its class has ``__len__`` (a TypeError from it
    passes on to the hint), else its class's ``__length_hint__`` (NotImplemented: ``default``),
    else ``default``. Both found as CPython finds slots: on the class's MRO (``has_slot``)."""
    if not isinstance(default, int):
        raise TypeError(f"'{type(default).__name__}' object cannot be interpreted as an integer")
    if has_slot(type(obj), "__len__"):
        try:
            return len(obj)
        except TypeError:
            pass
    if not has_slot(type(obj), "__length_hint__"):
        return default
    value = type(obj).__length_hint__(obj)
    if value is NotImplemented:
        return default
    if not isinstance(value, int):
        raise TypeError(f"__length_hint__ must be an integer, not {type(value).__name__}")
    if value < 0:
        raise ValueError("__length_hint__() should return >= 0")
    return value


@polyfill(operator.call)
def call(obj, /, *args, **kwargs):
    """``operator.call``: ``obj(*args, **kwargs)``."""
    return obj(*args, **kwargs)
