"""Calls that make a new class: ``collections.namedtuple(...)`` called in the compiled function,
and ``tuple.__new__(cls, items)``, which the methods of the class it made call (``P._make``).

CPython's factory builds the class with ``eval`` (its ``__new__``) and ``type(name, bases, ns)``,
which the trace cannot follow; called on Python constants it is a pure function of them (as
torch.compile treats it), so the trace runs the real factory once, when the call is traced, and
the class it made is a constant of the trace. Its ``__module__`` is the caller's ``__name__``, as
CPython gives it (the real caller, while tracing, would be the tracer). Arguments only known at run
time (a tensor as a default) are a graph break.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..call_rules import call_rule
from ..containers.builtin_containers import TupleVariable

if TYPE_CHECKING:
    from ...translator import Translator


@call_rule(collections.namedtuple, tuple.__new__)
def make_class(
    tx: Translator, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The class ``target(*args, **kwargs)`` makes, when ``target`` is a class factory (or the
    namedtuple ``tuple.__new__`` makes)."""
    if target is _TUPLE_NEW:
        return _tuple_new(tx, args, kwargs)
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        raise Unsupported("class_factory", "namedtuple() called with values only known at run time")
    real_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    if real_kwargs.get("module") is None:
        real_kwargs["module"] = tx.f_globals.get("__name__", "__main__")
    try:
        cls = target(*[a.as_python_constant() for a in args], **real_kwargs)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None
    return tx.fold(cls)


_TUPLE_NEW = tuple.__new__


def _tuple_new(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``tuple.__new__(cls, iterable=())`` for ``tuple`` and ``namedtuple()`` classes (whose
    instances are ``TupleVariable``s); other subclasses are left to the caller."""
    if kwargs or not 1 <= len(args) <= 2 or not args[0].is_python_constant():
        return None
    cls = args[0].as_python_constant()
    if not (cls is tuple or (isinstance(cls, type) and _is_namedtuple_class(cls))):
        return None
    items = dispatch.iterate(tx, args[1]) if len(args) == 2 else []
    return TupleVariable(list(items), cls=cls)


def _is_namedtuple_class(cls: type) -> bool:
    """Made by ``namedtuple()`` (a direct subclass of tuple with ``_fields``, no ``__dict__``)."""
    return cls.__bases__ == (tuple,) and "_fields" in vars(cls) and "__dict__" not in vars(cls)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
