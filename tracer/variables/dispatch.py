"""Operator and builtin semantics, keyed by the operation and the kinds of its operands.

The opcode handlers only say *which* operation runs (``operator.add``, ``len``, a call, a truth
test); this module decides what it means: fold it when every operand is a Python constant, record a
graph node when a tensor is involved, inline a user ``__dunder__`` method, or raise ``Unsupported``.
Operators (``a + b``, ``a[k]``, ``not a``) have their table and rules in ``operators.py``;
``bool()``, ``is`` and ``in`` are answered in ``truth.py``; both are reached through the names here.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from .. import markers, polyfills
from ..exc import PythonError, Unsupported
from . import call_rules
from .base import VariableTracker
from .constants.constant import ConstantVariable
from .containers import container_methods, dict_views
from .containers.builtin_containers import DictVariable
from .functions import class_factories  # noqa: F401 (registers its call rules)
from .functions.callables import BuiltinVariable, MethodCallVariable, UserFunctionVariable
from .iterators import builtin_iterators
from .iterators.iterator_trackers import IteratorVariable
from .modules.nn_modules import MODULE_MEMBER_METHODS, NNModuleVariable
from .objects import attribute_stores, new_objects, type_new  # noqa: F401 (registration)
from .objects.classes import ClassVariable
from .objects.existing_objects import UserObjectVariable
from .operations import builtin_calls
from .operations.equality import contains as contains
from .operations.operators import OPERATORS as OPERATORS
from .operations.operators import call_operator as call_operator
from .operations.operators import getitem as getitem
from .operations.operators import setitem as setitem
from .operations.truth import is_none as is_none
from .operations.truth import is_same as is_same
from .operations.truth import truth as truth
from .tensors import numpy_arrays
from .tensors.tensor import TensorVariable
from .torch_calls.torch_functions import TorchVariable

if TYPE_CHECKING:
    from ..translator import Translator

sort_order = builtin_calls.sort_order
call_builtin = builtin_calls.call_builtin
construct = new_objects.construct
store_attr = attribute_stores.store_attribute
namedtuple_attribute = new_objects.namedtuple_attribute


def call(
    tx: Translator,
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Any call the bytecode makes. A callable with a registered substitute
    (``markers.substitute_for``) runs its Python polyfill instead; one with an entry in
    ``call_rules`` (bytegraph's polyfills of C builtins among them) is traced as the entry says;
    an ``lru_cache``'d function runs the function it wraps."""
    substitute = markers.substitute_for(_callee(fn))
    if substitute is not None:
        return _call_substitute(tx, substitute, args, kwargs)
    target = _callable_value(fn)
    if target is not None:
        if numpy_arrays.is_numpy_callable(target):
            return numpy_arrays.call_numpy(tx, target, args, kwargs)
        rule = call_rules.lookup(target)
        if rule is not None:
            made = apply_rule(tx, rule, args, kwargs)
            if made is not None:  # None: the entry declined this form of the call
                return made
        if type(target) is _LRU_WRAPPER:  # the cache only saves time: trace the function itself
            return fn.var_getattr(tx, "__wrapped__").call_function(tx, args, kwargs)
    return fn.call_function(tx, args, kwargs)


#: bytegraph's polyfills (``tracer/polyfills``, which knows no tracker) are substitute entries.
for _target, _polyfill in polyfills.registry.POLYFILLS.items():
    call_rules.register(
        call_rules.CallRule(_target, substitute=_polyfill, owner=_polyfill.__module__)
    )

_LRU_WRAPPER = type(functools.lru_cache(None)(len))


def apply_rule(
    tx: Translator,
    rule: call_rules.CallRule,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """A call of ``rule.target`` as its entry in ``call_rules`` says (see there)."""
    name = getattr(rule.target, "__name__", repr(rule.target))
    if rule.handler is not None:
        return rule.handler(tx, rule.target, args, kwargs)
    if rule.substitute is not None:
        return UserFunctionVariable(rule.substitute).call_function(tx, args, kwargs)
    if rule.effect == "none":
        return ConstantVariable(None)
    if rule.effect == "python":
        raise Unsupported(
            "torch_effect",
            f"{name}() has effects outside the graph",
            hint="call it outside the compiled function",
        )
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        raise Unsupported("call", f"{name}() on non-constant arguments")
    values = [a.as_python_constant() for a in args]
    named = {k: v.as_python_constant() for k, v in kwargs.items()}
    return ConstantVariable(rule.target(*values, **named))


def _callable_value(fn: VariableTracker) -> Any:
    """The real callable a tracker stands for, when it is one (a class, a C function)."""
    if isinstance(fn, BuiltinVariable):
        return fn.fn
    if isinstance(fn, TorchVariable):  # ``torch.is_tensor``: torch's own Python helpers
        return fn.value
    if isinstance(fn, (ClassVariable, UserObjectVariable)):
        return fn.value
    if isinstance(fn, UserFunctionVariable) and fn.self_vt is None:
        return fn.fn
    if isinstance(fn, ConstantVariable) and isinstance(fn.value, types.BuiltinMethodType):
        return fn.value  # a C method read from a constant (``(7).__subclasshook__``)
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
    """``iter(value)``: builtin containers give CPython-like iterators
    (``iterators/builtin_iterators.py``: lists are iterated live, dicts and sets are watched for
    changes), user ``__iter__`` methods are inlined (a generator one stays lazy)."""
    if isinstance(value, IteratorVariable):
        return value
    if isinstance(value, dict_views.DictViewVariable):
        return builtin_iterators.dict_iter(value.dict_vt, value.kind)
    made = builtin_iterators.make_iter(tx, value)
    if made is not None:
        return made
    if _user_iter(value):
        result = value.call_method(tx, "__iter__", [], {})
        if not isinstance(result, IteratorVariable):
            raise Unsupported(
                "python_error", f"__iter__ of {value} returned {result}, not an iterator"
            )
        return result
    error = container_methods.not_iterable(value)
    if error is not None:
        raise PythonError(error)
    return IteratorVariable(iterate(tx, value))


def _user_iter(value: VariableTracker) -> bool:
    """A user object whose class defines ``__iter__`` in Python (modules have their own
    iteration)."""
    if not isinstance(value, UserObjectVariable) or isinstance(value, NNModuleVariable):
        return False
    return isinstance(
        inspect.getattr_static(type(value.value), "__iter__", None), types.FunctionType
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
