"""Random draws from a ``torch.Generator`` the compiled function is given, made before the graph.

No backend takes a generator as a graph input (AOTAutograd refuses one), so a call drawing from
``g`` (``torch.randn(3, generator=g)``, ``torch.rand_like(x, generator=g)``,
``x.normal_(generator=g)``) cannot be a graph node. What it draws depends only on ``g``'s state and
on the call's constant arguments (sizes, bounds, dtype, device) and, for the functions in
``METADATA_ONLY``, on a tensor's size, strides, dtype and device, never its data. Such a call is
made by the rewritten code *before the graph*, in the prologue (``SideEffects.prologue``), on a
stand-in tensor of that layout (``torch.empty_strided``); the graph takes what it drew as an input
(read through a ``FreshSource``), an in-place fill becoming ``x.copy_(drawn)``. ``g`` draws in the
order the function draws from it, exactly as in eager, so its state after the call and every
later draw are eager's.

Drawing earlier than eager is invisible only when nothing else in the call uses ``g`` in between:
its other uses (``g.manual_seed``, ``g.get_state``) break the graph, and the default generators,
which the graph's own random operators draw from, are refused (``g`` is guarded to be none of
them, and to keep its device). A
call whose other arguments are not constants (a tensor of probabilities, ``out=``) keeps its
break. Entry point: ``draw_before_graph`` (``OutputGraph._create``).

Python's ``random`` module is drawn from the same way: ``random.random()``, ``randint``,
``randrange`` and ``uniform`` of the global ``random.Random`` instance, with constant number
arguments, are made by the prologue in the order the trace met them (``draw_python_number``), so
``random.getstate()`` after the call and every number are eager's; the graph takes each number as
a 0-d tensor and reads it with ``item()`` (an unbacked symbolic number: code that needs its value
while tracing breaks there, as for any ``item()``). Its other uses (``seed``, ``getstate``,
``shuffle``...) run in Python, which ends the graph before them.
"""

from __future__ import annotations

import random
from types import FunctionType
from typing import TYPE_CHECKING, Any

import torch

from ..guards.sources import AttrSource, FreshSource, ItemSource, ModuleGlobalSource, Source
from .breaks import deferred_checks
from .exc import Unsupported
from .variables.call_rules import call_rule
from .variables.tensors import TensorVariable, to_scalar

if TYPE_CHECKING:
    from .output_graph import OutputGraph
    from .translator import Translator
    from .variables.base import VariableTracker

#: The prologue locals that hold what a draw drew.
PREFIX = "__bg_drawn"
#: In-place tensor methods whose result depends on ``self``'s layout, not its data (they fill it).
FILLS = frozenset(
    {
        "normal_",
        "uniform_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "bernoulli_",
    }
)
#: Functions whose first (tensor) argument gives the layout of the result, not its data.
METADATA_ONLY = frozenset({torch.rand_like, torch.randn_like, torch.randint_like})


def takes_generator(args: tuple, kwargs: dict[str, Any]) -> bool:
    """Is a ``torch.Generator`` among a recorded call's arguments (not in a container)?"""
    return any(_is_generator(vt) for vt in (*args, *kwargs.values()))


def draw_before_graph(
    output: OutputGraph, op: str, target: Any, args: tuple, kwargs: dict[str, Any]
) -> VariableTracker:
    """The tracker of what ``target(*args, **kwargs)`` returns, drawn in the prologue (see the
    module's docstring); ``Unsupported`` where it cannot be."""
    draw = _Draw(output)
    layout_arg = 0 if _reads_layout(op, target) else None
    call_args = tuple(draw.argument(vt, i == layout_arg) for i, vt in enumerate(args))
    call_kwargs = {k: draw.argument(vt, False) for k, vt in kwargs.items()}
    fn = getattr(torch.Tensor, target) if op == "call_method" else target
    example = draw.now(fn, call_args, call_kwargs)
    what = f"{_name(fn)} draws from a torch.Generator"
    output.check_prologue_state(what)
    deferred_checks.note_prologue(output, what)
    effects = output.side_effects
    for entry in draw.stand_ins:
        effects.add_prologue(entry)
    name = effects.new_name(PREFIX)
    effects.add_prologue((name, fn, call_args, call_kwargs))
    drawn = output.add_input(example, FreshSource(name))
    if op == "call_method":  # ``x.normal_(generator=g)``: x takes what its stand-in drew
        return output.call_method("copy_", (args[0], drawn), {})
    return drawn


