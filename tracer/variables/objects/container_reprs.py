"""``repr`` of the builtin containers (``list``, ``tuple``, ``dict``, ``set``, ``frozenset``, and
``str`` of them, which is their ``repr``) as CPython writes it: the container's format around the
``repr`` of each item, each item's found as ``repr(item)`` would find it in the trace (a user's
``__repr__`` inlined, an input object's default one computed on the real object with its identity
guarded, a constant's folded). A set's items come in CPython's order (a break where the trace does
not know it); a container reached again inside itself is written ``[...]``, ``{...}``, ``(...)``
or ``set(...)``, as CPython's reentrancy guard writes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import (
    BaseSequenceVariable,
    DictVariable,
    SetVariable,
    key_vt,
)

if TYPE_CHECKING:
    from ...translator import Translator

ItemRepr = Callable[[VariableTracker], VariableTracker]

#: the containers whose ``repr`` is being written, innermost last (CPython's ``Py_ReprEnter``)
_RUNNING: list[VariableTracker] = []


def container_repr(
    tx: Translator, vt: VariableTracker, item_repr: ItemRepr
) -> VariableTracker | None:
    """``repr(vt)`` for an exact builtin container, else None."""
    cls = _container_type(vt)
    if cls is None:
        return None
    if any(running is vt for running in _RUNNING):
        return ConstantVariable(_REENTERED[cls])
    _RUNNING.append(vt)
    try:
        return ConstantVariable(_write(tx, vt, cls, lambda item: _text(item_repr, item)))
    finally:
        _RUNNING.pop()


_REENTERED = {
    list: "[...]",
    tuple: "(...)",
    dict: "{...}",
    set: "set(...)",
    frozenset: "frozenset(...)",
}


def _container_type(vt: VariableTracker) -> type | None:
    if isinstance(vt, (BaseSequenceVariable, DictVariable, SetVariable)):
        cls = vt.python_type()
        return cls if cls in _REENTERED else None
    return None


def _write(
    tx: Translator, vt: VariableTracker, cls: type, text: Callable[[VariableTracker], str]
) -> str:
    if cls is dict:
        pairs = [f"{text(key_vt(k))}: {text(v)}" for k, v in vt.items.items()]
        return "{" + ", ".join(pairs) + "}"
    if cls in (set, frozenset):
        items = [text(key_vt(k)) for k in vt.in_order()]
        if not items:
            return f"{cls.__name__}()"
        inner = "{" + ", ".join(items) + "}"
        return inner if cls is set else f"frozenset({inner})"
    items = [text(item) for item in vt.unpack(tx)]
    if cls is list:
        return "[" + ", ".join(items) + "]"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _text(item_repr: ItemRepr, item: VariableTracker) -> str:
    made = item_repr(item)
    if not made.is_python_constant() or type(made.as_python_constant()) is not str:
        raise Unsupported("builtin", f"repr() of an item {item!r} gave {made!r}")
    return made.as_python_constant()
