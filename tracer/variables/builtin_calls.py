"""Calls to Python builtins (``len``, ``isinstance``, ``range``, ``zip``, ``min``, ``print``...).

When every argument is a Python constant a pure builtin is simply evaluated (constant folding). The
entries of ``BUILTINS`` handle the cases that involve tensors, containers or objects; ``print`` and
friends raise ``Unsupported`` (graph breaks).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, IteratorVariable, ListVariable, SetVariable, TupleVariable
from .objects import UserObjectVariable
from .tensor import TensorVariable

if TYPE_CHECKING:
    from ..translator import Translator

#: Builtins safe to evaluate when all arguments are immutable constants.
PURE = frozenset({
    abs, all, any, ascii, bin, bool, callable, chr, complex, divmod, float, format, frozenset, hash, hex,
    int, isinstance, issubclass, len, max, min, oct, ord, pow, range, repr, round, slice, sorted, str,
    sum, tuple, type, list, dict, set, reversed, enumerate, zip, getattr, hasattr,
})
#: Builtins that never go in a graph, with the hint users see.
BREAKING = {
    print: "print() runs in Python; move it out of the compiled function or accept the graph break",
    input: "input() needs the user", open: "file I/O runs in Python", id: "id() of a traced value",
    exec: "dynamic code", eval: "dynamic code", breakpoint: "debugger", globals: "frame introspection",
    locals: "frame introspection", vars: "frame introspection", super: "super() is not traced yet",
}

BuiltinImpl = Callable[..., VariableTracker]
BUILTINS: dict[Any, BuiltinImpl] = {}


def builtin(*fns: Any) -> Callable[[BuiltinImpl], BuiltinImpl]:
    def register(impl: BuiltinImpl) -> BuiltinImpl:
        for fn in fns:
            BUILTINS[fn] = impl
        return impl

    return register


def call_builtin(tx: Translator, fn: Any, args: list[VariableTracker],
                 kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if fn in BREAKING:
        raise Unsupported(getattr(fn, "__name__", "builtin"), f"call to {fn.__name__}()", hint=BREAKING[fn])
    values = [*args, *kwargs.values()]
    if fn in PURE and all(_immutable_constant(v) for v in values):
        pargs = [a.as_python_constant() for a in args]
        pkwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        try:
            result = fn(*pargs, **pkwargs)
        except Exception as e:
            raise Unsupported("python_error", f"{fn.__name__}() raised {type(e).__name__}: {e}") from e
        if fn in (reversed, enumerate, zip):
            return IteratorVariable([tx.fold(v) for v in result])
        return tx.fold(result)
    impl = BUILTINS.get(fn)
    if impl is None:
        raise Unsupported("builtin", f"{getattr(fn, '__name__', fn)}() on {', '.join(map(repr, values))}")
    return impl(tx, *args, **kwargs)


def _immutable_constant(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and not isinstance(vt, (ListVariable, DictVariable, SetVariable))


def construct(tx: Translator, cls: type, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(...)`` for a class that is not a builtin: namedtuples; others are not traced yet."""
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        values = list(args) + [kwargs[f] for f in cls._fields[len(args):] if f in kwargs]
        return TupleVariable(values, cls=cls)
    raise Unsupported("new_object", f"creating a {cls.__name__} object",
                      hint="create the object outside the compiled function")


@builtin(len)
def len_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        if obj.example.dim() == 0:
            raise Unsupported("python_error", "len() of a 0-d tensor")
        return ConstantVariable(int(obj.example.shape[0]))
    if hasattr(obj, "items"):
        return ConstantVariable(len(obj.items))
    return obj.call_method(tx, "__len__", [], {})


@builtin(isinstance)
def isinstance_(tx: Translator, obj: VariableTracker, classes: VariableTracker) -> VariableTracker:
    return ConstantVariable(issubclass(obj.python_type(), classes.as_python_constant()))


@builtin(type)
def type_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return tx.wrap_static(obj.python_type())


@builtin(getattr)
def getattr_(tx: Translator, obj: VariableTracker, name: VariableTracker,
             default: VariableTracker | None = None) -> VariableTracker:
    try:
        return tx.dispatch.getattr_(tx, obj, name.as_python_constant())
    except Unsupported as e:
        if default is not None and e.kind == "getattr":
            return default
        raise


@builtin(hasattr)
def hasattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    try:
        tx.dispatch.getattr_(tx, obj, name.as_python_constant())
    except Unsupported as e:
        if e.kind == "getattr":
            return ConstantVariable(False)
        raise
    return ConstantVariable(True)


@builtin(setattr)
def setattr_(tx: Translator, obj: VariableTracker, name: VariableTracker,
             value: VariableTracker) -> VariableTracker:
    if isinstance(obj, UserObjectVariable) and obj.source is not None:
        tx.output.side_effects.store_attr(obj, name.as_python_constant(), value)
        return ConstantVariable(None)
    raise Unsupported("store_attr", f"setattr on {obj}")


