"""Operator and builtin semantics, keyed by the operation and the kinds of its operands.

The opcode handlers only say *which* operation runs (``operator.add``, ``len``, a call, a truth
test); this module decides what it means: fold it when every operand is a Python constant, record a
graph node when a tensor is involved, inline a user ``__dunder__`` method, or raise ``Unsupported``.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from .. import polyfills
from ..exc import PythonError, Unsupported
from . import (
    builtin_calls,
    class_factories,
    container_methods,
    iterators,
    markers,
    numpy_arrays,
    sorting,
    torch_calls,
    user_objects,
    views,
)
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import (
    BaseSequenceVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    SetVariable,
    TupleVariable,
    hash_key,
)
from .functions import (
    BuiltinVariable,
    MethodCallVariable,
    NestedFunctionVariable,
    TorchVariable,
    UserFunctionVariable,
)
from .model_output import ModelOutputVariable
from .modules import NNModuleVariable
from .objects import ClassVariable, UserObjectVariable
from .slices import index_for_tensor
from .symbolic import SymNodeVariable
from .tensor import TensorVariable

if TYPE_CHECKING:
    from ..translator import Translator

call_torch = torch_calls.call_torch
sort_order = builtin_calls.sort_order
call_builtin = builtin_calls.call_builtin
construct = user_objects.construct
store_attr = user_objects.store_attribute
namedtuple_attribute = user_objects.namedtuple_attribute


def call(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Any call the bytecode makes. A callable with a registered substitute
    (``markers.substitute_for``) runs its Python polyfill instead, as does a C builtin with one of
    bytegraph's polyfills (``tracer/polyfills``); an ``lru_cache``'d function runs the function it
    wraps."""
    substitute = markers.substitute_for(_callee(fn))
    if substitute is not None:
        return _call_substitute(tx, substitute, args, kwargs)
    target = _callable_value(fn)
    if target is not None:
        if numpy_arrays.is_numpy_callable(target):
            return numpy_arrays.call_numpy(tx, target, args, kwargs)
        replacement = polyfills.lookup(target)
        if replacement is not None:
            return UserFunctionVariable(replacement).call_function(tx, args, kwargs)
        if type(target) is _LRU_WRAPPER:  # the cache only saves time: trace the function itself
            return fn.var_getattr(tx, "__wrapped__").call_function(tx, args, kwargs)
        if target is functools.cmp_to_key and len(args) == 1 and not kwargs:
            return builtin_calls.CmpKeyVariable(args[0])
        made = class_factories.make_class(tx, target, args, kwargs)
        if made is not None:  # ``collections.namedtuple(...)``
            return made
    return fn.call_function(tx, args, kwargs)


_LRU_WRAPPER = type(functools.lru_cache(None)(len))


def _callable_value(fn: VariableTracker) -> Any:
    """The real callable a tracker stands for, when it is one (a class, a C function)."""
    if isinstance(fn, BuiltinVariable):
        return fn.fn
    if isinstance(fn, (ClassVariable, UserObjectVariable)):
        return fn.value
    if isinstance(fn, UserFunctionVariable) and fn.self_vt is None:
        return fn.fn
    return None


def _callee(fn: VariableTracker) -> Any:
    """The real callable behind ``fn`` where the trace knows it (a constant or a real object)."""
    if fn.is_python_constant():
        return fn.as_python_constant()
    return fn.value if isinstance(fn, UserObjectVariable) else None


