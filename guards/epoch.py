"""Change detection for module trees: one process-wide counter that every change to any module moves.

``EPOCH[0]`` is bumped by module attribute writes, registrations, ``_apply`` and parameter metadata
changes (hooks installed by ``tracer/variables/modules.py``), and by writes into a module's member
dicts once they are ``WatchedDict``s (``tracer/module_params.py`` swaps them in). While it stands
still, nothing a ``MODULE_TREE`` guard or a cached parameter block read can have changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Moved by every change to any module that could invalidate what was checked or cached about it.
EPOCH = [0]


class WatchedDict(dict):
    """A module's member dict (``_parameters``, ``_buffers``, ``_modules``) that moves ``EPOCH`` on
    every write, before and after it. Guards treat it as the ``dict`` it otherwise is."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return (dict, (dict(self),))  # pickles, copies and deep-copies as the plain dict it was


def _bumping(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def write(self: WatchedDict, *args: Any, **kwargs: Any) -> Any:
        EPOCH[0] += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            EPOCH[0] += 1  # also after: a check racing with the write sees a new epoch

    write.__name__ = write.__qualname__ = name
    return write


for _name in (
    "__setitem__",
    "__delitem__",
    "__ior__",
    "pop",
    "popitem",
    "clear",
    "update",
    "setdefault",
):
    setattr(WatchedDict, _name, _bumping(_name))

#: What a ``TYPE_MATCH`` to ``dict`` accepts.
DICT_TYPES = (dict, WatchedDict)
