"""Lowerings: one function per ATen op, turning its (lowered) arguments into a ``TensorValue``.

``@lowering(aten.add)`` registers a function for every overload of a packet (or one overload). It
is called as ``fn(ctx, *args, **kwargs)``: a ``LoweringContext`` (the graph and the fx node being
lowered), then the node's lowered arguments. ``make_pointwise("add")`` builds the common
elementwise lowering: broadcast, type promotion (computed with torch's own ``elementwise_dtypes``
on the node's meta values), fp16/bf16 math in fp32, result in the node's dtype. A lowering raises
``NotLowerable`` when it cannot express the call; the graph then runs that node with torch
(``graph.GraphLowering.fallback``). Views live in ``lower_views.py``, reductions in
``lower_reductions.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND as KIND
from torch._prims_common import elementwise_dtypes

from . import config
from .indexing import Expr, as_expr
from .ir import LazyValue, TensorValue
from .ops import BOOL_RESULT, FLOAT_ONLY, has_template, ops, register_dtype

if TYPE_CHECKING:
    from .graph import GraphLowering

aten = torch.ops.aten
prims = torch.ops.prims

LOWERINGS: dict[Any, Callable[..., Any]] = {}


class NotLowerable(Exception):
    """This call cannot be lowered: run it with torch instead (the reason is logged)."""


def lowering(*targets: Any, **variant: Any) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the lowering of each target (an OpOverload, or a whole packet). Keyword
    arguments name the variant these targets are (``@lowering(aten.rsub, swap=True)``): ``fn``
    receives them, so one function serves a family of ops without asking which op it lowers."""

    def register(fn: Callable) -> Callable:
        lower = functools.partial(fn, **variant) if variant else fn
        for target in targets:
            if isinstance(target, torch._ops.OpOverloadPacket):
                for name in target.overloads():
                    LOWERINGS.setdefault(getattr(target, name), lower)
            else:
                LOWERINGS[target] = lower
        return fn

    return register


# ---------------------------------------------------------------------------------------------
# the node being lowered


@dataclass(frozen=True)
class LoweringContext:
    """The graph and the fx node a lowering is called for, passed as its first argument (``ctx``):
    a lowering reads its result's dtype, shape and device from the node's meta value, and names
    the nodes a value inlines (``origins``). Passed explicitly, not kept in a module-level stack,
    so a helper's signature shows that it depends on the node, and nothing outlives the call."""

    graph: GraphLowering
    node: torch.fx.Node

    @property
    def val(self) -> Any:
        """The node's meta value: the fake tensor (or list of them) the result must match."""
        return self.node.meta["val"]

    @property
    def out_size(self) -> list[Expr]:
        """The result's shape as sympy expressions (a new list on each read)."""
        return [as_expr(s) for s in self.val.shape]

    def origins(self, *values: Any) -> list[str]:
        """The fx node names an inlined value carries: its inputs' plus this node's."""
        names: list[str] = []
        for v in values:
            if isinstance(v, LazyValue):
                names += [n for n in v.origins if n not in names]
        node = self.node.name
        return names + ([node] if node not in names else [])

    def compute_dtype(self, kind: KIND, n_args: int) -> torch.dtype:
        """The dtype the op computes in, from the node's first ``n_args`` arguments."""
        args = [meta_of(a) for a in self.node.args[:n_args]]
        args = [a for a in args if isinstance(a, torch.Tensor | bool | int | float)]
        if not args:
            return register_dtype(self.val.dtype)
        computation, _ = elementwise_dtypes(*args, type_promotion_kind=kind)
        return register_dtype(computation)


# ---------------------------------------------------------------------------------------------
# elementwise building blocks


def broadcast_index(value: TensorValue, size: Sequence[Expr], index: Sequence[Expr]) -> list[Expr]:
    """The index into ``value`` of element ``index`` of its broadcast to ``size``."""
    lead = len(size) - len(value.size)
    out: list[Expr] = []
    for d, s in enumerate(value.size):
        out.append(sympy.Integer(0) if s == 1 and size[lead + d] != 1 else index[lead + d])
    return out


