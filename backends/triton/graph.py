"""``GraphLowering``: walks an ATen FX graph and builds buffers through the registered lowerings.

Placeholders become ``InputBuffer``s (and tell the wrapper where each size symbol comes from),
``call_function`` nodes go through ``lowering.LOWERINGS`` (each lowering receives a
``LoweringContext``: this graph and the node); matmul/conv/attention and collectives become
extern calls, and any op without a working lowering runs through torch for that node only
(``fallback``: counted in ``fallback_ops`` and logged on ``bytegraph.fusion``). Lazy values used
more than once are realized into ``ComputedBuffer``s, which the scheduler then fuses back together
where it can.
"""

from __future__ import annotations

import logging
import operator
from collections import Counter
from typing import Any

import sympy
import torch
import torch.fx

# importing these registers their lowerings
from . import (  # noqa: F401
    lower_indexing,
    lower_reductions,
    lower_scans,
    lower_scatter,
    lower_views,
)
from .indexing import as_expr, contiguous_strides, same
from .ir import (
    Buffer,
    BufferView,
    ComputedBuffer,
    ExternBuffer,
    InputBuffer,
    Layout,
    LazyValue,
    MultiOutput,
    Pointwise,
    ReadRecorder,
    Reduction,
    TensorValue,
    layout_from_meta,
)
from .lowering import LOWERINGS, LoweringContext, NotLowerable
from .ops import use_handler

log = logging.getLogger("bytegraph.fusion")
aten = torch.ops.aten

#: Ops handed to torch on purpose (libraries beat a first generated kernel); not fallbacks.
EXTERN_OPS = {
    aten.mm.default,
    aten.addmm.default,
    aten.bmm.default,
    aten.baddbmm.default,
    aten.mv.default,
    aten.dot.default,
    aten.convolution.default,
    aten.convolution_backward.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention_backward.default,
    aten._scaled_dot_product_efficient_attention_backward.default,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
}

#: Size arithmetic that can produce a float (``torch.sym_float(s0)``, ``1.0 / s0``).
FLOAT_SIZE_TARGETS = {
    torch.sym_float,
    operator.truediv,
    operator.mul,
    operator.add,
    operator.sub,
    operator.neg,
    operator.pow,
}

#: Most fx nodes one lazy value may inline before it is stored (bounds recomputation).
MAX_INLINED = 48


