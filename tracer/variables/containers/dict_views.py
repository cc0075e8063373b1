"""Dict views (``d.keys()``, ``d.values()``, ``d.items()``) and the set algebra shared with sets.

A ``DictViewVariable`` holds the dict tracker itself, never a copy: like CPython's views it sees
every later insertion and deletion, and it escapes the trace as ``d.keys()`` of the rebuilt dict.
``set_operator`` gives ``&``, ``|``, ``-``, ``^`` (and the in-place forms on sets) for sets,
frozensets and key/item views; ``contains`` answers ``in``. Methods are in ``container_methods``.
"""

from __future__ import annotations

import collections
import collections.abc
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...exc import PythonError, Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from .builtin_containers import (
    BoundMethodVariable,
    DictVariable,
    SetRecipe,
    SetVariable,
    TupleVariable,
    computed_set,
    hash_key,
    key_vt,
    recipe_part,
)

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator

_VIEW_TYPES = {kind: type(getattr({}, kind)()) for kind in ("keys", "values", "items")}
#: an ``OrderedDict``'s views have types of their own (``odict_keys``...)
_ORDERED_VIEW_TYPES = {
    kind: type(getattr(collections.OrderedDict(), kind)()) for kind in ("keys", "values", "items")
}


@dataclass(eq=False)
class DictViewVariable(VariableTracker):
    dict_vt: DictVariable
    kind: str  #: "keys", "values" or "items"
    source: Any = None

    def python_type(self) -> type:
        if issubclass(self.dict_vt.python_type(), collections.OrderedDict):
            return _ORDERED_VIEW_TYPES[self.kind]
        return _VIEW_TYPES[self.kind]

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        items = self.dict_vt.items
        if self.kind == "keys":
            return [key_vt(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_vt(k), v]) for k, v in items.items()]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "mapping":
            raise Unsupported("getattr", "the mapping proxy of a dict view")
        if hasattr(self.python_type(), name):
            return BoundMethodVariable(self, name)
        raise Unsupported("getattr", f"{self.python_type().__name__} has no attribute {name!r}")

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # a view given to the trace (``live_inputs``): that object
            self.source.reconstruct(cg)
            return

        def build() -> None:
            self.dict_vt.reconstruct(cg)
            cg.load_attr(self.kind)
            cg.call_function(0)

        cg.build_once(self, build)

    def __repr__(self) -> str:
        return f"DictViewVariable({self.kind})"


def _constant(tx: Translator, vt: VariableTracker) -> Any:
    return hash_key(vt)


def contains(tx: Translator, view: DictViewVariable, item: VariableTracker) -> bool:
    """``item in view``: keys by hash, items by key then value equality, values by equality."""
    items = view.dict_vt.items
    if view.kind == "keys":
        return _constant(tx, item) in items
    if view.kind == "items":
        pair = dispatch.iterate(tx, item)
        if len(pair) != 2:
            return False
        key = _constant(tx, pair[0])
        if key not in items:
            return False
        return _equal(tx, items[key], pair[1])
    return any(_equal(tx, v, item) for v in items.values())


def _equal(tx: Translator, a: VariableTracker, b: VariableTracker) -> bool:
    if a is b:
        return True
    result = dispatch.call_operator(tx, operator.eq, [a, b])
    return dispatch.truth(tx, result)


_SET_OPS = frozenset({operator.and_, operator.or_, operator.sub, operator.xor})
_INPLACE_SET_OPS = {
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.isub: operator.sub,
    operator.ixor: operator.xor,
}
#: the method an in-place operator on a set runs (its log on an input set)
_INPLACE_METHODS = {
    operator.iand: "intersection_update",
    operator.ior: "update",
    operator.isub: "difference_update",
    operator.ixor: "symmetric_difference_update",
}
_COMPARE = frozenset({operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge})


def real_set(vt: SetVariable) -> set | frozenset:
    """The keys of a set tracker as the object CPython's methods run on: the set itself (changed
    in place by the mutating ones), or a frozenset of them (results are then frozensets)."""
    table = vt.exact()
    table = vt.ordered() if table is None else table
    return frozenset(table) if vt.frozen else table


def _real(tx: Translator, vt: VariableTracker) -> Any:
    """An object CPython applies the same operation to: the set itself, a dict of constants
    standing for the viewed dict (a keys view only depends on the keys), or the constant."""
    if isinstance(vt, SetVariable):
        return real_set(vt)
    if isinstance(vt, DictViewVariable):
        items = vt.dict_vt.items
        if vt.kind == "keys":
            return dict.fromkeys(items).keys()
        if vt.kind == "items":
            return {k: _constant(tx, v) for k, v in items.items()}.items()
        return {k: None for k in items}.values()
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise Unsupported("operator", f"set operation on {vt}")


def _builtin_non_set(vt: VariableTracker) -> bool:
    """A set, a view, or a value of a builtin type that is not set-like: its ``==`` with a set
    gives NotImplemented both ways (a real set held by an object, or a user object whose
    ``__eq__`` may answer, does not qualify)."""
    if isinstance(vt, (SetVariable, DictViewVariable)):
        return True
    try:
        cls = vt.python_type()
    except Unsupported:
        return False
    return cls.__module__ == "builtins" and not issubclass(cls, collections.abc.Set)


def set_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a & b`` and friends where an operand is a set or a dict view; None when it does not apply.
    The operation runs on real objects standing for the operands (so results, their order and
    errors are CPython's); the in-place forms change a set tracker in place (a side effect when it
    is an input)."""
    if len(args) != 2 or not any(isinstance(a, (SetVariable, DictViewVariable)) for a in args):
        return None
    if op not in _SET_OPS and op not in _INPLACE_SET_OPS and op not in _COMPARE:
        return None
    lhs, rhs = args
    in_place = op in _INPLACE_SET_OPS and isinstance(lhs, SetVariable) and not lhs.frozen
    if op in _INPLACE_SET_OPS and not in_place:
        op = _INPLACE_SET_OPS[op]  # ``view |= x`` has no in-place form: ``view = view | x``
    if op in _COMPARE and not all(
        isinstance(a, (SetVariable, DictViewVariable))
        or (a.is_python_constant() and isinstance(a.as_python_constant(), (set, frozenset)))
        for a in args
    ):
        if op in (operator.eq, operator.ne) and all(_builtin_non_set(a) for a in args):
            return ConstantVariable(op is operator.ne)  # a set never equals a non-set
        return None
    real, entry = [_real(tx, rhs)], None
    if in_place:
        tx.output.side_effects.before_mutation(lhs)
        before = set(lhs.items)
        if isinstance(real[0], (set, frozenset)):  # else CPython's ``lhs = lhs | rhs``
            real, entry = lhs.log_call(_INPLACE_METHODS[op], real)
    try:  # changed in place, the set needs no known order
        result = op(lhs.items if in_place else _real(tx, lhs), *real)
    except TypeError as e:
        raise PythonError(e) from None
    if in_place:
        lhs.logged(entry)
        lhs.added_to(before)
        lhs.changed(_INPLACE_METHODS[op], [recipe_part(rhs)])
        tx.output.side_effects.mark_mutated(lhs)
        return lhs
    if isinstance(result, (set, frozenset)):
        return computed_set(result, [lhs, rhs], SetRecipe.call(op, [lhs, rhs]))
    return tx.fold(result)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
