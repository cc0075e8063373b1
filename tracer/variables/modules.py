"""``nn.Module``: ``NNModuleVariable`` for existing modules and their guards (the module tree,
parameters and buffers as inputs), hooks registered and removed in the trace, a module's
``__dict__`` and member tables as the trace reads and writes them (``ModuleDictVariable``,
``member_table``), and modules made in the trace (``construct_module``). Registers the ``getattr``
rule of module member methods and the ``store_attr`` rule of modules.
"""

from __future__ import annotations

import collections
import enum
import gc
import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.module import (
    _global_buffer_registration_hooks,
    _global_module_registration_hooks,
    _global_parameter_registration_hooks,
)
from torch.utils.hooks import RemovableHandle

from ...guards.epoch import EPOCH, PerRootCache, WatchedDict, hidden_from_dynamo, unseen_by_dynamo
from ...guards.module_tree import (
    ALL_HOOK_DICTS,
    GLOBAL_HOOK_DICTS,
    MEMBER_TABLES,
    OBSERVED,
    WITH_KWARGS,
    observe,
    rebase,
    tree_root,
)
from ...guards.sources import (
    AttrSource,
    DictValueSource,
    FreshSource,
    ItemSource,
    ModuleGlobalSource,
    Source,
)
from ..breaks import deferred_checks
from ..exc import PythonError, Unsupported
from . import dispatch
from .base import IdentityKey, VariableTracker
from .call_rules import call_rule
from .constants import ConstantVariable
from .containers import DictVariable, ListVariable, SetVariable, TupleVariable, mapping_items
from .functions import CALL_HOOKS, MethodCallVariable, UserFunctionVariable
from .iterators import IteratorVariable
from .objects import (
    MISSING,
    InstanceDictVariable,
    UserObjectVariable,
    bind_class_attribute,
    class_attr_source,
    class_function,
    class_vt,
    is_data_descriptor,
    method_source,
    read_descriptor,
    type_lookup,
    write_descriptor,
)
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# Hooks (un)registered inside the compiled function: ``h = m.register_forward_hook(fn)``,
# ``m(x)``, ``h.remove()``.
#
# Registration runs in Python, as one graph break at the call: a handle's id is
# ``RemovableHandle.next_id``, a process-wide counter that an inlined registration would read, and
# so guard, anew at every call.
#
# ``h.remove()`` on a real handle (one made before the call, or by such a break) is traced: the
# replay calls it after the graph (``SideEffects.hook_removals``), where eager calls it in program
# order. Until then the trace's view of the tables it changes is stale, so every later read of a
# hook table in the same trace is refused (a graph break there, after which Python sees the
# removal): a call of a module with hooks (any module: which table the handle belongs to is not
# guarded), a read of a module's hook table, and the table object itself reached another way
# (``h.hooks_dict_ref()``). A removal from a table the trace already holds a tracker for breaks at
# the removal. Entry points: the ``CALL_HOOKS`` that ``install`` registers, ``check_fresh_module``
# (module calls and hook table reads), ``check_fresh_value`` (``builder.wrap``).

#: Attribute names of hook tables (a module's, the extra ones its handles also change, the
#: global ones): values read through them are stale once a removal is replayed
#: (``convert._preload_stale`` loads them before the replay).
HOOK_TABLES = frozenset(
    {
        *ALL_HOOK_DICTS,
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
        "_forward_pre_hooks_with_kwargs",
        *GLOBAL_HOOK_DICTS,
    }
)


