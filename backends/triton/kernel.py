"""Triton source for one ``FusedGroup``: loads, compute and stores with CSE'd ``tmpN`` names.

``TritonKernel`` is the ``ops`` handler while each node's body runs: ``load`` emits a masked
``tl.load`` (or reuses the value this program just stored), pointwise ops fill templates from
``ops.POINTWISE``, reductions and scans emit persistent (whole row in registers) or looped code
via ``reduction_code``; a scatter stores (or atomically adds) at indices it loaded. Stores of
buffers nobody outside the kernel reads are dropped. The result is a ``GeneratedKernel`` (name,
source, argument order) that ``launch.py`` compiles and calls.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch

from . import config, reduction_code
from .indexing import Expr, coefficient, simplify_index, texpr
from .ir import Scatter
from .ops import BOOL_RESULT, TL_DTYPES, register_dtype, template, use_handler
from .scheduler import RINDEX, XINDEX, FusedGroup, SchedulerNode, place


@dataclass
class CSEVar:
    name: str
    dtype: torch.dtype  #: dtype in registers (never fp16/bf16)

    def __str__(self) -> str:
        return self.name


@dataclass
class GeneratedKernel:
    """A kernel's source and how to call it."""

    name: str
    source: str
    pointer_args: list[str]  #: buffer names, in signature order
    stored: list[str]  #: buffers the kernel writes (subset of pointer_args)
    size_args: list[tuple[str, Expr]]  #: (kernel arg name, wrapper expression)
    numel: Expr
    rnumel: Expr
    persistent: bool
    origins: list[str]
    atomic: bool = False  #: accumulates into what it stores (running it twice adds twice)
    #: a reduction whose loads all step through memory along rows rather than along each row (a
    #: column sum): its programs want many rows and short chunks (``launch.block_sizes``)
    outer: bool = False

    @property
    def is_reduction(self) -> bool:
        return self.rnumel != 1


@dataclass
class Loop:
    """A ``for roffset`` loop of a looped reduction kernel."""

    init: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    post: list[str] = field(default_factory=list)