def load_operand(arg: Any, size: Sequence[Expr], index: Sequence[Expr], dtype: torch.dtype) -> Any:
    """Inside an inner_fn: ``arg`` (tensor, python scalar or SymInt expr) as a ``dtype`` value."""
    if isinstance(arg, TensorValue):
        return ops.to_dtype(arg.load(broadcast_index(arg, size, index)), dtype)
    if isinstance(arg, sympy.Expr) and not arg.is_number:
        if arg.is_integer is not True:  # a float of sizes (sym_float): a scalar kernel argument
            return ops.to_dtype(
                ops.index_expr(arg, dtype if dtype.is_floating_point else torch.float32), dtype
            )
        return ops.to_dtype(ops.index_expr(arg, torch.int64), dtype)
    if isinstance(arg, sympy.Expr):
        arg = int(arg) if arg.is_integer else float(arg)
    return ops.constant(arg, dtype)


def meta_of(arg: Any) -> Any:
    """A stand-in for torch's type promotion: fake tensors stay, SymInts become ints."""
    if isinstance(arg, torch.fx.Node):
        arg = arg.meta.get("val")
    if isinstance(arg, torch.SymInt | sympy.Expr):
        return 1
    if isinstance(arg, torch.SymFloat):
        return 1.0
    return arg


def check_devices(ctx: LoweringContext, args: Sequence[Any]) -> None:
    device = ctx.val.device
    for a in args:
        if isinstance(a, TensorValue) and a.device != device:
            raise NotLowerable(f"operand on {a.device}, result on {device}")


def elementwise(
    ctx: LoweringContext,
    args: Sequence[Any],
    dtype: torch.dtype,
    body: Callable[..., Any],
    out_dtype: torch.dtype | None = None,
) -> LazyValue:
    """A LazyValue of the node's shape computing ``body(*operands as dtype)``."""
    check_devices(ctx, args)
    val = ctx.val
    size = ctx.out_size
    out_dtype = out_dtype or val.dtype

    def inner_fn(index: Sequence[Expr]) -> Any:
        operands = [load_operand(a, size, index, dtype) for a in args]
        return ops.to_dtype(body(*operands), out_dtype)

    return LazyValue(size, out_dtype, val.device, inner_fn, ctx.origins(*args))


def check_op(name: str, dtype: torch.dtype) -> None:
    if not has_template(name, config.interpret()):
        raise NotLowerable(f"no Triton template for {name} in this mode")
    if name in FLOAT_ONLY and not dtype.is_floating_point:
        raise NotLowerable(f"{name} on {dtype} is not lowered")


def make_pointwise(name: str, kind: KIND = KIND.DEFAULT, n_args: int = 2) -> Callable[..., Any]:
    """The lowering of an elementwise op named ``name`` in ``ops.POINTWISE``."""

    def lower(ctx: LoweringContext, *args: Any, **kwargs: Any) -> LazyValue:
        if kwargs:
            raise NotLowerable(f"unexpected kwargs {sorted(kwargs)}")
        dtype = ctx.compute_dtype(kind, n_args)
        check_op(name, dtype)
        out = torch.bool if name in BOOL_RESULT else None
        return elementwise(ctx, args, dtype, getattr(ops, name), out)

    return lower


