"""Hooks (un)registered inside the compiled function: ``h = m.register_forward_hook(fn)``,
``m(x)``, ``h.remove()``.

Registration runs in Python, as one graph break at the call: a handle's id is
``RemovableHandle.next_id``, a process-wide counter that an inlined registration would read, and
so guard, anew at every call.

``h.remove()`` on a real handle (one made before the call, or by such a break) is traced: the
replay calls it after the graph (``SideEffects.hook_removals``), where eager calls it in program
order. Until then the trace's view of the tables it changes is stale, so every later read of a
hook table in the same trace is refused (a graph break there, after which Python sees the removal):
a call of a module with hooks (any module: which table the handle belongs to is not guarded), a read
of a module's hook table, and the table object itself reached another way (``h.hooks_dict_ref()``).
A removal from a table the trace already holds a tracker for breaks at the removal.
Entry points: the ``CALL_HOOKS`` that ``install`` registers, ``check_fresh_module`` (module calls
and hook table reads), ``check_fresh_value`` (``builder.wrap``).
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from torch import nn
from torch.utils.hooks import RemovableHandle

from ....guards.module_tree import ALL_HOOK_DICTS, GLOBAL_HOOK_DICTS
from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..functions.callables import CALL_HOOKS, UserFunctionVariable
from ..objects.existing_objects import UserObjectVariable

if TYPE_CHECKING:
    from ...translator import Translator

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
    """Route the (un)registration methods to this module, as ``nn_modules`` patched them (its
    wrappers moving ``EPOCH`` are what a trace reaches)."""
    for owner in (nn.Module, nn.modules.module):
        for name, fn in vars(owner).items():
            if name.lstrip("_").startswith("register") and "hook" in name:
                if isinstance(fn, types.FunctionType):
                    CALL_HOOKS[fn.__code__] = _registration_call
    CALL_HOOKS[RemovableHandle.remove.__code__] = _removal_call
