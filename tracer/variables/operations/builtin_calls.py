"""Calls to Python builtins (``len``, ``isinstance``, ``range``, ``zip``, ``min``, ``print``...).

When every argument is a Python constant a pure builtin (or a ``math`` function) is simply evaluated
(constant folding). The entries of ``BUILTINS`` handle the cases that involve tensors, containers or
objects; ``operator.*`` functions go to ``operators.call_operator``; ``print`` and friends raise
``Unsupported`` (graph breaks). ``construct`` builds namedtuples and ``functools.partial``.
"""

from __future__ import annotations

import _thread
import builtins
import dis
import functools
import inspect
import math
import operator
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ....codegen.frame_locals import UserFrame
from ....codegen.pyversion import LOCALS_SNAPSHOT
from ....guards.sources import AttrSource, ItemSource, Source, TypeSource
from ...exc import PythonError, TracedException, Unsupported
from ...polyfills.builtins import callable_iterator
from ..base import VariableTracker
from ..call_rules import call_rule
from ..constants.constant import ConstantVariable
from ..constants.slices import make_slice
from ..constants.symbolic import SymNodeVariable
from ..containers import collection_types, model_output
from ..containers.builtin_containers import (
    DictVariable,
    ListVariable,
    SetRecipe,
    SetVariable,
    TupleVariable,
    computed_set,
    hash_key,
    key_vt,
    make_set,
    on_instances,
    value_hash,
)
from ..containers.container_methods import not_iterable, real_iterable
from ..containers.dict_views import DictViewVariable
from ..contexts import state_contexts
from ..functions.callables import PartialVariable, UserFunctionVariable
from ..functions.cells import ClosureCellVariable, LocalCellVariable
from ..iterators.builtin_iterators import make_reversed
from ..iterators.combinators import EnumerateVariable, FilterVariable, MapVariable, ZipVariable
from ..iterators.iterator_trackers import IteratorVariable
from ..objects.attributes import MISSING, type_lookup
from ..objects.classes import ClassVariable, SuperVariable
from ..objects.exceptions import ExceptionVariable, is_simple_exception
from ..objects.existing_objects import PythonModuleVariable, UserObjectVariable
from ..tensors.tensor import TensorVariable, to_scalar
from ..tensors.tensor import to_bool as tensor_bool
from . import concrete, sorting

if TYPE_CHECKING:
    from ...translator import Translator

#: Builtins safe to evaluate when all arguments are immutable constants. (``set`` and
#: ``frozenset`` have their own rules: their items keep their trackers, so ``k is t`` holds.)
PURE = frozenset(
    {
        abs,
        all,
        any,
        ascii,
        bin,
        bool,
        bytes,
        callable,
        chr,
        complex,
        divmod,
        float,
        format,
        hash,
        hex,
        int,
        isinstance,
        issubclass,
        len,
        max,
        min,
        oct,
        ord,
        pow,
        range,
        repr,
        round,
        slice,
        sorted,
        str,
        sum,
        tuple,
        type,
        list,
        dict,
        getattr,
        hasattr,
    }
)
#: Builtins that never go in a graph, with the hint users see.
BREAKING = {
    print: "print() runs in Python; move it out of the compiled function or accept the graph break",
    input: "input() needs the user",
    open: "file I/O runs in Python",
    exec: "dynamic code",
    eval: "dynamic code",
    breakpoint: "debugger",
    globals: "frame introspection",
}

BuiltinImpl = Callable[..., VariableTracker]
ZERO, FALSE = ConstantVariable(0), ConstantVariable(False)
BUILTINS: dict[Any, BuiltinImpl] = {}


def builtin(*fns: Any) -> Callable[[BuiltinImpl], BuiltinImpl]:
    def register(impl: BuiltinImpl) -> BuiltinImpl:
        for fn in fns:
            BUILTINS[fn] = impl
        return impl

    return register