def _call_substitute(
    tx: Translator,
    substitute: markers.Substitute,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    values = [*args, *kwargs.values()]
    if substitute.can_constant_fold_through and all(v.is_python_constant() for v in values):
        try:
            result = substitute.original(
                *[a.as_python_constant() for a in args],
                **{k: v.as_python_constant() for k, v in kwargs.items()},
            )
        except Exception:  # it raises: trace the polyfill, which raises the same in the trace
            pass
        else:
            return tx.fold(result)
    return UserFunctionVariable(substitute.polyfill).call_function(tx, args, kwargs)


# -- operators -------------------------------------------------------------------------------------
_REFLECTED = {
    operator.add: "__radd__",
    operator.sub: "__rsub__",
    operator.mul: "__rmul__",
    operator.truediv: "__rtruediv__",
    operator.floordiv: "__rfloordiv__",
    operator.mod: "__rmod__",
    operator.pow: "__rpow__",
    operator.matmul: "__rmatmul__",
    operator.and_: "__rand__",
    operator.or_: "__ror__",
    operator.xor: "__rxor__",
    operator.lshift: "__rlshift__",
    operator.rshift: "__rrshift__",
}
_DUNDER = {
    operator.add: "__add__",
    operator.sub: "__sub__",
    operator.mul: "__mul__",
    operator.truediv: "__truediv__",
    operator.floordiv: "__floordiv__",
    operator.mod: "__mod__",
    operator.pow: "__pow__",
    operator.matmul: "__matmul__",
    operator.and_: "__and__",
    operator.or_: "__or__",
    operator.xor: "__xor__",
    operator.neg: "__neg__",
    operator.pos: "__pos__",
    operator.lt: "__lt__",
    operator.le: "__le__",
    operator.gt: "__gt__",
    operator.ge: "__ge__",
    operator.eq: "__eq__",
    operator.ne: "__ne__",
    operator.getitem: "__getitem__",
}
_INPLACE_TO_BINARY = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
    operator.ipow: operator.pow,
    operator.imatmul: operator.matmul,
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.ixor: operator.xor,
    operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}

#: Every ``operator`` function ``call_operator`` understands.
OPERATORS = frozenset(
    {*_DUNDER, *_REFLECTED, *_INPLACE_TO_BINARY, operator.invert, operator.not_, operator.abs}
)

#: Comparisons never mutate their operands: folded on (copies of) constant containers too.
_COMPARISONS = frozenset(
    {operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge}
)


