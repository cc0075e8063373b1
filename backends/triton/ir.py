"""Loop-level IR: buffers, the ``Pointwise``/``Reduction`` computations filling them, values.

A lowering turns each ATen node into a ``TensorValue``: a ``BufferView`` (a strided window on a
buffer: inputs, realized computations, extern results) or a ``LazyValue`` (an ``inner_fn(index)``
not yet stored anywhere, which consumers inline). ``ComputedBuffer`` holds a ``Pointwise`` or
``Reduction`` (or a ``Scan``, or a ``Scatter`` writing into another buffer's storage) whose
``inner_fn`` calls ``ops.*``; ``LoopBody`` runs it once on symbolic indices to learn its reads and
which loop dims are contiguous enough to merge. Scheduling and codegen live elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch

from .indexing import (
    Expr,
    as_expr,
    contiguous_strides,
    index_symbols,
    merge_groups,
    product,
    rewrite_merged,
    same,
)
from .ops import ops, use_handler


@dataclass
class Layout:
    """Size/stride/offset (sympy) of a buffer or view, with dtype and device."""

    size: list[Expr]  #: elements per dim
    stride: list[Expr]  #: elements between neighbours per dim
    dtype: torch.dtype
    device: torch.device
    offset: Expr = sympy.Integer(0)  #: elements from the start of the storage

    def index(self, idx: Sequence[Expr]) -> Expr:
        """The storage offset of element ``idx``."""
        expr = self.offset
        for size, stride, i in zip(self.size, self.stride, idx, strict=True):
            if not same(size, 1):
                expr = expr + stride * i
        return expr

    @property
    def numel(self) -> Expr:
        return product(self.size)


def layout_from_meta(val: torch.Tensor, dense_only: bool = True) -> Layout:
    """The layout of a (fake) tensor; strides kept only when static and dense, else contiguous."""
    size = [as_expr(s) for s in val.shape]
    stride = [as_expr(s) for s in val.stride()]
    if dense_only and not _is_dense(size, stride):
        stride = contiguous_strides(size)
    return Layout(size, stride, val.dtype, val.device)


def _is_dense(size: list[Expr], stride: list[Expr]) -> bool:
    if not all(isinstance(e, sympy.Integer) for e in size + stride):
        return False
    dims = sorted((int(st), int(sz)) for sz, st in zip(size, stride, strict=True) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


class Buffer:
    """A named allocation the wrapper owns or receives; ``layout`` says where elements live."""

    def __init__(self, name: str, layout: Layout) -> None:
        self.name = name
        self.layout = layout

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class InputBuffer(Buffer):
    """A graph input: a placeholder of the ATen graph."""


class ComputedBuffer(Buffer):
    """Filled by a generated kernel from ``data``.

    A buffer with ``mutates`` set (its data is a ``Scatter``) owns no storage: it is the buffer
    ``mutates`` names after the scatter wrote into it, and that buffer is read by no one else.
    """

    def __init__(
        self,
        name: str,
        layout: Layout,
        data: Pointwise | Reduction | Scan | Scatter,
        origins: list[str],
        mutates: str | None = None,
    ) -> None:
        super().__init__(name, layout)
        self.data = data
        self.origins = origins  #: fx node names whose work this buffer does
        self.mutates = mutates  #: the buffer whose storage this one writes into and reuses


class ExternBuffer(Buffer):
    """Filled by calling a torch function (matmul, conv, or an op without a lowering)."""

    def __init__(
        self,
        name: str,
        layout: Layout | None,
        kernel: Callable[..., Any],
        args: tuple,
        kwargs: dict,
        origin: str,
        is_fallback: bool,
    ) -> None:
        super().__init__(name, layout)  # type: ignore[arg-type]
        self.kernel = kernel
        self.args = args  #: nested structure of TensorValue / sympy / constants
        self.kwargs = kwargs
        self.origin = origin
        self.is_fallback = is_fallback
        self.outputs: list[MultiOutput] = []


class MultiOutput(Buffer):
    """One tensor of a tuple-returning extern call: ``parent[path[0]][path[1]]...``."""

    def __init__(self, name: str, layout: Layout, parent: ExternBuffer, path: tuple) -> None:
        super().__init__(name, layout)
        self.parent = parent
        self.path = path


@dataclass
class Pointwise:
    ranges: list[Expr]
    inner_fn: Callable[[list[Expr]], Any]
    dtype: torch.dtype


@dataclass
class Reduction:
    ranges: list[Expr]  #: output (kept) dims
    reduction_ranges: list[Expr]  #: reduced dims, row-major
    #: sum, prod, max, min, argmax, argmin, any; sumexp: sum of exp(value - the row's max)
    reduction_type: str
    inner_fn: Callable[[list[Expr], list[Expr]], Any]
    src_dtype: torch.dtype  #: dtype of the reduced values
    dtype: torch.dtype  #: dtype of the result


@dataclass
class Scan:
    """An inclusive scan along one dim: ``out[.., k, ..] = x[.., 0, ..] op ... op x[.., k, ..]``.

    Iterated like a reduction (kept dims x the scanned dim) but stored per element.
    """

    ranges: list[Expr]  #: the output dims without the scanned one
    scan_range: Expr  #: length of the scanned dim
    dim: int  #: position of the scanned dim in the output
    scan_type: str  #: sum, prod
    inner_fn: Callable[[list[Expr], list[Expr]], Any]
    dtype: torch.dtype  #: dtype of the scan (and of the values it reads)

    @property
    def reduction_ranges(self) -> list[Expr]:
        return [self.scan_range]

    def output_index(self, index: Sequence[Expr], rindex: Sequence[Expr]) -> list[Expr]:
        return list(index[: self.dim]) + list(rindex) + list(index[self.dim :])


@dataclass
class Scatter:
    """Writes values into the storage of an existing buffer at offsets computed per element.

    ``inner_fn(index)`` returns ``(offset, value)``: the storage offset (usually through
    ``ops.indirect_indexing``) and the value; ``mode`` ``"atomic_add"`` accumulates (duplicates
    add up), ``None`` stores.
    """

    ranges: list[Expr]  #: the iteration space (the index tensor's / the values' shape)
    inner_fn: Callable[[list[Expr]], tuple[Expr, Any]]
    dtype: torch.dtype
    mode: str | None


# ---------------------------------------------------------------------------------------------
# tensor values


class TensorValue:
    """What a lowering returns for a tensor: it can ``load(index)`` inside an inner_fn."""

    size: list[Expr]
    dtype: torch.dtype
    device: torch.device

    def load(self, index: Sequence[Expr]) -> Any:
        raise NotImplementedError


class BufferView(TensorValue):
    """A strided window on a buffer (the buffer itself when the layouts match)."""

    def __init__(self, buffer: Buffer, layout: Layout | None = None) -> None:
        self.buffer = buffer
        self.layout = layout or buffer.layout
        self.size = self.layout.size
        self.dtype = self.layout.dtype
        self.device = self.layout.device

    def load(self, index: Sequence[Expr]) -> Any:
        return ops.load(self.buffer.name, self.layout.index(index))

    def is_whole_buffer(self) -> bool:
        a, b = self.layout, self.buffer.layout
        return (
            len(a.size) == len(b.size)
            and same(a.offset, b.offset)
            and all(same(x, y) for x, y in zip(a.size + a.stride, b.size + b.stride, strict=True))
        )

    def __repr__(self) -> str:
        return f"BufferView({self.buffer.name}, {self.size})"


class LazyValue(TensorValue):
    """An elementwise computation not stored yet; consumers inline ``fn`` into their own loops."""

    def __init__(
        self,
        size: list[Expr],
        dtype: torch.dtype,
        device: torch.device,
        fn: Callable[[Sequence[Expr]], Any],
        origins: list[str] | None = None,
    ) -> None:
        self.size = list(size)
        self.dtype = dtype
        self.device = device
        self.fn = fn
        self.origins = origins or []

    def load(self, index: Sequence[Expr]) -> Any:
        return self.fn(list(index))

    def __repr__(self) -> str:
        return f"LazyValue({self.size}, {self.dtype})"


# ---------------------------------------------------------------------------------------------
# dependency recording and loop simplification


class ReadRecorder:
    """An ``ops`` handler that only records which buffers an inner_fn reads, and at what index."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, Expr]] = []
        self.index_exprs: list[Expr] = []

    def load(self, name: str, index: Expr) -> None:
        self.reads.append((name, sympy.sympify(index)))

    def index_expr(self, expr: Expr, dtype: torch.dtype) -> None:
        self.index_exprs.append(sympy.sympify(expr))

    def indirect_indexing(self, value: Any, size: Expr) -> sympy.Symbol:
        """A stand-in for an index read from memory (see ``TritonKernel.indirect_indexing``)."""
        return sympy.Symbol(f"indirect{len(self.reads)}", integer=True)

    def masked(self, mask: Any, body: Callable[[], Any], other: Any) -> None:
        body()

    def constant(self, value: Any, dtype: torch.dtype) -> None:
        return None

    def to_dtype(self, x: Any, dtype: torch.dtype) -> None:
        return None

    def pointwise(self, name: str, *args: Any) -> None:
        return None


