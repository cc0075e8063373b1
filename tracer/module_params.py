"""Graph inputs that are parameters of a module tree, fetched once per tree change instead of per call.

A model's graph takes every parameter as an input (so one graph serves every instance of the same
structure). Loading them one source at a time (``self._modules['layers']._modules['3']._parameters
['weight']``) costs a few bytecodes per parameter on every call: the call overhead would grow with the
model. Instead the rewritten code calls one ``ParameterBlock`` per tree root, which returns the
tuple of those parameters, cached per root until ``EPOCH`` moves.

Soundness rests on ``EPOCH`` (``guards/epoch.py``): module attribute writes, registrations and
``_apply`` bump it. Writes straight into a module's member dicts (``module._parameters[name] = t``, as
``torch.func.functional_call`` does) would not, so filling a block also swaps each member dict of
the tree's modules for a ``WatchedDict``: the same dict, bumping on every write, pickled and copied
as a plain dict, accepted wherever a guard expects a dict. A tree whose member dicts cannot be
swapped (not plain dicts) is not cached.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from torch import nn

from ..guards.epoch import EPOCH, WatchedDict
from ..guards.sources import AttrSource, ItemSource, Source

#: Module members whose contents make up a tree; writes into them move ``EPOCH``.
_TABLES = ("_parameters", "_buffers", "_modules")
_ROOT = "R"


def watch_tree(root: nn.Module) -> bool:
    """Swap the member dicts of every module under ``root`` for ``WatchedDict``s; False if one of them
    is not a plain dict (then writes to it cannot be seen)."""
    for module in root.modules():
        members = module.__dict__
        for name in _TABLES:
            table = members.get(name)
            if type(table) is WatchedDict:
                continue
            if type(table) is not dict:
                return False
            members[name] = WatchedDict(table)  # not through __setattr__: no epoch bump
    return True


class ParameterBlock:
    """Returns the parameters one graph reads under the module tree at ``root`` (a tuple, in the
    graph's input order); cached per root object while ``EPOCH`` stands still."""

    __slots__ = ("fetch", "epoch", "valid", "source", "__weakref__")

    def __init__(self, fetch: Callable[[Any], tuple], source: str) -> None:
        self.fetch = fetch  #: root -> the parameters, read through their sources
        self.source = source  #: the expressions ``fetch`` evaluates, for reports
        self.epoch = -1
        self.valid: dict[int, tuple[weakref.ref, tuple]] = {}

    def __call__(self, root: Any) -> tuple:
        if self.epoch == EPOCH[0]:
            hit = self.valid.get(id(root))
            if hit is not None and hit[0]() is root:
                return hit[1]
        return self._refill(root)

    def _refill(self, root: Any) -> tuple:
        epoch = EPOCH[0]
        values = self.fetch(root)
        if isinstance(root, nn.Module) and watch_tree(root) and epoch == EPOCH[0]:
            if epoch != self.epoch or len(self.valid) > 64:
                self.valid, self.epoch = {}, epoch
            key = id(root)
            valid = self.valid
            # the parameters must not outlive their model because of this cache
            ref = weakref.ref(root, lambda _, key=key, valid=valid: valid.pop(key, None))
            valid[key] = (ref, values)
        return values

    def __repr__(self) -> str:
        return f"<ParameterBlock: {self.source.count(',') + 1} parameters>"


def _member(source: Source, table: str) -> tuple[Source, Any] | None:
    """``(module_source, key)`` if ``source`` is ``module_source.<table>[key]``."""
    if (
        isinstance(source, ItemSource)
        and isinstance(source.base, AttrSource)
        and source.base.attr == table
        and type(source.index) is str
    ):
        return source.base.base, source.index
    return None


def tree_root(source: Source, modules: dict[Source, Any]) -> Source | None:
    """The outermost traced module that ``source`` (a parameter) hangs under through ``_modules``
    items only, if any."""
    step = _member(source, "_parameters")
    if step is None:
        return None
    root = None
    node = step[0]
    while node in modules:
        root = node
        step = _member(node, "_modules")
        if step is None:
            break
        node = step[0]
    return root


def _render_under(source: Source, root: Source) -> str:
    if source == root:
        return _ROOT
    if isinstance(source, ItemSource):
        return f"{_render_under(source.base, root)}[{source.index!r}]"
    if isinstance(source, AttrSource):
        return f"{_render_under(source.base, root)}.{source.attr}"
    raise ValueError(f"{source.expr} is not under {root.expr}")


def plan_inputs(
    inputs: list[Source], values: list[Any], modules: dict[Source, Any]
) -> list[Source | tuple[Source, ParameterBlock, list[Source]]]:
    """Group the graph's ``inputs``: the parameters under one traced module tree (two or more) form
    a block, placed where its first parameter was. Returns, in the new input order, single sources
    and ``(root, block, its sources)`` entries."""
    members: dict[Source, list[Source]] = {}
    for source, value in zip(inputs, values, strict=True):
        if isinstance(value, nn.Parameter):
            root = tree_root(source, modules)
            if root is not None:
                members.setdefault(root, []).append(source)
    blocks = {}
    for root, sources in members.items():
        if len(sources) < 2:
            continue
        exprs = ", ".join(_render_under(s, root) for s in sources)
        namespace: dict[str, Any] = {}
        code = compile(
            f"def fetch({_ROOT}):\n    return ({exprs},)\n", "<bytegraph parameters>", "exec"
        )
        exec(code, namespace)
        blocks[root] = ParameterBlock(namespace["fetch"], exprs)
    in_block = {s: root for root in blocks for s in members[root]}
    plan: list[Source | tuple[Source, ParameterBlock, list[Source]]] = []
    for source in inputs:
        root = in_block.get(source)
        if root is None:
            plan.append(source)
        elif source == members[root][0]:
            plan.append((root, blocks[root], members[root]))
    return plan