UNARY = {
    "neg": KIND.DEFAULT,
    "abs": KIND.DEFAULT,
    "exp": KIND.INT_TO_FLOAT,
    "exp2": KIND.INT_TO_FLOAT,
    "expm1": KIND.INT_TO_FLOAT,
    "log": KIND.INT_TO_FLOAT,
    "log2": KIND.INT_TO_FLOAT,
    "log1p": KIND.INT_TO_FLOAT,
    "sqrt": KIND.INT_TO_FLOAT,
    "rsqrt": KIND.INT_TO_FLOAT,
    "sin": KIND.INT_TO_FLOAT,
    "cos": KIND.INT_TO_FLOAT,
    "tan": KIND.INT_TO_FLOAT,
    "erf": KIND.INT_TO_FLOAT,
    "floor": KIND.DEFAULT,
    "ceil": KIND.DEFAULT,
    "trunc": KIND.DEFAULT,
    "sigmoid": KIND.INT_TO_FLOAT,
    "tanh": KIND.INT_TO_FLOAT,
    "reciprocal": KIND.INT_TO_FLOAT,
    "relu": KIND.DEFAULT,
    "sign": KIND.DEFAULT,
    "atan": KIND.INT_TO_FLOAT,
    "asin": KIND.INT_TO_FLOAT,
    "acos": KIND.INT_TO_FLOAT,
    "sinh": KIND.INT_TO_FLOAT,
    "cosh": KIND.INT_TO_FLOAT,
    "isnan": KIND.ALWAYS_BOOL,
    "isinf": KIND.ALWAYS_BOOL,
    "logical_not": KIND.ALWAYS_BOOL,
    "bitwise_not": KIND.DEFAULT,
}
BINARY = {
    "mul": KIND.DEFAULT,
    "maximum": KIND.DEFAULT,
    "minimum": KIND.DEFAULT,
    "eq": KIND.ALWAYS_BOOL,
    "ne": KIND.ALWAYS_BOOL,
    "lt": KIND.ALWAYS_BOOL,
    "le": KIND.ALWAYS_BOOL,
    "gt": KIND.ALWAYS_BOOL,
    "ge": KIND.ALWAYS_BOOL,
    "logical_and": KIND.ALWAYS_BOOL,
    "logical_or": KIND.ALWAYS_BOOL,
    "logical_xor": KIND.ALWAYS_BOOL,
    "bitwise_and": KIND.DEFAULT,
    "bitwise_or": KIND.DEFAULT,
    "bitwise_xor": KIND.DEFAULT,
    "atan2": KIND.INT_TO_FLOAT,
}
for _name, _kind in UNARY.items():
    if hasattr(aten, _name):
        lowering(getattr(aten, _name))(make_pointwise(_name, _kind, 1))
for _name, _kind in BINARY.items():
    lowering(getattr(aten, _name))(make_pointwise(_name, _kind, 2))
lowering(prims.bitwise_not, prims.sign)(make_pointwise("bitwise_not", KIND.DEFAULT, 1))


@lowering(aten.add, op="add")
@lowering(aten.sub, op="sub")
@lowering(aten.rsub, op="sub", swap=True)
def add(
    ctx: LoweringContext, a: Any, b: Any, alpha: Any = 1, *, op: str, swap: bool = False
) -> LazyValue:
    """``a + alpha*b``, ``a - alpha*b``; ``rsub(a, b) = b - alpha*a``."""
    dtype = ctx.compute_dtype(KIND.DEFAULT, 2)
    if swap:
        a, b = b, a
    op = getattr(ops, op)
    if alpha == 1:
        return elementwise(ctx, [a, b], dtype, op)
    return elementwise(ctx, [a, b, alpha], dtype, lambda x, y, k: op(x, ops.mul(y, k)))


@lowering(aten.div)
@lowering(prims.div, trunc=True)
def div(
    ctx: LoweringContext,
    a: Any,
    b: Any,
    rounding_mode: str | None = None,
    *,
    trunc: bool = False,
) -> LazyValue:
    dtype = ctx.compute_dtype(KIND.DEFAULT if trunc or rounding_mode else KIND.INT_TO_FLOAT, 2)
    if not dtype.is_floating_point and (trunc or rounding_mode):
        raise NotLowerable("integer division with rounding")
    mode = rounding_mode
    if mode is None:
        return elementwise(ctx, [a, b], dtype, ops.truediv)
    if mode == "floor":
        return elementwise(ctx, [a, b], dtype, lambda x, y: floor_divide(x, y, dtype))
    return elementwise(ctx, [a, b], dtype, lambda x, y: getattr(ops, mode)(ops.truediv(x, y)))