def undone(source: Source, made: set[str]) -> bool:
    """Is ``source`` the local of a draw no longer in the prologue (``made``: its locals), undone
    with the instruction that made it? ``OutputGraph.restore`` then drops its graph input."""
    return (
        isinstance(source, FreshSource)
        and source.name.startswith(PREFIX)
        and (source.name not in made)
    )


def _reads_layout(op: str, target: Any) -> bool:
    """Is the call's first argument a tensor it reads for its layout only?"""
    if op == "call_method":
        return target in FILLS
    return target in METADATA_ONLY


class _Draw:
    """The prologue call's arguments, built from the recorded call's: constants, the generator's
    ``Source``, and a ``FreshSource`` for each stand-in tensor (``stand_ins``: prologue entries
    made before the call's own); ``reals`` holds what those sources give now."""

    def __init__(self, output: OutputGraph) -> None:
        self.output = output
        self.stand_ins: list[tuple[str, Any, tuple, dict]] = []
        self.reals: dict[Source, Any] = {}

    def argument(self, vt: Any, layout: bool) -> Any:
        if _is_generator(vt):
            return self._generator(vt)
        if layout and isinstance(vt, TensorVariable):
            return self._stand_in(vt)
        if not vt.is_python_constant():
            raise Unsupported(
                "generator_draw",
                f"a draw from a torch.Generator with argument {vt}, not a constant",
                hint="only sizes, bounds, dtype and device (and a tensor's layout) can be drawn "
                "before the graph",
            )
        return vt.as_python_constant()

    def _generator(self, vt: Any) -> Source:
        generator = getattr(vt, "value", None)
        if vt.source is None or not isinstance(generator, torch.Generator):
            raise Unsupported("generator_draw", "a torch.Generator made in the compiled function")
        default = _default_source(generator.device)
        if default is None or _real(default) is generator:
            raise Unsupported(
                "generator_draw",
                f"a draw from the default {generator.device} generator passed as generator=",
                hint="the graph's random operators draw from it too: omit generator=",
            )
        self.output.assume_equal(AttrSource(vt.source, "device"), generator.device)
        self.output.assume_distinct(vt.source, default)
        copy = torch.Generator(device=generator.device)  # draws now without moving ``generator``
        copy.set_state(generator.get_state())
        self.reals[vt.source] = copy
        return vt.source

    def _stand_in(self, vt: TensorVariable) -> Source:
        example = vt.example
        size, stride = tuple(example.shape), tuple(example.stride())
        if not all(type(n) is int for n in (*size, *stride)):
            raise Unsupported("generator_draw", "a draw from a torch.Generator of a symbolic size")
        layout = {"dtype": example.dtype, "device": example.device}
        source = FreshSource(self.output.side_effects.new_name("__bg_layout"))
        self.stand_ins.append((source.name, torch.empty_strided, (size, stride), layout))
        self.reals[source] = torch.empty_strided(size, stride, **layout)
        return source

    def now(self, fn: Any, args: tuple, kwargs: dict[str, Any]) -> torch.Tensor:
        """The call made now, on the copies of the generators (the real ones keep their state):
        the graph input's example, and eager's error if it raises (the call then runs in
        Python)."""

        def real(value: Any) -> Any:
            return self.reals[value] if isinstance(value, Source) else value

        try:
            result = fn(*map(real, args), **{k: real(v) for k, v in kwargs.items()})
        except Exception as e:  # noqa: BLE001 (runs in Python, where it raises for the user)
            raise Unsupported(
                "python_error", f"{_name(fn)} raised {type(e).__name__}: {e}"
            ) from None
        if not isinstance(result, torch.Tensor):
            raise Unsupported("generator_draw", f"{_name(fn)} returned no tensor")
        return result


def _default_source(device: torch.device) -> Source | None:
    """Where the default generator of ``device`` is read (None: a device without one here)."""
    if device.type == "cpu":
        return ModuleGlobalSource("torch", "default_generator")
    if device.type == "cuda" and device.index is not None:
        if device.index < len(torch.cuda.default_generators):  # CUDA is initialised
            return ItemSource(ModuleGlobalSource("torch.cuda", "default_generators"), device.index)
    return None


def _real(source: Source) -> Any:
    """The default generator ``source`` reads now."""
    if isinstance(source, ItemSource):
        return torch.cuda.default_generators[source.index]
    return torch.default_generator