def call_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``op(*args)`` for the operator module's functions (binary, in-place, comparison, unary,
    getitem)."""
    if any(isinstance(a, SymNodeVariable) for a in args) and all(
        isinstance(a, (SymNodeVariable, ConstantVariable, TensorVariable)) for a in args
    ):
        if op is operator.not_:
            return ConstantVariable(not truth(tx, args[0]))
        if not isinstance(args[0], TensorVariable):
            # numbers are immutable: ``j += n`` is ``j + n`` (an ``iadd`` node would be generated as
            # ``add += ...``, rebinding the variable every later use of ``add`` reads)
            op = _INPLACE_TO_BINARY.get(op, op)
            _check_arithmetic_error(op, args)
        return tx.output.call_function(op, tuple(args), {})
    set_result = views.set_operator(tx, op, args)
    if set_result is not None:
        return set_result
    array_result = numpy_arrays.call_operator(tx, op, args)
    if array_result is not None:
        return array_result
    if op in (operator.or_, operator.ior) and isinstance(args[0], DictVariable):
        return container_methods.dict_or(tx, op, args[0], args[1])
    if any(isinstance(a, TensorVariable) for a in args):
        if op is operator.not_:
            raise Unsupported(
                "data_dependent",
                "`not` on a tensor needs its value",
                hint="use torch.logical_not or keep the condition a tensor",
            )
        if op is operator.getitem:
            return getitem_tensor(tx, args[0], args[1])
        return tx.output.call_function(op, tuple(args), {})
    if (
        all(a.is_python_constant() for a in args)
        and (op in _COMPARISONS or not _mutable(args))
        and not any(is_symbolic(a) for a in args)
    ):
        return _fold(tx, op, [a.as_python_constant() for a in args])
    if op is operator.getitem:
        return getitem(tx, args[0], args[1])
    if op in _INPLACE_TO_BINARY:
        if isinstance(args[0], ListVariable) and op is operator.iadd:
            return call_container_method(tx, args[0], "extend", [args[1]], {}) and args[0]
        if isinstance(args[0], ListVariable) and op is operator.imul:
            return call_container_method(tx, args[0], "__imul__", [args[1]], {})
        return call_operator(tx, _INPLACE_TO_BINARY[op], args)
    if op is operator.not_:
        return ConstantVariable(not truth(tx, args[0]))
    if op in (operator.add, operator.mul) and any(
        isinstance(a, BaseSequenceVariable) for a in args
    ):
        return _sequence_op(tx, op, args)
    if len(args) == 2:
        compared = sorting.compare_sequences(tx, op, args[0], args[1])
        if compared is not None:
            return compared
    if op in (operator.eq, operator.ne) and len(args) == 2:
        same = is_same(tx, args[0], args[1]) if not _comparable(args) else None
        if same is not None and not isinstance(args[0], UserObjectVariable):
            return ConstantVariable(same if op is operator.eq else not same)
    if op in (operator.eq, operator.ne) and len(args) == 2 and _identity_equality(args):
        same = is_same(tx, args[0], args[1])
        return ConstantVariable(same if op is operator.eq else not same)
    if op in (operator.eq, operator.ne) and len(args) == 2:
        derived = _derived_equality(tx, op, args[0], args[1])
        if derived is not None:
            return derived
    user = _user_dunder(tx, op, args)
    if user is not None:
        return user
    raise Unsupported("operator", f"{op.__name__} on {', '.join(map(repr, args))}")


_BUILTIN_VALUES = (type(None), bool, int, float, complex, str, bytes)


def _python_eq(vt: VariableTracker) -> bool:
    """A user object whose class defines ``__eq__`` in Python but keeps ``object.__ne__``."""
    if not isinstance(vt, UserObjectVariable):
        return False
    cls = type(vt.value)
    return isinstance(inspect.getattr_static(cls, "__eq__"), types.FunctionType) and (
        cls.__ne__ is object.__ne__
    )


def _derived_equality(
    tx: Translator, op: Any, a: VariableTracker, b: VariableTracker
) -> VariableTracker | None:
    """``a != b`` where ``a``'s class defines only ``__eq__`` (``object.__ne__`` inverts it), and
    ``a == b`` / ``a != b`` where only ``b``'s class defines ``__eq__`` (``a``'s ``object.__eq__``
    gives NotImplemented, so CPython asks ``b``): None where the rules do not apply."""
    if _python_eq(a) and op is operator.ne:
        first, other = a, b
        if _python_eq(b) and type(b.value) is not type(a.value):
            if issubclass(type(b.value), type(a.value)):  # CPython asks the subclass first
                first, other = b, a
        result = first.call_method(tx, "__eq__", [other], {})
    elif _identity_equality([a, a]) and _python_eq(b):
        if is_same(tx, a, b):
            return ConstantVariable(op is operator.eq)
        result = b.call_method(tx, "__eq__", [a], {})
    else:
        return None
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    if op is operator.eq:
        return result
    return ConstantVariable(not truth(tx, result))


def _identity_equality(args: list[VariableTracker]) -> bool:
    """``a == b`` / ``a != b`` that CPython answers with ``a is b``: an object whose class keeps
    ``object.__eq__``/``__ne__`` (a wrapper descriptor: ``MyCls() == None``), compared with such an
    object or a builtin value (whose ``__eq__`` gives NotImplemented for other types)."""

    def plain_object(vt: VariableTracker) -> bool:
        if not isinstance(vt, UserObjectVariable):
            return False
        cls = type(vt.value)
        return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__

    def plain(vt: VariableTracker) -> bool:
        return plain_object(vt) or (
            isinstance(vt, ConstantVariable) and type(vt.value) in _BUILTIN_VALUES
        )

    return any(plain_object(a) for a in args) and all(plain(a) for a in args)


def is_symbolic(vt: VariableTracker) -> bool:
    """Does ``vt`` hold a symbolic value (folding it would specialise it)?"""
    if isinstance(vt, SymNodeVariable):
        return True
    return isinstance(vt, (TupleVariable, ListVariable)) and any(is_symbolic(i) for i in vt.items)


def _comparable(args: list[VariableTracker]) -> bool:
    return all(a.is_python_constant() for a in args)


_DIVISIONS = frozenset({operator.truediv, operator.floordiv, operator.mod})


def _check_arithmetic_error(op: Any, args: list[VariableTracker]) -> None:
    """Symbolic numbers are computed inside the graph, after which the trace's side effects are
    replayed: a ``ZeroDivisionError`` raised there would skip the mutations that, in Python,
    happened before it. So decide at trace time (guarded: ``Ne(s0 - 5, 0)``) whether the operation
    raises, and when it does, run it in Python (a graph break) like the same error on constants."""
    if len(args) != 2 or isinstance(args[1], TensorVariable):
        return
    lhs, rhs = (a.value if isinstance(a, SymNodeVariable) else a.as_python_constant() for a in args)
    if op in _DIVISIONS:
        raises = bool(rhs == 0)
    elif op is operator.pow:
        raises = bool(rhs < 0) and bool(lhs == 0)
    else:
        return
    if raises:
        raise Unsupported("python_error", f"{op.__name__} raises ZeroDivisionError here")


def _mutable(args: list[VariableTracker]) -> bool:
    return any(isinstance(a, (ListVariable, DictVariable, SetVariable)) for a in args)


def _fold(tx: Translator, op: Any, values: list[Any]) -> VariableTracker:
    try:
        result = op(*values)
    except Exception as e:
        raise PythonError(e) from None
    return tx.fold(result)


def _sequence_op(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker:
    """``+`` and ``*`` of lists and tuples (a namedtuple gives a plain tuple, a Size a Size)."""
    lhs, rhs = args
    if op is operator.mul and isinstance(rhs, BaseSequenceVariable):
        lhs, rhs = rhs, lhs  # 3 * [x]
    if op is operator.add and (
        (isinstance(lhs, ListVariable) and isinstance(rhs, ListVariable))
        or (isinstance(lhs, TupleVariable) and isinstance(rhs, TupleVariable))
    ):
        items = [*lhs.items, *rhs.items]
    elif (
        op is operator.mul
        and rhs.is_python_constant()
        and type(rhs.as_python_constant()) in (int, bool)
    ):
        items = list(lhs.items) * rhs.as_python_constant()
    else:
        raise Unsupported("operator", f"{op.__name__} on {lhs} and {rhs}")
    if isinstance(lhs, ListVariable):
        return ListVariable(items)
    return TupleVariable(items, is_size=lhs.is_size)


def _user_dunder(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    name = _DUNDER.get(op)
    if name and isinstance(args[0], UserObjectVariable) and hasattr(type(args[0].value), name):
        return args[0].call_method(tx, name, args[1:], {})
    reflected = _REFLECTED.get(op)
    if (
        reflected
        and len(args) == 2
        and isinstance(args[1], UserObjectVariable)
        and hasattr(type(args[1].value), reflected)
    ):
        return args[1].call_method(tx, reflected, [args[0]], {})
    return None


def getitem_tensor(
    tx: Translator, tensor: VariableTracker, key: VariableTracker
) -> VariableTracker:
    if not isinstance(tensor, TensorVariable):
        if isinstance(tensor, (TupleVariable, ListVariable)) and key.is_python_constant():
            return getitem(tx, tensor, key)
        if isinstance(tensor, DictVariable) and not isinstance(tensor, ModelOutputVariable):
            return call_container_method(tx, tensor, "__getitem__", [key], {})
        known = _known_index(key)
        if isinstance(tensor, (TupleVariable, ListVariable)) and known is not None:
            return getitem(tx, tensor, ConstantVariable(known))
        raise Unsupported("index", f"indexing {tensor} with a tensor")
    key = index_for_tensor(tx, tensor, key)
    return tx.output.call_function(operator.getitem, (tensor, key), {})


def _known_index(key: VariableTracker) -> int | None:
    """The value ``operator.index`` gives for an integer 0-dim tensor made in the trace from
    Python numbers (``torch.as_tensor(2)``), which its fake tensor carries (``constant``, kept
    through the ops fake tensors can fold, dropped by the others); None when it is not known."""
    fake = getattr(key, "example", None) if isinstance(key, TensorVariable) else None
    constant = getattr(fake, "constant", None)
    if constant is None or constant.dim() != 0 or constant.is_floating_point():
        return None
    if constant.dtype in (torch.bool, torch.complex64, torch.complex128):
        return None
    return operator.index(constant)


def getitem(tx: Translator, obj: VariableTracker, key: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        return getitem_tensor(tx, obj, key)
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        return numpy_arrays.getitem(tx, obj, key)
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        return obj.getitem(tx, key.as_python_constant())
    if isinstance(obj, DictVariable):  # ``__missing__`` of defaultdict and Counter included
        return call_container_method(tx, obj, "__getitem__", [key], {})
    if not key.is_python_constant():
        raise Unsupported("index", f"{obj}[{key}] with a non-constant key")
    index = key.as_python_constant()
    if isinstance(obj, (TupleVariable, ListVariable)):
        if isinstance(index, slice):
            return (
                obj.clone(items=obj.items[index], source=None)
                if isinstance(obj, ListVariable)
                else TupleVariable(obj.items[index], is_size=obj.is_size)
            )
        try:
            return obj.items[index]
        except (IndexError, TypeError) as e:
            raise PythonError(e) from None
    if isinstance(obj, ModelOutputVariable):
        return obj.getitem(tx, index)
    if isinstance(obj, NNModuleVariable):
        return obj.getitem(tx, index)
    if obj.is_python_constant():
        return _fold(tx, operator.getitem, [obj.as_python_constant(), index])
    user = _user_dunder(tx, operator.getitem, [obj, key])
    if user is not None:
        return user
    raise Unsupported("index", f"indexing {obj}")


def setitem(
    tx: Translator, obj: VariableTracker, key: VariableTracker, value: VariableTracker
) -> None:
    if isinstance(obj, numpy_arrays.NumpyArrayVariable):
        numpy_arrays.setitem(tx, obj, key, value)
        return
    if isinstance(obj, TensorVariable):
        key = index_for_tensor(tx, obj, key)
        tx.output.call_function(operator.setitem, (obj, key, value), {})
        return
    if isinstance(obj, ModelOutputVariable) and key.is_python_constant():
        obj.setitem(key.as_python_constant(), value)
        return
    call_container_method(tx, obj, "__setitem__", [key, value], {})


# -- truth, identity, containment ------------------------------------------------------------------
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
    if isinstance(value, views.DictViewVariable):
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
        return lhs.value is rhs.value
    if lhs.is_python_constant() and rhs.is_python_constant():
        return lhs.as_python_constant() is rhs.as_python_constant()
    if lhs.is_python_constant() or rhs.is_python_constant():
        return False  # a tensor, container or object is never a constant such as None
    if type(lhs) is not type(rhs):
        return False
    if isinstance(lhs, _ONE_TRACKER_PER_OBJECT):
        return False  # distinct trackers of mutable objects stand for distinct objects
    raise Unsupported("is", f"identity of {lhs} and {rhs}")


#: Kinds whose trackers are one per object (made once, or cached by ``builder.wrap`` by identity).
_ONE_TRACKER_PER_OBJECT = (
    ListVariable,
    DictVariable,
    SetVariable,
    IteratorVariable,
    views.DictViewVariable,
)


def contains(tx: Translator, container: VariableTracker, item: VariableTracker) -> bool:
    if isinstance(container, views.DictViewVariable):
        return views.contains(tx, container, item)
    if isinstance(container, (DictVariable, SetVariable)):
        return hash_key(item) in container.items
    if isinstance(container, (BaseSequenceVariable,)):
        for element in container.items:
            if element is item:
                return True
            if element.is_python_constant() and item.is_python_constant():
                if element.as_python_constant() == item.as_python_constant():
                    return True
            elif isinstance(element, TensorVariable) or isinstance(item, TensorVariable):
                raise Unsupported("data_dependent", "`in` on tensors compares their values")
        return False
    if container.is_python_constant() and item.is_python_constant():
        return item.as_python_constant() in container.as_python_constant()
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


def iterate(tx: Translator, value: VariableTracker) -> list[VariableTracker]:
    """The items of an iterable whose length is known at trace time."""
    if isinstance(value, IteratorVariable):
        return value.unpack(tx)
    if isinstance(value, DictVariable):
        return value.unpack(tx)
    if _user_iter(value):
        return get_iter(tx, value).unpack(tx)
    return value.unpack(tx)


def each_item(tx: Translator, value: VariableTracker) -> Iterator[VariableTracker]:
    """The items of an iterable taken one at a time, when the consumer asks for the next, as
    CPython's ``list.extend``, ``deque.extend``, ``dict.update``, ``set.update``... take them: a
    ``map`` or generator that reads or changes the container being filled sees the items before."""
    it = get_iter(tx, value)
    while (item := it.next_item(tx)) is not None:
        yield item


def get_iter(tx: Translator, value: VariableTracker) -> IteratorVariable:
    """``iter(value)``: builtin containers give CPython-like iterators (``iterators.py``: lists
    are iterated live, dicts and sets are watched for changes), user ``__iter__`` methods are
    inlined (a generator one stays lazy)."""
    if isinstance(value, IteratorVariable):
        return value
    if isinstance(value, views.DictViewVariable):
        return iterators.dict_iter(value.dict_vt, value.kind)
    made = iterators.make_iter(tx, value)
    if made is not None:
        return made
    if _user_iter(value):
        result = value.call_method(tx, "__iter__", [], {})
        if not isinstance(result, IteratorVariable):
            raise Unsupported(
                "python_error", f"__iter__ of {value} returned {result}, not an iterator"
            )
        return result
    return IteratorVariable(iterate(tx, value))


def _user_iter(value: VariableTracker) -> bool:
    """A user object whose class defines ``__iter__`` in Python (modules have their own
    iteration)."""
    if not isinstance(value, UserObjectVariable) or isinstance(value, NNModuleVariable):
        return False
    return isinstance(
        inspect.getattr_static(type(value.value), "__iter__", None), types.FunctionType
    )


#: ``nn.Module`` methods listing members: ``NNModuleVariable.call_method`` answers them from the
#: guarded member tables (inlining them would need ``yield from`` and sets of tensors).
MODULE_MEMBER_METHODS = frozenset(
    {
        "parameters",
        "buffers",
        "children",
        "modules",
        "named_parameters",
        "named_buffers",
        "named_children",
        "named_modules",
    }
)


def getattr_(tx: Translator, obj: VariableTracker, name: str) -> VariableTracker:
    if isinstance(obj, TensorVariable) and name == "numpy" and numpy_arrays.np is not None:
        return numpy_arrays.TensorNumpyMethod(obj)
    if (
        isinstance(obj, NNModuleVariable)
        and name in MODULE_MEMBER_METHODS
        and getattr(type(obj.value), name, None) is getattr(torch.nn.Module, name)
    ):
        return MethodCallVariable(obj, name)
    return obj.var_getattr(tx, name)


# -- methods of lists, dicts, sets, tuples ---------------------------------------------------------
call_container_method = container_methods.call_method
