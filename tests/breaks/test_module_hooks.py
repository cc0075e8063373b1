"""Forward hooks registered and removed inside the compiled function: ``h =
m.register_forward_hook(fn)``, ``m(x)``, ``h.remove()`` (``tracer/variables/modules/
hook_handles.py``). Registration is not traced: each ``register_*hook`` call runs in Python, as one
graph break at the call (a handle's id comes from a process-wide counter; inlined, the
registration once crashed with ``TypeError: cannot create weak reference to 'dict' object``). The
module call after it is traced with the hook, and ``h.remove()`` of that real handle is traced: the
rewritten code calls it after the graph. The identical second call hits the cache.

Until the replay, the trace's view of hook tables is stale, so a hook table read after a traced
removal (a call of a module with hooks, ``m._forward_hooks``, the table reached through the handle)
breaks there; the tests below check each against eager.

torch.compile 2.13 (``torch._dynamo.explain``, 4 calls): 2 graphs and 1 break on each function here
(3 and 2 with two hooks): it runs the function in Python and compiles the module and the hook on
their own. bytegraph breaks as often (once more with two hooks, where the second module call
follows the removals). A hook that is a lambda made in the function is a new object on every call:
bytegraph guards hooks by identity and traces the module call again on each call (torch.compile
does not).
"""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from torch import nn

LIN = torch.nn.Linear(2, 2)
HANDLES: list = []


def doubling_hook(mod, args, out):
    return out * 2


def shifting_pre_hook(mod, args):
    return (args[0] + 1,)


def kwargs_hook(mod, args, kwargs, out):
    return out + len(kwargs)


def _forward_hook(x):
    h = LIN.register_forward_hook(doubling_hook)
    y = LIN(x)
    h.remove()
    return y


def _pre_hook(x):
    h = LIN.register_forward_pre_hook(shifting_pre_hook)
    y = LIN(x)
    h.remove()
    return y


def _hook_with_kwargs(x):
    h = LIN.register_forward_hook(kwargs_hook, with_kwargs=True)
    y = LIN(x)
    h.remove()
    return y


def _removed_in_finally(x):
    h = LIN.register_forward_hook(doubling_hook)
    try:
        return LIN(x)
    finally:
        h.remove()


def _handle_as_context(x):
    with LIN.register_forward_hook(doubling_hook):
        return LIN(x) + 1


def _handle_escapes(x):
    h = LIN.register_forward_hook(doubling_hook)
    HANDLES.append(h)
    return LIN(x)


def _two_hooks(x):
    h1 = LIN.register_forward_pre_hook(shifting_pre_hook)
    h2 = LIN.register_forward_hook(doubling_hook)
    y = LIN(x)
    h1.remove()
    h2.remove()
    return y + LIN(x)


def _hooks_left():
    """What a call leaves registered (then removed: each run starts without hooks)."""
    left = (len(LIN._forward_hooks), len(LIN._forward_pre_hooks))
    for h in HANDLES:
        h.remove()
    HANDLES.clear()
    return left


@pytest.mark.parametrize(
    ("fn", "graphs", "breaks"),
    [
        (_forward_hook, 1, 1),
        (_pre_hook, 1, 1),
        (_hook_with_kwargs, 1, 1),
        (_removed_in_finally, 1, 1),
        (_handle_as_context, 1, 1),
        (_handle_escapes, 1, 1),
        (_two_hooks, 2, 3),
    ],
)
def test_hook_registered_and_removed_in_the_function(fn, graphs, breaks):
    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=graphs, breaks=breaks, calls=3, observe=_hooks_left
    )


# -- a handle registered before the call and removed inside it -----------------------------------
# The removal is replayed after the graph; what reads hook tables after it in the same function
# breaks there (and so sees the removal), whichever table the handle belongs to. ``_register``
# runs before each run (eager and compiled), so each gets its own hook and handle.
OTHER = torch.nn.Linear(2, 2)
REGISTERED: list = []


def _register():
    LIN._forward_hooks.clear()
    REGISTERED[:] = [LIN.register_forward_hook(doubling_hook)]


def _removed(x):
    h = REGISTERED[0]
    y = LIN(x)
    h.remove()
    h.remove()  # a second removal changes nothing, as in eager
    return y


def _call_after_removal(x):
    h = REGISTERED[0]
    y = LIN(x)
    h.remove()
    return y + LIN(x)  # without the hook: the call after the removal breaks


def _table_read_after_removal(x):
    h = REGISTERED[0]
    y = LIN(x)
    h.remove()
    return y, len(LIN._forward_hooks), len(h.hooks_dict_ref())


def _table_read_before_removal(x):
    h = REGISTERED[0]
    table = LIN._forward_hooks  # the live table: its length after the removal is 0
    y = LIN(x)
    h.remove()
    return y, len(table)


def _other_module_after_removal(x):
    h = REGISTERED[0]
    y = LIN(x)
    h.remove()
    return y + OTHER(x)  # no hooks: the removal cannot change its call


def _hook_passed_again_after_removal(x):
    # ``add_one`` is read through the hook table by the module call (``[*_forward_hooks.values()]
    # [0]``) and passed to the registration that breaks after the removal: the rewritten code
    # loads it before replaying the removal, which empties that table
    for h in REGISTERED:
        y = LIN(x)
        h.remove()
        REGISTERED[:] = [LIN.register_forward_hook(doubling_hook)]
    return y


@pytest.mark.parametrize(
    ("fn", "graphs", "breaks"),
    [
        (_hook_passed_again_after_removal, 1, 1),
        (_removed, 1, 0),
        (_call_after_removal, 2, 1),
        (_table_read_after_removal, 1, 1),
        # the live table is guarded like any input dict, its keys (handle ids, new at each
        # registration) too: each call registers anew, so each compiles anew
        (_table_read_before_removal, 3, 3),
        (_other_module_after_removal, 1, 0),
    ],
)
def test_handle_made_before_the_call_is_removed_in_the_graph_replay(fn, graphs, breaks):
    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=graphs,
        breaks=breaks,
        calls=3,
        setup=_register,
        observe=lambda: len(LIN._forward_hooks),
    )
    LIN._forward_hooks.clear()


# -- hooks taking the call's keyword arguments (``with_kwargs=True``), registered beforehand -------
# traced into the graph as ``nn.Module.__call__`` calls them; torch.compile 2.13: 1 graph, 0 breaks.
class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


def _pre_hook_new_arguments(mod, args, kwargs):
    return (args[0] + 1,), {**kwargs, "scale": kwargs.get("scale", 1.0) * 2}


def _pre_hook_changing_kwargs(mod, args, kwargs):
    kwargs["scale"] = 3.0


def _pre_hook_returning_none(mod, args, kwargs):
    return None


def _forward_hook_reading_kwargs(mod, args, kwargs, out):
    return out + kwargs["scale"]


def _hooked(*hooks):
    module = Scaled()
    for kind, hook in hooks:
        register = (
            module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
        )
        register(hook, with_kwargs=True)
    return module


@pytest.mark.parametrize(
    "hooks",
    [
        [("pre", _pre_hook_new_arguments)],
        [("pre", _pre_hook_changing_kwargs)],
        [("forward", _forward_hook_reading_kwargs)],
        [("pre", _pre_hook_changing_kwargs), ("forward", _forward_hook_reading_kwargs)],
        [("pre", _pre_hook_returning_none), ("pre", _pre_hook_new_arguments)],
    ],
)
def test_hooks_with_kwargs_are_traced(hooks):
    module = _hooked(*hooks)

    def fn(x):
        return module(x, scale=0.5)

    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=0, calls=3)
