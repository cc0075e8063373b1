"""A generator made in the trace that has not started yet, rebuilt at a graph break as a fresh call.

Until its first item is taken, a generator object is its function and its arguments: eager code
holding one at the break holds a generator that will run its whole body later, reading whatever
its arguments and closure cells hold then. Rewritten code therefore makes it again by calling the
same function on the same (rebuilt) arguments: a generator expression's function on its
iterator, a user generator function on its arguments, the C ``itertools`` function behind a
polyfilled one (``itertools.product(...)``, not the polyfill's plain generator). A generator that
has started cannot be rebuilt so (its frame is half run): ``tracer/iterator_rollback.py`` takes
the break where it was made instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...code_reader import parameters
from ...polyfills.registry import RESTART
from ..base import VariableTracker, walk

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from .iterator_trackers import GeneratorVariable

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def made_by(result: VariableTracker, maker: Any) -> VariableTracker:
    """``result`` of calling ``maker`` (a function object, or the tracker of a function made in
    the trace); a generator remembers what made it."""
    from .iterator_trackers import GeneratorVariable

    if isinstance(result, GeneratorVariable) and result.maker is None:
        result.maker = maker
    return result


def restartable(gen: GeneratorVariable) -> bool:
    """Has ``gen`` not started, and is what made it known?"""
    frame = gen.frame
    if gen.spoiled or gen.done or gen.given or gen.items or frame is None or frame.ip != 0:
        return False
    if c_function(gen) is None and gen.maker is None:
        return False
    return all(name in frame.symbolic_locals for name, _ in parameters(frame.code))


def reconstruct(gen: GeneratorVariable, cg: Codegen) -> None:
    """Emit ``start(function, parameter kinds, arguments)``: the generator made again."""
    frame = gen.frame
    params = parameters(frame.code)
    target = c_function(gen)

    def build() -> None:
        cg.load_const(start)
        if target is not None:
            cg.load_const(target)
        elif isinstance(gen.maker, VariableTracker):
            gen.maker.reconstruct(cg)  # a function made in the trace
        else:
            cg.load_const(gen.maker)  # a function object (its identity is guarded by the trace)
        cg.load_const(tuple(params))
        for name, _ in params:
            frame.symbolic_locals[name].reconstruct(cg)
        cg.build_tuple(len(params))
        # a C function's optional arguments are left out where the polyfill's default stands in
        # for "not given" (itertools.repeat(x) has no times=None)
        cg.load_const(defaults(frame.fn) if target is not None else {})
        cg.call_function(4)

    cg.build_once(gen, build)


def walk_live(values: Any, descend: Any = lambda vt: True) -> list[VariableTracker]:
    """``walk(values, descend)``, and also through what each not-started generator reached is made
    again from at a break (its function and arguments): what rebuilding ``values`` there reads."""
    from .iterator_trackers import GeneratorVariable

    found: list[VariableTracker] = []
    seen: set[int] = set()
    pending = [values]
    while pending:
        for vt in walk(pending.pop(), descend):
            if id(vt) in seen:
                continue
            seen.add(id(vt))
            found.append(vt)
            if isinstance(vt, GeneratorVariable) and restartable(vt):
                pending.append([vt.maker, *vt.frame.symbolic_locals.values()])
    return found


def start(fn: Any, params: tuple, values: tuple, defaults: dict[str, Any]) -> Any:
    """Runtime helper: call ``fn`` with ``values``, one per parameter of ``params`` (name, kind),
    leaving out optional ones that hold their ``defaults`` (trailing positional, or keyword)."""
    args, kwargs = call_arguments(
        params,
        values,
        lambda name, value: is_default(defaults, name, value),
        lambda value: list(value.items()) if isinstance(value, dict) else list(value),
    )
    return fn(*args, **dict(kwargs))


def call_arguments(
    params: Any,
    values: Any,
    holds_default: Callable[[str, Any], bool],
    spread: Callable[[Any], list],
) -> tuple[list, list[tuple[str, Any]]]:
    """The positional arguments and ``(name, value)`` keyword arguments that call a function with
    parameters ``params`` (name, kind) on ``values``: optional ones are left out where
    ``holds_default(name, value)`` (trailing positional, or keyword); ``spread(value)`` gives the
    items of a ``*args`` value, or the pairs of a ``**kwargs`` one. For real values here, and for
    the trace's (``made_in_resume``)."""
    args: list[Any] = []
    kwargs: list[tuple[str, Any]] = []
    droppable = 0  #: trailing positional arguments that hold their defaults
    for (name, kind), value in zip(params, values, strict=True):
        if kind in _POSITIONAL:
            args.append(value)
            droppable = droppable + 1 if holds_default(name, value) else 0
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            items = spread(value)
            args += items
            droppable = 0 if items else droppable
        elif kind is inspect.Parameter.KEYWORD_ONLY:
            if not holds_default(name, value):
                kwargs.append((name, value))
        else:
            kwargs += spread(value)
    return args[: len(args) - droppable], kwargs


def is_default(defaults: dict[str, Any], name: str, value: Any) -> bool:
    default = defaults.get(name, _NO_DEFAULT)
    return value is default or (type(value) is type(default) and value == default)


_NO_DEFAULT = object()


def defaults(fn: Any) -> dict[str, Any]:
    """The parameter defaults of the Python function ``fn``."""
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def c_function(gen: GeneratorVariable) -> Any:
    """The C function a polyfilled generator stands for (``itertools.product``), if it is one."""
    return RESTART.get(getattr(gen.frame, "fn", None))
