"""Values that a resume function makes itself, rather than receiving them.

A generator made in the trace that has not started is rebuilt at a graph break by calling what
made it on the same arguments (``iterators.made_by``): ``itertools.product(*pools)`` for a
product, its function for a generator expression. Handed to the resume function as an object, a
C ``itertools`` object stops that function's trace at its first item (its position cannot be
read). Where a local of a frame is the only thing holding the generator, nothing that runs at the
break can reach it, so it is made later, with the same result: the local travels as
``(function, args, kwargs)`` and the resume function's prefix makes it
(``ResumePoint.made_locals``). Traced, the prefix calls the polyfill, and the items are taken in
the graph; run as plain Python, it makes the C object, of the type CPython makes.

A class's namespace (``cls.__dict__``, a read-only proxy CPython makes anew at each read) is made
the same way, as ``vars(cls)``: received as an object, the resume function's trace could not tell
it is a class's namespace (``builder``'s proxies are read through only for other mappings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..code_reader import parameters
from ..variables import iterators
from ..variables.base import VariableTracker
from ..variables.constants import ConstantVariable
from ..variables.containers import MappingProxyVariable, TupleVariable
from ..variables.iterators import GeneratorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import FrameState


def made_locals(
    frames: list[FrameState], live: dict[int, set[str]], written: set[str]
) -> dict[int, frozenset[str]]:
    """Per frame (by ``id``): its live locals (``live``, by frame id) that its resume function
    makes. ``written``: locals of the first frame that the break's instruction itself stores."""
    made: dict[int, set[str]] = {}
    for i, frame in enumerate(frames):
        for name in live[id(frame)]:
            if name in frame.tx.local_cells or (i == 0 and name in written):
                continue
            recipe = _recipe(frame.locals.get(name))
            if recipe is not None and _only_holder(frames, live, frame, name):
                made.setdefault(id(frame), set()).add(name)
    return {k: frozenset(v) for k, v in made.items()}


def load_recipe(cg: Codegen, gen: VariableTracker) -> None:
    """Push ``(function, args, kwargs)`` for ``gen`` (``codegen.resume.make_local`` calls it)."""
    recipe = _recipe(gen)
    assert recipe is not None
    function, args, kwargs = recipe
    if isinstance(function, VariableTracker):
        function.reconstruct(cg)  # a function made in the trace
    else:
        cg.load_const(function)
    for vt in args:
        vt.reconstruct(cg)
    cg.build_tuple(len(args))
    for key, vt in kwargs:
        cg.load_const(key)
        vt.reconstruct(cg)
        cg.build_tuple(2)
    cg.build_tuple(len(kwargs))
    cg.build_tuple(3)


class _Unwritable(Exception):  # noqa: N818 (control flow, not an error)
    """The call cannot be written down now."""


def _recipe(vt: Any) -> tuple[Any, list, list] | None:
    """``(function, args, (name, value) pairs)`` that make ``vt`` again, if it is a class's
    namespace, or a generator made in the trace that has not started and whose call can be
    written down now: optional arguments of a C function are left out where they hold their
    default (``itertools.repeat(x)`` refuses ``times=None``), which must then be known
    constants."""
    if isinstance(vt, MappingProxyVariable) and vt.owner is not None:
        return vars, [vt.owner], []
    if not isinstance(vt, GeneratorVariable) or vt.source is not None:
        return None
    if not iterators.restartable(vt):
        return None
    frame = vt.frame
    target = iterators.c_function(vt)
    defaults = iterators.defaults(frame.fn) if target is not None else {}

    def holds_default(name: str, value: VariableTracker) -> bool:
        if name not in defaults:
            return False
        if not value.is_python_constant():
            raise _Unwritable
        return iterators.is_default(defaults, name, value.as_python_constant())

    def spread(value: VariableTracker) -> list:
        if isinstance(value, TupleVariable):
            return list(value.items)
        if isinstance(value, ConstantVariable) and not value.value:
            return []  # no ``**kwargs`` given
        raise _Unwritable

    params = parameters(frame.code)
    values = [frame.symbolic_locals[name] for name, _ in params]
    try:
        args, kwargs = iterators.call_arguments(params, values, holds_default, spread)
    except _Unwritable:
        return None
    return (target if target is not None else vt.maker), args, kwargs


def _only_holder(
    frames: list[FrameState], live: dict[int, set[str]], frame: FrameState, name: str
) -> bool:
    """Is local ``name`` of ``frame`` the only live value (or value the side effects store) from
    which its generator can be reached?"""
    target = frame.locals[name]
    others: list[Any] = []
    for other in frames:
        others += other.stack
        others += [other.locals[n] for n in live[id(other)] if other is not frame or n != name]
    effects = frame.tx.output.side_effects
    others += [value for _, _, value in effects.attr_stores.values()]
    others += [*effects.global_stores.values(), *effects.cell_stores.values()]
    others += [*effects.mutated.values(), *effects.new_objects.values()]
    return all(vt is not target for vt in iterators.walk_live(others))
