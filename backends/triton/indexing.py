"""Index expressions: the sympy vocabulary shared by the IR, the kernels and the wrapper.

Loop indices are sympy symbols; an access is ``offset + sum(stride_i * index_i)``. Here live the two
integer functions we emit (``FloorDiv``, ``ModIndex``), ``unflatten`` (flat index -> per-dim
indices), the linear-coefficient test used to merge contiguous loop dims, and two printers:
``texpr`` (Triton kernel text) and ``pyexpr`` (Python wrapper text, which also understands torch's
own size functions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy

Expr = sympy.Expr


class FloorDiv(sympy.Function):
    """``a // b`` on non-negative integer index expressions."""

    is_integer = True

    @classmethod
    def eval(cls, a: Expr, b: Expr) -> Expr | None:
        if b == 1:
            return a
        if a == 0:
            return sympy.Integer(0)
        if isinstance(a, sympy.Integer) and isinstance(b, sympy.Integer):
            return sympy.Integer(int(a) // int(b))
        if isinstance(a, FloorDiv):
            return FloorDiv(a.args[0], a.args[1] * b)
        return None


class ModIndex(sympy.Function):
    """``a % b`` on non-negative integer index expressions."""

    is_integer = True

    @classmethod
    def eval(cls, a: Expr, b: Expr) -> Expr | None:
        if b == 1 or a == 0:
            return sympy.Integer(0)
        if isinstance(a, sympy.Integer) and isinstance(b, sympy.Integer):
            return sympy.Integer(int(a) % int(b))
        return None


def index_symbols(prefix: str, n: int) -> list[sympy.Symbol]:
    """``index_symbols("i", 2) -> [i0, i1]`` (non-negative integer symbols)."""
    return [sympy.Symbol(f"{prefix}{k}", integer=True, nonnegative=True) for k in range(n)]


def as_expr(value: object) -> Expr:
    """An int, SymInt or sympy value as a sympy expression."""
    node = getattr(value, "node", None)
    if node is not None and hasattr(node, "expr"):
        return sympy.sympify(node.expr)
    return sympy.sympify(value)


def product(sizes: Sequence[Expr]) -> Expr:
    result: Expr = sympy.Integer(1)
    for size in sizes:
        result = result * size
    return result


def contiguous_strides(sizes: Sequence[Expr]) -> list[Expr]:
    strides: list[Expr] = []
    running: Expr = sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(running)
        running = running * size
    return list(reversed(strides))


def unflatten(flat: Expr, sizes: Sequence[Expr]) -> list[Expr]:
    """Row-major indices of the element at position ``flat`` of a block with these sizes."""
    if not sizes:
        return []
    strides = contiguous_strides(sizes)
    out = [FloorDiv(flat, strides[0])]
    for size, stride in zip(sizes[1:], strides[1:], strict=True):
        out.append(ModIndex(FloorDiv(flat, stride), size))
    return out


def simplify_index(expr: Expr) -> Expr:
    """Undo ``unflatten`` where the dims are recombined contiguously.

    ``k*s*FloorDiv(v, s) + k*ModIndex(v, s) -> k*v`` and
    ``k*s*ModIndex(FloorDiv(v, s), t) + k*ModIndex(v, s) -> k*ModIndex(v, s*t)``.
    """
    expr = sympy.expand(expr)
    while True:
        terms = list(sympy.Add.make_args(expr))
        parts = [_split_term(t) for t in terms]
        merged = _merge_pair(terms, parts)
        if merged is None:
            return expr
        expr = sympy.expand(merged)


def _split_term(term: Expr) -> tuple[Expr, Expr | None]:
    """``coeff * atom`` with ``atom`` a FloorDiv/ModIndex (None when the term has no such atom)."""
    atoms = [f for f in sympy.Mul.make_args(term) if isinstance(f, FloorDiv | ModIndex)]
    if len(atoms) != 1:
        return term, None
    return sympy.Mul(*[f for f in sympy.Mul.make_args(term) if f is not atoms[0]]), atoms[0]


def _merge_pair(terms: list[Expr], parts: list[tuple[Expr, Expr | None]]) -> Expr | None:
    for i, (c1, a1) in enumerate(parts):
        if not isinstance(a1, ModIndex):
            continue
        base, size = a1.args
        for j, (c2, a2) in enumerate(parts):
            if j == i or a2 is None or not same(c2, c1 * size):
                continue
            if isinstance(a2, FloorDiv) and a2.args[0] == base and a2.args[1] == size:
                new = c1 * base
            elif (
                isinstance(a2, ModIndex)
                and isinstance(a2.args[0], FloorDiv)
                and a2.args[0].args == (base, size)
            ):
                new = c1 * ModIndex(base, size * a2.args[1])
            else:
                continue
            rest = [t for k, t in enumerate(terms) if k not in (i, j)]
            return sympy.Add(*rest, new)
    return None


def same(a: Expr, b: Expr) -> bool:
    """Symbolic equality good enough for sizes and affine indices."""
    return a == b or sympy.expand(a - b) == 0


def coefficient(expr: Expr, var: sympy.Symbol, index_vars: set) -> Expr | None:
    """The coefficient of ``var`` if ``expr`` is affine in it (others unrestricted), else None."""
    if var not in expr.free_symbols:
        return sympy.Integer(0)
    coeff: Expr = sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(expr)):
        if var not in term.free_symbols:
            continue
        c, rest = term.as_independent(var, as_Add=False)
        if rest != var or c.free_symbols & index_vars:
            return None
        coeff = coeff + c
    return coeff


