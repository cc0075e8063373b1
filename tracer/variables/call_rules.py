"""The call-rule table: what calling a known callable means, keyed by the callable itself.

Each tracker family registers entries for the callables it understands (``torch.Size``,
``torch.is_grad_enabled``, ``torch.set_default_dtype``...); ``dispatch.call`` looks the callee up
once, before the tracker's own ``call_function``, and applies the entry. An entry is one of:

- a handler, ``handler(tx, fn, args, kwargs)``, returning the result, or None where it does not
  take this form of the call (the call then goes on as if there were no entry);
- ``fold=True``: the call is evaluated at trace time on constant arguments (queries of global state
  the guards check, ``torch.device(...)``, ``torch.finfo(...)``): a constant;
- ``effect="python"``: the call changes state outside the graph, so it runs in Python (a break);
  ``effect="none"``: the call has no effect on the program (telemetry) and gives None;
- ``substitute=f``: the Python function ``f`` is traced in its place.

A method bound to an object (``logger.info``) whose function has a handler entry is called through
that handler with the object as its first argument (``operations.call_callable``), as
CPython calls the function.

This module imports no tracker family: families import it to register, ``dispatch`` to apply.

    @call_rule(torch.Size)
    def size(tx, fn, args, kwargs):
        return TupleVariable(dispatch.iterate(tx, args[0]) if args else [], is_size=True)
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import torch

if TYPE_CHECKING:
    from ..translator import Translator
    from .base import VariableTracker

    Handler = Callable[
        [Translator, Any, list[VariableTracker], dict[str, VariableTracker]],
        VariableTracker | None,
    ]

Effect = Literal["python", "none"]


@dataclass(frozen=True)
class CallRule:
    """How a call of ``target`` is traced. Exactly one of ``handler``, ``fold``, ``effect`` and
    ``substitute`` is set."""

    target: Any  #: the callable this entry is for (its key in ``CALL_RULES``)
    handler: Handler | None = None  #: traces the call, or gives None to decline this form of it
    fold: bool = False  #: evaluated at trace time on constant arguments
    effect: Effect | None = None  #: runs in Python (``"python"``) or does nothing (``"none"``)
    substitute: Callable[..., Any] | None = None  #: a Python function traced in its place
    owner: str = ""  #: the module that registered the entry

    def __post_init__(self) -> None:
        given = [self.handler is not None, self.fold, self.effect is not None]
        given.append(self.substitute is not None)
        assert sum(given) == 1, f"a call rule for {self.target!r} needs exactly one kind"
        assert self.effect in (None, "python", "none"), self.effect


#: callable -> its rule.
CALL_RULES: dict[Any, CallRule] = {}


def register(rule: CallRule) -> CallRule:
    """Enter ``rule``, keyed by its target without torch's own wrappers (``lookup``)."""
    key = unwrap_torch(rule.target)
    assert key not in CALL_RULES, f"two call rules for {rule.target!r}"
    CALL_RULES[key] = rule = replace(rule, target=key)
    return rule


def call_rule(*targets: Any) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of calls of each of ``targets``."""

    def decorate(handler: Handler) -> Handler:
        for target in targets:
            register(CallRule(target, handler=handler, owner=handler.__module__))
        return handler

    return decorate


def call_rules_for(
    *targets: Any,
    owner: str,
    fold: bool = False,
    effect: Effect | None = None,
    substitute: Callable[..., Any] | None = None,
) -> None:
    """Register entries without a handler, of kind ``fold``, ``effect`` or ``substitute``."""
    for target in targets:
        register(CallRule(target, fold=fold, effect=effect, substitute=substitute, owner=owner))


def lookup(target: Any) -> CallRule | None:
    """The rule for calls of ``target``, or None (also for unhashable objects). A wrapper torch
    put around one of its callables (``torch._dynamo`` rebinds ``torch.manual_seed`` to one when
    it is imported, before or after the entries were made) answers as the callable it wraps."""
    try:
        rule = CALL_RULES.get(target)
    except TypeError:
        return None
    if rule is None and _wrapper(target):
        inner = unwrap_torch(target)
        if inner is not target:
            return lookup(inner)
    return rule


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def unwrap_torch(fn: Any) -> Any:
    """``fn`` without the wrappers torch's own code made around it (a user's decorator, even one
    made with ``functools.wraps``, is kept: calling it runs the user's code)."""
    while _wrapper(fn) and fn.__code__.co_filename.startswith(_TORCH_DIR):
        fn = fn.__dict__["__wrapped__"]
    return fn


def _wrapper(fn: Any) -> bool:
    """A Python function ``functools.wraps`` made (``__wrapped__`` in its own ``__dict__``), read
    without running code: ``hasattr`` would call a metaclass's ``__getattr__`` of a class."""
    return isinstance(fn, types.FunctionType) and "__wrapped__" in fn.__dict__


# -- builtins --------------------------------------------------------------------------------------
#: What calling a builtin function means where folding it on constants is not enough, called with
#: the trackers of its arguments: ``impl(tx, *args, **kwargs)``. Reached through ``call_builtin``.
BuiltinImpl = Callable[..., "VariableTracker"]
BUILTINS: dict[Any, BuiltinImpl] = {}


def builtin(*fns: Any) -> Callable[[BuiltinImpl], BuiltinImpl]:
    def register(impl: BuiltinImpl) -> BuiltinImpl:
        for fn in fns:
            BUILTINS[fn] = impl
        return impl

    return register
