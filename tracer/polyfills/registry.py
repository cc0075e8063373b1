"""The polyfill registry: ``{C builtin: pure-Python equivalent}``, each pair a substitute entry of
the call-rule table (``variables/call_rules.py``; ``variables/dispatch.py`` registers them, as this
package imports no tracker). Tracing a call to a registered builtin inlines its polyfill.

Keys are compared with ``==`` (a classmethod of a C type such as ``dict.fromkeys`` is a new bound
method on every attribute read, equal to the others, never identical).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

POLYFILLS: dict[Any, Callable[..., Any]] = {}
#: polyfill generator function -> ``rebuild(remaining_items)``: the C object of the same type
#: yielding those items, for a polyfilled iterator escaping the trace (others escape as plain
#: iterators over their remaining items)
REBUILD: dict[Callable[..., Any], Callable[[tuple], Any]] = {}
#: polyfill generator function -> ``resume(state)``: for one whose remaining items must not be
#: made now (endless, or each read when taken), ``(C function, arguments)`` that make the C object
#: going on from ``state``, the suspended generator's locals (its arguments before it ran): Python
#: values where they are constants, else their trackers (rebuilt as arguments); None where it
#: cannot be made from this state
RESUME: dict[Callable[..., Any], Callable[[dict[str, Any]], tuple | None]] = {}
#: polyfill generator function -> the C function that, called with the same arguments, makes the
#: same items: a generator of it that has not started is made again as the C object at a graph
#: break (``variables/iterators.py``). A polyfill that is a generator function is its own entry; one
#: that must do work when called (``itertools.product`` reads its pools then) returns a generator
#: of an inner function registered with ``generator_of``.
RESTART: dict[Callable[..., Any], Any] = {}
#: polyfill generator function -> the C iterator type it stands for, where its ``RESTART`` function
#: is no type (``iter``'s ``callable_iterator`` and sequence ``iterator``): ``type()`` in the trace
KINDS: dict[Callable[..., Any], type] = {}
#: polyfill generator function -> ``seek(position, done)``: for one standing for a real iterator
#: given to the trace, ``(helper, arguments)`` that move the real object where the trace left it
#: (``helper(it, *arguments)``: ``position``, its position when given plus the items the trace
#: took; ``done``: the trace saw its end), where taking its items again would read them again (a
#: sequence iterator calls ``__getitem__``)
SEEK: dict[Callable[..., Any], Callable[[int, bool], tuple]] = {}


def polyfill(
    *targets: Any,
    rebuild: Callable[[tuple], Any] | None = None,
    resume: Callable[[dict[str, Any]], tuple] | None = None,
    kind: type | None = None,
    seek: Callable[[int, bool], tuple] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the pure-Python equivalent of each of ``targets``
    (``kind``: as for ``generator_of``; ``seek``: see ``SEEK``)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for target in targets:
            assert target not in POLYFILLS, f"two polyfills for {target!r}"
            POLYFILLS[target] = fn
        if inspect.isgeneratorfunction(fn):
            _register_generator(fn, targets[0], rebuild, resume)
            if kind is not None:
                KINDS[fn] = kind
            if seek is not None:
                SEEK[fn] = seek
        return fn

    return register


def generator_of(
    target: Any,
    *,
    rebuild: Callable[[tuple], Any] | None = None,
    resume: Callable[[dict[str, Any]], tuple] | None = None,
    kind: type | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated generator function as the lazy part of ``target``'s polyfill: called
    with the arguments ``target`` would take once its eager part ran (a ``product``'s pools as
    tuples), it makes ``target``'s items. ``kind``: the type of the C iterator it stands for,
    where ``target`` is no type."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        _register_generator(fn, target, rebuild, resume)
        if kind is not None:
            KINDS[fn] = kind
        return fn

    return register


def _register_generator(
    fn: Callable[..., Any],
    target: Any,
    rebuild: Callable[[tuple], Any] | None,
    resume: Callable[[dict[str, Any]], tuple] | None,
) -> None:
    RESTART[fn] = target
    if rebuild is not None:
        REBUILD[fn] = rebuild
    if resume is not None:
        RESUME[fn] = resume


def lookup(value: Any) -> Callable[..., Any] | None:
    """The polyfill of ``value``, if it has one."""
    try:
        return POLYFILLS.get(value)
    except TypeError:  # unhashable: never registered
        return None
