"""Functions the user marked for the tracer, by bytegraph's decorators or torch.compiler's.

- disabled (``bytegraph.disable``, ``torch.compiler.disable``, ``torch._dynamo.disable``): the call
  runs in Python, as one graph break at the call; the tracer never walks into the wrapper.
- allowed in the graph (``bytegraph.allow_in_graph``, ``torch.compiler.allow_in_graph``): the
  call becomes one graph node, run on fake tensors while tracing; its body is not traced.
- constant result (``assume_constant_result``, both): called while tracing on constant arguments;
  its result is a constant of the trace, not guarded.
- substitutes (``substitute_in_graph``, both): a call of the original (often a C function) traces
  the registered Python polyfill instead (``substitute_for``; ``dispatch.call`` asks first).
- ``error_on_graph_break(value)`` regions: a break inside the decorated function raises (or not)
  as ``value`` says, whatever the enclosing setting (``Unsupported.strict``).
- ``graph_break()`` (ours, ``torch._dynamo.graph_break``): a call of it is a graph break.
- ``REBUILT``: functions the tracer guards by what they are made of, not by identity.

The facade (``bytegraph/decorators.py``) fills ``ALLOWED``/``CONSTANT_RESULT``/``SUBSTITUTES`` and
sets the attributes below; torch's markers are read from the attributes torch sets and from
``torch._dynamo.trace_rules`` (only once torch has imported it). The tracer's side, what a call of
a marked function becomes, is ``variables/functions.py``: this module imports nothing
of the tracer, so that ``import bytegraph`` loads the tracer only at the first compile.
"""

from __future__ import annotations

import sys
import types
import weakref
from dataclasses import dataclass
from typing import Any


def graph_break() -> None:
    """Force a graph break here (``bytegraph.graph_break()``); does nothing when run in Python."""


def is_graph_break(fn: Any) -> bool:
    """Whether a call of ``fn`` is an explicit graph break: ``graph_break`` or torch's
    ``torch._dynamo.graph_break`` (looked up only once torch has imported Dynamo: before, no code
    holds it)."""
    if fn is graph_break:
        return True
    decorators = sys.modules.get("torch._dynamo.decorators")
    return decorators is not None and fn is getattr(decorators, "graph_break", None)


@dataclass(frozen=True)
class Disabled:
    """What ``bytegraph.disable`` puts on its wrapper as ``DISABLED_ATTR``."""

    fn: Any  #: the function it wraps
    recursive: bool = True
    reason: str | None = None


#: Attribute of a ``bytegraph.disable`` wrapper: a ``Disabled``.
DISABLED_ATTR = "__bytegraph_disabled__"
#: Attribute of an ``error_on_graph_break`` decorated function: ``(value, wrapped function)``.
REGION_ATTR = "__bytegraph_error_on_graph_break__"
#: Functions ``bytegraph.allow_in_graph`` marked (weak: marking keeps nothing alive).
ALLOWED: weakref.WeakSet[Any] = weakref.WeakSet()
#: Functions ``bytegraph.assume_constant_result`` marked.
CONSTANT_RESULT: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True)
class Substitute:
    """What ``substitute_in_graph`` registered for ``original``."""

    original: Any
    polyfill: Any  #: a Python function traced in place of ``original``
    can_constant_fold_through: bool = False


#: Functions guarded by what they are made of (code, globals, the cells the trace reads), not by
#: identity, as torch.compile guards a nested function (``builder``): each is made anew at each
#: call, of its code, cells and defaults (the defaults guarded where a call binds them), with no
#: attributes. ``make_function`` adds what a graph break's code makes again; ``callees.py`` what
#: user code made in a function's body that runs through its code's shared compiled caller.
REBUILT: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()

#: id(original) -> Substitute (ids, so a lookup never calls a user ``__hash__``/``__eq__``).
SUBSTITUTES: dict[int, Substitute] = {}


def substitute_for(target: Any) -> Substitute | None:
    """The registered stand-in for calls of ``target``: ours (``bytegraph.substitute_in_graph``),
    else one user code registered with ``torch.compiler.substitute_in_graph`` (torch's own
    polyfills, from ``torch._dynamo.polyfills``, are not used: bytegraph has its own)."""
    ours = SUBSTITUTES.get(id(target))
    if ours is not None and ours.original is target:
        return ours
    if not isinstance(target, (types.FunctionType, types.BuiltinFunctionType)):
        return None
    functions = sys.modules.get("torch._dynamo.variables.functions")
    polyfilled = getattr(functions, "PolyfilledFunctionVariable", None)
    if polyfilled is None:  # torch.compiler.substitute_in_graph imports it: nothing registered
        return None
    handler = polyfilled._get_polyfill_handlers().get(target)
    polyfill = getattr(handler, "__torch_dynamo_polyfill__", None)
    if polyfill is None or getattr(polyfill, "__module__", "").startswith("torch."):
        return None
    fold = bool(getattr(handler, "__torch_dynamo_can_constant_fold_through__", False))
    return Substitute(target, polyfill, fold)


def is_disabled(fn: Any) -> bool:
    """Whether ``fn`` is a disable wrapper (ours or torch's)."""
    return disabled_by(fn) is not None


def disabled_by(fn: Any) -> tuple[str, str | None] | None:
    """``(decorator name, reason)`` when ``fn`` is a disable wrapper (ours or torch's)."""
    ours = getattr(fn, DISABLED_ATTR, None)
    if isinstance(ours, Disabled):
        return "bytegraph.disable", ours.reason
    if getattr(fn, "_torchdynamo_disable", False) is True:
        return "torch.compiler.disable", getattr(fn, "_torchdynamo_disable_msg", None)
    return None


def patched_by_torch_compile(fn: Any) -> bool:
    """A ``torch._dynamo.disable`` wrapper that torch.compile's first run puts on every torch.optim
    optimizer's ``_init_group`` (its own optimizer tracker runs that method at trace time instead
    of tracing it): not the user's mark, so bytegraph traces the method it wraps."""
    wrapped = getattr(fn, "__wrapped__", None)
    return (
        isinstance(wrapped, types.FunctionType)
        and wrapped.__name__ == "_init_group"
        and (wrapped.__module__ or "").startswith("torch.optim.")
    )


def is_allowed(fn: Any) -> bool:
    if _in(fn, ALLOWED):
        return True
    trace_rules = sys.modules.get("torch._dynamo.trace_rules")
    if trace_rules is None:  # torch.compiler.allow_in_graph imports it: nothing is marked
        return False
    return bool(trace_rules.is_callable_allowed(fn))


def has_constant_result(fn: Any) -> bool:
    return _in(fn, CONSTANT_RESULT) or getattr(fn, "_dynamo_marked_constant", False) is True


def _in(fn: Any, marked: weakref.WeakSet[Any]) -> bool:
    try:
        return fn in marked
    except TypeError:  # not weakly referenceable: never marked
        return False


def display_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