@dataclass
class LoopBody:
    """A computed buffer's body on symbolic indices: reads, store index, merged loop ranges.

    Size-1 dims get index 0; adjacent dims that all accesses walk contiguously are merged, so a
    contiguous ``[a, b, c]`` pointwise loop becomes one flat loop of ``a*b*c`` (no div/mod).
    """

    buffer: ComputedBuffer
    call_index: list[Expr] = field(default_factory=list)  #: inner_fn index (vars or 0)
    call_rindex: list[Expr] = field(default_factory=list)
    reads: list[tuple[str, Expr]] = field(default_factory=list)
    store_index: Expr = sympy.Integer(0)
    xsizes: list[Expr] = field(default_factory=list)  #: merged output ranges
    rsizes: list[Expr] = field(default_factory=list)  #: merged reduction ranges
    _groups: list[list[int]] = field(default_factory=list)
    _vars: list[sympy.Symbol] = field(default_factory=list)
    _nx: int = 0

    @classmethod
    def analyse(cls, buffer: ComputedBuffer) -> LoopBody:
        data = buffer.data
        rranges = data.reduction_ranges if isinstance(data, Reduction | Scan) else []
        body = cls(buffer)
        xvars = index_symbols("i", len(data.ranges))
        rvars = index_symbols("r", len(rranges))
        body.call_index = [
            sympy.Integer(0) if same(s, 1) else v for s, v in zip(data.ranges, xvars, strict=True)
        ]
        body.call_rindex = [
            sympy.Integer(0) if same(s, 1) else v for s, v in zip(rranges, rvars, strict=True)
        ]
        recorder = ReadRecorder()
        with use_handler(recorder):
            result = body.run()
        body.reads = recorder.reads
        if isinstance(data, Scatter):
            body.store_index = sympy.sympify(result[0])
        elif isinstance(data, Scan):
            full = data.output_index(body.call_index, body.call_rindex)
            body.store_index = buffer.layout.index(full)
        else:
            body.store_index = buffer.layout.index(body.call_index)
        exprs = [e for _, e in recorder.reads] + recorder.index_exprs + [body.store_index]
        live_x = [(s, v) for s, v in zip(data.ranges, xvars, strict=True) if not same(s, 1)]
        live_r = [(s, v) for s, v in zip(rranges, rvars, strict=True) if not same(s, 1)]
        all_vars = set(xvars + rvars)
        xg = merge_groups([s for s, _ in live_x], [v for _, v in live_x], exprs, all_vars)
        rg = merge_groups([s for s, _ in live_r], [v for _, v in live_r], exprs, all_vars)
        body._vars = [v for _, v in live_x] + [v for _, v in live_r]
        body._nx = len(live_x)
        body._groups = xg + [[k + len(live_x) for k in g] for g in rg]
        body.xsizes = [product([live_x[k][0] for k in g]) for g in xg]
        body.rsizes = [product([live_r[k][0] for k in g]) for g in rg]
        return body

    def run(self) -> Any:
        """Call the inner_fn on the symbolic index (under whatever handler is installed)."""
        data = self.buffer.data
        if isinstance(data, Reduction | Scan):
            return data.inner_fn(self.call_index, self.call_rindex)
        return data.inner_fn(self.call_index)

    def rewrite(self, expr: Expr, xexprs: Sequence[Expr], rexprs: Sequence[Expr]) -> Expr:
        """``expr`` (over i*/r* vars) in terms of kernel expressions for the merged dims."""
        return rewrite_merged(
            sympy.sympify(expr), self._groups, self._vars, list(xexprs) + list(rexprs)
        )

    @property
    def is_reduction(self) -> bool:
        """Iterated over rows of a reduced (or scanned) dim: a ``Reduction`` or a ``Scan``."""
        return isinstance(self.buffer.data, Reduction | Scan)

    @property
    def kind(self) -> str:
        """``pointwise``, ``reduction``, ``scan`` or ``scatter``."""
        return {Reduction: "reduction", Scan: "scan", Scatter: "scatter"}.get(
            type(self.buffer.data), "pointwise"
        )
