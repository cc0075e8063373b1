"""Symbolic shapes: which inputs are dynamic, where each symbol comes from, and the shape guards.

``DynamicPolicy`` decides, per input, what is traced symbolically: everything (``dynamic=True``),
nothing (``dynamic=False``), or (default) what changed since an earlier trace ("automatic dynamic")
plus what the user marked with ``mark_dynamic``. ``ShapeTracker`` owns the trace's ``ShapeEnv``: it
remembers the source that defines each symbol (``L['a'].size()[0]`` defines ``s0``) and, at the end,
renders every fact the trace relied on as Python guards over the inputs::

    2 <= L['a'].size()[0]
    L['b'].size()[0] == L['a'].size()[0]
    2*L['a'].size()[0] >= 16
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch._guards import GuardSource, SLoc
from torch._guards import Source as TorchSource

from ...guards import kinds
from ...guards.guard import Guard
from ...guards.sources import ModuleGlobalSource, ShapeExprSource, Source, TensorPropertySource
from . import static_fakes

if TYPE_CHECKING:
    import sympy

#: torch's symbolic shapes, imported by the first trace that needs it, not by ``import bytegraph``:
#: it imports sympy (a quarter of a second; torch's ``from_tensor`` and meta kernels import it, so
#: plain static inputs get their fakes from ``static_fakes`` and common operators their metadata
#: from ``fast_meta``).
#: Until it is imported no value can hold a symbol. A ``ShapeEnv`` imports all of ``torch._dynamo``
#: (``validator`` -> ``torch._dynamo.exc``): a trace makes one only once it needs a symbol.
_SYMBOLIC_SHAPES = "torch.fx.experimental.symbolic_shapes"

#: Attribute names user code sets on tensors (ours, and torch's own ``mark_dynamic`` markers).
DYNAMIC_ATTRS = ("_bytegraph_dynamic", "_dynamo_dynamic_indices")
MAYBE_DYNAMIC_ATTRS = ("_bytegraph_maybe_dynamic", "_dynamo_weak_dynamic_indices")
STATIC_ATTRS = ("_bytegraph_static", "_dynamo_static_indices")


@dataclass
class DynamicPolicy:
    """What to trace symbolically, per function. In automatic mode it remembers the sizes and ints
    each trace saw (keyed by source expression, ``L['a']``); a later trace makes dynamic whatever
    differs, and it stays dynamic."""

    mode: bool | None = None  #: True: all sizes and ints; False: none; None: automatic
    dims: dict[str, set[int]] = field(default_factory=dict)  #: dims seen changing
    ints: set[str] = field(default_factory=set)  #: int inputs seen changing
    seen_sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    seen_ints: dict[str, int] = field(default_factory=dict)
    duck_shape: bool = True
    automatic: bool = True  #: False: what changes stays static (each new value recompiles)

    def tensor_dims(self, value: torch.Tensor, source: Source) -> set[int]:
        if self.mode is False or value.dim() == 0:
            return set()
        key, shape = source.expr, tuple(value.shape)
        before = self.seen_sizes.setdefault(key, shape)
        if len(before) != len(shape):
            # another rank (an empty KV cache ``tensor([])`` before its first update): compare the
            # next shapes with this one
            self.seen_sizes[key] = shape
        elif self.mode is None and self.automatic and before != shape:
            self.dims.setdefault(key, set()).update(
                i for i, (a, b) in enumerate(zip(before, shape, strict=True)) if a != b
            )
        dims = set(range(value.dim())) if self.mode else set(self.dims.get(key, ()))
        for attr in (*DYNAMIC_ATTRS, *MAYBE_DYNAMIC_ATTRS):
            dims |= set(getattr(value, attr, ()) or ())
        for attr in STATIC_ATTRS:
            dims -= set(getattr(value, attr, ()) or ())
        return dims

    def number_is_dynamic(self, value: int | float, source: Source) -> bool:
        """Ints, and floats (finite ones but -0.0, whose symbol's hint would be 0.0: sympy has no
        sign of zero), are traced symbolically once they change between calls."""
        if type(value) is float and (not math.isfinite(value) or str(value) == "-0.0"):
            return False
        if self.mode is not None:
            return self.mode
        if self.seen_ints.setdefault(source.expr, value) != value and self.automatic:
            self.ints.add(source.expr)
        return source.expr in self.ints

    def foresee(self, exprs: frozenset[str]) -> bool:
        """Numbers (by source expression) that a trace read as constants and its own call changes:
        each would change before the next call, so they are dynamic from now on (in automatic
        mode). Whether any of them was not already."""
        if self.mode is not None or not self.automatic:
            return False
        new = exprs - self.ints
        self.ints |= new
        return bool(new)


@dataclasses.dataclass(frozen=True)
class Origin(TorchSource):
    """The name torch's fake tensors and ShapeEnv keep for where a tensor or symbol came from
    (``L['a']``, only used in their messages). Without one, torch makes a ``torch._dynamo.source``
    object, importing all of ``torch._dynamo``."""

    expr: str

    @functools.cached_property
    def guard_source(self) -> GuardSource:
        return GuardSource.CONSTANT

    @property
    def _name_template(self) -> str:
        return self.expr


def unbacked_symbols(value: Any) -> set:
    """torch's ``free_unbacked_symbols(value)``: the symbols of numbers computed from tensor data
    that ``value`` (a SymInt, a tensor, a list of them) holds."""
    module = _loaded_symbolic_shapes()
    return set() if module is None else module.free_unbacked_symbols(value)


def is_data_dependent_guard(error: BaseException) -> bool:
    """Whether ``error`` is torch's ``GuardOnDataDependentSymNode``: a branch on a number computed
    from tensor data."""
    module = _loaded_symbolic_shapes()
    return module is not None and isinstance(error, module.GuardOnDataDependentSymNode)


def _loaded_symbolic_shapes() -> Any:
    """torch's symbolic shapes if anything has imported them, else None (no value can hold a
    symbol yet). Static traces do not import them, so user code in another thread may be
    importing them right now: ``import_module`` waits for that import to finish rather than hand
    back the half-initialised module ``sys.modules`` holds meanwhile. Once it has given the
    module, the module is kept: asked for every exception a traced instruction lets out."""
    global _symbolic_shapes_module
    if _symbolic_shapes_module is None and _SYMBOLIC_SHAPES in sys.modules:
        _symbolic_shapes_module = importlib.import_module(_SYMBOLIC_SHAPES)
    return _symbolic_shapes_module


#: torch's symbolic shapes once imported whole (``_loaded_symbolic_shapes``)
_symbolic_shapes_module: Any = None


def _static_context(symbolic_shapes: Any, value: torch.Tensor) -> Any:
    static = symbolic_shapes.DimDynamic.STATIC
    return symbolic_shapes.StatelessSymbolicContext(
        dynamic_sizes=[static] * value.dim(), constraint_sizes=[None] * value.dim()
    )


#: a module's name and attribute in the text of torch's sympy printer (``PythonPrinter``)
#: A float symbol's guard: the number is not -0.0 (``{1}`` is ``math.copysign``).
_NOT_MINUS_ZERO = "({0} != 0.0 or {1}(1.0, {0}) > 0)"
_PRINTED_MODULE_NAME = re.compile(r"\b(torch|math)\.(\w+)")


def _finite(bound: Any) -> int | float | None:
    """A range bound as an int (a float's as a float), or None for (torch's) infinities."""
    try:
        if not (bool(bound.is_finite) and bound.is_number):
            return None
        return int(bound) if bound.is_integer else float(bound)
    except (TypeError, ValueError, AttributeError):
        return None


def _no_stack_summary(is_debug: bool = False, framework_loc: Any = None) -> tuple[Any, str]:
    """``ShapeEnv._get_stack_summary`` of a trace's ShapeEnv: where each symbol, range and guard
    came from, as the caller names it, without a look at the stack. torch's finds the first frame
    outside its own files, which the first call lists by importing them (``torch.export``,
    AOTAutograd, Dynamo's guards: a quarter of a second on a first symbol); under the tracer that
    frame is the tracer's own, which says nothing of the user's code (no guard bytegraph renders
    reads it)."""
    return SLoc("" if framework_loc is None else framework_loc, None), ""


def _log_unbacked(
    prefix: str, symbol: Any, vr: Any, source: Any = None, sym_node: Any = None
) -> None:
    """``ShapeEnv._log_create_unbacked_symbol`` of a trace's ShapeEnv: torch's INFO line, without
    its structured-trace record (``TORCH_TRACE``'s, which no other part of a bytegraph trace
    writes). torch computes that record's metadata whenever the trace log has a handler, which it
    always installs: two stacks captured, and on the first call ``torch.export`` and AOTAutograd
    imported to list torch's own files (a fifth of a second on the first value a trace computes
    from tensor data, ``.item()`` or ``nonzero``)."""
    where = "" if source is None else source.name
    log = sys.modules[_SYMBOLIC_SHAPES].log
    log.info("%s %s [%s, %s] %s", prefix, symbol, vr.lower, vr.upper, where)


class ShapeTracker:
    """The symbols of one trace. Its ``ShapeEnv`` is made (and given to the trace's fake mode) when
    the trace first needs a symbol: a dynamic input, or a number computed from tensor data."""

    def __init__(self, policy: DynamicPolicy, fake_mode: Any) -> None:
        self.policy = policy
        self.fake_mode = fake_mode  #: the trace's FakeTensorMode, made without a ShapeEnv
        self.shape_env: Any = None  #: the trace's ShapeEnv, once it needs one
        self.defined: dict[sympy.Symbol, Source] = {}  #: symbol -> the input source defining it
        self.equalities: list[tuple[Source, Any]] = []  #: (source, symbolic value it must equal)
        #: id(real tensor) -> (the tensor, its fake) for fakes made by ``static_fakes`` (the ones
        #: ``from_tensor`` makes, it remembers itself)
        self._fresh: dict[int, tuple[torch.Tensor, Any]] = {}
        #: id(tensor) -> (the tensor, its source) for the tensors the function was called with:
        #: a view among them whose base is one too gets its base's fake from that source
        self.arguments: dict[int, tuple[torch.Tensor, Source]] = {}

    @property
    def used(self) -> bool:
        return bool(self.defined)

    def ensure_env(self) -> Any:
        """The trace's ShapeEnv, made on first use."""
        if self.shape_env is None:
            symbolic_shapes = importlib.import_module(_SYMBOLIC_SHAPES)
            self.shape_env = symbolic_shapes.ShapeEnv(duck_shape=self.policy.duck_shape)
            self.shape_env._get_stack_summary = _no_stack_summary
            self.shape_env._log_create_unbacked_symbol = _log_unbacked
            self.fake_mode.shape_env = self.shape_env
            self.fake_mode.static_shapes = False
        return self.shape_env

    def fake_tensor(self, value: torch.Tensor, source: Source, dims: set[int]) -> Any:
        made = self._fresh.get(id(value))
        if made is not None:
            return made[1]
        base = value._base if value._is_view() else None
        base_source = self._argument_source(base)
        if not dims and (base_source is None or not self.policy.tensor_dims(base, base_source)):
            fake = static_fakes.fresh_fake(self.fake_mode, value)
            if fake is not None:
                self._fresh[id(value)] = (value, fake)
                return fake
            # A source, or torch makes one of ``torch._dynamo.source``'s; no structured-trace
            # record (its first one captures a stack, importing torch._inductor).
            return self.fake_mode.from_tensor(
                value, static_shapes=True, source=Origin(source.expr), trace=False
            )
        self.ensure_env()
        symbolic_shapes = sys.modules[_SYMBOLIC_SHAPES]
        dim_kind = symbolic_shapes.DimDynamic
        kind = dim_kind.DUCK if self.policy.duck_shape else dim_kind.DYNAMIC
        if base_source is not None:
            # a view of another argument (``f(b.t(), b)``, ``f(b[1:], b)``): its base is faked
            # on that argument's sizes, and none of the two duck-sized, as torch's offset always
            # is: ``b[1:]``'s (a row's size) would be guarded equal to a size equal to it now
            kind = dim_kind.DYNAMIC
            base_dims = self.policy.tensor_dims(base, base_source)
            base_context = symbolic_shapes.StatelessSymbolicContext(
                dynamic_sizes=[
                    kind if i in base_dims else dim_kind.STATIC for i in range(base.dim())
                ],
                constraint_sizes=[None] * base.dim(),
            )
        elif base is not None:
            # a view's base made static: torch would give it symbols of its own (all dynamic),
            # with no source of ours, and the bounds it assumed of them (the view inside its
            # base's storage) could not be guarded; static, they are bounds on the view's own
            # symbols
            base_context = _static_context(symbolic_shapes, base)
        else:
            base_context = None
        sizes = [kind if i in dims else dim_kind.STATIC for i in range(value.dim())]
        context = symbolic_shapes.StatelessSymbolicContext(
            dynamic_sizes=sizes,
            constraint_sizes=[None] * value.dim(),
            view_base_context=base_context,
        )
        fake = self.fake_mode.from_tensor(
            value, symbolic_context=context, source=Origin(source.expr), trace=False
        )
        if base_source is not None and fake._base is not None:
            self._note_tensor(fake._base, base_source)
        self._note_tensor(fake, source)
        return fake

    def _argument_source(self, value: torch.Tensor | None) -> Source | None:
        known = self.arguments.get(id(value)) if value is not None else None
        return None if known is None or known[0] is not value else known[1]

    def _note_tensor(self, fake: Any, source: Source) -> None:
        """Where each symbol of ``fake``'s sizes, strides and offset is read: at ``source``."""
        for i in range(fake.dim()):
            self._note(fake.size(i), TensorPropertySource(source, "size", i))
            self._note(fake.stride(i), TensorPropertySource(source, "stride", i))
        self._note(fake.storage_offset(), TensorPropertySource(source, "storage_offset"))

    def symbolic_number(self, value: int | float, source: Source) -> torch.SymInt | torch.SymFloat:
        origin = Origin(source.expr)
        env = self.ensure_env()
        dynamic = sys.modules[_SYMBOLIC_SHAPES].DimDynamic.DYNAMIC
        if type(value) is int:
            sym = env.create_unspecified_symint_and_symbol(value, origin, dynamic)
        else:
            expr = env.create_unspecified_symbol(value, origin, dynamic)
            sym = env.create_symfloatnode(expr, hint=value, source=origin)
        self._note(sym, source)
        return sym

    def linear_in_input(self, value: Any) -> tuple[Source, int, int] | None:
        """``value``, a backed symbolic int, as ``(source, scale, offset)`` where it is
        ``scale * n + offset`` for an input's number ``n`` read at ``source`` (``i``, ``i + 1``,
        ``-i``); None for any other expression."""
        if not isinstance(value, torch.SymInt) or unbacked_symbols(value):
            return None
        import sympy  # imported by torch's symbolic shapes (see ``_SYMBOLIC_SHAPES``)

        expr = value.node.expr
        symbols = expr.free_symbols
        if len(symbols) != 1:
            return None
        (sym,) = symbols
        scale, offset = expr.coeff(sym), expr.subs(sym, 0)
        if not (scale.is_Integer and offset.is_Integer and scale) or sym not in self.defined:
            return None
        if sympy.expand(expr - scale * sym - offset) != 0:
            return None
        return self.defined[sym], int(scale), int(offset)

    def _note(self, value: Any, source: Source) -> None:
        if not isinstance(value, (torch.SymInt, torch.SymFloat)):
            return
        import sympy  # imported by torch's symbolic shapes (see ``_SYMBOLIC_SHAPES``)

        expr = value.node.expr
        if isinstance(expr, sympy.Symbol) and expr not in self.defined:
            self.defined[expr] = source
        elif self.defined.get(expr) != source:  # (a base noted with its view, then itself)
            self.equalities.append((source, expr))

    # -- guards ------------------------------------------------------------------------------------
    def guards(self) -> list[Guard]:
        """Everything the trace assumed about symbolic values, as SHAPE_EXPR guards."""
        env = self.shape_env
        if env is None:
            return []
        import sympy  # imported by torch's symbolic shapes (see ``_SYMBOLIC_SHAPES``)

        exprs: list[Any] = []
        rendered: list[Guard] = []
        for sym in self.defined:
            if not sym.is_integer:  # sympy has no -0.0: a float symbol stands for other floats
                copysign = ModuleGlobalSource("math", "copysign")
                rendered.append(self._guard(_NOT_MINUS_ZERO, (self.defined[sym], copysign)))
            replacement = env.replacements.get(sym)
            if replacement is not None:
                exprs.append(sympy.Eq(sym, replacement))
            bounds = env.var_to_range.get(sym)
            if bounds is not None:
                lower, upper = _finite(bounds.lower), _finite(bounds.upper)
                if lower is not None:
                    exprs.append(sympy.Le(lower, sym, evaluate=False))
                if upper is not None:
                    exprs.append(sympy.Le(sym, upper, evaluate=False))
        for source, expr in self.equalities:
            exprs.append(("eq", source, expr))
        exprs += [g.expr for g in env.guards]
        for expr in exprs:
            guard = self._render(expr)
            if guard is not None:
                rendered.append(guard)
        return rendered

    def _render(self, expr: Any) -> Guard | None:
        if isinstance(
            expr, tuple
        ):  # (eq, source, value): the source must equal a symbolic expression
            _, source, value = expr
            template, sources = self._template(value)
            n = len(sources)
            return self._guard(f"{{{n}}} == {template}", (*sources, source))
        import sympy  # imported by torch's symbolic shapes (see ``_SYMBOLIC_SHAPES``)

        if expr in (sympy.true, True):
            return None
        template, sources = self._template(expr)
        return self._guard(template, sources)

    def _template(self, expr: Any) -> tuple[str, tuple[Source, ...]]:
        """``expr`` as Python text with ``{i}`` where the i-th source's expression goes."""
        import sympy  # imported by torch's symbolic shapes (see ``_SYMBOLIC_SHAPES``)
        from torch.utils._sympy.printers import PythonPrinter

        symbols = sorted(getattr(expr, "free_symbols", ()), key=str)
        sources = []
        mapping = {}
        for i, sym in enumerate(symbols):
            if sym not in self.defined:
                raise KeyError(f"symbol {sym} has no source")
            sources.append(self.defined[sym])
            # a float's stand-in is no integer: ``Eq(zf0, 0.25)`` would print as ``False``
            kind = {"integer": True} if sym.is_integer else {"real": True}
            mapping[sym] = sympy.Symbol(f"BGSRC{i}BG", **kind)
        text = (
            PythonPrinter().doprint(expr.xreplace(mapping))
            if mapping
            else PythonPrinter().doprint(expr)
        )
        text = text.replace("{", "{{").replace("}", "}}")
        for i in range(len(symbols)):
            text = text.replace(f"BGSRC{i}BG", f"{{{i}}}")

        def module_global(match: re.Match) -> str:
            sources.append(ModuleGlobalSource(match[1], match[2]))
            return f"{{{len(sources) - 1}}}"

        # the functions the printer calls (``torch.sym_float(s0)`` of ``beta ** step``,
        # ``math.floor``) are read from their modules, like any source: a guard has no ``torch``
        # (unbound, it raised and missed on every call)
        return _PRINTED_MODULE_NAME.sub(module_global, text), tuple(sources)

    @staticmethod
    def _guard(template: str, sources: tuple[Source, ...]) -> Guard:
        shape = ShapeExprSource(template, sources)
        return kinds.SHAPE_EXPR(None, shape)