@lowering(
    aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar, prims.where
)
def where(ctx: LoweringContext, cond: Any, a: Any, b: Any) -> LazyValue:
    dtype = register_dtype(ctx.val.dtype)
    check_devices(ctx, [cond, a, b])
    size = ctx.out_size

    def inner_fn(index: Sequence[Expr]) -> Any:
        c = load_operand(cond, size, index, torch.bool)
        x, y = (load_operand(v, size, index, dtype) for v in (a, b))
        return ops.to_dtype(ops.where(c, x, y), meta_dtype)

    meta_dtype = ctx.val.dtype
    return LazyValue(size, meta_dtype, ctx.val.device, inner_fn, ctx.origins(cond, a, b))


@lowering(aten.clamp, aten.clamp_min)
@lowering(aten.clamp_max, upper_only=True)
def clamp(
    ctx: LoweringContext, x: Any, lo: Any = None, hi: Any = None, *, upper_only: bool = False
) -> LazyValue:
    if upper_only:  # ``clamp_max(x, hi)``
        lo, hi = None, lo
    dtype = register_dtype(ctx.val.dtype)
    bounds = [v for v in (lo, hi) if v is not None]

    def body(v: Any, *limits: Any) -> Any:
        it = iter(limits)
        if lo is not None:
            v = ops.maximum(v, next(it))
        if hi is not None:
            v = ops.minimum(v, next(it))
        return v

    return elementwise(ctx, [x, *bounds], dtype, body)


@lowering(aten.pow.Tensor_Scalar)
def pow_scalar(ctx: LoweringContext, x: Any, exponent: Any) -> LazyValue:
    dtype = ctx.compute_dtype(KIND.BOOL_TO_LONG, 2)
    e = float(exponent)
    if e in (0.5, -0.5) and dtype.is_floating_point:
        return elementwise(ctx, [x], dtype, ops.sqrt if e == 0.5 else ops.rsqrt)
    if e == int(e) and abs(e) <= 8 and (e >= 0 or dtype.is_floating_point):
        return elementwise(ctx, [x], dtype, lambda v: integer_power(v, int(e), dtype))
    check_op("pow", dtype)
    return elementwise(ctx, [x, exponent], dtype, ops.pow)


def integer_power(v: Any, n: int, dtype: torch.dtype) -> Any:
    result = ops.constant(1, dtype)
    for _ in range(abs(n)):
        result = ops.mul(result, v)
    return ops.reciprocal(result) if n < 0 else result


@lowering(aten.pow.Tensor_Tensor, aten.pow.Scalar)
def pow_tensor(ctx: LoweringContext, a: Any, b: Any) -> LazyValue:
    dtype = ctx.compute_dtype(KIND.BOOL_TO_LONG, 2)
    check_op("pow", dtype)
    return elementwise(ctx, [a, b], dtype, ops.pow)


@lowering(aten.remainder, floor=False)
@lowering(aten.floor_divide, floor=True)
def remainder(ctx: LoweringContext, a: Any, b: Any, *, floor: bool) -> LazyValue:
    """Python's float ``%`` and ``//``, as torch computes them: from C's exact ``fmod``, not
    ``a / b`` rounded (``3 // 0.1`` is 29, ``3 % 0.1`` is 0.09999...)."""
    dtype = ctx.compute_dtype(KIND.DEFAULT, 2)
    check_op("fmod", dtype)
    body = floor_divide if floor else python_mod
    return elementwise(ctx, [a, b], dtype, lambda x, y: body(x, y, dtype))


def python_mod(a: Any, b: Any, dtype: torch.dtype) -> Any:
    """``a % b`` with the divisor's sign."""
    mod = ops.fmod(a, b)
    return ops.where(_signs_differ(mod, b, dtype), ops.add(mod, b), mod)


