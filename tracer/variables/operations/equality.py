"""``==``, ``!=`` and the orderings of containers by CPython's rules, where the tracer decides them.

Lists, tuples, deques and dicts compare by value, their items identity first: CPython's container
comparisons ask ``x is y or x == y`` of each pair (``PyObject_RichCompareBool``), so a list holding
an object whose ``__eq__`` is the default equals another list holding the same object. Objects
whose class keeps ``object.__eq__`` (classes, functions, modules, plain objects) compare by
identity, which ``truth.is_same`` decides and guards. Sets and dict views are compared in
``containers/dict_views.py``; constants fold in ``operators.py``, which registers these rules.
``contains`` answers ``x in y``: a sequence is searched item by item the same way.
"""

from __future__ import annotations

import collections
import inspect
import operator
import types
from typing import TYPE_CHECKING, Any

import torch

from ...exc import Unsupported
from ..base import VariableTracker
from ..constants.constant import ConstantVariable
from ..containers import dict_views
from ..containers.builtin_containers import (
    BaseSequenceVariable,
    DictVariable,
    SetVariable,
    hash_key,
    lookup_key,
)
from ..functions.callables import UserFunctionVariable
from ..modules.nn_modules import NNModuleVariable
from ..objects.existing_objects import UserObjectVariable
from ..tensors.tensor import TensorVariable
from .truth import is_same, truth

if TYPE_CHECKING:
    from ...translator import Translator

