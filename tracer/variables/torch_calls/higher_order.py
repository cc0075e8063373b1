"""torch's higher-order functions (``associative_scan``, ``scan``) called with a function made in
the trace: one graph node whose target carries that function.

transformers' Mamba, under a compiler (``is_torchdynamo_compiling()`` is true while bytegraph
traces), scans with ``associative_scan(combine_fn, (A, B), dim=2, combine_mode="generic")``, where
``combine_fn`` is a ``def`` inside the forward. The node cannot take a function as an argument (FX
writes arguments as literals), so the function is made for real once, at trace time, and bound into
a target referenced by object (``bind_functions``). That is only sound for *pure* functions: no
closure cells, no default values, no global reads and no calls, only arithmetic, indexing and
packing/unpacking of their arguments (``combine_fn`` is ``a_l * a_r, a_r * b_l + b_r``), so that
the function made now computes the same thing on every later call. Anything else is ``Unsupported``.
The node runs ``scans.faster(fn)``: for ``associative_scan``, the same scan without ``torch.vmap``
where the function is elementwise.
"""

from __future__ import annotations

import dis
import functools
import types
from typing import TYPE_CHECKING, Any

from ...exc import Unsupported
from ..functions.callables import NestedFunctionVariable
from .scans import faster

if TYPE_CHECKING:
    from ..base import VariableTracker

#: ``(module, name)`` of the higher-order functions handled here.
HIGHER_ORDER = frozenset(
    {
        ("torch._higher_order_ops.associative_scan", "associative_scan"),
        ("torch._higher_order_ops.scan", "scan"),
    }
)

#: Opcodes a pure function may use: locals, constants, operators, subscripts, packing.
_PURE_OPCODES = frozenset(
    {
        "RESUME",
        "NOP",
        "CACHE",
        "EXTENDED_ARG",
        "LOAD_FAST",
        "LOAD_FAST_CHECK",
        "LOAD_FAST_LOAD_FAST",
        "STORE_FAST",
        "STORE_FAST_STORE_FAST",
        "STORE_FAST_LOAD_FAST",
        "LOAD_CONST",
        "RETURN_VALUE",
        "RETURN_CONST",
        "POP_TOP",
        "COPY",
        "SWAP",
        "UNPACK_SEQUENCE",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BINARY_OP",
        "BINARY_SUBSCR",
        "UNARY_NEGATIVE",
        "UNARY_INVERT",
    }
)


def is_higher_order(fn: Any) -> bool:
    return (getattr(fn, "__module__", None), getattr(fn, "__name__", None)) in HIGHER_ORDER


def bind_functions(
    fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> tuple[Any, list[VariableTracker], dict[str, VariableTracker]]:
    """``fn`` with the functions among its arguments bound in: a new target and the remaining
    arguments (positional functions are taken out of ``args``, keyword ones out of ``kwargs``)."""
    positional = {i: _materialize(a) for i, a in enumerate(args) if _is_function(a)}
    keyword = {k: _materialize(v) for k, v in kwargs.items() if _is_function(v)}
    if not positional and not keyword:
        return fn, args, kwargs
    rest = [a for i, a in enumerate(args) if i not in positional]
    nargs = len(args)
    run = faster(fn)

    @functools.wraps(fn, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    def call(*values: Any, **named: Any) -> Any:
        it = iter(values[: nargs - len(positional)])
        full = [positional[i] if i in positional else next(it) for i in range(nargs)]
        return run(*full, *values[nargs - len(positional) :], **named, **keyword)

    rest_kwargs = {k: v for k, v in kwargs.items() if k not in keyword}
    return call, rest, rest_kwargs


def _is_function(vt: VariableTracker) -> bool:
    return isinstance(vt, NestedFunctionVariable)


def _materialize(vt: NestedFunctionVariable) -> types.FunctionType:
    code = vt.code
    if vt.closure or vt.defaults or vt.kwdefaults or code.co_freevars or code.co_cellvars:
        raise Unsupported(
            "higher_order", f"{code.co_name} made in the trace has a closure or defaults"
        )
    impure = {i.opname for i in dis.get_instructions(code)} - _PURE_OPCODES
    if impure:
        raise Unsupported(
            "higher_order",
            f"{code.co_name} made in the trace uses {', '.join(sorted(impure))}",
            hint="a function passed to a higher-order op may only compute on its arguments",
        )
    return types.FunctionType(code, vt.f_globals, code.co_name)