@builtin(tuple)
def tuple_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return TupleVariable(tx.dispatch.iterate(tx, iterable) if iterable is not None else [])


@builtin(list)
def list_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return ListVariable(tx.dispatch.iterate(tx, iterable) if iterable is not None else [])


@builtin(dict)
def dict_(tx: Translator, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    items: dict[Any, VariableTracker] = {}
    if args:
        source = args[0]
        if isinstance(source, DictVariable):
            items.update(source.items)
        else:
            for pair in tx.dispatch.iterate(tx, source):
                key, value = tx.dispatch.iterate(tx, pair)
                items[key.as_python_constant()] = value
    items.update(kwargs)
    return DictVariable(items)


@builtin(enumerate)
def enumerate_(tx: Translator, iterable: VariableTracker,
               start: VariableTracker = ConstantVariable(0)) -> VariableTracker:
    first = start.as_python_constant()
    return IteratorVariable([TupleVariable([ConstantVariable(first + i), item])
                             for i, item in enumerate(tx.dispatch.iterate(tx, iterable))])


@builtin(zip)
def zip_(tx: Translator, *iterables: VariableTracker, strict: VariableTracker | None = None) -> VariableTracker:
    lists = [tx.dispatch.iterate(tx, it) for it in iterables]
    return IteratorVariable([TupleVariable(list(group)) for group in zip(*lists)])


@builtin(reversed)
def reversed_(tx: Translator, seq: VariableTracker) -> VariableTracker:
    return IteratorVariable(list(reversed(tx.dispatch.iterate(tx, seq))))


@builtin(iter)
def iter_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return obj if isinstance(obj, IteratorVariable) else IteratorVariable(tx.dispatch.iterate(tx, obj))


@builtin(next)
def next_(tx: Translator, it: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
    if not isinstance(it, IteratorVariable):
        raise Unsupported("builtin", f"next() on {it}")
    item = it.next_item()
    if item is None:
        if default is None:
            raise Unsupported("python_error", "StopIteration")
        return default
    return item


@builtin(sum)
def sum_(tx: Translator, iterable: VariableTracker, start: VariableTracker = ConstantVariable(0)) -> VariableTracker:
    total = start
    for item in tx.dispatch.iterate(tx, iterable):
        total = tx.dispatch.call_operator(tx, operator.add, [total, item])
    return total


def _extremum(pick: Callable[..., Any]) -> BuiltinImpl:
    def min_max(tx: Translator, *args: VariableTracker) -> VariableTracker:
        items = list(args) if len(args) > 1 else tx.dispatch.iterate(tx, args[0])
        if any(isinstance(i, TensorVariable) for i in items):
            raise Unsupported("data_dependent", f"{pick.__name__}() of tensors compares their values",
                              hint="use torch.minimum/torch.maximum or torch.min/torch.max")
        return tx.fold(pick(i.as_python_constant() for i in items))

    return min_max


BUILTINS[min] = _extremum(builtins.min)
BUILTINS[max] = _extremum(builtins.max)


@builtin(abs)
def abs_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return tx.dispatch.call_operator(tx, operator.abs, [value])


def _any_all(pick: Callable[..., Any]) -> BuiltinImpl:
    def any_all(tx: Translator, iterable: VariableTracker) -> VariableTracker:
        return ConstantVariable(pick(tx.dispatch.truth(tx, v) for v in tx.dispatch.iterate(tx, iterable)))

    return any_all


BUILTINS[any] = _any_all(builtins.any)
BUILTINS[all] = _any_all(builtins.all)


@builtin(bool, int, float)
def to_number(tx: Translator, value: VariableTracker) -> VariableTracker:
    if isinstance(value, TensorVariable):
        raise Unsupported("tensor_to_python", "converting a tensor to a Python number",
                          hint="keep the value a tensor")
    raise Unsupported("builtin", f"number conversion of {value}")


@builtin(callable)
def callable_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return ConstantVariable(callable(value.python_type()) and hasattr(value.python_type(), "__call__"))


@builtin(map)
def map_(tx: Translator, fn: VariableTracker, *iterables: VariableTracker) -> VariableTracker:
    lists = [tx.dispatch.iterate(tx, it) for it in iterables]
    return IteratorVariable([tx.dispatch.call(tx, fn, list(group), {}) for group in zip(*lists)])


@builtin(filter)
def filter_(tx: Translator, fn: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    items = tx.dispatch.iterate(tx, iterable)
    if fn.is_python_constant() and fn.as_python_constant() is None:
        return IteratorVariable([i for i in items if tx.dispatch.truth(tx, i)])
    return IteratorVariable([i for i in items if tx.dispatch.truth(tx, tx.dispatch.call(tx, fn, [i], {}))])