class GraphLowering:
    """Lowers one ATen graph; then ``buffers``, ``placeholders`` and ``outputs`` describe it."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        self.gm = gm
        self.example_inputs = example_inputs
        self.buffers: list[Buffer] = []
        self.placeholders: list[tuple[str, Any]] = []  #: (name, InputBuffer | Expr | None)
        self.constants: dict[str, torch.Tensor] = {}  #: get_attr tensors, bound by name
        self.symbol_sources: dict[sympy.Symbol, str] = {}  #: symbol -> wrapper expression
        self.outputs: list[Any] = []  #: BufferView | Expr | None per graph output
        self.fallback_ops: Counter[str] = Counter()
        self.extern_ops: Counter[str] = Counter()
        self.env: dict[torch.fx.Node, Any] = {}
        #: (id of a lazy value, strides) -> (the value, kept alive; the buffer it was stored in)
        self.realized: dict[tuple, tuple[LazyValue, BufferView]] = {}

    def run(self) -> GraphLowering:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.env[node] = self.placeholder(node)
            elif node.op == "get_attr":
                self.env[node] = self.get_attr(node)
            elif node.op == "call_function":
                if is_dead(node):
                    continue  # aot can leave a recomputed forward op unused: never run it
                self.env[node] = self.call_function(node)
            elif node.op == "output":
                self.output(node)
            else:
                raise NotImplementedError(f"fx node kind {node.op}")
        return self

    def new_name(self) -> str:
        return f"buf{len(self.buffers)}"

    # -- inputs ----------------------------------------------------------------------------------

    def placeholder(self, node: torch.fx.Node) -> Any:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            buf = InputBuffer(node.name, layout_from_meta(val, dense_only=False))
            self.placeholders.append((node.name, buf))
            for d, s in enumerate(val.shape):
                self.bind(as_expr(s), f"{node.name}.size({d})")
            for d, s in enumerate(val.stride()):
                self.bind(as_expr(s), f"{node.name}.stride({d})")
            return BufferView(buf)
        if isinstance(val, torch.SymInt | int | torch.SymFloat) and not isinstance(val, bool):
            expr = as_expr(val)
            self.bind(expr, node.name)
            self.placeholders.append((node.name, expr))
            return expr
        self.placeholders.append((node.name, None))
        return val

    def bind(self, expr: sympy.Expr, source: str) -> None:
        if isinstance(expr, sympy.Symbol) and expr not in self.symbol_sources:
            self.symbol_sources[expr] = source

    def get_attr(self, node: torch.fx.Node) -> Any:
        value = getattr(self.gm, str(node.target))
        if not isinstance(value, torch.Tensor):
            return value
        self.constants[node.name] = value
        buf = InputBuffer(node.name, layout_from_meta(value, dense_only=False))
        return BufferView(buf)

    # -- calls -----------------------------------------------------------------------------------

    def call_function(self, node: torch.fx.Node) -> Any:
        val = node.meta.get("val")
        if node.target is operator.getitem:
            return self.env[node.args[0]][node.args[1]]
        if isinstance(val, torch.SymInt | int) and not isinstance(val, bool):
            return as_expr(val)  # size arithmetic: its value is its symbolic expression
        if isinstance(val, torch.SymFloat) or (
            isinstance(val, float) and node.target in FLOAT_SIZE_TARGETS
        ):
            return self.float_scalar(node, val)
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), self.env.__getitem__)
        target = node.target
        if isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable:
            raise NotImplementedError(f"mutating op {target}")
        if target in EXTERN_OPS or is_collective(target):
            self.extern_ops[str(target)] += 1
            return self.extern(node, args, kwargs, is_fallback=False)
        reason = "no lowering"
        if target in LOWERINGS:
            try:
                result = LOWERINGS[target](LoweringContext(self, node), *args, **kwargs)
                return self.finish(node, result)
            except NotLowerable as e:
                reason = str(e)
            except Exception as e:  # a lowering bug must not break the graph: run it with torch
                log.debug("lowering of %s failed", target, exc_info=True)
                reason = f"lowering failed: {type(e).__name__}: {e}"
        log.info("no kernel for %s (%s): running it with torch", target, reason)
        self.fallback_ops[str(target)] += 1
        return self.extern(node, args, kwargs, is_fallback=True)

    def float_scalar(self, node: torch.fx.Node, val: torch.SymFloat | float) -> sympy.Expr:
        """A float computed from sizes (``sym_float(s0)``, ``1.0 / s0``): its sympy expression.

        Kernels take it as one scalar argument the wrapper computes (``kernel.index_expr``), so the
        same kernel serves every size. A float of unbound symbols (``.item()``) runs with torch.
        """
        expr = as_expr(val)
        unbound = expr.free_symbols - set(self.symbol_sources)
        if unbound:
            raise NotImplementedError(
                f"{node.target} returns a float of unbound symbols {sorted(map(str, unbound))}"
            )
        return expr

    def finish(self, node: torch.fx.Node, result: Any) -> Any:
        """Check a lowering's result against the node's meta value; realize shared lazy values."""
        val = node.meta.get("val")
        if isinstance(result, tuple | list):
            return type(result)(
                self.finish_one(node, r, v) for r, v in zip(result, val, strict=True)
            )
        return self.finish_one(node, result, val)

    def finish_one(self, node: torch.fx.Node, result: Any, val: Any) -> Any:
        if not isinstance(result, TensorValue):
            return result
        size = [as_expr(s) for s in val.shape]
        if (
            result.dtype != val.dtype
            or len(result.size) != len(size)
            or not all(same(a, b) for a, b in zip(result.size, size, strict=True))
        ):
            raise NotLowerable(
                f"lowering produced {result.dtype}{result.size}, expected {val.dtype}{size}"
            )
        if isinstance(result, LazyValue) and (
            (len(node.users) > 1 and not recomputable(node, result))
            or len(result.origins) > MAX_INLINED
        ):
            return self.realize(result, layout_from_meta(val))
        return result

    def realize(self, value: TensorValue, layout: Layout | None = None) -> BufferView:
        """Store a lazy value into a computed buffer (a no-op for buffer views); a value stored
        before with the same strides (an extern call reading it twice) is not stored again."""
        if isinstance(value, BufferView):
            return value
        assert isinstance(value, LazyValue)
        if layout is None:
            layout = Layout(value.size, contiguous_strides(value.size), value.dtype, value.device)
        key = (id(value), tuple(layout.stride))
        hit = self.realized.get(key)
        if hit is not None:
            return hit[1]
        data = Pointwise(value.size, value.load, value.dtype)
        view = self.add_computed(data, layout, value.origins)
        self.realized[key] = (value, view)
        return view

    def add_computed(
        self, data: Pointwise | Reduction, layout: Layout, origins: list[str]
    ) -> BufferView:
        buf = ComputedBuffer(self.new_name(), layout, data, list(origins))
        self.buffers.append(buf)
        return BufferView(buf)

    def extern(self, node: torch.fx.Node, args: Any, kwargs: Any, is_fallback: bool) -> Any:
        """Run ``node.target`` with torch on realized inputs."""
        args, kwargs = realize_all(self, args), realize_all(self, kwargs)
        val = node.meta.get("val")
        layout = layout_from_meta(val, dense_only=False) if isinstance(val, torch.Tensor) else None
        ext = ExternBuffer(
            self.new_name(), layout, node.target, args, kwargs, node.name, is_fallback
        )
        self.buffers.append(ext)
        if isinstance(val, torch.Tensor):
            return BufferView(ext)
        if isinstance(val, tuple | list):
            return [self.multi_output(ext, item, i) for i, item in enumerate(val)]
        if val is None:
            return None
        raise NotImplementedError(f"{node.target} returns {type(val).__name__}")

    def multi_output(self, ext: ExternBuffer, item: Any, i: int) -> BufferView | None:
        if not isinstance(item, torch.Tensor):
            return None
        out = MultiOutput(self.new_name(), layout_from_meta(item, dense_only=False), ext, (i,))
        ext.outputs.append(out)
        self.buffers.append(out)
        return BufferView(out)

    # -- outputs ---------------------------------------------------------------------------------

    def output(self, node: torch.fx.Node) -> None:
        for item in node.args[0]:
            value = self.env[item] if isinstance(item, torch.fx.Node) else item
            if isinstance(value, LazyValue):
                value = self.realize(value, layout_from_meta(item.meta["val"]))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                value = sympy.sympify(value)
            self.outputs.append(value)

    def output_buffers(self) -> set[str]:
        return {v.buffer.name for v in self.outputs if isinstance(v, BufferView)}


#: A lazy value several kernels read is computed in each of them (not stored by a kernel of its
#: own) when it reads at most this many elements and runs at most this many ops per element.
RECOMPUTE_READS = 4
RECOMPUTE_OPS = 16


class _OpCounter(ReadRecorder):
    """Records reads as ``ReadRecorder`` does and counts the ops computed from them."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.indirect = False

    def pointwise(self, name: str, *args: Any) -> None:
        self.ops += 1

    def indirect_indexing(self, value: Any, size: Any) -> sympy.Symbol:
        self.indirect = True
        return super().indirect_indexing(value, size)