def floor_divide(a: Any, b: Any, dtype: torch.dtype) -> Any:
    """``a // b``: ``(a - fmod(a, b)) / b`` is exact but for one rounding, then one less where
    the remainder's sign is not the divisor's, then to the nearest integer below (or above, where
    that rounding left it past .5); a zero keeps the sign of ``a / b``; ``b == 0`` gives
    ``a / b``."""
    mod = ops.fmod(a, b)
    div = ops.truediv(ops.sub(a, mod), b)
    one, zero = ops.constant(1, dtype), ops.constant(0, dtype)
    div = ops.where(_signs_differ(mod, b, dtype), ops.sub(div, one), div)
    below = ops.floor(div)
    nearest = ops.where(
        ops.gt(ops.sub(div, below), ops.constant(0.5, dtype)), ops.add(below, one), below
    )
    quotient = ops.truediv(a, b)
    signed_zero = ops.mul(quotient, zero)
    result = ops.where(ops.ne(div, zero), nearest, signed_zero)
    return ops.where(ops.eq(b, zero), quotient, result)


def _signs_differ(mod: Any, b: Any, dtype: torch.dtype) -> Any:
    """A non-zero ``mod`` whose sign is not ``b``'s."""
    zero = ops.constant(0, dtype)
    return ops.logical_and(ops.ne(mod, zero), ops.ne(ops.lt(b, zero), ops.lt(mod, zero)))


# ---------------------------------------------------------------------------------------------
# dtype conversion, copies and factories


@lowering(prims.convert_element_type, aten._to_copy, aten.clone, aten.lift_fresh_copy)
@lowering(aten.alias, aten.detach, same_data=True)
def convert(
    ctx: LoweringContext, x: Any, *args: Any, same_data: bool = False, **kwargs: Any
) -> TensorValue:
    """A copy in the result's dtype; ``alias``/``detach`` (``same_data``) of the same dtype are the
    value itself."""
    val = ctx.val
    if not isinstance(x, TensorValue) or x.device != val.device:
        raise NotLowerable("device change or non-tensor input")
    if same_data and x.dtype == val.dtype:
        return x
    return elementwise(ctx, [x], register_dtype(val.dtype), lambda v: v)


@lowering(aten.copy.default)
def copy(ctx: LoweringContext, dst: TensorValue, src: Any, non_blocking: bool = False) -> LazyValue:
    return elementwise(ctx, [src], register_dtype(ctx.val.dtype), lambda v: v)


@lowering(aten.scalar_tensor, value_at=0)
@lowering(aten.full, aten.full_like, value_at=1)
@lowering(aten.new_full, value_at=2)  # ``new_full(self, size, fill_value)``
@lowering(aten.zeros, aten.zeros_like, aten.new_zeros, fill=0)
@lowering(aten.ones, aten.ones_like, aten.new_ones, fill=1)
def full(
    ctx: LoweringContext,
    *args: Any,
    fill: Any = None,
    value_at: int | None = None,
    **kwargs: Any,
) -> LazyValue:
    """A tensor of one value: ``fill``, or the argument at ``value_at``."""
    value = fill if value_at is None else args[value_at]
    if isinstance(value, TensorValue):
        raise NotLowerable("fill value is a tensor")
    val = ctx.val
    dtype = register_dtype(val.dtype)
    return LazyValue(
        ctx.out_size,
        val.dtype,
        val.device,
        lambda index: ops.to_dtype(load_operand(value, [], [], dtype), val.dtype),
        ctx.origins(),
    )


@lowering(aten.arange.default, aten.arange.start, aten.arange.start_step)
@lowering(prims.iota.default, iota=True)
def arange(ctx: LoweringContext, *args: Any, iota: bool = False, **kwargs: Any) -> LazyValue:
    if iota:
        start, step = kwargs.get("start", 0), kwargs.get("step", 1)
    else:
        nums = [a for a in args if not isinstance(a, torch.dtype)]
        start, step = (nums[0], nums[2] if len(nums) > 2 else 1) if len(nums) > 1 else (0, 1)
    val = ctx.val
    if not all(isinstance(v, int | sympy.Integer) for v in (start, step)):
        raise NotLowerable("non-integer arange")
    start_, step_ = int(start), int(step)

    def inner_fn(index: Sequence[Expr]) -> Any:
        expr = start_ + step_ * index[0]
        return ops.to_dtype(ops.index_expr(expr, torch.int64), val.dtype)

    return LazyValue(ctx.out_size, val.dtype, val.device, inner_fn, ctx.origins())
