"""Truth value and identity: ``bool(x)`` (and ``not x``), ``x is y``.

Answered at trace time, as Python booleans: a jump and ``is`` need the answer to go on. A
tensor's truth needs its data and raises ``Unsupported``. ``x in y`` is in ``equality.py`` (a
search asks ``is`` and ``==`` of each item).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.symbolic import SymNodeVariable
from ..containers import dict_views
from ..containers.builtin_containers import (
    BaseSequenceVariable,
    DictVariable,
    ListVariable,
    SetVariable,
)
from ..functions.callables import (
    NestedFunctionVariable,
    UserFunctionVariable,
    same_bound_method,
)
from ..iterators.iterator_trackers import IteratorVariable
from ..modules.nn_modules import NNModuleVariable
from ..objects.classes import ClassVariable
from ..objects.existing_objects import UserObjectVariable
from ..tensors.tensor import TensorVariable
from ..torch_calls.torch_functions import TorchVariable

if TYPE_CHECKING:
    from ...translator import Translator


def truth(tx: Translator, value: VariableTracker) -> bool:
    """``bool(value)`` for a jump: only decidable when it does not depend on tensor data."""
    if isinstance(value, SymNodeVariable):
        return bool(value.value)  # ShapeEnv records the guard (e.g. 2*s0 >= 16)
    if isinstance(value, TensorVariable):
        raise Unsupported(
            "data_dependent",
            "branching on the value of a tensor",
            hint="use torch.where, or move the condition out of the compiled function",
        )
    if value.is_python_constant():
        return bool(value.as_python_constant())
    if isinstance(value, (BaseSequenceVariable, DictVariable)):
        return len(value.items) > 0
    if isinstance(value, dict_views.DictViewVariable):
        return len(value.dict_vt.items) > 0
    if isinstance(value, IteratorVariable):
        return True
    if isinstance(
        value,
        (
            UserFunctionVariable,
            NestedFunctionVariable,
            TorchVariable,
            ClassVariable,
            NNModuleVariable,
        ),
    ):
        return True
    if isinstance(value, UserObjectVariable):
        cls = type(value.value)
        if not hasattr(cls, "__bool__") and not hasattr(cls, "__len__"):
            return True
        method = "__bool__" if hasattr(cls, "__bool__") else "__len__"
        return bool(value.call_method(tx, method, [], {}).as_python_constant())
    raise Unsupported("truth", f"truth value of {value}")


def is_none(tx: Translator, value: VariableTracker) -> bool:
    if isinstance(value, SymNodeVariable):
        return False
    return value.is_python_constant() and value.as_python_constant() is None


def is_same(tx: Translator, lhs: VariableTracker, rhs: VariableTracker) -> bool:
    """``lhs is rhs``. Trackers wrap distinct objects unless they are the same tracker (``wrap``
    caches by identity), the same graph node or fake tensor, or the same constant."""
    if lhs is rhs:
        return True
    if isinstance(lhs, SymNodeVariable) or isinstance(rhs, SymNodeVariable):
        if lhs.python_type() is not rhs.python_type():
            return False  # e.g. `n is None`: no need to specialise n
    if isinstance(lhs, TensorVariable) and isinstance(rhs, TensorVariable):
        # an in-place op (``x.add_(y)``, ``x += y`` on a tensor) returns its input: the fake
        # tensors are the same object too
        return lhs.node is rhs.node or lhs.example is rhs.example
    if isinstance(lhs, UserObjectVariable) and isinstance(rhs, UserObjectVariable):
        if lhs.value is rhs.value:
            return True
        new = tx.output.side_effects.is_new
        if not (new(lhs) or new(rhs)) and lhs.source is not None and rhs.source is not None:
            # both guarded by type only: another call may pass one object twice
            tx.output.assume_distinct(lhs.source, rhs.source)
        return False
    if lhs.is_python_constant() and rhs.is_python_constant():
        return lhs.as_python_constant() is rhs.as_python_constant()
    if lhs.is_python_constant() or rhs.is_python_constant():
        return False  # a tensor, container or object is never a constant such as None
    if type(lhs) is not type(rhs):
        return False
    if isinstance(lhs, _ONE_TRACKER_PER_OBJECT):
        return False  # distinct trackers of mutable objects stand for distinct objects
    if isinstance(lhs, UserFunctionVariable) and None not in (lhs.self_vt, rhs.self_vt):
        same = same_bound_method(lhs, rhs)
        if same is not None:
            return same
    raise Unsupported("is", f"identity of {lhs} and {rhs}")


def pin_identity(tx: Translator, vt: VariableTracker) -> None:
    """Guard the identity of the object ``vt`` stands for, once the trace has decided something
    from it (its ``repr``, ``id`` or ``hash``): an input object guarded only by its type could be
    another object at the next call."""
    if isinstance(vt, UserObjectVariable) and vt.source is not None:
        tx.output.assume_identity(vt.source, vt.value)


#: Kinds whose trackers are one per object (made once, or cached by ``builder.wrap`` by identity).
_ONE_TRACKER_PER_OBJECT = (
    ListVariable,
    DictVariable,
    SetVariable,
    IteratorVariable,
    dict_views.DictViewVariable,
)