def _registration_call(
    tx: Translator,
    fn_vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``m.register_forward_hook(fn)`` and the other registrations: run in Python (one break)."""
    raise Unsupported(
        "module_hooks",
        f"{fn_vt.fn.__qualname__}() registers a hook: it runs in Python",
        hint="register hooks outside the compiled function to keep one graph",
    )


def _removal_call(
    tx: Translator,
    fn_vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``h.remove()`` (also from an inlined ``h.__exit__``) on a real ``RemovableHandle``: replayed
    after the graph; its tables are stale for the rest of the trace."""
    handle = fn_vt.self_vt
    if (
        args
        or kwargs
        or not isinstance(handle, UserObjectVariable)
        or handle.source is None
        or type(handle.value) is not RemovableHandle
    ):
        raise Unsupported(
            "module_hooks",
            "RemovableHandle.remove() of a handle made in the trace: it runs in Python",
            hint="register hooks outside the compiled function to keep one graph",
        )
    value = handle.value
    refs = (value.hooks_dict_ref, *value.extra_dict_ref)
    tables = [t for t in (ref() for ref in refs) if t is not None]
    if any(id(t) in tx.output.wrapped for t in tables):
        raise Unsupported(
            "module_hooks", "a hook table the trace read is changed by RemovableHandle.remove()"
        )
    tx.output.side_effects.remove_hook(handle, tables)
    return ConstantVariable(None)


def check_fresh_module(tx: Translator, module: nn.Module, table: str | None = None) -> None:
    """Refuse to read ``module``'s hook tables (``table``, or all of them and the global ones for
    a call) once a traced ``remove()`` made the trace's view of hook tables stale."""
    if not tx.output.side_effects.hook_removals:
        return
    glob = nn.modules.module
    names = ALL_HOOK_DICTS if table is None else (table,)
    tables = [vars(module).get(name) for name in names]
    if table is None:
        tables += [getattr(glob, name) for name in GLOBAL_HOOK_DICTS]
    if any(tables):
        raise Unsupported(
            "module_hooks",
            f"hooks of {type(module).__name__} read after RemovableHandle.remove() in the trace",
            hint="remove hooks after the last call of the hooked modules",
        )


def check_fresh_value(tx: Translator, value: Any) -> None:
    """``builder.wrap``: a hook table a traced ``remove()`` changed, reached another way."""
    if id(value) in tx.output.side_effects.stale_hook_tables:
        raise Unsupported(
            "module_hooks", "a hook table read after RemovableHandle.remove() in the trace"
        )


_registration_call.accepts_bound = True  # type: ignore[attr-defined]
_removal_call.accepts_bound = True  # type: ignore[attr-defined]


def install() -> None:
    """Route the (un)registration methods to this module, as this module patched them (its
    wrappers moving ``EPOCH`` are what a trace reaches)."""
    for owner in (nn.Module, nn.modules.module):
        for name, fn in vars(owner).items():
            if name.lstrip("_").startswith("register") and "hook" in name:
                if isinstance(fn, types.FunctionType):
                    CALL_HOOKS[fn.__code__] = _registration_call
    CALL_HOOKS[RemovableHandle.remove.__code__] = _removal_call


# Graph inputs that are parameters of a module tree, fetched once per tree change instead of per
# call.
#
# A model's graph takes every parameter as an input (so one graph serves every instance of the same
# structure). Loading them one source at a time (``self._modules['layers']._modules['3']._parameters
# ['weight']``) costs a few bytecodes per parameter on every call: the call overhead would grow with
# the model. Instead the rewritten code calls one ``ParameterBlock`` per tree root, which returns
# the tuple of those parameters, cached per root until ``EPOCH`` moves.
#
# Soundness rests on ``EPOCH`` (``guards/epoch.py``): module attribute writes, registrations and
# ``_apply`` bump it. Writes straight into a module's member dicts (``module._parameters[name] =
# t``, as ``torch.func.functional_call`` does) would not, so filling a block also swaps each member
# dict of the tree's modules for a ``WatchedDict``: the same dict, bumping on every write, pickled
# and copied as a plain dict, accepted wherever a guard expects a dict. The swap is a new object:
# only a dict the module's ``__dict__`` alone holds is swapped, so no code holding the old one sees
# it go stale (``ModuleList.__delitem__`` deletes from the dict it held). A tree whose member dicts
# cannot be swapped (not plain dicts, or held elsewhere) is not cached.

_probe = {"table": {}}
#: ``sys.getrefcount(members[name])`` of a dict that only the dict ``members`` holds
_HELD_ONCE = sys.getrefcount(_probe["table"])
del _probe


def watch_tree(root: nn.Module) -> bool | None:
    """Swap the member dicts of every module under ``root`` for ``WatchedDict``s; False if one of
    them is not a plain dict, None if one is held by more than the module (then writes to it
    cannot be seen)."""
    for module in root.modules():
        members = module.__dict__
        for name in MEMBER_TABLES:
            table = members.get(name)
            if type(table) is WatchedDict:
                continue
            if type(table) is not dict:
                return False
            del table
            if sys.getrefcount(members[name]) != _HELD_ONCE:
                return None
            members[name] = WatchedDict(members[name])  # not through __setattr__: no epoch bump
    return True


class ParameterBlock(PerRootCache):
    """Returns the parameters one graph reads under the module tree at ``root`` (a tuple, in the
    graph's input order); cached per root object while ``EPOCH`` stands still. The cache never
    keeps a dead model's parameters alive (``PerRootCache`` drops an entry with its root)."""

    __slots__ = ("fetch", "source", "collected")

    def __init__(self, fetch: Callable[[Any], tuple], source: str) -> None:
        super().__init__()
        self.fetch = fetch  #: root -> the parameters, read through their sources
        self.source = source  #: the expressions ``fetch`` evaluates, for reports
        self.collected = False  #: the young garbage was collected once for ``watch_tree``

    def __call__(self, root: Any) -> tuple:
        if self.epoch == EPOCH[0]:
            hit = self.valid.get(id(root))
            if hit is not None and hit[0]() is root:
                return hit[1]
        if isinstance(root, nn.Module):
            observe(root)
        epoch = EPOCH[0]
        values = self.fetch(root)
        if isinstance(root, nn.Module) and self._watched(root):
            self.remember(root, values, epoch)
        return values

    def _watched(self, root: nn.Module) -> bool:
        """``watch_tree(root)``; where a member dict is held elsewhere, tried again once after
        collecting the young garbage: the trace that made this block ran with the collector off
        (``driver._no_gc``), and what it left may hold the dicts still."""
        watched = watch_tree(root)
        if watched is not None or self.collected:
            return bool(watched)
        self.collected = True
        gc.collect(1)
        return bool(watch_tree(root))

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


# ``nn.Module`` support: ``NNModuleVariable`` and module-tree guards whose cost does not grow with
# the number of parameters.
#
# Inside a trace a module's parameters, buffers and submodules are read through ``_parameters``,
# ``_buffers`` and ``_modules`` (cheap dict loads in the rewritten code; parameters and buffers
# become graph inputs). Calling a module inlines its forward pre-hooks, ``forward`` and forward
# hooks.
#
# Guards: the trace installs one ``ID_MATCH`` per module and one ``TENSOR_MATCH`` per parameter;
# ``guards/module_tree.py`` replaces those that only look inside a module tree by one
# ``MODULE_TREE`` guard, O(1) while ``EPOCH`` does not move.
#
# ``EPOCH`` is bumped by every change that could invalidate an absorbed guard: the module's
# ``__setattr__``/``__delattr__`` (assigning a parameter, submodule, buffer or attribute;
# ``train()``/``eval()``; ``forward =``), ``register_*`` (the global registration hooks), ``_apply``
# (``.to()``, ``.half()``, ``.cuda()``), hook (un)registration (``RemovableHandle``), the container
# methods that write ``_modules`` directly, and metadata changes of parameters (``p.data =``,
# ``p.requires_grad_()``, ``p.requires_grad =``, in-place metadata ops such as ``p.resize_``). The
# module methods bump only for a module in ``module_tree.OBSERVED`` (one a validated tree or a
# parameter block may have read): building a module that nothing has read, such as a loss made in
# ``forward`` on every call, invalidates nothing. In-place *value* updates (an optimizer step) bump
# nothing. Buffers keep their per-tensor ``TENSOR_MATCH`` in the fast path (they are plain tensors
# that nothing here hooks). Not detected: writes straight into the private dicts
# (``m._parameters['w'] = p``) other than torch's own container methods, and aten calls
# (``torch.ops.aten.set_``) on parameters.

#: ``nn.Module`` methods listing members: ``NNModuleVariable.call_method`` answers them from the
#: guarded member tables (inlining them would need ``yield from`` and sets of tensors).
MODULE_MEMBER_METHODS = frozenset(
    {
        "parameters",
        "buffers",
        "children",
        "modules",
        "named_parameters",
        "named_buffers",
        "named_children",
        "named_modules",
    }
)


@dataclass(eq=False)
class NNModuleVariable(UserObjectVariable):
    """An ``nn.Module``: parameters, buffers and submodules are read through their sources (graph
    inputs and guards); calling it runs pre-hooks, ``forward`` and forward hooks as
    ``nn.Module.__call__``."""

    @property
    def base_setattr(self) -> Any:
        """What replays a store the class's ``__setattr__`` override made in the trace (it files
        members in their tables)."""
        return nn.Module.__setattr__

    @property
    def base_delattr(self) -> Any:
        """What replays a deletion on a module whose stores are replayed with ``base_setattr``."""
        return nn.Module.__delattr__

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        module = self.value
        if self.source is not None and name == "__dict__" and _generic_dict(type(module)):
            return ModuleDictVariable(self, AttrSource(self.source, "__dict__"))
        if self.source is not None and name in FILING_TABLES and name in module.__dict__:
            return self.member_table(tx, name)
        if (
            type_lookup(type(module), "__getattr__") is not nn.Module.__getattr__
            and name not in module.__dict__
            and inspect.getattr_static(module, name, MISSING) is MISSING
        ):  # the class's own ``__getattr__`` runs, and decides before torch's reads the tables
            return super().var_getattr(tx, name)
        if self._found_before_getattr(tx, name):
            return super().var_getattr(tx, name)
        for table in MEMBER_TABLES:
            member = self._member(tx, table, name)
            if member is not None:
                if self.source is not None:
                    tx.output.assume_member_unshadowed(self.source, name)
                return member
        if name in ALL_HOOK_DICTS and name in module.__dict__:
            check_fresh_module(tx, module, name)
            table = module.__dict__[name]
            if self.source is not None:  # the live table, guarded like any input dict
                return tx.wrap(table, AttrSource(self.source, name))
            return DictVariable({k: tx.wrap(v, None) for k, v in table.items()})
        if name == "_update_flat_weights" and isinstance(module, nn.RNNBase):
            if module._weights_have_changed():
                raise Unsupported(
                    "rnn_weights", "an RNN's parameters were replaced since its last call"
                )
            return UserFunctionVariable(
                _no_op
            )  # parameter swaps bump EPOCH: the tree check re-runs
        if (
            self.source is not None
            and name not in module.__dict__
            and inspect.getattr_static(module, name, None) is None
        ):
            # a missing attribute: ``nn.Module.__getattr__`` looks in each table the instance
            # ``__dict__`` holds (``UserObjectVariable`` guards the rest)
            for table in MEMBER_TABLES:
                if held_table(tx, module, table) is not None:
                    continue  # read as a whole: its keys are guarded, the trace's deletions kept
                if table in module.__dict__:
                    tx.output.assume_key_absent(AttrSource(self.source, table), name)
                else:
                    tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), table)
        return super().var_getattr(tx, name)

    def _found_before_getattr(self, tx: Translator, name: str) -> bool:
        """Does CPython's lookup find ``name`` before ``nn.Module.__getattr__`` reads the member
        tables: on the class, or in the instance ``__dict__`` as the trace left it (a write into
        it, or a key the call started with)? ``nn.Module.__setattr__`` keeps members' names out
        of ``__dict__``, but a write into the dict itself puts a name there beside a member's,
        and hides the member. The trace's stores through ``__setattr__`` are found either way
        (their pending value)."""
        effects = tx.output.side_effects
        if effects.is_dict_store(self, name):
            return not effects.is_deleted(self, name)
        if effects.load_attr(self, name) is not None or effects.is_deleted(self, name):
            return False
        return type_lookup(type(self.value), name) is not MISSING or name in self.value.__dict__

    def _member(self, tx: Translator, table: str, name: str) -> VariableTracker | None:
        """``name`` in the member table ``table`` as the trace left it: its pending store, else
        the entry of the table's tracker where the trace read the whole table (a traced
        ``register_buffer`` writes there), else the real entry read through its source; None
        where the table lacks it."""
        entries = self.value.__dict__.get(table, {})
        held = held_table(tx, self.value, table)
        if held is not None and name not in held.items:
            return None  # the held table's keys are guarded: its own deletion, if in ``entries``
        if held is None and name not in entries:
            return None
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        if held is not None:
            return held.items[name]
        source = ItemSource(AttrSource(self.source, table), name) if self.source else None
        return tx.wrap(entries[name], source)

    def member_table(self, tx: Translator, table: str) -> VariableTracker:
        """``module.<table>`` as a whole (``self._buffers``, ``self.__dict__['_parameters']``),
        read through its source: what the trace writes into it is replayed. Refused while the
        trace holds a store to the module that ``nn.Module.__setattr__`` files there (the
        table's tracker would miss it); a later such store is refused (``filing_store``)."""
        real = vars(self.value)[table]
        held = held_table(tx, self.value, table)
        effects = tx.output.side_effects
        for name, value in _pending_stores(tx, self):
            if effects.is_dict_store(self, name):  # written into ``__dict__``: no table's
                continue
            filed = _may_file(value) and not effects.is_deleted(self, name)  # a plain name
            if name in real or (held is not None and name in held.items) or filed:
                raise Unsupported(
                    "module_members",
                    f"{type(self.value).__name__}.{table} read after a store to .{name}",
                    hint="read the attribute itself",
                )
        replaced = replaced_table(tx, self.value, table)
        if replaced is not None:
            return replaced
        tx.output.side_effects.member_tables.add(id(real))
        return tx.wrap(real, AttrSource(self.source, table))

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if inspect.getattr_static(type(self.value), "__call__") is not _MODULE_CALL:
            # the class's own ``__call__`` (GPyTorch's modules) runs, as CPython runs it; its
            # ``super().__call__(...)`` comes back to ``module_call``
            return super().call_function(tx, args, kwargs)
        return self.module_call(tx, args, kwargs)

    def module_call(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        """What ``nn.Module.__call__`` runs: pre-hooks, ``forward``, forward hooks."""
        module = self.value
        _check_hooks(module)
        for table in GLOBAL_HOOK_DICTS:  # still none: one registered later runs at every call
            tx.output.assume_len(ModuleGlobalSource(nn.modules.module.__name__, table), 0)
        check_fresh_module(tx, module)
        call = self._forward(tx)
        for hook, with_kwargs in self._hooks(tx, "_forward_pre_hooks"):
            if with_kwargs:  # ``hook(module, args, kwargs)``: None or ``(args, kwargs)``
                kwargs_vt = DictVariable(dict(kwargs))
                result = hook.call_function(tx, [self, TupleVariable(list(args)), kwargs_vt], {})
                if _is_none(result):
                    kwargs = _keywords(tx, kwargs_vt)  # changed in place, maybe
                    continue
                if not (isinstance(result, TupleVariable) and len(result.items) == 2):
                    raise Unsupported(
                        "python_error", "RuntimeError: forward pre-hook must return None or a tuple"
                    )
                args, kwargs = dispatch.iterate(tx, result.items[0]), result.items[1]
                kwargs = _keywords(tx, kwargs)
            else:
                result = hook.call_function(tx, [self, TupleVariable(list(args))], {})
                if not _is_none(result):
                    args = list(result.items) if isinstance(result, TupleVariable) else [result]
        output = call.call_function(tx, args, kwargs)
        for hook, with_kwargs in self._hooks(tx, "_forward_hooks"):
            extra = [DictVariable(dict(kwargs))] if with_kwargs else []
            result = hook.call_function(tx, [self, TupleVariable(list(args)), *extra, output], {})
            if not _is_none(result):
                output = result
        return output

    def _forward(self, tx: Translator) -> VariableTracker:
        """The ``forward`` that ``__call__`` runs, bound, read through a source where it has one
        (guarded, and what it mutates through its closure is replayed)."""
        forward = _forward_function(self.value)
        class_source = self.class_source()
        if "forward" in vars(self.value):  # ``m.forward = bytegraph.compile(m.forward)``
            found = vars(self.value)["forward"].__func__
            source = None if self.source is None else AttrSource(self.source, "forward")
            source = None if source is None else AttrSource(source, "__func__")
        else:
            found = inspect.getattr_static(self.value, "forward")
            source = None if class_source is None else AttrSource(class_source, "forward")
        if found is not forward and source is not None:  # a compiled function: its original
            source = AttrSource(AttrSource(source, "__bytegraph__"), "fn")
        source = None if source is None else method_source(tx, self, source, forward)
        return UserFunctionVariable(forward, source, self_vt=self)

    def _hooks(self, tx: Translator, table: str) -> list[tuple[VariableTracker, bool]]:
        """The hooks in ``module.<table>``, each read through its own source (by position:
        ``[*L['m']._forward_hooks.values()][0]``; the keys are handle ids, new at each
        registration) so that what a hook reaches (a list in its closure, an object attribute) is
        guarded and its mutations replayed like any input's, each with whether it takes the call's
        keyword arguments. Which hooks are registered, and which take them, is part of the
        module's ``MODULE_TREE`` check (``_hooks_match``)."""
        hooks = getattr(self.value, table)
        if hooks and self.source is None:
            raise Unsupported("module_hooks", f"hooks of a module reached without a source: {self}")
        with_kwargs = vars(self.value).get(WITH_KWARGS[table], {})
        return [
            (tx.wrap(hook, DictValueSource(AttrSource(self.source, table), i)), key in with_kwargs)
            for i, (key, hook) in enumerate(hooks.items())
        ]

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if (
            name
            in (
                "parameters",
                "buffers",
                "children",
                "named_parameters",
                "named_buffers",
                "named_children",
                "modules",
                "named_modules",
            )
            and not args
            and not kwargs
        ):
            return self._members(tx, name)
        if name == "to" and self.source is not None and _keeps_every_tensor(tx, self, args, kwargs):
            return self
        if name in _MODULE_CALL_NAMES and getattr(type(self.value), name) is getattr(
            nn.Module, name
        ):
            return self.module_call(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def children_dict(self, tx: Translator) -> VariableTracker:
        """``_modules`` as a guarded ``DictVariable`` (keys guarded, each child by identity), as
        the trace's pending stores to the module leave it (``_filed_children``)."""
        table = replaced_table(tx, self.value, "_modules") or tx.wrap(
            self.value._modules, AttrSource(self.source, "_modules") if self.source else None
        )
        return _filed_children(tx, self, table)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        cls = type(self.value)
        children = self.children_dict(tx)
        if cls.__iter__ in (nn.Sequential.__iter__, nn.ModuleList.__iter__):
            return list(children.items.values())
        if cls.__iter__ is nn.ModuleDict.__iter__:
            return [ConstantVariable(k) for k in children.items]
        if cls.__iter__ is nn.ParameterList.__iter__ and cls.__len__ is nn.ParameterList.__len__:
            return [self.getitem(tx, i) for i in range(self._parameter_list_size(tx))]
        raise Unsupported("unpack", f"iteration over a {cls.__name__} module")

    def _parameter_list_size(self, tx: Translator) -> int:
        """A ``ParameterList``'s length (``_size``), guarded: ``append`` changes it."""
        source = AttrSource(self.source, "_size") if self.source else None
        return tx.wrap(self.value._size, source).as_python_constant()

    def getitem(self, tx: Translator, key: Any) -> VariableTracker:
        """``seq[i]`` / ``module_list[i]`` / ``module_dict["k"]`` for the standard containers."""
        cls = type(self.value)
        getitem = cls.__getitem__
        if getitem is nn.ModuleDict.__getitem__ and isinstance(key, str):
            children = self.children_dict(tx).items
            if key not in children:  # ``self._modules[key]``'s error
                raise PythonError(KeyError(key))
            return children[key]
        if getitem in (nn.Sequential.__getitem__, nn.ModuleList.__getitem__) and type(key) is int:
            children = list(self.children_dict(tx).items.values())
            if not -len(children) <= key < len(children):
                raise Unsupported("python_error", f"IndexError: index {key} out of range")
            return children[key]
        if getitem is nn.ParameterList.__getitem__ and type(key) is int:
            # ``self[i]`` is ``getattr(self, str(i))``: the parameter, read (and guarded) by name
            size = self._parameter_list_size(tx)
            if not -size <= key < size:
                raise Unsupported("python_error", f"IndexError: index {key} out of range")
            return self.var_getattr(tx, str(key % size))
        if getitem in (nn.Sequential.__getitem__, nn.ModuleList.__getitem__) and type(key) is slice:
            return _sliced_container(tx, self, key)
        raise Unsupported("index", f"indexing a {cls.__name__} module with {key!r}")

    def _members(self, tx: Translator, name: str) -> VariableTracker:
        """``parameters()``, ``named_children()``, ``modules()``...: each member read through
        ``_parameters``, ``_buffers`` or ``_modules`` of its owner, so it is guarded like an
        attribute read. Shared members are listed once, as ``nn.Module`` does."""
        kind = name.removeprefix("named_")
        owners = [("", self)] if kind == "children" else list(_submodules(tx, "", self, set()))
        if kind == "modules":
            return IteratorVariable(
                [
                    TupleVariable([ConstantVariable(p.rstrip(".")), m])
                    if name.startswith("named_")
                    else m
                    for p, m in owners
                ]
            )
        table = {"parameters": "_parameters", "buffers": "_buffers", "children": "_modules"}[kind]
        items: list[VariableTracker] = []
        seen: set[int] = set()
        for prefix, owner in owners:
            entries = (
                owner.children_dict(tx)
                if table == "_modules"
                else tx.wrap(
                    getattr(owner.value, table),
                    AttrSource(owner.source, table) if owner.source else None,
                )
            )
            for key, vt in entries.items.items():
                stored = tx.output.side_effects.load_attr(owner, key)  # a store of the trace
                vt = vt if stored is None else stored
                if id(vt) in seen or (vt.is_python_constant() and vt.as_python_constant() is None):
                    continue
                seen.add(id(vt))
                items.append(
                    TupleVariable([ConstantVariable(prefix + key), vt])
                    if name.startswith("named_")
                    else vt
                )
        return IteratorVariable(items)  # a generator in CPython: ``next(m.parameters())``


#: ``nn.Module.__call__`` (``_wrapped_call_impl``) and the methods it runs: each is ``module_call``
_MODULE_CALL = vars(nn.Module)["__call__"]
_MODULE_CALL_NAMES = ("_wrapped_call_impl", "_call_impl")


def _no_op() -> None:
    return None


# A module's ``__dict__`` and its member tables as the trace reads them.
#
# ``module.__dict__`` (and ``vars(module)``) is a ``ModuleDictVariable``: read key by key, each
# key's presence guarded, or as a whole (``len``, iteration, views), its key list guarded and its
# values wrapped as they are read; a member table found there (``'_buffers' in self.__dict__``,
# ``self.__dict__['_buffers']``) is the same tracker as ``self._buffers``. A write through it of a
# name in no member table, of a value ``nn.Module.__setattr__`` files nowhere, is the module's
# pending attribute store or deletion, which that ``__setattr__`` replays as the dict's write
# (``_plain_name``, ``_filed``). The tables read as a
# whole (``member_table``) are the trace's view of them: what it writes into them
# (``register_buffer``'s ``self._buffers[name] = tensor``, ``_non_persistent_buffers_set.add``) is
# replayed as any input container's change, and later attribute reads see it (``_member``). Stores
# through ``nn.Module.__setattr__`` are pending stores (replayed with ``STORE_ATTR``), kept apart
# from those tables: a store that ``__setattr__`` would file in a table the trace read breaks
# (``filing_store``), and so does reading a table as a whole after such a store, or a key of
# ``__dict__`` the trace stored to in such a way.

#: The tables ``nn.Module.__setattr__`` files members in, besides ``__dict__``.
FILING_TABLES = (*MEMBER_TABLES, "_non_persistent_buffers_set")


def _generic_dict(cls: type) -> bool:
    """Instances of ``cls`` keep their attributes in the ``__dict__`` CPython gives classes
    written in Python, which the generic attribute lookup finds."""
    static = type_lookup(cls, "__dict__")
    return (
        isinstance(static, types.GetSetDescriptorType)
        and static.__name__ == "__dict__"
        and type_lookup(cls, "__getattribute__") is object.__getattribute__
    )


def held_table(tx: Translator, module: nn.Module, table: str) -> VariableTracker | None:
    """The trace's tracker of ``module``'s table ``table`` where it read the table as a whole
    (``member_table``, a member listing) or replaced it (``replaced_table``), else None."""
    replaced = replaced_table(tx, module, table)
    if replaced is not None:
        return replaced
    real = vars(module).get(table)
    known = tx.output.wrapped.get(id(real))
    if real is None or known is None or known[0] is not real:
        return None
    if not isinstance(known[1], (DictVariable, SetVariable)):
        raise Unsupported("module_members", f"{table} of {type(module).__name__} is {known[1]}")
    return known[1]


def replaced_table(tx: Translator, module: nn.Module, table: str) -> VariableTracker | None:
    """The dict the trace stored as ``module.<table>`` (``_renumbered``'s new ``_modules``), which
    every later read of the module's members finds; None where it stored none."""
    known = tx.output.wrapped.get(id(module))
    if known is None or known[0] is not module:
        return None
    effects = tx.output.side_effects
    if effects.is_deleted(known[1], table):
        raise Unsupported("module_members", f"{type(module).__name__}.{table} deleted")
    stored = effects.load_attr(known[1], table)
    if stored is not None and not isinstance(stored, DictVariable):
        raise Unsupported("module_members", f"{type(module).__name__}.{table} is {stored}")
    return stored


def _pending_stores(tx: Translator, obj: VariableTracker) -> list[tuple[str, VariableTracker]]:
    """The names and values of the stores to ``obj`` the trace holds (deletions too)."""
    return [(n, v) for o, n, v in tx.output.side_effects.attr_stores.values() if o is obj]


def _may_file(value: VariableTracker) -> bool:
    """``nn.Module.__setattr__`` may file ``value`` in a member table whatever its name (a
    parameter, a module, a ``Buffer``, a value of unknown type; a deletion)."""
    try:
        cls = value.python_type()
    except Unsupported:
        return True
    return issubclass(cls, (nn.Parameter, nn.Buffer, nn.Module))


def _filed_children(
    tx: Translator, module: NNModuleVariable, table: VariableTracker
) -> VariableTracker:
    """``module._modules`` (its tracker ``table``) with the trace's pending stores to the module
    that ``nn.Module.__setattr__``/``__delattr__`` file there: a module under a new name added
    last, under a child's name in its place; ``None`` under a child's name kept as ``None``; a
    parameter or buffer under a child's name, or a deletion, takes the child out. What else a
    child's name gets raises in eager (the store breaks first where it is a tensor)."""
    effects = tx.output.side_effects
    items = dict(table.items)
    for name, value in _pending_stores(tx, module):
        if effects.is_dict_store(module, name):  # written into ``__dict__``: no table's
            continue
        if effects.is_deleted(module, name):
            items.pop(name, None)
            continue
        try:
            cls = value.python_type()
        except Unsupported:
            cls = object
        if issubclass(cls, nn.Module):
            items[name] = value
        elif name not in items:
            continue
        elif value.is_python_constant() and value.as_python_constant() is None:
            items[name] = value
        elif issubclass(cls, (nn.Parameter, nn.Buffer)):
            del items[name]
        else:
            raise Unsupported("module_members", f"a {cls.__name__} stored as child .{name}")
    return table if items == table.items else DictVariable(items)


def filing_store(tx: Translator, obj: NNModuleVariable, name: str, value: VariableTracker) -> None:
    """Refuse ``module.name = value`` where ``nn.Module.__setattr__`` files it in a table the
    trace read as a whole or changed (its tracker would not see the store, and the replay would
    order them otherwise)."""
    effects = tx.output.side_effects
    for table in FILING_TABLES:
        real = vars(obj.value).get(table)
        held = held_table(tx, obj.value, table)
        if real is None or held is None:
            continue
        read = id(real) in effects.member_tables or id(held) in effects.mutated
        if not read and held is not replaced_table(tx, obj.value, table):
            continue
        if name in real or name in held.items or _may_file(value):
            raise Unsupported(
                "module_members",
                f"{type(obj.value).__name__}.{name} = ... after reading {table} as a whole",
            )


@dataclass(eq=False)
class ModuleDictVariable(VariableTracker):
    """``module.__dict__`` of an existing module. Key reads (``name in d``, ``d.get(name)``,
    ``d[name]``, constant names) guard that key's presence (``KEY_PRESENT``/``KEY_ABSENT``); a
    member table found there is ``module.member_table``. Whole-dict reads (``len``, iteration,
    views, ``copy``) read every key: the key list the call started with is guarded
    (``DICT_KEYS``), the dict is the module's instance dict of the side-effect log
    (``SideEffects.instance_dict``, which the trace's later stores update). Writes of a name in no
    member table are the module's pending attribute stores and deletions (``store``,
    ``delete``). Given back to Python it is the live ``__dict__``."""

    module: NNModuleVariable
    source: Source

    #: the reads of one key, answered by ``lookup``
    KEY_METHODS = ("get", "__getitem__", "__contains__")
    #: the reads of the whole dict, answered by the dict ``whole`` gives
    WHOLE_METHODS = ("keys", "values", "items", "copy", "__len__", "__iter__")
    #: those of them that read its values
    VALUE_METHODS = ("values", "items", "copy")
    #: the writes, each a pending store or deletion per key
    WRITE_METHODS = ("__setitem__", "__delitem__", "update", "setdefault", "pop")

    def python_type(self) -> type:
        return dict

    def _real(self, tx: Translator) -> dict:
        members = vars(self.module.value)
        if id(members) in tx.output.wrapped:  # a dict tracker of its own (a resume's local)
            raise Unsupported("module_dict", f"{self} read beside a tracker of the same dict")
        return members

    def lookup(self, tx: Translator, key: VariableTracker) -> VariableTracker | None:
        """The value of ``key``, None where the module's ``__dict__`` lacks it."""
        name = _key_name(self, key)
        members = self._real(tx)
        stored = [v for n, v in _pending_stores(tx, self.module) if n == name]
        if stored:
            return self._stored(tx, name, stored[0])
        if name not in members:
            tx.output.assume_key_absent(self.source, name)
            return None
        tx.output.assume_key_present(self.source, name)
        return self._value(tx, name)

    def _value(self, tx: Translator, name: str) -> VariableTracker:
        """The value the module had under ``name`` when the call started, read through its
        item source."""
        if name in FILING_TABLES:
            return self.module.member_table(tx, name)
        return tx.wrap(vars(self.module.value)[name], ItemSource(self.source, name))

    def _stored(self, tx: Translator, name: str, value: VariableTracker) -> VariableTracker | None:
        """``__dict__[name]`` after the trace stored ``value`` to ``module.name``: there, unless
        ``nn.Module.__setattr__`` files it in a member table; a deletion leaves no key (the
        member tables and ``__dict__`` never share a name)."""
        effects = tx.output.side_effects
        if effects.is_deleted(self.module, name):
            return None
        if effects.is_dict_store(self.module, name):
            return value
        if _filed(tx, self.module, name, value):
            raise Unsupported("module_dict", f"__dict__[{name!r}] after a store to .{name}")
        return value

    def whole(self, tx: Translator, values: bool = False) -> VariableTracker:
        """The dict as the trace has left it so far: the keys the call started with, in their
        order (guarded), the trace's stores in place or appended, its deletions gone. The values
        the call started with are read (wrapped, guarded) only for ``values``: until then each
        is an ``UnreadValue``, which only the reads of keys meet."""
        effects = tx.output.side_effects

        def make(stored: dict[str, VariableTracker]) -> VariableTracker:
            real = self._real(tx)
            tx.output.assume_keys(self.source, tuple(real))
            items = {n: UnreadValue(n) for n in real}
            for name, value in stored.items():
                items[name] = self._stored(tx, name, value)
            return InstanceDictVariable(items, owner=self.module)

        known = effects.instance_dict(self.module, make)
        unread = [n for n, v in known.items.items() if isinstance(v, UnreadValue)]
        for name in unread if values else ():
            known.items[name] = self._value(tx, name)
        return known

    def store(self, tx: Translator, name: str, value: VariableTracker) -> None:
        """``__dict__[name] = value``: a pending store of the module into its ``__dict__``,
        replayed with ``object.__setattr__``, which writes there for a name the class has no data
        descriptor of (``_plain_name``), whatever the value (a parameter, a module) and whether a
        member table holds the name too (the key then hides the member)."""
        _plain_name(tx, self.module, name, "__setattr__")
        effects = tx.output.side_effects
        if effects.is_deleted(self.module, name):  # the replay would keep the key's place
            raise Unsupported("module_dict", f"__dict__[{name!r}] stored after its deletion")
        effects.store_attr(self.module, name, value, into_dict=True)
        self._written(tx)

    def delete(self, tx: Translator, name: str) -> None:
        """``del __dict__[name]``: ``object.__delattr__``'s deletion, a pending deletion of the
        module from its ``__dict__`` (a member of that name is found again); CPython's KeyError
        where the dict lacks it."""
        _plain_name(tx, self.module, name, "__delattr__")
        if self.lookup(tx, ConstantVariable(name)) is None:
            raise PythonError(KeyError(name))
        had = name in self._real(tx)
        if had:
            tx.output.assume_key_present(self.source, name)
        else:
            tx.output.assume_key_absent(self.source, name)
        tx.output.side_effects.delete_attr(self.module, name, replay=had, into_dict=True)
        self._written(tx)

    def _written(self, tx: Translator) -> None:
        """The replay's writes into ``__dict__`` move ``EPOCH`` after them, as
        ``nn.Module.__setattr__`` would: the module trees that read the module check it again (a
        key may now hide a member, ``MEMBER_UNSHADOWED``)."""
        effects = tx.output.side_effects
        if not any(fn is _bump_observed and args[0] is self.module for fn, args in effects.calls):
            effects.call_after(_bump_observed, [self.module])

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in (*self.KEY_METHODS, *self.WHOLE_METHODS, *self.WRITE_METHODS):
            return MethodCallVariable(self, name)
        raise Unsupported("module_dict", f"{type(self.module.value).__name__}.__dict__.{name}")

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name in self.WHOLE_METHODS:
            method = dispatch.getattr_(tx, self.whole(tx, name in self.VALUE_METHODS), name)
            return dispatch.call(tx, method, args, kwargs)
        if name in self.WRITE_METHODS:
            return _write_method(tx, self, name, args, kwargs)
        if (
            name not in self.KEY_METHODS
            or kwargs
            or not 1 <= len(args) <= (2 if name == "get" else 1)
        ):
            raise Unsupported("module_dict", f"__dict__.{name}() with these arguments")
        found = self.lookup(tx, args[0])
        if name == "__contains__":
            return ConstantVariable(found is not None)
        if found is not None:
            return found
        if name == "get":
            return args[1] if len(args) > 1 else ConstantVariable(None)
        raise PythonError(KeyError(args[0].as_python_constant()))

    def __repr__(self) -> str:
        return f"ModuleDictVariable({type(self.module.value).__name__})"


@dataclass(eq=False)
class UnreadValue(VariableTracker):
    """The value of ``name`` in a module's ``__dict__`` while the trace has read only the keys
    (``ModuleDictVariable.whole``): never an operand, so any use of it breaks."""

    name: str

    def python_type(self) -> type:
        raise Unsupported("module_dict", f"__dict__[{self.name!r}] read unseen")

    def reconstruct(self, cg: Codegen) -> None:
        raise Unsupported("module_dict", f"__dict__[{self.name!r}] rebuilt unseen")


def _key_name(vt: ModuleDictVariable, key: VariableTracker) -> str:
    name = key.as_python_constant() if key.is_python_constant() else None
    if type(name) is not str:
        raise Unsupported("module_dict", f"{vt} indexed by {key}")
    return name


def _filed(tx: Translator, module: NNModuleVariable, name: str, value: VariableTracker) -> bool:
    """Does ``nn.Module.__setattr__`` file ``module.name = value`` in a member table (a value it
    may file, a name in a table, real or as the trace holds it)? Where not, a later call's store
    of the same name is not filed either (the name's absence from each table is guarded)."""
    filed = _may_file(value)
    for table in MEMBER_TABLES:
        real = vars(module.value).get(table)
        held = held_table(tx, module.value, table)
        filed = filed or name in (real or ()) or (held is not None and name in held.items)
        if real is not None and not filed:
            tx.output.assume_key_absent(AttrSource(module.source, table), name)
    return filed


def _plain_name(tx: Translator, module: NNModuleVariable, name: str, hook: str) -> None:
    """Refuse a write of ``module.__dict__[name]`` that ``object.__setattr__`` (``hook``:
    ``__delattr__``) would not make as it is, or that the module's replay would make otherwise:
    a class overriding ``nn.Module``'s ``hook``, a data descriptor ``name`` of the class (the
    class's other attributes are guarded unchanged), a name the trace models apart (a member
    table, a hook dict), a module with no member tables yet."""
    cls = type(module.value)
    if type_lookup(cls, hook) is not getattr(nn.Module, hook):
        raise Unsupported("module_dict", f"{cls.__name__} overrides nn.Module.{hook}")
    if name in FILING_TABLES or name in ALL_HOOK_DICTS:
        raise Unsupported("module_dict", f"__dict__[{name!r}] written")
    if any(table not in vars(module.value) for table in MEMBER_TABLES):
        raise Unsupported("module_dict", f"a write to the __dict__ of {cls.__name__} before init")
    static = type_lookup(cls, name)
    cls_source = class_vt(tx, module).source
    if cls_source is None or (static is not MISSING and is_data_descriptor(static)):
        raise Unsupported("module_dict", f"__dict__[{name!r}] beside {cls.__name__}.{name}")
    if static is MISSING:
        tx.output.assume_class_lacks(cls_source, (name,))
    else:
        tx.wrap(static, class_attr_source(cls_source, cls, name))


def _write_method(
    tx: Translator,
    vt: ModuleDictVariable,
    name: str,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``d[k] = v``, ``del d[k]``, ``d.update(...)``, ``d.setdefault(k[, v])``, ``d.pop(k[, v])``
    on a module's ``__dict__``, key by key as CPython's dict methods write."""
    none = ConstantVariable(None)
    if name == "update" and len(args) <= 1:
        items = mapping_items(tx, args[0]) if args else {}
        items.update(kwargs)
        for key, value in items.items():
            vt.store(tx, _key_name(vt, ConstantVariable(key)), value)
        return none
    if kwargs or not 1 <= len(args) <= 2:
        raise Unsupported("module_dict", f"__dict__.{name}() with these arguments")
    key = _key_name(vt, args[0])
    if name == "__setitem__" and len(args) == 2:
        vt.store(tx, key, args[1])
        return none
    if name == "__delitem__" and len(args) == 1:
        vt.delete(tx, key)
        return none
    found = vt.lookup(tx, args[0])
    default = args[1] if len(args) == 2 else None
    if name == "setdefault":
        if found is None:
            found = none if default is None else default
            vt.store(tx, key, found)
        return found
    if name == "pop":
        if found is None:
            if default is None:
                raise PythonError(KeyError(key))
            return default
        vt.delete(tx, key)
        return found
    raise Unsupported("module_dict", f"__dict__.{name}() with these arguments")


@dispatch.rule("contains", ModuleDictVariable)
def _module_dict_contains(tx: Translator, vt: ModuleDictVariable, key: VariableTracker) -> bool:
    return vt.lookup(tx, key) is not None


@dispatch.rule("getitem", ModuleDictVariable)
def _module_dict_getitem(
    tx: Translator, vt: ModuleDictVariable, key: VariableTracker
) -> VariableTracker:
    return vt.call_method(tx, "__getitem__", [key], {})


@dispatch.rule("setitem", ModuleDictVariable)
def _module_dict_setitem(
    tx: Translator, vt: ModuleDictVariable, key: VariableTracker, value: VariableTracker
) -> None:
    vt.store(tx, _key_name(vt, key), value)


@dispatch.rule("delitem", ModuleDictVariable)
def _module_dict_delitem(tx: Translator, vt: ModuleDictVariable, key: VariableTracker) -> None:
    vt.delete(tx, _key_name(vt, key))


@dispatch.rule("get_iter", ModuleDictVariable)
def _module_dict_iter(tx: Translator, vt: ModuleDictVariable) -> VariableTracker:
    return dispatch.get_iter(tx, vt.whole(tx))


@dispatch.rule("iterate", ModuleDictVariable)
def _module_dict_items(tx: Translator, vt: ModuleDictVariable) -> list[VariableTracker]:
    return dispatch.iterate(tx, vt.whole(tx))


@dispatch.rule("truth", ModuleDictVariable)
def _module_dict_truth(tx: Translator, vt: ModuleDictVariable) -> bool:
    return dispatch.truth(tx, vt.whole(tx))


def _submodules(tx: Translator, prefix: str, module: NNModuleVariable, seen: set[int]):
    """(prefix, module) for ``module`` and every descendant, in ``named_modules`` order, each
    once."""
    if id(module.value) in seen:
        return
    seen.add(id(module.value))
    yield prefix, module
    for key, child in module.children_dict(tx).items.items():
        if isinstance(child, NNModuleVariable):
            yield from _submodules(tx, f"{prefix}{key}.", child, seen)


def _forward_function(module: nn.Module) -> types.FunctionType:
    """The Python function ``module.__call__`` would run as ``forward``; a forward compiled by
    bytegraph (monkeypatched on the instance or the class) is inlined as its original function."""
    forward = inspect.getattr_static(module, "forward")
    if isinstance(forward, types.MethodType) and forward.__self__ is module:
        forward = forward.__func__  # ``model.forward = bytegraph.compile(model.forward)``
    elif "forward" in module.__dict__:
        raise Unsupported(
            "module_forward", f"{type(module).__name__}.forward is set on the instance"
        )
    state = getattr(forward, "__bytegraph__", None)
    if state is not None:
        forward = state.fn
    if not isinstance(forward, types.FunctionType):
        raise Unsupported(
            "module_forward", f"{type(module).__name__}.forward is not a Python function"
        )
    return forward


def _check_hooks(module: nn.Module) -> None:
    """Hooks the inliner cannot honour exactly raise ``Unsupported`` (the module then runs in
    Python)."""
    if not all(name in vars(module) for name in ALL_HOOK_DICTS):
        raise Unsupported("module_init", f"{type(module).__name__} never ran nn.Module.__init__")
    if any(getattr(nn.modules.module, name) for name in GLOBAL_HOOK_DICTS):
        raise Unsupported("module_hooks", "global module hooks are registered")
    if module._backward_hooks or module._backward_pre_hooks:
        raise Unsupported(
            "module_hooks",
            f"{type(module).__name__} has backward hooks",
            hint="compile the module itself (bytegraph.compile(model)) to keep hooks",
        )
    if module._forward_hooks_always_called:  # run even when forward raises
        raise Unsupported("module_hooks", f"{type(module).__name__} has always-called hooks")


def _is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


def _keywords(tx: Translator, vt: VariableTracker) -> dict[str, VariableTracker]:
    """The keyword arguments a pre-hook gives the call (a dict of string keys)."""
    if not (isinstance(vt, DictVariable) and all(type(k) is str for k in vt.items)):
        raise Unsupported("module_hooks", f"a forward pre-hook gave keyword arguments {vt}")
    return dict(vt.items)


# -- change detection ------------------------------------------------------------------------------


def _bump_observed(module: nn.Module, *_: Any) -> None:
    """A registration hook: a parameter, buffer or submodule was registered on ``module``."""
    if module in OBSERVED:
        EPOCH[0] += 1


@call_rule(_bump_observed)
def _registration_bump(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """bytegraph's registration hook, which a traced ``register_buffer`` calls: the replay calls
    it after the writes the trace recorded (eager calls it just before its own), so the module
    trees that read the module are checked again."""
    module = args[0] if args else None
    if not isinstance(module, NNModuleVariable) or module.source is None:
        raise Unsupported("module_members", f"a registration on {module}")
    tx.output.side_effects.call_after(_bump_observed, [module])
    return ConstantVariable(None)


def _bumping(
    fn: Callable[..., Any],
    observed_only: bool = False,
    unchanged: Callable[..., bool] | None = None,
) -> Callable[..., Any]:
    """``fn`` moving ``EPOCH`` before and after; with ``observed_only`` (a method of ``nn.Module``
    or a container of modules) only when its ``self`` is in ``OBSERVED``, and not when
    ``unchanged(*args)`` says the call changes nothing."""

    def bumps(*args: Any, **kwargs: Any) -> Any:
        if observed_only and args[0] not in OBSERVED:
            try:
                return fn(*args, **kwargs)
            finally:
                if args[0] in OBSERVED:  # a check (another thread) began to read it meanwhile
                    EPOCH[0] += 1
        if unchanged is not None and unchanged(*args, **kwargs):
            return fn(*args, **kwargs)
        EPOCH[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            EPOCH[0] += 1  # also after: a check racing with the change sees a new epoch

    bumps.method, bumps.observed_only, bumps.unchanged = fn, observed_only, unchanged
    return hidden_from_dynamo(bumps, fn)


@unseen_by_dynamo
def _rewrites_same_value(module: nn.Module, name: str, value: Any) -> bool:
    """Does ``module.name = value`` store what is already there (the same object, or an equal int,
    bool or string, or a tuple of them)? Swin sets its window sizes in every ``forward``: such a
    write leaves every check as it was. (A write racing with another thread's write to the same
    attribute is a data race in the program; it may then go unseen.)"""
    members = vars(module)
    for table in MEMBER_TABLES:
        entries = members.get(table)
        if entries is not None and name in entries:
            return entries[name] is value
    if isinstance(value, (nn.Module, torch.Tensor)):
        return False  # one held in ``__dict__`` would now be registered: a change of structure
    return name in members and _same_value(members[name], value)


def _same_value(old: Any, new: Any) -> bool:
    if old is new:
        return True
    if type(old) is not type(new):
        return False
    if type(new) in (int, bool, str):
        return old == new
    return (
        type(new) is tuple
        and len(old) == len(new)
        and all(_same_value(a, b) for a, b in zip(old, new, strict=True))
    )


#: In-place ops that change a tensor's metadata (not its values): hooked on ``nn.Parameter``.
_METADATA_OPS = (
    "requires_grad_",
    "set_",
    "resize_",
    "resize_as_",
    "as_strided_",
    "t_",
    "transpose_",
    "squeeze_",
    "unsqueeze_",
    "swapdims_",
    "swapaxes_",
    "detach_",
)
_METADATA_ATTRS = frozenset({"data", "requires_grad", "__class__"})


def _parameter_setattr(self: nn.Parameter, name: str, value: Any) -> None:
    if name in _METADATA_ATTRS:
        EPOCH[0] += 1
    object.__setattr__(self, name, value)


def _install() -> None:
    """Install the hooks that bump ``EPOCH`` (once per process)."""
    if getattr(nn.Module.__setattr__, "__bytegraph_bumps__", False):
        return
    module_methods: list[tuple[type, str]] = [
        (nn.Module, "__setattr__"),
        (nn.Module, "__delattr__"),
        (nn.Module, "_apply"),
        (nn.ModuleList, "insert"),
        (nn.Sequential, "insert"),
        (nn.ModuleDict, "__delitem__"),
        (nn.ModuleDict, "clear"),
    ]
    for cls, name in module_methods:
        same = _rewrites_same_value if name == "__setattr__" else None
        setattr(cls, name, _bumping(getattr(cls, name), observed_only=True, unchanged=same))
    others = [
        (torch.utils.hooks.RemovableHandle, "__init__"),  # hook tables of any module
        (torch.utils.hooks.RemovableHandle, "remove"),
        *[(nn.Parameter, op) for op in _METADATA_OPS],
    ]
    for cls, name in others:
        setattr(cls, name, _bumping(getattr(cls, name)))
    nn.Parameter.__setattr__ = _parameter_setattr
    glob = nn.modules.module
    bump_observed = hidden_from_dynamo(_bump_observed)
    glob.register_module_buffer_registration_hook(bump_observed)
    glob.register_module_module_registration_hook(bump_observed)
    glob.register_module_parameter_registration_hook(bump_observed)


def _container_bumping_call(
    tx: Translator, fn: VariableTracker, args: list[VariableTracker], kwargs: dict
) -> VariableTracker | None:
    """A method of torch's module containers wrapped to move ``EPOCH`` where its ``self`` is
    observed (``ModuleList.insert``, ``Sequential.insert``, ``ModuleDict.clear``): the method
    itself inlined (its writes into ``_modules`` are the held table's), and ``EPOCH`` moved after
    the replay, as the wrapper moves it (asking ``OBSERVED`` in the trace broke). None (the
    wrapper inlined as usual) for the other wrapped methods."""
    bumps = getattr(fn, "fn", None)  # ``_bumping``'s function, which says what it wraps
    if not getattr(bumps, "observed_only", False) or bumps.unchanged is not None:
        return None
    method = bumps.method
    if getattr(method, "__module__", None) != nn.modules.container.__name__:
        return None
    if kwargs or not args or not isinstance(args[0], NNModuleVariable) or args[0].source is None:
        return None
    result = UserFunctionVariable(method).call_function(tx, args, kwargs)
    tx.output.side_effects.call_after(_bump_observed, [args[0]])
    return result


_install()
install()
#: torch's ``nn.Module.__delattr__`` (``_install`` wraps it to move ``EPOCH``)
_MODULE_DELATTR = nn.Module.__delattr__.__bytegraph_bumps__.method
CALL_HOOKS[nn.ModuleList.insert.__bytegraph_bumps__.__code__] = _container_bumping_call


__all__ = ["EPOCH", "NNModuleVariable"]


# ``module[key] = value`` and ``del module[key]`` (``nn.ModuleDict``'s, a user container's).


@dispatch.rule("setitem", NNModuleVariable)
def _module_setitem(
    tx: Translator, obj: NNModuleVariable, key: VariableTracker, value: VariableTracker
) -> None:
    """The class's ``__setitem__`` inlined: ``ModuleDict``'s is ``add_module``, whose checks
    raise as eager's, whose write into ``_modules`` is the member table's (``member_table``)
    and whose registration hooks move ``EPOCH`` after the replay."""
    obj.call_method(tx, "__setitem__", [key, value], {})


@dispatch.rule("delitem", NNModuleVariable)
def _module_delitem(tx: Translator, obj: NNModuleVariable, key: VariableTracker) -> None:
    """``ModuleDict.__delitem__``, ``del self._modules[key]``: the member table's deletion (a
    missing key its KeyError), ``EPOCH`` moved after the replay as the method's wrapper moves it
    (``_install``); ``ModuleList``'s and ``Sequential``'s, ``_renumbering_delitem``; another
    class's ``__delitem__`` inlined."""
    delitem = type_lookup(obj.python_type(), "__delitem__")
    if delitem in _DELETED_NAMES:
        _renumbering_delitem(tx, obj, _DELETED_NAMES[delitem], key)
        return
    if delitem is not nn.ModuleDict.__delitem__:
        obj.call_method(tx, "__delitem__", [key], {})
        return
    if obj.source is None:  # a module made in the trace: its table has no source to read
        raise Unsupported("delitem", f"del {obj}[...]")
    dispatch.delitem(tx, obj.member_table(tx, "_modules"), key)
    tx.output.side_effects.call_after(_bump_observed, [obj])


def _module_list_names(self: nn.ModuleList, idx: Any) -> list[str]:
    """The names ``ModuleList.__delitem__`` deletes for ``idx`` (torch 2.11 to 2.15)."""
    if isinstance(idx, slice):
        return [str(k) for k in range(len(self._modules))[idx]]
    return [self._get_abs_string_index(idx)]


def _sequential_names(self: nn.Sequential, idx: Any) -> list[str]:
    """The names ``Sequential.__delitem__`` deletes for ``idx`` (torch 2.11 to 2.15)."""
    if isinstance(idx, slice):
        return list(self._modules.keys())[idx]
    return [self._get_item_by_idx(self._modules.keys(), idx)]


def _renumbered(self: nn.Module) -> None:
    """How ``ModuleList.__delitem__`` and ``Sequential.__delitem__`` end (torch 2.11 to 2.15): a
    new ``_modules``, the members left numbered from 0 (the old dict keeps its old names)."""
    str_indices = [str(i) for i in range(len(self._modules))]
    self._modules = collections.OrderedDict(zip(str_indices, self._modules.values(), strict=True))


#: ``__delitem__`` of the containers that renumber their members -> the names it deletes
_DELETED_NAMES: dict[Any, Callable[..., list[str]]] = {
    nn.ModuleList.__delitem__: _module_list_names,
    nn.Sequential.__delitem__: _sequential_names,
}


def _renumbering_delitem(
    tx: Translator, obj: NNModuleVariable, names: Callable[..., list[str]], key: VariableTracker
) -> None:
    """``del seq[key]`` on a ``ModuleList`` or ``Sequential`` (``pop`` too) as torch runs it:
    ``delattr(self, name)`` for each name at ``key`` (``names``: CPython's error where the index
    is wrong), which ``nn.Module.__delattr__`` takes out of its table, the ``_modules`` dict the
    module holds (in place: code holding that dict sees the deletion), then ``_renumbered``: a
    new ``OrderedDict`` stored as ``_modules``, which the trace's later reads of the module's
    members find (``held_table``). ``EPOCH`` moved after the replay as ``__delattr__``'s wrapper
    moves it (``_install``). A class overriding ``__delattr__``/``__setattr__``, or a container
    made in the trace, breaks."""
    cls = obj.python_type()
    overridden = [
        hook
        for hook in ("__delattr__", "__setattr__")
        if type_lookup(cls, hook) is not getattr(nn.Module, hook)
    ]
    if obj.source is None or overridden:
        raise Unsupported("delitem", f"del {cls.__name__}[...] ({overridden or 'made here'})")
    found = UserFunctionVariable(names).call_function(tx, [obj, key], {})
    for name in dispatch.iterate(tx, found):
        UserFunctionVariable(_MODULE_DELATTR).call_function(tx, [obj, name], {})
    UserFunctionVariable(_renumbered).call_function(tx, [obj], {})
    effects = tx.output.side_effects
    if not any(fn is _bump_observed and args[0] is obj for fn, args in effects.calls):
        effects.call_after(_bump_observed, [obj])


# ``nn.Module`` instances created during the trace.
#
# ``construct_module(tx, cls_vt, args, kwargs)`` is ``cls(...)`` for a module class. Two cases:
#
# * a class of ``torch`` itself (``nn.CrossEntropyLoss()``, ``nn.Linear(4, 3)``) built from
#   constants: the module is built for real now and rebuilt by the rewritten code before the graph
#   runs (``SideEffects.prologue``), see ``_build_torch_module``. Like everything in ``torch``'s
#   namespaces, its classes are constants of the trace: nothing reached from it is guarded;
# * a user subclass of ``nn.Module`` (its ``__init__``, if any, chaining through user classes to
#   ``nn.Module.__init__``): a ``NewModuleVariable``, whose ``__init__`` is inlined like any new
#   object's and whose class attributes are guarded through its class, see ``_trace_user_module``.
#
# Anything else (a ``__setattr__`` override, a ``torch`` base class with its own ``__init__`` under
# a user one, non-constant arguments to a ``torch`` module) raises ``Unsupported``.


def construct_module(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a subclass ``cls`` of ``nn.Module``."""
    cls = cls_vt.as_python_constant()
    if all(_is_torch_class(k) for k in cls.__mro__ if k is not object):
        return _build_torch_module(tx, cls, args, kwargs)
    return _trace_user_module(tx, cls_vt, args, kwargs)


#: Types of constructor arguments a ``torch.nn`` module may be rebuilt from (immutable values,
#: loaded as constants by the rewritten code).
_MODULE_ARG_TYPES = (int, float, bool, str, type(None), torch.dtype, torch.device, enum.Enum)
_CLASS_HOOKS = ("__init__", "__new__", "__setattr__", "__getattr__", "__getattribute__", "__del__")
#: Substrings of the names of ops that draw from the random number generator.
_RANDOM_OPS = (
    "rand",
    "dropout",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "gumbel",
    "rrelu",
    "fractional",
)


def _build_torch_module(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``nn.CrossEntropyLoss()``, ``nn.Linear(4, 3)`` in a traced function: a module of a class
    whose construction is ``torch.nn``'s own code, from constant arguments. It is built now (the
    random number generator is put back as it was), traced as a module reached through a
    ``FreshSource``, and the rewritten code builds the same module *before the graph runs*
    (``SideEffects.prologue``): a fresh one on every call, with fresh parameters, as eager.
    Building it earlier than eager does is only visible through the random number generator:
    refused when the constructor draws from it and the graph already drew before this point.
    A construction that draws nothing has no other effect eager shows while no global
    registration hook of the user's is set (``_NO_USER_HOOKS``, refused otherwise: the hooks
    would run here, in the trace): the rewritten code leaves it out when it never reads the
    module (``SideEffects.emit_prologue``)."""
    if _user_registration_hooks():
        raise Unsupported(
            "module_hooks",
            f"creating a {cls.__name__} module runs global registration hooks: it runs in Python",
            hint="register the hooks after the compiled call, or build the module outside it",
        )
    effects = tx.output.side_effects
    held = _held_modules(cls, args, kwargs)
    if held is not None:
        build, modules, sources = held
        name = effects.new_name("__bg_fresh")
        effects.add_prologue((name, build, tuple(sources), {}), unread=_NO_USER_HOOKS)
        return tx.wrap(build(*modules), FreshSource(name))
    values = [_module_arg(cls, a) for a in args]
    kwvalues = {k: _module_arg(cls, v) for k, v in kwargs.items()}
    tx.output.check_prologue_state(f"creating a {cls.__name__} module")
    module, drew = _build_keeping_rng(cls, values, kwvalues)
    if drew and any(_is_random(node) for node in tx.output.graph.nodes):
        raise Unsupported(
            "rng_order",
            f"{cls.__name__}() draws random numbers after random ops of the graph",
            hint="create the module before the random ops (or outside the compiled function)",
        )
    # built by the rewritten code before the graph runs: a rerun builds another, which only
    # shows when its __init__ draws random numbers
    if drew:
        deferred_checks.note_prologue(tx.output, f"creating a {cls.__name__} module")
    name = effects.new_name("__bg_fresh")
    unread = None if drew else _NO_USER_HOOKS
    effects.add_prologue((name, cls, tuple(values), kwvalues), unread=unread)
    return tx.wrap(module, FreshSource(name))


def _user_registration_hooks() -> bool:
    """Is a global registration hook set (``register_module_buffer_registration_hook``...)
    other than bytegraph's own (``_bump_observed``, which does nothing for a module just built)?
    Building a module runs them, on each member it registers."""
    return any(
        getattr(hook, "__wrapped__", hook) is not _bump_observed
        for table in _REGISTRATION_HOOKS
        for hook in table.values()
    )


_REGISTRATION_HOOKS = (
    _global_buffer_registration_hooks,
    _global_module_registration_hooks,
    _global_parameter_registration_hooks,
)
#: The assumption under which building a module that draws no random numbers has no effect
#: eager shows: no user's global registration hook is set (guarded where a construction is left
#: out, ``SideEffects.add_prologue``).
_NO_USER_HOOKS = (("registration_hooks",), _user_registration_hooks, False)


def _held_modules(
    cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> tuple[Callable[..., nn.Module], list[nn.Module], list[Source]] | None:
    """``nn.Sequential(*self.layers)``, ``nn.ModuleList([self.a, self.b])``: a container whose
    constructor only registers the modules of the call it is given (existing ones, or ones built
    earlier in the prologue), so it is built from them now, and by the prologue from the same
    modules, read where the trace found them. Returns how to build it, the modules and their
    sources; None for any other construction."""
    if kwargs:
        return None
    if cls is nn.Sequential:
        build, items = cls, args
    elif (
        cls is nn.ModuleList
        and len(args) == 1
        and isinstance(args[0], (ListVariable, TupleVariable))
    ):
        build, items = _module_list, args[0].items
    else:
        return None
    if not items or not all(isinstance(i, NNModuleVariable) and i.source for i in items):
        return None
    return build, [i.value for i in items], [i.source for i in items]


def _module_list(*modules: nn.Module) -> nn.ModuleList:
    return nn.ModuleList(modules)


def _sequential_of(names: tuple[str, ...], *modules: nn.Module) -> nn.Sequential:
    """A ``Sequential`` of ``modules`` registered under ``names`` (what its slice is)."""
    return nn.Sequential(collections.OrderedDict(zip(names, modules, strict=True)))


def _sliced_container(tx: Translator, container: NNModuleVariable, key: slice) -> VariableTracker:
    """``seq[i:j]`` / ``module_list[i:j]``: a new container of the same class holding the sliced
    members (a ``Sequential`` keeps their names, a ``ModuleList`` numbers them from 0), as
    ``__getitem__`` builds it. Built now from the members and by the rewritten code before the
    graph runs from the same members, read where the trace found them (a new object per call)."""
    cls = type(container.value)
    children = container.children_dict(tx).items
    names, members = list(children)[key], list(children.values())[key]
    if cls not in (nn.Sequential, nn.ModuleList) or not all(
        isinstance(m, NNModuleVariable) and m.source for m in members
    ):
        raise Unsupported("index", f"slicing a {cls.__name__} module builds it in Python")
    if _user_registration_hooks():
        raise Unsupported(
            "module_hooks",
            f"slicing a {cls.__name__} runs global registration hooks: it runs in Python",
        )
    build, lead = (_sequential_of, (tuple(names),)) if cls is nn.Sequential else (_module_list, ())
    name = tx.output.side_effects.new_name("__bg_fresh")
    sources = tuple(m.source for m in members)
    tx.output.side_effects.add_prologue((name, build, (*lead, *sources), {}), unread=_NO_USER_HOOKS)
    return tx.wrap(build(*lead, *(m.value for m in members)), FreshSource(name))


def _is_torch_class(cls: type) -> bool:
    return cls.__module__ == "torch" or cls.__module__.startswith("torch.")


def _module_arg(cls: type, vt: VariableTracker) -> Any:
    value = vt.as_python_constant() if vt.is_python_constant() else MISSING
    if not _immutable(value):
        raise Unsupported(
            "new_object", f"creating a {cls.__name__} module from non-constant argument {vt}"
        )
    return value


def _immutable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return isinstance(value, _MODULE_ARG_TYPES) and value is not MISSING


def _build_keeping_rng(
    cls: type, args: list[Any], kwargs: dict[str, Any]
) -> tuple[nn.Module, bool]:
    """Build the module now; put the random number generators back. Returns whether it drew."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    cpu_state = torch.random.get_rng_state()
    cuda_states = [torch.cuda.get_rng_state(d) for d in cuda]
    try:
        module = cls(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (runs again in Python, where it raises for the user)
        raise Unsupported(
            "python_error", f"{cls.__name__}() raised {type(e).__name__}: {e}"
        ) from None
    finally:
        drew = not torch.equal(cpu_state, torch.random.get_rng_state()) or any(
            not torch.equal(s, torch.cuda.get_rng_state(d))
            for d, s in zip(cuda, cuda_states, strict=True)
        )
        torch.random.set_rng_state(cpu_state)
        for d, s in zip(cuda, cuda_states, strict=True):
            torch.cuda.set_rng_state(s, d)
    return module, drew


def _is_random(node: torch.fx.Node) -> bool:
    if not node.op.startswith("call_"):
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return any(word in str(name).lower() for word in _RANDOM_OPS)


# -- user subclasses with their own __init__ ------------------------------------------------------
def _blank_module(cls: type) -> nn.Module:
    """An instance of ``cls`` on which only ``nn.Module.__init__`` ran (an empty module)."""
    module = object.__new__(cls)
    nn.Module.__init__(module)
    return module


def _trace_user_module(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """A user subclass whose ``__init__`` chains (through user classes only) to
    ``nn.Module.__init__``: that one ran already on the blank instance, the user's are inlined."""
    cls = cls_vt.as_python_constant()
    first_torch = next(k for k in cls.__mro__ if _is_torch_class(k))
    user = [k for k in cls.__mro__ if not _is_torch_class(k) and k is not object]
    why = None
    if any(set(vars(k)) & (set(_CLASS_HOOKS) - {"__init__"}) for k in user):
        why = "a user class of its MRO defines __new__, __setattr__, __getattr__ or __del__"
    elif first_torch is not nn.Module:
        why = f"it derives from {first_torch.__name__}, whose __init__ is not traced"
    elif type(cls).__call__ is not type.__call__:
        why = "its metaclass defines __call__"
    if why is not None:
        raise Unsupported(
            "new_object",
            f"creating a {cls.__name__} module: {why}",
            hint="create the module outside the compiled function (e.g. in __init__)",
        )
    effects = tx.output.side_effects
    module = NewModuleVariable(_blank_module(cls), cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(module)
    init = type_lookup(cls, "__init__")
    if init is vars(nn.Module)["__init__"]:  # no __init__ of its own: the blank is the module
        if args or kwargs:
            raise Unsupported("python_error", f"TypeError: {cls.__name__}() takes no arguments")
        module.init_called = True
        return module
    method = (
        tx.wrap(init, class_attr_source(cls_vt.source, cls, "__init__")) if cls_vt.source else None
    )
    fn = UserFunctionVariable(init, getattr(method, "source", None), self_vt=module)
    result = fn.call_function(tx, args, kwargs)
    if not (result.is_python_constant() and result.as_python_constant() is None):
        raise Unsupported("python_error", f"TypeError: {cls.__name__}.__init__ returned a value")
    if not module.init_called:  # eager fails later, on the first use of the module's tables
        raise Unsupported("new_module", f"{cls.__name__}.__init__ does not call super().__init__()")
    return module


@dataclass(eq=False)
class NewModuleVariable(NNModuleVariable):
    """A user ``nn.Module`` created during the trace. ``value`` is a blank instance (only
    ``nn.Module.__init__`` ran on it) used for its type, its empty tables and its class
    attributes; what the inlined ``__init__`` stores lives in ``side_effects`` and is replayed with
    ``STORE_ATTR`` (``nn.Module.__setattr__`` files submodules and buffers) if the module
    escapes. Listing members (``parameters()``, iteration, indexing) is refused: the blank tables
    do not show the pending stores."""

    value: Any = None
    source: Source | None = None
    cls_vt: VariableTracker | None = None
    name: str = ""
    #: set when ``super().__init__()`` reaches ``nn.Module.__init__``, which then does nothing
    #: (it ran on ``value``): see ``SuperVariable``
    init_called: bool = False
    #: stores are replayed with ``STORE_ATTR``, not ``object.__setattr__``
    raw_replay = False

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """Pending stores, then the blank instance's own scalars (``training``), then the class
        (guarded through ``cls_vt``); ``nn.Module.__getattr__`` would only look in the (empty)
        member tables."""
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        own = self.value.__dict__
        if name in own:
            if not isinstance(own[name], (bool, int, float, str, type(None))):
                raise Unsupported("new_module", f"{name} of a module made in the trace")
            return ConstantVariable(own[name])
        cls = self.python_type()
        if tx.output.side_effects.class_attr_changed(cls, name):
            raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned in the trace")
        static = type_lookup(cls, name)
        if static is MISSING:
            hook = type_lookup(cls, "__getattr__")
            if self.cls_vt.source is not None and hook is nn.Module.__getattr__:
                # torch's ``__getattr__`` finds nothing: the trace's stores are all it files in
                # the (blank) member tables, and ``load_attr`` found none
                tx.output.assume_class_lacks(self.cls_vt.source, (name,))
                tx.output.assume_identity(AttrSource(self.cls_vt.source, "__getattr__"), hook)
                raise PythonError(
                    AttributeError(
                        f"'{cls.__name__}' object has no attribute '{name}'",
                        name=name,
                        obj=IdentityKey(self, self.value),
                    )
                )
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        source = class_attr_source(self.cls_vt.source, cls, name)
        if is_data_descriptor(static):
            return read_descriptor(tx, self, self.cls_vt, static, source)
        return bind_class_attribute(tx, self, self.cls_vt, static, name, source)

    def class_source(self) -> Source | None:
        return self.cls_vt.source

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        if name in _REFUSED_METHODS:
            raise Unsupported("new_module", f"{name}() of a module made in the trace")
        return super().call_method(tx, name, args, kwargs)

    def children_dict(self, tx: Translator) -> VariableTracker:
        raise Unsupported("new_module", "the submodules of a module made in the trace")

    def create(self, cg: Codegen) -> None:
        cg.load_const(_blank_module)
        cg.load_const(self.python_type())
        cg.call_function(1)

    def reconstruct(self, cg: Codegen) -> None:
        if self.name not in cg.new_objects:
            raise AssertionError(f"module {self.name} made in the trace used before it is created")
        cg.load_local(self.name)

    def __repr__(self) -> str:
        return f"NewModuleVariable({self.python_type().__name__})"


#: Methods refused on a module made in the trace: its members are not in guarded tables (the
#: listings), and what changes or reads them all is not modelled for it.
_REFUSED_METHODS = MODULE_MEMBER_METHODS | {"state_dict", "apply", "to", "train", "eval"}


@dispatch.rule("getattr", NNModuleVariable)
def _module_attribute(tx: Translator, obj: NNModuleVariable, name: str) -> VariableTracker:
    """``nn.Module``'s own member methods (``m.parameters``...) where the class keeps them: a
    method call the tracer knows; every other attribute through the module's own protocol."""
    if name in MODULE_MEMBER_METHODS and getattr(type(obj.value), name, None) is getattr(
        torch.nn.Module, name
    ):
        return MethodCallVariable(obj, name)
    if name == "to" and type_lookup(type(obj.value), name) is nn.Module.to:
        return MethodCallVariable(obj, name)  # ``call_method`` inlines it unless it keeps all
    return obj.var_getattr(tx, name)


def _keeps_every_tensor(
    tx: Translator,
    module: NNModuleVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> bool:
    """Does ``module.to(...)`` leave every parameter, buffer and gradient of its tree as it is
    (each already on that device, with that dtype)? Then eager's ``_apply`` only sets each
    parameter's ``.data`` to itself: the call is the module, with no effect. Soft-MoE calls
    ``expert.to(self.device)`` in ``forward``; inlined, that ``_apply`` breaks. Decided on the
    tensors as the trace holds them (guarded as read), and on the switches that make ``_apply``
    replace parameters instead (``torch.__future__``)."""
    if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        return False
    try:
        device, dtype, _, memory_format = torch._C._nn._parse_to(
            *[a.as_python_constant() for a in args],
            **{k: v.as_python_constant() for k, v in kwargs.items()},
        )
    except (TypeError, RuntimeError):
        return False  # eager's error comes from the inlined method
    if memory_format is not None or (dtype is not None and not dtype.is_floating_point):
        return False  # an integer dtype raises, a complex one warns: the inlined method does
    for switch in ("_overwrite_module_params_on_conversion", "_swap_module_params_on_conversion"):
        flag = tx.wrap(
            getattr(torch.__future__, switch), ModuleGlobalSource("torch.__future__", switch)
        )
        if flag.as_python_constant():
            return False
    for _, owner in _submodules(tx, "", module, set()):
        if type_lookup(owner.python_type(), "_apply") is not nn.Module._apply:
            return False
    params = module._members(tx, "parameters").items
    grads = [dispatch.getattr_(tx, p, "grad") for p in params]
    tensors = [
        *params,
        *module._members(tx, "buffers").items,
        *(g for g in grads if not _is_none(g)),
    ]
    for vt in tensors:
        if not isinstance(vt, TensorVariable) or vt.cls not in (torch.Tensor, nn.Parameter):
            return False
        fake = vt.example
        if device is not None and fake.device != device:
            return False
        if (
            dtype is not None
            and (fake.is_floating_point() or fake.is_complex())
            and fake.dtype != dtype
        ):
            return False
    return True


@dispatch.rule("store_attr", NNModuleVariable)
def _store_module_attribute(
    tx: Translator, obj: NNModuleVariable, name: str, value: VariableTracker
) -> None:
    """``module.name = value``: recorded and replayed with ``STORE_ATTR`` (``nn.Module.__setattr__``
    then files parameters, buffers and submodules); a property of the module class runs its
    setter. A class's own ``__setattr__`` in Python is inlined: what it passes on to
    ``nn.Module.__setattr__`` is the store (``_module_setattr_call``)."""
    cls = obj.python_type()
    if obj.source is None and not tx.output.side_effects.is_new(obj):
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")
    hook = type_lookup(cls, "__setattr__")
    if hook is nn.Module.__setattr__:
        _module_store(tx, obj, name, value)
    elif isinstance(hook, types.FunctionType):
        fn = class_function(tx, class_vt(tx, obj), "__setattr__", hook, obj)
        fn.call_function(tx, [ConstantVariable(name), value], {})
    else:
        raise Unsupported("store_attr", f"{cls.__name__}.__setattr__ is not Python code")


def _module_setattr_call(
    tx: Translator, fn: VariableTracker, args: list[VariableTracker], kwargs: dict
) -> VariableTracker | None:
    """``nn.Module.__setattr__(module, name, value)`` called explicitly (``super().__setattr__``
    in a module class's override): the store itself, replayed the same way, past the override
    (``NNModuleVariable.base_setattr``). None (inlined as usual) for anything else."""
    self_vt = getattr(fn, "self_vt", None)
    args = [self_vt, *args] if self_vt is not None else args
    if kwargs or len(args) != 3 or not isinstance(args[0], NNModuleVariable):
        return None
    obj, name, value = args
    if not (name.is_python_constant() and type(name.as_python_constant()) is str):
        return None
    if obj.source is None and not tx.output.side_effects.is_new(obj):
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")
    raw = type_lookup(obj.python_type(), "__setattr__") is not nn.Module.__setattr__
    _module_store(tx, obj, name.as_python_constant(), value, raw=raw)
    return ConstantVariable(None)


_module_setattr_call.accepts_bound = True  # type: ignore[attr-defined]
CALL_HOOKS[nn.Module.__setattr__.__code__] = _module_setattr_call


def _module_store(
    tx: Translator, obj: NNModuleVariable, name: str, value: VariableTracker, raw: bool = False
) -> None:
    """The store ``nn.Module.__setattr__`` makes; ``raw``: replayed with it, not ``STORE_ATTR``
    (the class's override ran in the trace)."""
    cls = obj.python_type()
    static = type_lookup(cls, name)
    cls_source = class_vt(tx, obj).source
    source = class_attr_source(cls_source, cls, name) if static is not MISSING else None
    registered = (
        issubclass(value.python_type(), (nn.Parameter, nn.Module)) if _typed(value) else True
    )
    if static is not MISSING and is_data_descriptor(static) and not registered:
        if write_descriptor(tx, obj, static, name, value, source):
            return
    if _files_submodule(tx, obj, name, value):
        UserFunctionVariable(_store_submodule).call_function(
            tx, [obj, ConstantVariable(name), value], {}
        )
        return
    filing_store(tx, obj, name, value)
    if _hidden_member(tx, obj, name):
        raise Unsupported("store_attr", f".{name} is a member hidden by a key of __dict__")
    if tx.output.side_effects.is_deleted(obj, name):  # its replay would keep the key's place
        raise Unsupported("store_attr", f".{name} stored after its deletion from __dict__")
    tx.output.side_effects.store_attr(obj, name, value, raw=raw)


def _files_submodule(
    tx: Translator, obj: NNModuleVariable, name: str, value: VariableTracker
) -> bool:
    """Does ``module.name = value`` file a submodule in the ``_modules`` table the trace holds
    (``ModuleList.__setitem__``'s ``setattr`` after its ``len``), with nothing else for
    ``nn.Module.__setattr__`` to take the name out of? Then the store is the table's write
    (``_store_submodule``): a pending store would be missed by the table's tracker. The name's
    absence from ``__dict__`` and the other tables is guarded; a pending store to the module of
    that name, or one that may file a member, keeps the old way (the replay would order the two
    otherwise)."""
    if obj.source is None or not _typed(value) or not issubclass(value.python_type(), nn.Module):
        return False
    if held_table(tx, obj.value, "_modules") is None:
        return False
    if any(n == name or _may_file(v) for n, v in _pending_stores(tx, obj)):
        return False
    tables = {"__dict__": vars(obj.value)}
    tables.update((t, vars(obj.value).get(t)) for t in FILING_TABLES if t != "_modules")
    for table, real in tables.items():
        held = held_table(tx, obj.value, table) if table != "__dict__" else None
        if real is None or name in (held.items if held is not None else real):
            return False
    for table in tables:
        if table == "__dict__" or held_table(tx, obj.value, table) is None:
            tx.output.assume_key_absent(AttrSource(obj.source, table), name)
    return True


def _store_submodule(self: nn.Module, name: str, value: nn.Module) -> None:
    """What ``nn.Module.__setattr__`` does with a submodule whose name is in no other member
    table (``_files_submodule``): the global registration hooks, then the ``_modules`` entry."""
    for hook in _global_module_registration_hooks.values():
        output = hook(self, name, value)
        if output is not None:
            value = output
    self._modules[name] = value


def _hidden_member(tx: Translator, obj: NNModuleVariable, name: str) -> bool:
    """Is ``name`` a member (in a member table) and a key of the module's ``__dict__`` as the
    trace left it? ``nn.Module.__setattr__`` may then write the table and leave the key, which
    goes on hiding what it wrote: not modelled."""
    effects = tx.output.side_effects
    if effects.is_deleted(obj, name):
        return False
    if effects.is_dict_store(obj, name):
        in_dict = True
    else:
        in_dict = effects.load_attr(obj, name) is None and name in vars(obj.value)
    if not in_dict:
        return False
    for table in MEMBER_TABLES:
        held = held_table(tx, obj.value, table)
        if name in vars(obj.value).get(table, ()) or (held is not None and name in held.items):
            return True
    return False


def _typed(vt: VariableTracker) -> bool:
    try:
        vt.python_type()
    except Unsupported:
        return False
    return True


# ``torch.func.functional_call(module, parameters_and_buffers, args, kwargs)``: the module's call
# with the given tensors standing in for its parameters and buffers, as torch's
# ``_reparametrize_module`` swaps them in and back out around the call. Each stand-in is a pending
# store on its owner (``SideEffects.store_attr``), which the module's attribute reads and member
# listings see, and which is forgotten after the call: the module is left as it was. Refused (the
# call runs in Python): a module made in the trace, keys that are not existing parameters or
# buffers, ``strict=True``, dictionaries that repeat a key, and a forward assigning a member that
# a stand-in replaces (torch's swap back would undo it); its other effects stay. With
# ``tie_weights=True`` (the default) a tensor given for one of several names of the same tensor
# stands for all of them; every parameter and buffer of the module tree is guarded by identity,
# so that which names are tied holds for the calls the trace serves.


@call_rule(torch.func.functional_call)
def _functional_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    try:
        bound = inspect.signature(torch.func.functional_call).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported("functional_call", f"functional_call(): {e}") from None
    bound.apply_defaults()
    module = bound.arguments["module"]
    if not isinstance(module, NNModuleVariable) or module.source is None:
        raise Unsupported("functional_call", f"functional_call() of {module}")
    options = {}
    for name in ("tie_weights", "strict"):
        value = bound.arguments[name]
        options[name] = value.as_python_constant() if isinstance(value, VariableTracker) else value
    if options["strict"] is not False:
        raise Unsupported("functional_call", "functional_call(strict=True)")
    stand_ins = _stand_ins(bound.arguments["parameter_and_buffer_dicts"])
    call_args = bound.arguments["args"]
    if call_args is None or _is_none(call_args):
        call_args = []
    elif isinstance(call_args, TupleVariable):
        call_args = list(call_args.items)
    else:
        call_args = [call_args]
    call_kwargs = bound.arguments["kwargs"]
    call_kwargs = {} if call_kwargs is None or _is_none(call_kwargs) else _keywords(tx, call_kwargs)
    targets = _reparametrized(tx, module, stand_ins, options["tie_weights"])
    effects = tx.output.side_effects
    if any(
        id(owner) in effects.instance_dicts or effects.is_dict_store(owner, name)
        for owner, name, _ in targets
    ):
        raise Unsupported("functional_call", "functional_call() of a module whose vars() is used")
    previous = [effects.attr_stores.get((id(owner), name)) for owner, name, _ in targets]
    for owner, name, value in targets:
        effects.store_attr(owner, name, value)
    try:
        result = module.call_function(tx, call_args, call_kwargs)
        for owner, name, value in targets:
            if effects.load_attr(owner, name) is not value:
                raise Unsupported(
                    "functional_call", f"the forward under functional_call() assigns {name}"
                )
    finally:  # also where the forward raises to a handler of the trace, as torch's swap back
        for (owner, name, _), entry in zip(targets, previous, strict=True):
            if (id(owner), name) in effects.attr_stores or entry is not None:
                effects.forget_store(owner, name, entry)
    return result


def _stand_ins(dicts: VariableTracker) -> dict[str, VariableTracker]:
    """The given name -> tensor entries, merged (a key in two dictionaries is refused)."""
    parts = dicts.items if isinstance(dicts, (TupleVariable, ListVariable)) else [dicts]
    merged: dict[str, VariableTracker] = {}
    for part in parts:
        if not isinstance(part, DictVariable) or type(part.items) is not dict:
            raise Unsupported("functional_call", f"functional_call() with {part} as a dict")
        for key, value in part.items.items():
            key = getattr(key, "value", key)
            if not isinstance(key, str) or key in merged:
                raise Unsupported("functional_call", f"functional_call() with the key {key!r}")
            merged[key] = value
    return merged


def _reparametrized(
    tx: Translator, module: NNModuleVariable, stand_ins: dict[str, VariableTracker], tie: bool
) -> list[tuple[NNModuleVariable, str, VariableTracker]]:
    """``(owner, name, stand-in)`` for each member the call replaces (tied names included)."""
    names: dict[int, list[str]] = {}  # id of a member tensor -> its names in the tree
    real = module.value
    members = [
        *real.named_parameters(remove_duplicate=False),
        *real.named_buffers(remove_duplicate=False),
    ]
    for path, tensor in members:
        names.setdefault(id(tensor), []).append(path)
        owner, name = _member_owner(tx, module, path)
        table = "_parameters" if name in owner.value._parameters else "_buffers"
        tx.output.assume_identity(ItemSource(AttrSource(owner.source, table), name), tensor)
    by_path = {path: tensor for path, tensor in members}
    chosen: dict[str, VariableTracker] = {}
    for path, value in stand_ins.items():
        if path not in by_path:
            raise Unsupported("functional_call", f"functional_call() with the key {path!r}")
        tied = names[id(by_path[path])] if tie else [path]
        for other in tied:
            if chosen.get(other, value) is not value:
                raise Unsupported("functional_call", f"functional_call() ties {path} and {other}")
            chosen[other] = value
    return [(*_member_owner(tx, module, path), value) for path, value in chosen.items()]


def _member_owner(tx: Translator, module: NNModuleVariable, path: str) -> tuple[Any, str]:
    """The tracker of the submodule holding ``path``'s member, and the member's name there."""
    *prefix, name = path.split(".")
    owner = module
    for part in prefix:
        owner = owner.var_getattr(tx, part)
        if not isinstance(owner, NNModuleVariable) or owner.source is None:
            raise Unsupported("functional_call", f"functional_call(): {path} is not reached")
    return owner, name
