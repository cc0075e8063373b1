"""Graph inputs that are parameters of a module tree, fetched once per tree change instead of per
call.

A model's graph takes every parameter as an input (so one graph serves every instance of the same
structure). Loading them one source at a time (``self._modules['layers']._modules['3']._parameters
['weight']``) costs a few bytecodes per parameter on every call: the call overhead would grow with
the model. Instead the rewritten code calls one ``ParameterBlock`` per tree root, which returns the
tuple of those parameters, cached per root until ``EPOCH`` moves.

Soundness rests on ``EPOCH`` (``guards/epoch.py``): module attribute writes, registrations and
``_apply`` bump it. Writes straight into a module's member dicts (``module._parameters[name] = t``,
as ``torch.func.functional_call`` does) would not, so filling a block also swaps each member dict of
the tree's modules for a ``WatchedDict``: the same dict, bumping on every write, pickled and copied
as a plain dict, accepted wherever a guard expects a dict. A tree whose member dicts cannot be
swapped (not plain dicts) is not cached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from ....guards.epoch import EPOCH, PerRootCache, WatchedDict
from ....guards.module_tree import MEMBER_TABLES, observe, rebase, tree_root
from ....guards.sources import Source


def watch_tree(root: nn.Module) -> bool:
    """Swap the member dicts of every module under ``root`` for ``WatchedDict``s; False if one of
    them is not a plain dict (then writes to it cannot be seen)."""
    for module in root.modules():
        members = module.__dict__
        for name in MEMBER_TABLES:
            table = members.get(name)
            if type(table) is WatchedDict:
                continue
            if type(table) is not dict:
                return False
            members[name] = WatchedDict(table)  # not through __setattr__: no epoch bump
    return True


class ParameterBlock(PerRootCache):
    """Returns the parameters one graph reads under the module tree at ``root`` (a tuple, in the
    graph's input order); cached per root object while ``EPOCH`` stands still. The cache never
    keeps a dead model's parameters alive (``PerRootCache`` drops an entry with its root)."""

    __slots__ = ("fetch", "source")

    def __init__(self, fetch: Callable[[Any], tuple], source: str) -> None:
        super().__init__()
        self.fetch = fetch  #: root -> the parameters, read through their sources
        self.source = source  #: the expressions ``fetch`` evaluates, for reports

    def __call__(self, root: Any) -> tuple:
        if self.epoch == EPOCH[0]:
            hit = self.valid.get(id(root))
            if hit is not None and hit[0]() is root:
                return hit[1]
        if isinstance(root, nn.Module):
            observe(root)
        epoch = EPOCH[0]
        values = self.fetch(root)
        if isinstance(root, nn.Module) and watch_tree(root):
            self.remember(root, values, epoch)
        return values

    def __repr__(self) -> str:
        return f"<ParameterBlock: {self.source.count(',') + 1} parameters>"


@dataclass(frozen=True)
class BlockInput:
    """Graph inputs ``sources`` (parameters under the module at ``root``), fetched by ``block``."""

    root: Source
    block: ParameterBlock
    sources: tuple[Source, ...]


def plan_inputs(
    inputs: list[Source], values: list[Any], modules: dict[Source, Any]
) -> list[Source | BlockInput]:
    """Group the graph's ``inputs``: the parameters under one traced module tree (two or more) form
    a block, placed where its first parameter was. Returns the inputs in their new order, blocks
    as ``BlockInput``s."""
    members: dict[Source, list[Source]] = {}
    for source, value in zip(inputs, values, strict=True):
        if isinstance(value, nn.Parameter):
            root = tree_root(source, modules, {})
            if root is not None:
                members.setdefault(root, []).append(source)
    blocks: dict[Source, BlockInput] = {}
    for root, sources in members.items():
        if len(sources) < 2:
            continue
        exprs = ", ".join(rebase(s, root).render({"___R": "R"}) for s in sources)
        namespace: dict[str, Any] = {}
        code = compile(f"def fetch(R):\n    return ({exprs},)\n", "<bytegraph parameters>", "exec")
        exec(code, namespace)
        blocks[root] = BlockInput(root, ParameterBlock(namespace["fetch"], exprs), tuple(sources))
    in_block = {s: b for b in blocks.values() for s in b.sources}
    plan: list[Source | BlockInput] = []
    for source in inputs:
        block = in_block.get(source)
        if block is None:
            plan.append(source)
        elif source == block.sources[0]:
            plan.append(block)
    return plan


def input_order(plan: list[Source | BlockInput]) -> list[Source]:
    """The graph's input sources in ``plan``'s order."""
    return [s for step in plan for s in (step.sources if isinstance(step, BlockInput) else (step,))]
