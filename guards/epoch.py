"""Change detection for module trees: one process-wide counter that every change to a module some
cache may have read moves.

``EPOCH[0]`` is bumped by attribute writes, registrations and ``_apply`` of such modules, by
parameter metadata changes (hooks installed by ``variables/modules.py``), and by writes
into a module's member dicts once they are ``WatchedDict``s
(``variables/modules.py`` swaps them
in). While it stands still, nothing a ``MODULE_TREE`` guard or a cached parameter block read can
have changed: both keep their per-model results in a ``PerRootCache``.
"""

from __future__ import annotations

import functools
import types
import weakref
from collections.abc import Callable
from typing import Any

import torch

#: Moved by every change to any module that could invalidate what was checked or cached about it.
EPOCH = [0]
#: Code objects of the wrappers that hide the bumps from torch.compile (``WatchedDict`` writes,
#: ``tracer/variables/modules.py``'s patches): Dynamo folds ``torch.compiler.is_dynamo_compiling()``
#: in them to True and traces torch's own method; bytegraph's tracer, which folds it to True in user
#: code, folds it to False in their frames and traces the bumps (they are bytegraph's, not user
#: code; inlined or compiled on their own, the bumps of a traced call are replayed).
HIDDEN_WRAPPERS: set[types.CodeType] = set()


class WatchedDict(dict):
    """A module's member dict (``_parameters``, ``_buffers``, ``_modules``) that moves ``EPOCH`` on
    every write, before and after it. Guards treat it as the ``dict`` it otherwise is."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return (dict, (dict(self),))  # pickles, copies and deep-copies as the plain dict it was


def unseen_by_dynamo(fn: Callable[..., Any], *, callees: bool = True) -> Callable[..., Any]:
    """``fn``, a piece of bytegraph's run time, as torch.compile's frame hook must see it: not at
    all. The hook runs frames of ``fn`` as Python, never converting them; with ``callees``, what
    they call too.

    bytegraph's run time runs in the code torch.compile runs: a module-change bump wherever that
    code runs ``m.x = v`` in Python (a frame Dynamo skipped, the instruction of a graph break), the
    death callback of a weak reference wherever the collector runs, ``bytegraph.compile`` wherever
    it is called. The hook converted such frames: it traced bytegraph's tables and guarded them,
    and crashed building the variable of a table that a death callback changed meanwhile
    (``dictionary changed size during iteration``). (An entry of a compiled function stays seen:
    torch.compile tracing it traces the user's function.) Without ``callees``, what the frames
    call is converted as it would be without bytegraph (a bump's call of torch's method). Only the
    hook reads the mark: where Dynamo traces a call it inlines as before (``hidden_from_dynamo``'s
    wrappers fold to torch's method there)."""
    hook = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
    if hook is not None and hasattr(hook, "set_code_exec_strategy"):  # torch 2.11 to 2.15 have it
        action = hook._FrameAction
        inner = action.SKIP if callees else action.DEFAULT
        hook.set_code_exec_strategy(fn.__code__, hook._FrameExecStrategy(action.SKIP, inner))
    return fn


def hidden_from_dynamo(
    bumps: Callable[..., Any], torch_fn: Callable[..., Any] | None = None
) -> Callable[..., Any]:
    """``bumps`` (torch's ``torch_fn`` wrapped to move ``EPOCH``, or a registration hook), as
    torch.compile must see it: not at all. These wrappers patch torch process-wide, so Dynamo
    traces them in the functions it compiles; it folds ``torch.compiler.is_dynamo_compiling()`` to
    True, and there the wrapper is ``torch_fn`` (nothing, for a hook): what Dynamo traces, guards
    and breaks on is what it would without bytegraph (it guarded on ``OBSERVED``'s internals, and
    crashed building that guard). bytegraph's tracer folds the call to False in the wrappers'
    frames (``HIDDEN_WRAPPERS``): it traces ``bumps``, whose bumps are replayed."""

    unseen_by_dynamo(bumps, callees=torch_fn is None)

    @functools.wraps(torch_fn or bumps)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_dynamo_compiling():
            return None if torch_fn is None else torch_fn(*args, **kwargs)
        return bumps(*args, **kwargs)

    # NOTE: Dynamo tells ``nn.Module``'s methods apart by code object: one per wrapped method.
    wrapper.__code__ = wrapper.__code__.replace(co_name=(torch_fn or bumps).__name__)
    wrapper.__bytegraph_bumps__ = bumps
    HIDDEN_WRAPPERS.add(wrapper.__code__)
    return wrapper


def _bumping(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def bumps(self: WatchedDict, *args: Any, **kwargs: Any) -> Any:
        EPOCH[0] += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            EPOCH[0] += 1  # also after: a check racing with the write sees a new epoch

    def plain(self: WatchedDict, *args: Any, **kwargs: Any) -> Any:
        """The write as Dynamo traces it in a module it compiles (a buffer update)."""
        return getattr(super(WatchedDict, self), name)(*args, **kwargs)

    plain.__name__ = plain.__qualname__ = name
    return hidden_from_dynamo(bumps, plain)


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


class PerRootCache:
    """Something computed about a root object (a module), kept while ``EPOCH`` stands still.

    ``valid`` maps ``id(root)`` to ``(weak ref to root, value)``; the hot path of a subclass reads
    it inline (``if self.epoch == EPOCH[0]: hit = self.valid.get(id(root))`` and ``hit[0]() is
    root``) and calls ``remember`` after recomputing. An entry goes when its root dies."""

    __slots__ = ("epoch", "valid", "__weakref__")

    def __init__(self) -> None:
        self.epoch = -1
        self.valid: dict[int, tuple[weakref.ref, Any]] = {}

    def remember(self, root: Any, value: Any, epoch: int) -> None:
        """Keep ``value`` for ``root``, computed at ``epoch`` (dropped if a change came
        meanwhile)."""
        if epoch != EPOCH[0]:
            return
        if epoch != self.epoch or len(self.valid) > 64:
            self.valid, self.epoch = {}, epoch
        key, valid = id(root), self.valid
        valid[key] = (weakref.ref(root, functools.partial(_forget_root, valid, key)), value)


@unseen_by_dynamo
def _forget_root(valid: dict[int, Any], key: int, _: weakref.ref) -> None:
    valid.pop(key, None)


@unseen_by_dynamo
def _forget_item(refs: dict[int, weakref.ref], key: int, ref: weakref.ref) -> None:
    if refs.get(key) is ref:
        del refs[key]


class WeakIdentitySet:
    """A set of objects kept by identity, each while it lives. A ``weakref.WeakSet`` hashes and
    compares its items with their class's ``__hash__`` and ``__eq__``: a module's may raise before
    its ``__init__`` is done, build objects (torchmetrics' ``==`` makes a metric) or hash by state
    that changes, after which the module is no longer found in the set."""

    __slots__ = ("_refs", "__weakref__")

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}

    @unseen_by_dynamo
    def add(self, item: Any) -> None:
        key, refs = id(item), self._refs
        ref = refs.get(key)
        if ref is None or ref() is not item:
            refs[key] = weakref.ref(item, functools.partial(_forget_item, refs, key))

    @unseen_by_dynamo
    def __contains__(self, item: Any) -> bool:
        ref = self._refs.get(id(item))
        return ref is not None and ref() is item