_EQUALITY = (operator.eq, operator.ne)
_ORDERINGS = frozenset(
    {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
)
#: dict classes whose ``==`` is ``dict.__eq__`` over the items (OrderedDict: also their order)
_PLAIN_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def identity_compared(vt: VariableTracker) -> bool:
    """Whether ``vt``'s class keeps ``object.__eq__`` and ``object.__ne__`` (a class, function,
    module or plain object): ``==`` between two such values is ``is``."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return False
    return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__


def same_items(tx: Translator, x: VariableTracker, y: VariableTracker) -> bool:
    """``x is y or x == y``: how CPython's containers compare their items."""
    if x is y:
        return True
    try:
        if is_same(tx, x, y):
            return True
    except Unsupported:
        pass  # identity unknown: ``==`` decides (CPython asks it after ``is`` anyway)
    return truth(tx, dispatch.call_operator(tx, operator.eq, [x, y]))


def _sequence_family(vt: VariableTracker) -> type | None:
    """``list``, ``tuple`` or ``deque`` for a sequence tracker whose comparison is that type's
    own (a namedtuple or ``torch.Size`` compares as a tuple), else None."""
    if not isinstance(vt, BaseSequenceVariable):
        return None
    cls = vt.python_type()
    for family in (list, tuple, collections.deque):
        if issubclass(cls, family) and cls.__eq__ is family.__eq__:
            return family
    return None


def compare_sequences(
    tx: Translator, op: Any, args: list[VariableTracker]
) -> VariableTracker | None:
    """Two lists, two tuples or two deques, as CPython's ``list_richcompare`` does: for ``==``
    and ``!=``, lengths first; then the first pair that is neither the same object nor equal
    decides (``op`` applied to it), or, when there is none, the lengths. Sequences of different
    families are never equal. None for other operands."""
    if len(args) != 2 or op not in _ORDERINGS:
        return None
    a, b = args
    family_a, family_b = _sequence_family(a), _sequence_family(b)
    if family_a is None or family_b is None:
        return None
    if family_a is not family_b:
        return ConstantVariable(op is operator.ne) if op in _EQUALITY else None
    xs, ys = list(a.items), list(b.items)
    if op in _EQUALITY and len(xs) != len(ys):
        return ConstantVariable(op is operator.ne)
    for x, y in zip(xs, ys, strict=False):
        if same_items(tx, x, y):
            continue
        if op in _EQUALITY:
            return ConstantVariable(op is operator.ne)
        return dispatch.call_operator(tx, op, [x, y])
    return ConstantVariable(op(len(xs), len(ys)))


def compare_dicts(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``d1 == d2`` of two traced dicts, as ``dict_richcompare``: the same keys (hash and
    equality of the key model), each pair of values the same object or equal; two
    ``OrderedDict``s also in the same order. None for other operands (a ``Counter``, a dict
    subclass with its own ``__eq__``)."""
    if len(args) != 2 or op not in _EQUALITY:
        return None
    a, b = args
    if not (isinstance(a, DictVariable) and isinstance(b, DictVariable)):
        return None
    if not all(issubclass(d.cls, _PLAIN_DICTS) and d.cls.__eq__ in _DICT_EQS for d in (a, b)):
        return None
    equal = len(a.items) == len(b.items)
    ordered = all(issubclass(d.cls, collections.OrderedDict) for d in (a, b))
    if equal and ordered:
        equal = list(a.items) == list(b.items)
    if equal:
        for key, value in list(a.items.items()):
            other = b.items.get(key)
            if other is None or not same_items(tx, value, other):
                equal = False
                break
    return ConstantVariable(equal == (op is operator.eq))


_DICT_EQS = (dict.__eq__, collections.OrderedDict.__eq__)


def compare_methods(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a.f == b.g`` of two Python functions bound to objects: CPython's ``method_richcompare``,
    the same object (``is``) and the same function."""
    if len(args) != 2 or op not in _EQUALITY or not all(map(_bound_method, args)):
        return None
    a, b = args
    same = a.fn is b.fn and is_same(tx, a.self_vt, b.self_vt)
    return ConstantVariable(same == (op is operator.eq))


def rich_equality(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a == b`` / ``a != b`` with an object of a Python class (whose ``__eq__``/``__ne__`` are
    Python functions or ``object``'s) or a bound method, as CPython's ``do_richcompare``: a
    subclass's method first, then the left operand's, then the right's reflected one, each
    skipped when it gives NotImplemented; when all do, identity decides. ``object.__ne__``
    inverts ``__eq__``; ``object.__eq__`` is identity or NotImplemented; a builtin value's
    method, or a bound method's, gives NotImplemented for an object of another class. None for
    other operands (two bound methods: ``compare_methods``)."""
    if len(args) != 2 or op not in _EQUALITY:
        return None
    a, b = args
    objects = [_python_compared(v) or _bound_method(v) for v in args]
    if not any(objects) or all(map(_bound_method, args)):
        return None
    pairs = zip(objects, args, (b, a), strict=True)
    if not all(known or _builtin_value(v, other) for known, v, other in pairs):
        return None
    name = "__eq__" if op is operator.eq else "__ne__"
    type_a, type_b = a.python_type(), b.python_type()
    order = [(a, b), (b, a)]
    if type_b is not type_a and issubclass(type_b, type_a):
        order.reverse()
    for first, other in order:
        result = _rich_method(tx, first, other, name)
        if result is not None:
            return result
    return ConstantVariable(is_same(tx, a, b) == (op is operator.eq))


def _python_compared(vt: VariableTracker) -> bool:
    """A user object whose ``__eq__`` and ``__ne__`` are Python functions or ``object``'s."""
    if not isinstance(vt, UserObjectVariable) or isinstance(vt, NNModuleVariable):
        return False
    methods = [inspect.getattr_static(type(vt.value), n, None) for n in ("__eq__", "__ne__")]
    plain = (object.__eq__, object.__ne__)
    return all(isinstance(m, types.FunctionType) or m in plain for m in methods)


def _builtin_value(vt: VariableTracker, other: VariableTracker) -> bool:
    """A value of a builtin type whose ``==`` gives NotImplemented for ``other``'s class."""
    if isinstance(vt, TensorVariable) or isinstance(other, TensorVariable):
        return False
    try:
        cls, other_cls = vt.python_type(), other.python_type()
    except Unsupported:
        return False
    return (
        cls.__module__ == "builtins"
        and not issubclass(other_cls, cls)
        and (
            vt.is_python_constant()
            or isinstance(vt, (BaseSequenceVariable, DictVariable, SetVariable))
        )
    )


def _rich_method(
    tx: Translator, vt: VariableTracker, other: VariableTracker, name: str
) -> VariableTracker | None:
    """``vt.<name>(other)``, None where it gives NotImplemented."""
    if not isinstance(vt, UserObjectVariable):
        return None  # a builtin value's method, for another class
    method = inspect.getattr_static(type(vt.value), name)
    if name == "__ne__" and method is object.__ne__:
        result = _rich_method(tx, vt, other, "__eq__")
        return None if result is None else ConstantVariable(not truth(tx, result))
    if method is object.__eq__:
        return ConstantVariable(True) if is_same(tx, vt, other) else None
    result = vt.call_method(tx, name, [other], {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


def _bound_method(vt: VariableTracker) -> bool:
    return isinstance(vt, UserFunctionVariable) and vt.self_vt is not None


def contains(tx: Translator, container: VariableTracker, item: VariableTracker) -> bool:
    """``item in container``, answered at trace time (a jump may need it)."""
    if isinstance(container, dict_views.DictViewVariable):
        return dict_views.contains(tx, container, item)
    if isinstance(container, SetVariable):
        return lookup_key(item) in container.items
    if isinstance(container, DictVariable):
        return hash_key(item) in container.items
    if isinstance(container, BaseSequenceVariable):
        for element in container.items:  # ``element is item or element == item``, in order
            if element is item:
                return True
            if isinstance(element, TensorVariable) or isinstance(item, TensorVariable):
                raise Unsupported("data_dependent", "`in` on tensors compares their values")
            if same_items(tx, element, item):
                return True
        return False
    if container.is_python_constant() and item.is_python_constant():
        # computed as CPython would: its TypeError (``None in 'a,b'``, ``[1] in frozenset()``)
        # is the user's
        return tx.fold_call(operator.contains, [container, item], {}).as_python_constant()
    if (
        isinstance(container, UserObjectVariable)
        and not isinstance(container, NNModuleVariable)
        and (
            isinstance(
                contains_fn := inspect.getattr_static(type(container.value), "__contains__", None),
                types.FunctionType,
            )
            or contains_fn is dict.__contains__
        )
    ):  # a Python ``__contains__`` (``Mapping``'s), inlined, or ``dict``'s (``DictReadVariable``)
        return truth(tx, container.call_method(tx, "__contains__", [item], {}))
    if (
        isinstance(container, NNModuleVariable)
        and type(container.value).__contains__ is torch.nn.ModuleDict.__contains__
    ):  # ``key in self._modules``, whose keys are guarded
        return contains(tx, container.children_dict(tx), item)
    raise Unsupported("contains", f"`in` on {container}")


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
