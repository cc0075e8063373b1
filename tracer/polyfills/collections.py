"""Class methods of the ``collections`` dicts in pure Python."""

from __future__ import annotations

import collections

from .registry import polyfill


@polyfill(collections.defaultdict.fromkeys)
def defaultdict_fromkeys(iterable, value=None):
    """``defaultdict.fromkeys``: ``dict_fromkeys`` on ``defaultdict()`` (no default factory)."""
    return _filled(collections.defaultdict(), iterable, value)


@polyfill(collections.OrderedDict.fromkeys)
def ordereddict_fromkeys(iterable, value=None):
    """``OrderedDict.fromkeys``: ``odict_fromkeys``, the keys in the iterable's order."""
    return _filled(collections.OrderedDict(), iterable, value)


def _filled(d, iterable, value):
    """``d`` with each key of ``iterable`` mapped to ``value``, in order."""
    for key in iterable:
        d[key] = value
    return d