def recomputable(node: torch.fx.Node, value: LazyValue) -> bool:
    """Whether ``value``, read by each of ``node``'s users, is better recomputed by each: every
    user is lowered to kernels (an extern call would need it stored anyway) and the value is cheap
    (``RECOMPUTE_READS``, ``RECOMPUTE_OPS``, no index read from memory). A layer norm's
    normalized input in its backward is one: the input gradient's row reductions and the weight
    gradient's column sums each recompute it instead of waiting for a kernel that stores it."""
    if not all(
        user.op == "call_function" and user.target in LOWERINGS and user.target not in EXTERN_OPS
        for user in node.users
    ):
        return False
    counter = _OpCounter()
    with use_handler(counter):
        value.load([sympy.Symbol(f"i{d}", integer=True) for d in range(len(value.size))])
    return (
        len(counter.reads) <= RECOMPUTE_READS
        and counter.ops <= RECOMPUTE_OPS
        and not counter.indirect
    )


def is_collective(target: Any) -> bool:
    """A functional collective or its wait: run with torch as an extern call, on purpose,
    and never dropped, even unused: a rank skipping a collective its peers run would hang them."""
    return getattr(target, "namespace", None) in ("_c10d_functional", "c10d_functional")


def is_dead(node: torch.fx.Node) -> bool:
    """No users and no effect. Attention ops are tagged nondeterministic (dropout) and so count as
    impure for fx; without dropout (``dropout_p`` is their 4th argument) they are pure."""
    if node.users or is_collective(node.target):
        return False
    if not node.is_impure():
        return True
    target = node.target
    return (
        target in EXTERN_OPS
        and not target._schema.is_mutable
        and "attention" in str(target)
        and len(node.args) > 3
        and node.args[3] == 0.0
    )


def realize_all(graph: GraphLowering, obj: Any) -> Any:
    """Realize every tensor value inside a nested args structure."""
    if isinstance(obj, TensorValue):
        return graph.realize(obj)
    if isinstance(obj, list | tuple):
        return type(obj)(realize_all(graph, o) for o in obj)
    if isinstance(obj, dict):
        return {k: realize_all(graph, v) for k, v in obj.items()}
    return obj