class TritonKernel:
    """Generates one kernel; also the ``ops`` handler its nodes' bodies call."""

    def __init__(
        self,
        group: FusedGroup,
        index: int,
        buffer_dtypes: dict[str, torch.dtype],
        buffer_numels: dict[str, Expr] | None = None,
    ) -> None:
        self.group = group
        sizes = [group.numel * group.rnumel] + [
            (buffer_numels or {}).get(name, sympy.Integer(0))
            for node in group.nodes
            for name in node.reads | {node.name}
        ]
        #: 64-bit offsets when some extent may not fit in int32 (symbolic sizes included)
        self.int64 = any(not isinstance(n, sympy.Integer) or n >= 2**31 - 1 for n in sizes)
        self.index = index
        self.dtypes = buffer_dtypes
        self.reduction = group.is_reduction
        rn = group.rnumel
        self.persistent = (
            self.reduction
            and isinstance(rn, sympy.Integer)
            and int(rn) <= config.persistent_reduction_max
        )
        self.looped = self.reduction and not self.persistent
        self.code: list[str | Loop] = []
        self.lines: list[str] = self.code  # type: ignore[assignment]
        self.loop: Loop | None = None
        self.loop_id = 0
        self.cse: dict[str, tuple[CSEVar, int | None]] = {}
        self.stored: dict[tuple[str, str], tuple[CSEVar, int | None]] = {}
        self.pending: set[str] = set()
        self.row_steps: list[Expr | None] = []  #: each row-wide load's step along the row
        self.written: list[str] = []
        self.memory_loads: set[str] = set()
        self.inputs: list[str] = []
        self.size_args: dict[Expr, str] = {}
        self.float_args: set[str] = set()  #: size args holding a float: typed float64
        self.counter = 0
        self.masks: list[str] = []
        self.indirect: dict[sympy.Symbol, str] = {}  #: index read from memory -> "in bounds" test
        self.level = "x"
        self.rewrite: Any = None

    # -- code emission ---------------------------------------------------------------------------

    def scope(self) -> int | None:
        return self.loop_id if self.loop is not None and self.lines is self.loop.body else None

    def emit(self, expr: str, dtype: torch.dtype) -> CSEVar:
        """``tmpN = expr`` (or the existing var for the same expression in scope)."""
        hit = self.cse.get(expr)
        if hit is not None:
            return hit[0]
        var = CSEVar(f"tmp{self.counter}", dtype)
        self.counter += 1
        self.lines.append(f"{var} = {expr}")
        self.cse[expr] = (var, self.scope())
        return var

    def open_loop(self) -> None:
        self.close_loop()
        self.loop_id += 1
        self.loop = Loop()
        self.code.append(self.loop)
        self.lines = self.loop.body

    def close_loop(self) -> None:
        if self.loop is None:
            return
        dead = self.loop_id
        self.cse = {k: v for k, v in self.cse.items() if v[1] != dead}
        self.stored = {k: v for k, v in self.stored.items() if v[1] != dead}
        self.loop = None
        self.lines = self.code  # type: ignore[assignment]
        self.pending.clear()

    # -- index printing --------------------------------------------------------------------------

    def symbol(self, sym: sympy.Symbol) -> str:
        if sym == XINDEX:
            return "xindex"
        if sym == RINDEX:
            return "rindex"
        if sym in self.indirect:
            return sym.name
        return self.size_arg(sym)

    def size_arg(self, expr: Expr) -> str:
        if expr not in self.size_args:
            self.size_args[expr] = f"ks{len(self.size_args)}"
        return self.size_args[expr]

    def index_str(self, expr: Expr) -> str:
        """Kernel text for ``expr``; size-only sub-expressions torch built become kernel args."""

        def hoist(e: Expr) -> Expr:
            return sympy.Symbol(self.size_arg(e), integer=True)

        expr = expr.replace(
            lambda e: (
                isinstance(e, sympy.Function)
                and not e.free_symbols & {XINDEX, RINDEX, *self.indirect}
                and bool(e.free_symbols)
            ),
            hoist,
        )
        hoisted = {v: k for k, v in self.size_args.items()}
        return texpr(expr, lambda s: s.name if s.name in hoisted else self.symbol(s))

    def pointer(self, expr: Expr) -> str:
        """Offset text with the ``xindex`` shape even for row-independent indices."""
        text = self.index_str(expr)
        return text if XINDEX in expr.free_symbols else f"{text} + 0 * xindex"

    # -- the ops handler -------------------------------------------------------------------------

    def load(self, name: str, index: Expr) -> CSEVar:
        expr = self.rewrite(index)
        hit = self.stored.get((name, str(expr)))
        if hit is not None:
            return hit[0]
        if name in self.written:
            self.memory_loads.add(name)
        elif name not in self.inputs:
            self.inputs.append(name)
        ptr = self.pointer(expr)
        bounds = [self.indirect[s] for s in expr.free_symbols if s in self.indirect]
        wide = RINDEX in expr.free_symbols or (self.reduction and bool(bounds))
        if RINDEX in expr.free_symbols:
            self.row_steps.append(coefficient(expr, RINDEX, {XINDEX, RINDEX}))
        if self.reduction and self.masks and self.level != "x" and not wide:
            ptr, wide = f"{ptr} + 0 * rindex", True  # the mask may vary along the row
        mask = " & ".join(["xmask & rmask" if wide else "xmask"] + self.masks + bounds)
        dtype = self.dtypes[name]
        text = f"tl.load(@@{name}@@ + ({ptr}), {mask}, other=0)"
        if register_dtype(dtype) != dtype:
            text += ".to(tl.float32)"
        return self.emit(text, register_dtype(dtype))

    def index_expr(self, expr: Expr, dtype: torch.dtype) -> CSEVar:
        tl_dtype = TL_DTYPES[register_dtype(dtype)]
        expr = self.rewrite(expr)
        if (
            dtype.is_floating_point
            and expr.is_integer is not True
            and not expr.is_number
            and not expr.free_symbols & {XINDEX, RINDEX}
        ):
            # a float of sizes (``sym_float(s0)``, ``1.0 / s0``) or a float input: the wrapper
            # computes it in Python and passes it as one scalar argument (index arithmetic is
            # integer-only), a float64 as Python's float is (triton would make it a float32)
            arg = self.size_arg(expr)
            self.float_args.add(arg)
            return self.emit(f"tl.full([1], {arg}, {tl_dtype})", register_dtype(dtype))
        expr = sympy.expand(expr)
        if not expr.free_symbols & {XINDEX, RINDEX}:
            return self.emit(f"tl.full([1], {self.index_str(expr)}, {tl_dtype})", dtype)
        return self.emit(f"({self.index_str(expr)}).to({tl_dtype})", register_dtype(dtype))

    def indirect_indexing(self, value: CSEVar, size: Expr) -> sympy.Symbol:
        """``value`` (an index read from memory, below ``size``) as a symbol of index expressions.
        Out of range it fails a device assert (in Triton's debug mode only) and loads through it are
        masked off, never reading outside the buffer."""
        bound = self.index_str(sympy.sympify(size))
        check = self.emit(f"(0 <= {value}) & ({value} < {bound})", torch.bool)
        self.lines.append(f'tl.device_assert({check} | ~xmask, "index out of bounds")')
        sym = sympy.Symbol(value.name, integer=True)
        self.indirect[sym] = str(check)
        return sym

    def constant(self, value: Any, dtype: torch.dtype) -> CSEVar:
        reg = register_dtype(dtype)
        return self.emit(f"tl.full([1], {literal(value, reg)}, {TL_DTYPES[reg]})", reg)

    def to_dtype(self, x: CSEVar, dtype: torch.dtype) -> CSEVar:
        reg = register_dtype(dtype)
        if dtype == torch.bool:
            return x if x.dtype == torch.bool else self.emit(f"{x} != 0", torch.bool)
        if reg != dtype:  # fp16/bf16: round through the narrow type, compute in fp32
            return self.emit(f"{x}.to({TL_DTYPES[dtype]}).to(tl.float32)", reg)
        if x.dtype == reg:
            return x
        return self.emit(f"{x}.to({TL_DTYPES[reg]})", reg)

    def masked(self, mask: CSEVar, body: Any, other: Any) -> CSEVar:
        self.masks.append(str(mask))
        try:
            value = body()
        finally:
            self.masks.pop()
        return self.emit(f"tl.where({mask}, {value}, {literal(other, value.dtype)})", value.dtype)

    def pointwise(self, name: str, *args: CSEVar) -> CSEVar:
        text = template(name, config.interpret())
        if name in BOOL_RESULT:
            dtype = torch.bool
        else:
            dtype = args[1].dtype if name == "where" else args[0].dtype
        expr = text.format(*(str(a) for a in args), dtype=TL_DTYPES[dtype])
        return self.emit(expr, dtype)

    # -- nodes -----------------------------------------------------------------------------------

    def generate(self) -> GeneratedKernel:
        for node in self.group.nodes:
            self.codegen_node(node)
        self.close_loop()
        return self.render()

    def codegen_node(self, node: SchedulerNode) -> None:
        xs, rs, level = place(node.body, self.group.numel, self.group.rnumel)
        if self.looped:
            if level == "x":
                self.close_loop()
            elif self.loop is None or node.reads & self.pending:
                self.open_loop()
        self.level = level
        self.rewrite = lambda e: simplify_index(node.body.rewrite(e, xs, rs))
        data = node.buffer.data
        target = node.body.store_index
        with use_handler(self):
            value = node.body.run()
            if level == "red":
                value = reduction_code.reduce(self, data, value)
            elif level == "scan":
                value = reduction_code.scan(self, data, value)
            elif node.body.kind == "scatter":
                target, value = value
        mode = data.mode if isinstance(data, Scatter) else None
        self.store(node.name, self.rewrite(target), value, level, mode)

    def store(
        self, name: str, expr: Expr, value: CSEVar, level: str, mode: str | None = None
    ) -> None:
        """``tl.store`` (``tl.atomic_add`` for ``mode="atomic_add"``) of ``value`` at ``expr``."""
        dtype = self.dtypes[name]
        text = str(value) if value.dtype == dtype else f"{value}.to({TL_DTYPES[dtype]})"
        ptr = self.pointer(expr)
        per_element = level in ("r", "scan")
        bounds = [self.indirect[s] for s in expr.free_symbols if s in self.indirect]
        mask = " & ".join(["xmask & rmask" if per_element else "xmask"] + bounds)
        if per_element and RINDEX not in expr.free_symbols:
            ptr += " + 0 * rindex"
        lines = self.loop.post if level == "red" and self.loop is not None else self.lines
        fn = "tl.atomic_add" if mode == "atomic_add" else "tl.store"
        lines.append(f"@@store:{name}@@{fn}(@@{name}@@ + ({ptr}), {text}, {mask})")
        scope = None if level in ("red", "x") else self.scope()
        self.stored[(name, str(expr))] = (value, scope)
        self.written.append(name)
        if level == "red" and self.loop is not None:
            self.pending.add(name)

    # -- rendering -------------------------------------------------------------------------------

    def render(self) -> GeneratedKernel:
        keep = [n for n in self.written if n not in self.group.removable or n in self.memory_loads]
        pointers = self.inputs + keep
        arg_names = {n: f"in_ptr{k}" for k, n in enumerate(self.inputs)}
        arg_names.update({n: f"out_ptr{k}" for k, n in enumerate(keep)})
        origins = [o for n in self.group.nodes for o in n.buffer.origins]
        name = kernel_name(self.reduction, origins, self.index)
        body = self.render_body(arg_names, set(keep))
        sizes = [f"{a}: tl.float64" if a in self.float_args else a for a in self.size_args.values()]
        params = [arg_names[n] for n in pointers] + sizes + ["xnumel"]
        if self.reduction:
            # NOTE(triton 3.6 interpreter): a plain int argument becomes a shape-[1] array there,
            # and ``range(0, rnumel, RBLOCK)`` calls ``int()`` on it, which numpy >= 2.5 refuses.
            # A constexpr stays a Python int under the interpreter and costs nothing there.
            constexpr = self.looped and config.interpret()
            params.append("rnumel: tl.constexpr" if constexpr else "rnumel")
        params += ["XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if self.reduction else [])
        header = [
            f"# kernel: {name}",
            f"# fx nodes: {', '.join(dict.fromkeys(origins))}",
            "@triton.jit",
            f"def {name}({', '.join(params)}):",
        ]
        source = "\n".join(header + ["    " + line for line in self.prologue() + body]) + "\n"
        return GeneratedKernel(
            name,
            source,
            pointers,
            keep,
            [(v, k) for k, v in self.size_args.items()],
            self.group.numel,
            self.group.rnumel,
            bool(self.persistent),
            list(dict.fromkeys(origins)),
            "tl.atomic_add(" in source,
            bool(self.row_steps) and all(c is not None and c != 1 for c in self.row_steps),
        )

    def prologue(self) -> list[str]:
        pid = "tl.program_id(0).to(tl.int64)" if self.int64 else "tl.program_id(0)"
        if not self.reduction:
            return [
                f"xoffset = {pid} * XBLOCK",
                "xindex = xoffset + tl.arange(0, XBLOCK)",
                "xmask = xindex < xnumel",
            ]
        lines = [
            f"xoffset = {pid} * XBLOCK",
            "xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
            "xmask = xindex < xnumel",
            "rbase = tl.arange(0, RBLOCK)[None, :]" + (".to(tl.int64)" if self.int64 else ""),
        ]
        if self.persistent:
            lines += ["rindex = rbase", "rmask = rindex < rnumel"]
        return lines

    def render_body(self, arg_names: dict[str, str], keep: set[str]) -> list[str]:
        out: list[str] = []
        for item in self.code:
            if isinstance(item, Loop):
                out += item.init + [
                    "for roffset in range(0, rnumel, RBLOCK):",
                    "    rindex = roffset + rbase",
                    "    rmask = rindex < rnumel",
                ]
                out += ["    " + line for line in item.body] + item.post
            else:
                out.append(item)
        return [fill(line, arg_names, keep) for line in out if keeps(line, keep)]


_STORE = re.compile(r"@@store:(\w+)@@")
_PTR = re.compile(r"@@(\w+)@@")


def keeps(line: str, keep: set[str]) -> bool:
    match = _STORE.search(line)
    return match is None or match.group(1) in keep


def fill(line: str, arg_names: dict[str, str], keep: set[str]) -> str:
    line = _STORE.sub("", line)
    return _PTR.sub(lambda m: arg_names[m.group(1)], line)


def literal(value: Any, dtype: torch.dtype) -> str:
    """A Python/Triton literal for ``value`` as ``dtype``."""
    if dtype == torch.bool:
        return "1" if value else "0"
    if dtype.is_floating_point:
        value = float(value)
        if math.isinf(value) or math.isnan(value):
            return f"float('{value}')"
        return repr(value)
    return str(int(value))


def kernel_name(reduction: bool, origins: list[str], index: int) -> str:
    ops = [re.sub(r"_\d+$", "", o).strip("_") for o in origins]
    unique = list(dict.fromkeys(o for o in ops if o))[:5]
    return f"triton_{'red' if reduction else 'poi'}_fused_{'_'.join(unique) or 'copy'}_{index}"