def merge_groups(
    sizes: Sequence[Expr], vars_: Sequence[sympy.Symbol], exprs: Sequence[Expr], index_vars: set
) -> list[list[int]]:
    """Group adjacent dims that every expression walks as one contiguous run.

    Dims ``j`` and ``j+1`` merge when each expression is affine in both with
    ``coeff(j) == coeff(j+1) * size(j+1)``, so ``c_j*i_j + c_{j+1}*i_{j+1} == c_{j+1} * merged``.
    """
    if not sizes:
        return []
    groups = [[0]]
    for j in range(1, len(sizes)):
        prev = groups[-1][-1]
        if all(_mergeable(e, vars_[prev], vars_[j], sizes[j], index_vars) for e in exprs):
            groups[-1].append(j)
        else:
            groups.append([j])
    return groups


def _mergeable(
    expr: Expr, outer: sympy.Symbol, inner: sympy.Symbol, inner_size: Expr, index_vars: set
) -> bool:
    c_outer = coefficient(expr, outer, index_vars)
    c_inner = coefficient(expr, inner, index_vars)
    return c_outer is not None and c_inner is not None and same(c_outer, c_inner * inner_size)


def rewrite_merged(
    expr: Expr, groups: list[list[int]], vars_: Sequence[sympy.Symbol], merged: Sequence[Expr]
) -> Expr:
    """Rewrite ``expr`` (in the original vars) in terms of the merged dims' index expressions."""
    zero: dict = {}
    add: Expr = sympy.Integer(0)
    single: dict = {}
    for group, m in zip(groups, merged, strict=True):
        if len(group) == 1:
            single[vars_[group[0]]] = m
            continue
        last = vars_[group[-1]]
        coeff = coefficient(expr, last, set(vars_)) or sympy.Integer(0)
        add = add + coeff * m
        zero.update({vars_[k]: sympy.Integer(0) for k in group})
    if zero:
        expr = expr.subs(zero) + add
    return expr.subs(single, simultaneous=True) if single else expr


# ---------------------------------------------------------------------------------------------
# printers


def texpr(expr: Expr, names: Callable[[sympy.Symbol], str]) -> str:
    """Triton text for an index expression; ``names`` maps each symbol to a kernel name."""
    return _Printer(names, triton=True).print(sympy.expand(expr))


def pyexpr(expr: Expr) -> str:
    """Python text for a size expression in the wrapper (symbols are wrapper locals)."""
    return _Printer(str, triton=False).print(expr)


_FLOOR_NAMES = {"FloorDiv", "CleanDiv", "IntTrueDiv_floor"}
_MOD_NAMES = {"ModIndex", "PythonMod", "Mod"}


class _Printer:
    def __init__(self, names: Callable[[sympy.Symbol], str], triton: bool) -> None:
        self.names = names
        self.triton = triton

    def print(self, e: Expr) -> str:
        if isinstance(e, sympy.Integer):
            return str(int(e))
        if isinstance(e, sympy.Symbol):
            return self.names(e)
        if isinstance(e, sympy.Add):
            parts = [self.print(a) for a in sympy.Add.make_args(e)]
            return "(" + " + ".join(parts) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + " * ".join(self._factor(a) for a in e.args) + ")"
        if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Integer) and e.exp > 0:
            return "(" + " * ".join([self.print(e.base)] * int(e.exp)) + ")"
        name = type(e).__name__
        if name in _FLOOR_NAMES:
            return f"({self.print(e.args[0])} // {self.print(e.args[1])})"
        if name in _MOD_NAMES:
            return f"({self.print(e.args[0])} % {self.print(e.args[1])})"
        if name == "ModularIndexing":
            x, div, mod = (self.print(a) for a in e.args)
            return f"(({x} // {div}) % {mod})"
        if name in ("Max", "Min") and not self.triton:
            return f"{name.lower()}({', '.join(self.print(a) for a in e.args)})"
        if not self.triton:  # float size arithmetic (sym_float), only ever computed in Python
            text = self._float(e, name)
            if text is not None:
                return text
        raise NotImplementedError(f"cannot print index expression {e} ({name})")

    def _float(self, e: Expr, name: str) -> str | None:
        if isinstance(e, sympy.Float):
            return repr(float(e))
        if isinstance(e, sympy.Rational):
            return f"({e.p} / {e.q})"
        if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Integer) and e.exp < 0:
            return f"(1.0 / {self.print(e.base**-e.exp)})"
        if isinstance(e, sympy.Pow):
            return f"({self.print(e.base)} ** {self.print(e.exp)})"
        args = [self.print(a) for a in e.args]
        if name == "ToFloat":
            return f"float({args[0]})"
        if name in ("FloatTrueDiv", "IntTrueDiv"):
            return f"({args[0]} / {args[1]})"
        if name in ("FloatPow", "PowByNatural"):
            return f"({args[0]} ** {args[1]})"
        if name == "TruncToInt":
            return f"int({args[0]})"
        return None

    def _factor(self, e: Expr) -> str:
        if e == -1:
            return "-1"
        return self.print(e)