def call_builtin(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    known = concrete.evaluate(tx, fn, args, kwargs)  # ``id(obj)``, ``repr(obj)`` of real objects
    if known is not None:
        return known
    if fn in BREAKING:
        raise Unsupported(
            getattr(fn, "__name__", "builtin"), f"call to {fn.__name__}()", hint=BREAKING[fn]
        )
    values = [*args, *kwargs.values()]
    if is_simple_exception(fn) and not kwargs:
        return _exception(fn, args)
    if (
        fn in SYMBOLIC_MATH
        and len(args) == 1
        and not kwargs
        and isinstance(args[0], SymNodeVariable)
    ):
        return tx.output.call_function(SYMBOLIC_MATH[fn], (args[0],), {})  # stays symbolic
    if (fn in PURE or fn in MATH_FNS) and all(_foldable(fn, v) for v in values):
        return tx.fold_call(fn, args, kwargs)
    if fn in OPERATOR_FNS:
        return call_operator_fn(tx, fn, args, kwargs)
    impl = BUILTINS.get(fn)
    if impl is None:
        raise Unsupported(
            "builtin", f"{getattr(fn, '__name__', fn)}() on {', '.join(map(repr, values))}"
        )
    try:
        inspect.signature(impl).bind(tx, *args, **kwargs)
    except TypeError as e:  # a form of the builtin that is not traced
        name = getattr(fn, "__name__", fn)
        raise Unsupported("builtin", f"{name}() with these arguments: {e}") from None
    return impl(tx, *args, **kwargs)


#: Functions of the ``math`` module: pure, folded on constants (on tensors they would read data).
MATH_FNS = frozenset(v for k, v in vars(math).items() if not k.startswith("_") and callable(v))
#: ``math`` functions of one number with a symbolic counterpart (``math.cos``: ``torch._sym_cos``):
#: on a symbolic number (an LR scheduler's epoch) they give a symbolic result instead of
#: specialising it.
SYMBOLIC_MATH = {
    getattr(math, name): getattr(torch, f"_sym_{name}")
    for name in ("sqrt", "cos", "cosh", "sin", "sinh", "tan", "tanh", "asin", "acos", "atan")
}

#: Functions of the ``operator`` module (``operator.add``...), traced like the operators they are.
OPERATOR_FNS = frozenset(
    v for k, v in vars(operator).items() if not k.startswith("_") and type(v) is type(len)
)


def call_operator_fn(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``operator.add(a, b)`` and friends: the same semantics as the operator syntax."""
    if kwargs:
        raise Unsupported("builtin", f"operator.{fn.__name__} with keyword arguments")
    if fn in dispatch.OPERATORS:  # their rules: ``operators.py``
        return dispatch.call_operator(tx, fn, list(args))
    if all(a.is_python_constant() for a in args) and not any(
        isinstance(a, (ListVariable, DictVariable, SetVariable)) for a in args
    ):  # the other operator functions are pure on immutable constants (``operator.index``)
        return tx.fold_call(fn, args, {})
    raise Unsupported("builtin", f"operator.{fn.__name__} is not traced")


#: Builtins whose result keeps reading a mutable argument (a copy would miss later changes).
_LIVE_VIEWS = frozenset({getattr, hasattr})
#: Builtins whose result is or holds an argument, or an item of one, itself (``slice(xs).start
#: is xs``, ``max(xs, ys) is ys``): folded on a copy, a mutable one would be another object.
_GIVES_ITS_ARGUMENTS = frozenset({slice, min, max})


def _holds_mutable(vt: VariableTracker) -> bool:
    if isinstance(vt, (ListVariable, DictVariable, SetVariable)):
        return True
    return isinstance(vt, TupleVariable) and any(_holds_mutable(i) for i in vt.items)


#: Builtins never folded on symbolic numbers (folding specialises them): their result does not
#: depend on the values (``len(t.shape)`` of a dynamic tensor, ``isinstance(n, torch.Tensor)`` of
#: a size), or they stay symbolic (``max(cache_length - window + 1, 0)``: ``torch.sym_max``).
_SYMBOLIC_AWARE = frozenset({isinstance, type, len, min, max})


def _symbolic(vt: VariableTracker) -> bool:
    if isinstance(vt, SymNodeVariable):
        return True
    return isinstance(vt, (TupleVariable, ListVariable)) and any(_symbolic(i) for i in vt.items)


def _foldable(fn: Any, vt: VariableTracker) -> bool:
    """Constants can be folded; a mutable container is folded as a copy, which is right for every
    pure builtin except attribute lookups (a bound method of the copy would miss later
    mutations)."""
    if not vt.is_python_constant():
        return False
    if fn in _SYMBOLIC_AWARE and _symbolic(vt):
        return False  # answered without specialising the numbers (``len_``, ``min_max``...)
    if fn in (isinstance, type) and isinstance(vt, SymNodeVariable):
        return False  # its type is known without its value: folding would specialise it
    mutable = isinstance(vt, (ListVariable, DictVariable, SetVariable))
    if fn in _GIVES_ITS_ARGUMENTS and _holds_mutable(vt):
        return False
    if (
        fn in (getattr, hasattr)
        and isinstance(vt, (ClassVariable, PythonModuleVariable))
        and vt.source is not None
    ):
        return False  # a module's or class's attributes can change: var_getattr guards them
    return fn not in _LIVE_VIEWS or not mutable


def construct(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``cls(...)`` for a class that is not a builtin: namedtuples; others are not traced yet."""
    context = state_contexts.construct(tx, cls, args, kwargs)  # contextlib.nullcontext(...)
    if context is not None:
        return context
    if cls is functools.partial and args:
        return PartialVariable(args[0], list(args[1:]), dict(kwargs))
    made = collection_types.construct(tx, cls, args, kwargs)
    if made is not None:
        return made
    if is_simple_exception(cls) and not kwargs:
        return _exception(cls, args)
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return TupleVariable(namedtuple_fields(tx, cls, args, kwargs), cls=cls)
    if model_output.is_model_output(cls):
        return model_output.construct(tx, cls, args, kwargs)
    raise Unsupported(
        "new_object",
        f"creating a {cls.__name__} object",
        hint="create the object outside the compiled function",
    )


def makes_builtin_like(cls: type) -> bool:
    """Classes whose objects ``construct`` makes as builtin-like trackers: the ``collections``
    containers (``deque``, ``defaultdict``...) and exceptions that are just their arguments."""
    return cls in collection_types.CLASSES or is_simple_exception(cls)


def namedtuple_fields(
    tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> list[VariableTracker]:
    fields, defaults = cls._fields, getattr(cls, "_field_defaults", {})
    if len(args) > len(fields) or set(kwargs) - set(fields[len(args) :]):
        raise Unsupported("python_error", f"bad arguments to {cls.__name__}()")
    values = list(args)
    for name in fields[len(args) :]:
        if name in kwargs:
            values.append(kwargs[name])
        elif name in defaults:
            values.append(tx.fold(defaults[name]))
        else:
            raise Unsupported("python_error", f"{cls.__name__}() missing argument {name!r}")
    return values


@builtin(len)
def len_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    if isinstance(obj, TensorVariable):
        if obj.example.dim() == 0:
            raise Unsupported("python_error", "len() of a 0-d tensor")
        return ConstantVariable(int(obj.example.shape[0]))
    if isinstance(obj, IteratorVariable):
        kind = obj.python_type().__name__
        raise PythonError(TypeError(f"object of type '{kind}' has no len()"))
    if isinstance(obj, DictViewVariable):
        return ConstantVariable(len(obj.dict_vt.items))
    if hasattr(obj, "items"):
        return ConstantVariable(len(obj.items))
    error = concrete.unsupported_operands(len, [obj], {"__len__"})
    if error is not None:  # an object whose class has no ``__len__``
        raise PythonError(error)
    return obj.call_method(tx, "__len__", [], {})


@builtin(hash)
def hash_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return ConstantVariable(value_hash(obj))


@builtin(id)
def id_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return concrete.object_id(tx, obj)


@builtin(dir)
def dir_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``dir(x)``, computed where the names it lists are known: of a value whose attributes are
    all its C type's (a constant, a builtin function or type, an exact list, tuple, dict or set,
    a ``torch.Size``), or of a class, module, function, namedtuple or object from outside the
    function that lists them the default way, guarded on the keys of every ``__dict__`` it
    reads. ``dir()`` lists the frame's names."""
    if not args and not _frame_dict_shared(tx, "dir"):
        return tx.fold(sorted(_frame_locals(tx, "dir")))
    if len(args) != 1:
        raise Unsupported("dir", "dir() without an argument", hint="frame introspection")
    fixed = fixed_attributes(args[0])
    names = dir(fixed[0]) if fixed is not None else _listed(tx, args[0])
    if names is None:
        raise Unsupported("builtin", f"dir() on {args[0]}")
    return tx.fold(names)


@builtin(locals)
def locals_(tx: Translator) -> VariableTracker:
    """``locals()``: a new dict of the frame's bound locals, in CPython's order. Where CPython
    gives the frame's one dict, updated by each call of ``locals``, ``vars`` or ``dir`` (up to
    3.12), only in code that calls one of them once (no loop around it): else the call breaks and
    runs on the frame the rewritten code keeps (``codegen/frame_locals.py``)."""
    if _frame_dict_shared(tx, "locals"):
        raise Unsupported("locals", "locals() in code reading its frame more than once")
    return DictVariable(_frame_locals(tx, "locals"))


def _frame_locals(tx: Translator, name: str) -> dict[str, VariableTracker]:
    """The bound locals of the frame ``tx`` runs, as ``locals()`` in it lists them. Not in a resume
    function, whose frame holds the generated code's own names too (the call breaks there)."""
    if getattr(tx.fn, "__bytegraph_resume__", None) is not None:
        raise Unsupported(name, f"{name}() in a resume function", hint="frame introspection")
    found: dict[str, VariableTracker] = {}
    for local in UserFrame.of(tx.code).names:
        cell = tx.closure.get(local) if local in tx.code.co_freevars else None
        if isinstance(cell, LocalCellVariable):
            value = cell.frame_locals.get(cell.name)
        elif isinstance(cell, ClosureCellVariable):
            value = cell.contents(tx, local)
        elif cell is None:
            value = tx.symbolic_locals.get(local)
        else:
            raise Unsupported(name, f"{name}() with the free variable {local!r}")
        if value is not None:
            found[local] = value
    return found


def _frame_dict_shared(tx: Translator, name: str) -> bool:
    """Whether a frame-reading call in ``tx``'s code may see or change a dict another such call
    gave: up to 3.12 the frame's one ``locals()`` dict, which each call updates. Code that reads
    its frame once, outside any loop, has no such other call (``dir()`` alone returns a new list
    each time)."""
    if LOCALS_SNAPSHOT:
        return False
    reads = [
        i
        for i in dis.get_instructions(tx.code)
        if (i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval in ("locals", "vars", "dir"))
        or (i.opname in ("LOAD_ATTR", "LOAD_METHOD") and i.argval in _FRAME_ATTRIBUTES)
    ]
    if name == "dir" and all(i.argval == "dir" for i in reads):
        return False
    loops = [(i.argval, i.offset) for i in dis.get_instructions(tx.code) if "BACKWARD" in i.opname]
    return len(reads) != 1 or any(start <= reads[0].offset <= end for start, end in loops)


#: Attributes through which code reads its frame's locals (the frame's one dict up to 3.12).
_FRAME_ATTRIBUTES = frozenset({"_getframe", "currentframe", "f_locals"})


def _listed(tx: Translator, vt: VariableTracker) -> list[str] | None:
    """What ``dir`` of the object ``vt`` stands for lists, having guarded the keys of each
    ``__dict__`` it reads; None where that cannot be known (a ``__dir__`` of its own, a class or
    module the trace changed)."""
    effects = tx.output.side_effects
    if isinstance(vt, TupleVariable) and not vt.python_type().__flags__ & _HEAP_TYPE:
        cls = vt.python_type()  # an instance of a C type without a dict (``torch.Size``)
        plain = _default_dir(cls) and type_lookup(cls, "__dict__") is MISSING
        return dir(cls) if plain else None
    source = vt.source
    if source is None:
        return None
    if isinstance(vt, ClassVariable) and type(vt.value) is type:
        return dir(vt.value) if _guard_classes(tx, vt.value, source) else None
    if isinstance(vt, PythonModuleVariable) and type(vt.value) is types.ModuleType:
        namespace = vars(vt.value)
        if "__dir__" in namespace or (namespace is tx.f_globals and effects.global_stores):
            return None
        _guard_keys(tx, AttrSource(source, "__dict__"), namespace)
        return dir(vt.value)
    if isinstance(vt, UserFunctionVariable) and vt.self_vt is None and not vt.bound_source:
        _guard_keys(tx, AttrSource(source, "__dict__"), vars(vt.fn))
        return dir(vt.fn)
    if not (type(vt) is UserObjectVariable or isinstance(vt, TupleVariable)):
        return None
    cls = vt.python_type()
    if not _default_dir(cls) or not _guard_classes(tx, cls, TypeSource(source)):
        return None
    if type_lookup(cls, "__dict__") is MISSING:
        return dir(cls)  # no instance dict: the names its classes define
    if isinstance(vt, TupleVariable) or type(type_lookup(cls, "__dict__")) is not _GETSET:
        return None
    own = vt.var_getattr(tx, "__dict__")  # the live dict: the trace's stores and deletions in it
    if not isinstance(own, DictVariable) or not all(type(k) is str for k in own.items):
        return None
    return sorted({*own.items, *dir(cls)})


def _default_dir(cls: type) -> bool:
    """Instances of ``cls`` list their names with ``object.__dir__``, which reads their
    ``__dict__`` and ``__class__`` by the generic lookup."""
    return (
        type_lookup(cls, "__dir__") is _OBJECT_DIR
        and type_lookup(cls, "__class__") is _OBJECT_CLASS
        and type_lookup(cls, "__getattribute__") in _GENERIC_GETATTRIBUTE
    )


def _guard_classes(tx: Translator, cls: type, source: Source) -> bool:
    """Guard ``cls`` (at ``source``) and its MRO, and the keys of each class ``__dict__`` there
    that code can change. False where the trace changed one of those classes."""
    changed = tx.output.side_effects.changed_class_attrs
    if any(klass in cls.__mro__ for klass, _ in changed):
        return False
    mro = AttrSource(source, "__mro__")
    tx.output.assume_identity(source, cls)
    tx.output.assume_len(mro, len(cls.__mro__))
    for index, klass in enumerate(cls.__mro__):
        at = source if index == 0 else ItemSource(mro, index)
        if index:
            tx.output.assume_identity(at, klass)
        if klass.__flags__ & _HEAP_TYPE:
            _guard_keys(tx, AttrSource(at, "__dict__"), vars(klass))
    return True


def _guard_keys(tx: Translator, source: Source, namespace: Any) -> None:
    """The dict (or class namespace) at ``source`` has exactly the keys of ``namespace``."""
    tx.output.assume_keys(source, tuple(namespace))


_OBJECT_DIR = object.__dict__["__dir__"]
_OBJECT_CLASS = object.__dict__["__class__"]
_GENERIC_GETATTRIBUTE = (object.__dict__["__getattribute__"], tuple.__dict__["__getattribute__"])
_GETSET = types.GetSetDescriptorType


def fixed_attributes(vt: VariableTracker) -> tuple[Any] | None:
    """``(v,)``, where ``v`` has the attributes of the object ``vt`` stands for, which no code can
    change: an instance of a C type with no instance dict (or a C type itself); for an exact
    list, tuple, dict or set, an empty one (a stand-in: its own attributes cannot change
    either). None for anything else."""
    if isinstance(vt, (ListVariable, TupleVariable, DictVariable, SetVariable)):
        cls = vt.python_type()
        return (cls(),) if cls in (list, tuple, dict, set, frozenset) else None
    if not vt.is_python_constant():
        return None
    value = vt.as_python_constant()
    static = not type(value).__flags__ & _HEAP_TYPE
    if isinstance(value, type):
        return (value,) if not value.__flags__ & _HEAP_TYPE else None
    return (value,) if static and not hasattr(value, "__dict__") else None


#: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement (whose attributes can change)
_HEAP_TYPE = 1 << 9


@builtin(isinstance)
def isinstance_(tx: Translator, obj: VariableTracker, classes: VariableTracker) -> VariableTracker:
    return ConstantVariable(issubclass(obj.python_type(), classes.as_python_constant()))


@builtin(type)
def type_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return tx.wrap_static(obj.python_type())


@builtin(getattr)
def getattr_(
    tx: Translator,
    obj: VariableTracker,
    name: VariableTracker,
    default: VariableTracker | None = None,
) -> VariableTracker:
    if default is None:
        return dispatch.getattr_(tx, obj, name.as_python_constant())
    found = _read_or_missing(tx, obj, name)
    return default if found is None else found


@builtin(hasattr)
def hasattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    return ConstantVariable(_read_or_missing(tx, obj, name) is not None)


def _read_or_missing(
    tx: Translator, obj: VariableTracker, name: VariableTracker
) -> VariableTracker | None:
    """``obj.name``, or None where the read raises AttributeError, which ``hasattr`` and
    ``getattr(o, name, default)`` catch (and only that, as in CPython): the attribute is absent
    (guarded so), a C-level read raises it, or traced code raises it (a class's ``__getattr__``, a
    property getter): ``builtin_catches`` makes that exception caught here, not a break."""
    tx.builtin_catches.append(AttributeError)
    try:
        return dispatch.getattr_(tx, obj, name.as_python_constant())
    except TracedException as te:
        if issubclass(te.exc.cls, AttributeError):
            return None
        raise
    except Unsupported as e:
        if _missing_attribute(e, obj, name.as_python_constant()):
            return None
        raise
    finally:
        tx.builtin_catches.pop()


def _missing_attribute(e: Unsupported, obj: VariableTracker, name: str) -> bool:
    """The attribute is absent (guarded so), or reading it raises AttributeError, which
    ``getattr(o, name, default)`` and ``hasattr`` catch. A read the tracer does not follow (also
    a ``getattr`` break) is no proof of absence where ``obj``'s class has the attribute
    (``getattr(bound_method, "__reduce_ex__", None)``): that stays a break."""
    if isinstance(e, PythonError):
        return isinstance(e.exc, AttributeError)
    return e.kind == "getattr" and not _on_class(obj, name)


def _on_class(obj: VariableTracker, name: str) -> bool:
    """Whether ``obj``'s class has ``name`` for its instances (in its MRO)."""
    try:
        cls = obj.python_type()
    except Unsupported:
        return False
    return on_instances(cls, name)


@builtin(setattr)
def setattr_(
    tx: Translator, obj: VariableTracker, name: VariableTracker, value: VariableTracker
) -> VariableTracker:
    dispatch.store_attr(tx, obj, name.as_python_constant(), value)
    return ConstantVariable(None)


@builtin(tuple)
def tuple_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return TupleVariable(_items_of(tx, iterable) if iterable is not None else [])


@builtin(list)
def list_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    return ListVariable(_items_of(tx, iterable) if iterable is not None else [])


def _items_of(tx: Translator, iterable: VariableTracker) -> list[VariableTracker]:
    """The items ``tuple(x)`` and ``list(x)`` take: CPython's TypeError where ``x``'s type
    iterates in no way (``'Point' object is not iterable``)."""
    error = not_iterable(iterable)
    if error is not None:
        raise PythonError(error)
    return dispatch.iterate(tx, iterable)


@builtin(dict)
def dict_(tx: Translator, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    items: dict[Any, VariableTracker] = {}
    if args:
        source = args[0]
        if isinstance(source, DictVariable):
            items.update(source.items)
        else:
            for pair in dispatch.iterate(tx, source):
                key, value = dispatch.iterate(tx, pair)
                items[hash_key(key)] = value
    items.update(kwargs)
    return DictVariable(items)


@builtin(set)
def set_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    if iterable is None:
        return SetVariable(set())
    return computed_set(
        set(real_iterable(tx, iterable)), [iterable], SetRecipe.call(set, [iterable])
    )


@builtin(frozenset)
def frozenset_(tx: Translator, iterable: VariableTracker | None = None) -> VariableTracker:
    if iterable is not None and iterable.python_type() is frozenset:
        return iterable  # ``frozenset(f) is f``
    if iterable is None:
        return make_set(frozenset())
    made = frozenset(real_iterable(tx, iterable))
    return computed_set(made, [iterable], SetRecipe.call(frozenset, [iterable]))


@builtin(enumerate)
def enumerate_(
    tx: Translator, iterable: VariableTracker, start: VariableTracker = ZERO
) -> VariableTracker:
    source = dispatch.get_iter(tx, iterable)
    return EnumerateVariable([], sources=[source], count=start.as_python_constant())


@builtin(zip)
def zip_(
    tx: Translator, *iterables: VariableTracker, strict: VariableTracker | None = None
) -> VariableTracker:
    sources = [dispatch.get_iter(tx, it) for it in iterables]  # made now, as CPython does
    return ZipVariable([], sources=sources, strict=bool(strict and strict.as_python_constant()))


@builtin(reversed)
def reversed_(tx: Translator, seq: VariableTracker) -> VariableTracker:
    made = make_reversed(tx, seq)
    if made is not None:
        return made
    if isinstance(seq, DictVariable):
        return IteratorVariable(
            [key_vt(k) for k in reversed(seq.items)], watched=seq, watched_len=len(seq.items)
        )
    return IteratorVariable(list(reversed(dispatch.iterate(tx, seq))))


@builtin(iter)
def iter_(
    tx: Translator, obj: VariableTracker, sentinel: VariableTracker | None = None
) -> VariableTracker:
    if sentinel is not None:
        return UserFunctionVariable(callable_iterator).call_function(tx, [obj, sentinel], {})
    return dispatch.get_iter(tx, obj)


@builtin(next)
def next_(
    tx: Translator, it: VariableTracker, default: VariableTracker | None = None
) -> VariableTracker:
    if not isinstance(it, IteratorVariable):
        raise Unsupported("builtin", f"next() on {it}")
    item = it.next_item(tx)
    if item is None:
        if default is None:
            raise PythonError(StopIteration())
        return default
    return item


@builtin(sum)
def sum_(
    tx: Translator, iterable: VariableTracker, start: VariableTracker = ZERO
) -> VariableTracker:
    total = start
    for item in dispatch.iterate(tx, iterable):
        total = dispatch.call_operator(tx, operator.add, [total, item])
    return total


BUILTINS[sorted] = sorting.sorted_
BUILTINS[min] = sorting.min_
BUILTINS[max] = sorting.max_
sort_order = sorting.sort_order
CmpKeyVariable = sorting.CmpKeyVariable


@builtin(abs)
def abs_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return dispatch.call_operator(tx, operator.abs, [value])


@builtin(pow)
def pow_(
    tx: Translator, base: VariableTracker, exp: VariableTracker, mod: VariableTracker | None = None
) -> VariableTracker:
    if mod is not None and not (mod.is_python_constant() and mod.as_python_constant() is None):
        raise Unsupported("builtin", "pow() with a modulus of traced values")
    return dispatch.call_operator(tx, operator.pow, [base, exp])


@call_rule(_thread.get_ident)
def _thread_ident(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``threading.get_ident()`` (``reprlib.recursive_repr``, a dataclass's ``repr``, keys its
    running set by it): the id of the thread the call is traced on, guarded (a call on another
    thread compiles its own)."""
    if args or kwargs:
        return None
    ident = _thread.get_ident()
    tx.output.assume_state(("thread",), _thread.get_ident, ident)
    return ConstantVariable(ident)


@builtin(divmod)
def divmod_(tx: Translator, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """Of numbers (tensors have no ``__divmod__``: CPython raises); an object's is its
    ``__divmod__`` (or the other's ``__rdivmod__``), not its ``//`` and ``%``: a break, or
    CPython's TypeError where neither defines it."""
    if any(isinstance(v, TensorVariable) for v in (a, b)):
        outcome = operators.tensor_operands_outcome(divmod, [a, b])
        if isinstance(outcome, Exception):
            raise PythonError(outcome)
        raise Unsupported("builtin", f"divmod() of {a} and {b}")
    if any(concrete.plain_operand(v) for v in (a, b)):
        error = concrete.unsupported_operands(divmod, [a, b], {"__divmod__", "__rdivmod__"})
        if error is not None:
            raise PythonError(error)
        raise Unsupported("builtin", f"divmod() of {a} and {b}")
    quotient = dispatch.call_operator(tx, operator.floordiv, [a, b])
    return TupleVariable([quotient, dispatch.call_operator(tx, operator.mod, [a, b])])


def _exception(cls: type, args: list[VariableTracker]) -> VariableTracker:
    """``cls(*args)`` for an exception class. One with a builtin constructor of its own
    (``UnicodeDecodeError`` takes five arguments, ``ExceptionGroup`` two, ``OSError(2, 'x')`` is a
    ``FileNotFoundError``) is first made for real from constant arguments: CPython's error is the
    user's, and a call making another class breaks."""
    own = any(
        klass.__module__ == "builtins"
        and klass not in (BaseException, object)
        and ("__init__" in vars(klass) or "__new__" in vars(klass))
        for klass in cls.__mro__
    )
    if own and all(a.is_python_constant() for a in args):
        try:
            made = cls(*[a.as_python_constant() for a in args])
        except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
            raise PythonError(e) from None
        if type(made) is not cls:
            raise Unsupported("new_object", f"{cls.__name__}(...) makes a {type(made).__name__}")
    return ExceptionVariable(cls, list(args))


def _any_all(pick: Callable[..., Any]) -> BuiltinImpl:
    """``any``/``all``: items are taken one by one and the first that decides stops it (a generator
    with side effects runs no further than in CPython)."""
    stop_on = pick is builtins.any

    def any_all(tx: Translator, iterable: VariableTracker) -> VariableTracker:
        it = dispatch.get_iter(tx, iterable)
        while (item := it.next_item(tx)) is not None:
            if dispatch.truth(tx, item) == stop_on:
                return ConstantVariable(stop_on)
        return ConstantVariable(not stop_on)

    return any_all


BUILTINS[any] = _any_all(builtins.any)
BUILTINS[all] = _any_all(builtins.all)


@builtin(bool)
def to_bool(tx: Translator, value: VariableTracker) -> VariableTracker:
    if isinstance(value, TensorVariable):  # data the trace does not know: kept for a jump on it
        made = tensor_bool(tx, value)
        if made is not None:
            return made
    return ConstantVariable(dispatch.truth(tx, value))


@builtin(int)
def int_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return _to_number(tx, value, int, torch.sym_int)


@builtin(float)
def float_(tx: Translator, value: VariableTracker) -> VariableTracker:
    return _to_number(tx, value, float, torch.sym_float)


def _to_number(tx: Translator, value: VariableTracker, kind: type, sym: Any) -> VariableTracker:
    """``int(t)``/``float(t)`` of a tensor: an unbacked symbolic number (``tensor.to_scalar``); of a
    symbolic number: the conversion, in the graph; of an object whose class has no conversion (a
    bound method, a plain object): CPython's TypeError."""
    method = f"__{kind.__name__}__"
    if isinstance(value, TensorVariable):
        return to_scalar(tx, value, method)
    if isinstance(value, SymNodeVariable):
        return tx.output.call_function(sym, (value,), {})
    error = concrete.unsupported_operands(kind, [value], {method, "__index__", "__trunc__"})
    if error is not None:
        raise PythonError(error)
    raise Unsupported("builtin", f"number conversion of {value}")


@builtin(round)
def round_(
    tx: Translator, number: VariableTracker, ndigits: VariableTracker | None = None
) -> VariableTracker:
    """``round(x[, n])`` calls ``type(x).__round__`` (constants are folded before): a user
    object's is inlined; a class without one (``torch.Tensor``, ``method``) raises CPython's
    TypeError."""
    cls = number.python_type()
    if not hasattr(cls, "__round__"):
        raise PythonError(concrete.error_of(round, type(cls.__name__, (), {})()))
    if isinstance(number, UserObjectVariable):
        args = [] if ndigits is None else [ndigits]
        return number.call_method(tx, "__round__", args, {})
    raise Unsupported("builtin", f"round() on {number}")


@builtin(slice)
def slice_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``slice(stop)``, ``slice(start, stop[, step])`` with symbolic or tensor bounds."""
    if not 1 <= len(args) <= 3:
        raise Unsupported("python_error", "TypeError: slice expected 1 to 3 arguments")
    return make_slice([ConstantVariable(None), args[0]] if len(args) == 1 else list(args))


@builtin(callable)
def callable_(tx: Translator, value: VariableTracker) -> VariableTracker:
    cls = value.python_type()
    return ConstantVariable(any("__call__" in vars(c) for c in cls.__mro__))


@builtin(map)
def map_(tx: Translator, fn: VariableTracker, *iterables: VariableTracker) -> VariableTracker:
    sources = [dispatch.get_iter(tx, it) for it in iterables]
    return MapVariable([], sources=sources, fn=fn)


@builtin(filter)
def filter_(tx: Translator, fn: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    return FilterVariable([], sources=[dispatch.get_iter(tx, iterable)], fn=fn)


@builtin(super)
def super_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """Zero-argument ``super()``: the ``__class__`` cell and the frame's first argument."""
    if len(args) == 2:
        return SuperVariable.of(tx, *args)
    code = tx.code
    cell = tx.closure.get("__class__")
    if (
        args
        or cell is None
        or not code.co_argcount
        or code.co_varnames[0] not in tx.symbolic_locals
    ):
        raise Unsupported("super", "super() with arguments or outside a method")
    cls = getattr(cell, "cell", None)
    if cls is None:
        raise Unsupported("super", "super() in a class made during the trace")
    return SuperVariable(cls.cell_contents, tx.symbolic_locals[code.co_varnames[0]])


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
from . import operators  # noqa: E402
