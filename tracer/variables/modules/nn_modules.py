"""``nn.Module`` support: ``NNModuleVariable`` and module-tree guards whose cost does not grow with
the number of parameters.

Inside a trace a module's parameters, buffers and submodules are read through ``_parameters``,
``_buffers`` and ``_modules`` (cheap dict loads in the rewritten code; parameters and buffers become
graph inputs). Calling a module inlines its forward pre-hooks, ``forward`` and forward hooks.

Guards: the trace installs one ``ID_MATCH`` per module and one ``TENSOR_MATCH`` per parameter;
``guards/module_tree.py`` replaces those that only look inside a module tree by one
``MODULE_TREE`` guard, O(1) while ``EPOCH`` does not move.

``EPOCH`` is bumped by every change that could invalidate an absorbed guard: the module's
``__setattr__``/``__delattr__`` (assigning a parameter, submodule, buffer or attribute;
``train()``/``eval()``; ``forward =``), ``register_*`` (the global registration hooks), ``_apply``
(``.to()``, ``.half()``, ``.cuda()``), hook (un)registration (``RemovableHandle``), the container
methods that write ``_modules`` directly, and metadata changes of parameters (``p.data =``,
``p.requires_grad_()``, ``p.requires_grad =``, in-place metadata ops such as ``p.resize_``).
The module methods bump only for a module in ``module_tree.OBSERVED`` (one a validated tree or a
parameter block may have read): building a module that nothing has read, such as a loss made in
``forward`` on every call, invalidates nothing. In-place *value* updates (an optimizer step) bump
nothing. Buffers keep their per-tensor
``TENSOR_MATCH`` in the fast path (they are plain tensors that nothing here hooks). Not detected:
writes straight into the private dicts (``m._parameters['w'] = p``) other than torch's own container
methods, and aten calls (``torch.ops.aten.set_``) on parameters.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ....guards.epoch import EPOCH, hidden_from_dynamo
from ....guards.module_tree import (
    ALL_HOOK_DICTS,
    GLOBAL_HOOK_DICTS,
    MEMBER_TABLES,
    OBSERVED,
    WITH_KWARGS,
)
from ....guards.sources import AttrSource, DictValueSource, ItemSource
from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import DictVariable, ListVariable, TupleVariable
from ..functions.callables import UserFunctionVariable
from ..iterators.iterator_trackers import IteratorVariable
from ..objects.existing_objects import UserObjectVariable, method_source
from . import hook_handles

if TYPE_CHECKING:
    from ...translator import Translator


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

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        module = self.value
        for table in MEMBER_TABLES:
            entries = module.__dict__.get(table, {})
            if name in entries:
                pending = tx.output.side_effects.load_attr(self, name)
                if pending is not None:
                    return pending
                source = ItemSource(AttrSource(self.source, table), name) if self.source else None
                return tx.wrap(entries[name], source)
        if name in ALL_HOOK_DICTS and name in module.__dict__:
            hook_handles.check_fresh_module(tx, module, name)
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
            for (
                table
            ) in MEMBER_TABLES:  # a missing attribute: ``nn.Module.__getattr__`` would look here
                if table in module.__dict__:
                    tx.output.assume_key_absent(AttrSource(self.source, table), name)
        return super().var_getattr(tx, name)

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
        hook_handles.check_fresh_module(tx, module)
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
        if name in _MODULE_CALL_NAMES and getattr(type(self.value), name) is getattr(
            nn.Module, name
        ):
            return self.module_call(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def children_dict(self, tx: Translator) -> VariableTracker:
        """``_modules`` as a guarded ``DictVariable`` (keys guarded, each child by identity)."""
        return tx.wrap(
            self.value._modules, AttrSource(self.source, "_modules") if self.source else None
        )

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
            return self.children_dict(tx).items[key]
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
            return ListVariable(list(self.children_dict(tx).items.values())[key])
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
            entries = tx.wrap(
                getattr(owner.value, table),
                AttrSource(owner.source, table) if owner.source else None,
            )
            for key, vt in entries.items.items():
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

    return hidden_from_dynamo(bumps, fn)


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


_install()
hook_handles.install()


__all__ = ["EPOCH", "NNModuleVariable"]


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