def _is_generator(vt: Any) -> bool:
    """A tracker of a real generator (``UserObjectVariable``)."""
    return type(getattr(vt, "value", None)) is torch.Generator


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


# -- Python's ``random`` ---------------------------------------------------------------------------
#: The global instance's methods drawn before the graph: each gives one number, drawn from the
#: instance's state alone, and raises (if at all) for its arguments alone, never its state.
PYTHON_DRAWS = (random.random, random.randint, random.randrange, random.uniform)
#: Where a drawn number lies: the dtype that holds it exactly.
_NUMBER_DTYPES = {float: torch.float64, int: torch.int64}


def drawn_number(draw: Any, args: tuple, dtype: torch.dtype) -> torch.Tensor:
    """``draw(*args)`` as a 0-d CPU tensor of ``dtype``, which holds it exactly: the prologue's
    call, whose tensor the graph takes as an input."""
    return torch.tensor(draw(*args), dtype=dtype, device="cpu")


@call_rule(*PYTHON_DRAWS, *(getattr(random.Random, f.__name__) for f in PYTHON_DRAWS))
def draw_python_number(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``random.random()``, ``random.randint(a, b)``... (``PYTHON_DRAWS``) drawn by the prologue
    (see the module's docstring): the number the graph reads from the prologue's tensor. None
    (traced as before) for another instance, for arguments that are not constant numbers, or
    where the draw would raise or give a number no int64 holds."""
    args = _on_the_global_instance(tx, fn, args)
    if args is None or kwargs or not all(vt.is_python_constant() for vt in args):
        return None
    values = tuple(vt.as_python_constant() for vt in args)
    if not all(type(v) in (int, float) for v in values):
        return None
    draw = getattr(random._inst, fn.__name__)
    dtype = _number_dtype(draw, values)
    if dtype is None:
        return None
    output = tx.output
    what = f"random.{fn.__name__}() draws from Python's random generator"
    output.check_prologue_state(what)
    deferred_checks.note_prologue(output, what)
    name = output.side_effects.new_name(PREFIX)
    output.side_effects.add_prologue((name, drawn_number, (draw, values, dtype), {}))
    example = torch.zeros((), dtype=dtype, device="cpu")
    return to_scalar(tx, output.add_input(example, FreshSource(name)), "item")


#: The global instance's other methods: each runs in Python as one call (traced, its body would
#: break at each draw it makes from the C generator, and its effect on the state is the point).
PYTHON_ONLY = tuple(
    value
    for value in vars(random).values()
    if getattr(value, "__self__", None) is random._inst and value not in PYTHON_DRAWS
)


@call_rule(
    *PYTHON_ONLY,
    *(m for f in PYTHON_ONLY if isinstance(m := getattr(random.Random, f.__name__), FunctionType)),
)
def run_python_random(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``random.shuffle(xs)``, ``random.seed(0)``, ``random.getstate()``...: one call made in
    Python (a break); None (traced as before) on an instance of the user's."""
    if _on_the_global_instance(tx, fn, args) is None:
        return None
    raise Unsupported(
        "python_random",
        f"random.{fn.__name__}() uses Python's random generator",
        hint="random.random/randint/randrange/uniform with constant arguments stay in the graph",
    )


def _on_the_global_instance(
    tx: Translator, fn: Any, args: list[VariableTracker]
) -> list[VariableTracker] | None:
    """The call's arguments after ``self`` where ``fn`` is a method of ``random``'s global
    instance, bound (``random.random``) or given it as ``self`` (guarded); None otherwise."""
    if getattr(fn, "__self__", None) is random._inst:
        return args
    if not args or getattr(args[0], "value", None) is not random._inst or args[0].source is None:
        return None
    tx.output.assume_identity(args[0].source, random._inst)
    return args[1:]


def _number_dtype(fn: Any, args: tuple) -> torch.dtype | None:
    """The dtype that holds every number ``fn(*args)`` may give, found by drawing once from a
    copy of the global instance (its type, and eager's error if any); None where the call raises
    or an int it may give does not fit in int64 (``randint``/``randrange``: between its bounds)."""
    copy = random.Random()
    copy.setstate(random.getstate())
    try:
        kind = type(getattr(copy, fn.__name__)(*args))
    except Exception:  # noqa: BLE001 (runs in Python, where it raises for the user)
        return None
    if kind is int and not all(_in_int64(v) for v in args):
        return None
    return _NUMBER_DTYPES.get(kind)


def _in_int64(value: float) -> bool:
    return -(2**63) <= value < 2**63
