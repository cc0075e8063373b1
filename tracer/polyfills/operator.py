"""``operator``'s callable factories in pure Python (each returns a closure doing the same), and
``countOf``/``indexOf``."""

from __future__ import annotations

import operator

from .registry import polyfill


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
