"""Calls of functions the user marked for the tracer (the registries are ``tracer/markers.py``):
a disabled function breaks the graph at the call, an allowed one becomes one graph node, one with a
constant result is called now, and an ``error_on_graph_break`` region marks the breaks inside it.
Entry point: ``call_marked``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ...markers import (
    REGION_ATTR,
    disabled_by,
    display_name,
    has_constant_result,
    is_allowed,
    patched_by_torch_compile,
)
from ..base import VariableTracker

if TYPE_CHECKING:
    from ...translator import Translator
    from .callables import UserFunctionVariable


def call_marked(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """Trace a call of a marked function, or None when ``vt.fn`` carries no mark."""
    fn = vt.fn
    disabled = disabled_by(fn)
    if disabled is not None and patched_by_torch_compile(fn):
        return vt.clone(fn=fn.__wrapped__, source=None).call_function(tx, args, kwargs)
    if disabled is not None:
        by, reason = disabled
        raise Unsupported(
            "disabled",
            f"{display_name(fn)} is marked with {by}: it runs in Python",
            hint=reason or f"remove {by} to trace it into the graph",
        )
    if is_allowed(fn):
        if vt.self_vt is not None:
            args = [vt.self_vt, *args]
        return tx.output.call_function(fn, tuple(args), kwargs)
    if has_constant_result(fn):
        return _call_for_constant(tx, vt, args, kwargs)
    region = getattr(fn, REGION_ATTR, None)
    if isinstance(region, tuple):
        return _call_in_region(tx, vt, region, args, kwargs)
    return None


def _call_for_constant(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``assume_constant_result``: call the real function now; its result is a constant."""
    values = [*args, *kwargs.values()]
    if not all(a.is_python_constant() for a in values):
        raise Unsupported(
            "constant_result",
            f"{display_name(vt.fn)} (assume_constant_result) called with non-constant arguments",
            hint="call it with Python constants, or drop assume_constant_result",
        )
    real_args = [a.as_python_constant() for a in args]
    if vt.self_vt is not None:
        owner = vt.self_vt
        if owner.source is None or not hasattr(owner, "value"):
            raise Unsupported(
                "constant_result",
                f"{display_name(vt.fn)} is a method of an object made in the trace",
            )
        real_args.insert(0, owner.value)
    result = vt.fn(*real_args, **{k: v.as_python_constant() for k, v in kwargs.items()})
    return tx.fold(result)


def _call_in_region(
    tx: Translator,
    vt: UserFunctionVariable,
    region: tuple[bool, Any],
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Trace the function an ``error_on_graph_break(value)`` decorator wraps, marking a break in
    it (if no inner region marked it first) with ``value``."""
    value, wrapped = region
    inner = vt.clone(fn=wrapped, source=None)
    try:
        return inner.call_function(tx, args, kwargs)
    except Exception as e:  # Unsupported, or the translator's GraphBreak carrying one
        reason = e if isinstance(e, Unsupported) else getattr(e, "reason", None)
        if isinstance(reason, Unsupported) and reason.strict is None:
            reason.strict = value
        raise
