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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..guards.sources import AttrSource, FreshSource, ItemSource, ModuleGlobalSource, Source
from .breaks import deferred_checks
from .exc import Unsupported
from .variables.tensors import TensorVariable

if TYPE_CHECKING:
    from .output_graph import OutputGraph
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
