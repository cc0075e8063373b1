"""User objects: existing objects (``UserObjectVariable``), classes (``ClassVariable``,
``super()``), Python modules, objects made in the trace (``NewObjectVariable``,
``construct_instance``), objects of user subclasses of ``dict``, ``list``, ``set``, ``frozenset``
and ``deque`` (``ContainerObject``: their storage and their attributes), the attribute protocol
(``type_lookup`` order, descriptors, ``store_attribute``: the general ``store_attr`` rule),
exceptions, weak references and the reprs of containers of objects. Which class a call makes is
decided by ``operations.construct_class``.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import ctypes
import dataclasses
import enum
import functools
import inspect
import logging
import os
import sys
import types
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ...guards.sources import (
    AttrSource,
    CallSource,
    DictItemSource,
    GlobalsSource,
    ItemSource,
    ModuleGlobalSource,
    Source,
    TypeSource,
)
from .. import polyfills, run_time_logging
from ..exc import PythonError, TracedException, Unsupported
from . import containers, dispatch
from .base import (
    MISSING,
    RUNNING,
    BoundAttributeVariable,
    ConstantLikeVariable,
    VariableTracker,
    class_namespace,
    method_bound,
    owner_index,
    type_lookup,
)
from .call_rules import builtin, call_rule, call_rules_for
from .constants import (
    CONSTANT_TYPES,
    IMMUTABLE_C_KINDS,
    ConstantVariable,
    SymNodeVariable,
    TextPiece,
    TextVariable,
    ascii_text,
    error_of,
    joined_text,
    number_text,
    text_formatted,
    unstored_dict,
    value_arguments,
)
from .containers import (
    PLAIN_DICTS,
    BaseSequenceVariable,
    DequeVariable,
    DictVariable,
    KeyedReads,
    ListVariable,
    SetVariable,
    TupleVariable,
    key_vt,
)
from .functions import (
    LRU_CACHE_WRAPPER,
    OBJECT_METHODS,
    BuiltinVariable,
    ClosureCellVariable,
    MemoizedFunctionVariable,
    MethodCallVariable,
    NestedFunctionVariable,
    PartialVariable,
    UserFunctionVariable,
    tuple_new,
)
from .iterators import IteratorVariable, dict_iter, drain
from .tensors import TensorVariable, tensor_text

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# ``repr`` of the builtin containers (``list``, ``tuple``, ``dict``, ``set``, ``frozenset``, and
# ``str`` of them, which is their ``repr``) as CPython writes it: the container's format around the
# ``repr`` of each item, each item's found as ``repr(item)`` would find it in the trace (a user's
# ``__repr__`` inlined, an input object's default one computed on the real object with its identity
# guarded, a constant's folded). A set's items come in CPython's order (a break where the trace does
# not know it); a container reached again inside itself is written ``[...]``, ``{...}``, ``(...)``
# or ``set(...)``, as CPython's reentrancy guard writes it.

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
        if cls in (set, frozenset):  # its class's name: a subclass's object too
            return ConstantVariable(f"{containers.c_name(vt.python_type())}(...)")
        return ConstantVariable(_REENTERED[cls])
    _RUNNING.append(vt)
    try:
        return joined_text(_write(tx, vt, cls, lambda item: _item_text(item_repr, item)))
    finally:
        _RUNNING.pop()


_REENTERED = {
    list: "[...]",
    tuple: "(...)",
    dict: "{...}",
    set: "set(...)",
    frozenset: "frozenset(...)",
    collections.deque: "[...]",
}


def _container_type(vt: VariableTracker) -> type | None:
    """The builtin container whose repr ``vt``'s is: its own type, or ``dict`` for an object of a
    ``dict`` subclass keeping dict's ``__repr__`` (CPython writes its items, not its class), or
    the base of an object of a user ``list``, ``set``, ``frozenset`` or ``deque`` class keeping
    its base's."""
    if isinstance(vt, (BaseSequenceVariable, DictVariable, SetVariable)):
        cls = vt.python_type()
        if isinstance(vt, DictObjectVariable) and containers.dict_base(cls) is dict:
            return dict if type_lookup(cls, "__repr__") is dict.__repr__ else None
        if isinstance(vt, ContainerObject) and not isinstance(vt, DictObjectVariable):
            base = container_object_base(cls)
            return base if type_lookup(cls, "__repr__") is base.__repr__ else None
        return cls if cls in _REENTERED else None
    return None


def _write(
    tx: Translator, vt: VariableTracker, cls: type, text: Callable[[VariableTracker], Text]
) -> list[Text]:
    """The parts of ``repr(vt)``: strings, and the texts of tensors made after the graph."""
    if cls is dict:
        pairs = [[text(key_vt(k)), ": ", text(v)] for k, v in vt.items.items()]
        return ["{", *_separated(pairs), "}"]
    if cls in (set, frozenset):  # ``{...}`` for a set, ``Name({...})`` for any other
        items = [[text(key_vt(k))] for k in vt.in_order()]
        name = containers.c_name(vt.python_type())
        if not items:
            return [f"{name}()"]
        inner = ["{", *_separated(items), "}"]
        return inner if vt.python_type() is set else [f"{name}(", *inner, ")"]
    items = [[text(item)] for item in vt.unpack(tx)]
    if cls is list:
        return ["[", *_separated(items), "]"]
    if cls is collections.deque:  # ``deque([...])``, ``Name([...], maxlen=n)``
        bound = "" if vt.maxlen is None else f", maxlen={vt.maxlen}"
        name = containers.c_name(vt.python_type()).rpartition(".")[2]
        return [f"{name}([", *_separated(items), f"]{bound})"]
    return ["(", *_separated(items), "," if len(items) == 1 else "", ")"]


#: a part of a container's text: a string, or a tracker of one (``TextVariable``)
Text = str | VariableTracker


def _separated(items: list[list[Text]]) -> list[Text]:
    """The parts of ``items`` with ``", "`` between them."""
    parts: list[Text] = []
    for i, item in enumerate(items):
        parts += [", "] * (i > 0) + item
    return parts


def _item_text(item_repr: ItemRepr, item: VariableTracker) -> Text:
    made = item_repr(item)
    if isinstance(made, TextVariable):
        return made
    if not made.is_python_constant() or type(made.as_python_constant()) is not str:
        raise Unsupported("builtin", f"repr() of an item {item!r} gave {made!r}")
    return made.as_python_constant()


# ``ExceptionVariable``: an exception object made in the trace (``ValueError("bad")``, a
# ``KeyError`` the traced code raises), as a value that can be raised, caught, inspected
# (``e.args``, ``str(e)``, ``isinstance``) and returned. Raising and catching are in
# ``opcodes/exceptions.py``.


@dataclass(eq=False)
class ExceptionVariable(VariableTracker):
    cls: type
    args: list[VariableTracker] = field(default_factory=list)
    source: Any = None
    cause: VariableTracker | None = None  #: ``raise ... from cause``
    #: attributes CPython sets apart from ``args`` (``AttributeError``'s ``name`` and ``obj``)
    attrs: dict[str, VariableTracker] = field(default_factory=dict)
    #: ``__context__``: the exception being handled where this one was raised (``set_context``)
    context: ExceptionVariable | None = None
    #: ``__suppress_context__``: set by ``raise ... from ...`` (``None`` included)
    suppress_context: bool = False
    #: raised in the trace: its ``__traceback__`` is a traceback, else None
    raised: bool = False

    def python_type(self) -> type:
        return self.cls

    def is_python_constant(self) -> bool:
        """Its arguments are constants and its class runs no Python code of its own (a method
        written in Python, ``__str__``, would run at trace time on a copy, unguarded)."""
        return not writes_methods(self.cls) and all(a.is_python_constant() for a in self.args)

    def as_python_constant(self) -> Any:
        """An equal exception (``str``, ``repr`` and comparisons of its type and arguments)."""
        exc = self.cls(*[a.as_python_constant() for a in self.args])
        for name, vt in self.attrs.items():
            if vt.is_python_constant():
                setattr(exc, name, vt.as_python_constant())
        return exc

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "__class__":
            return tx.wrap_static(self.cls)
        if name == "__cause__":
            return self.cause or ConstantVariable(None)
        if name == "__context__":
            return self.context or ConstantVariable(None)
        if name == "__suppress_context__":
            return ConstantVariable(self.suppress_context)
        if name == "__traceback__":
            return TracebackVariable() if self.raised else ConstantVariable(None)
        if name == "value" and issubclass(self.cls, StopIteration):  # its first argument
            return self.args[0] if self.args else ConstantVariable(None)
        if self.is_python_constant() and name in _PLAIN_ATTRIBUTES:
            return tx.fold(getattr(self.as_python_constant(), name))
        keywords = [
            n for c, names in _KEYWORD_ATTRIBUTES.items() if issubclass(self.cls, c) for n in names
        ]
        if name in keywords and self.source is None and not writes_methods(self.cls):
            return ConstantVariable(None)  # not given: CPython's default
        raise Unsupported("getattr", f"attribute {name!r} of {self.cls.__name__}")

    def reconstruct(self, cg: Codegen) -> None:
        def build() -> None:
            cg.load_const(self.cls)
            for arg in self.args:
                arg.reconstruct(cg)
            cg.call_function(len(self.args))
            parts = dict(self.attrs)
            if self.cause is not None:
                parts["__cause__"] = self.cause
            if self.context is not None:
                parts["__context__"] = self.context
            if self.suppress_context:
                parts["__suppress_context__"] = ConstantVariable(True)
            for name, vt in parts.items():
                cg.copy(1)
                vt.reconstruct(cg)
                cg.swap(2)
                cg.store_attr(name)

        cg.build_once(self, build)

    def set_context(self, handled: VariableTracker | None) -> None:
        """This exception is raised while ``handled`` is handled (None: while none is): its
        context becomes that one, as CPython's ``_PyErr_SetObject`` sets it; a link of the
        handled one's context chain back to this one is cut, so that the chain has no cycle."""
        if not isinstance(handled, ExceptionVariable) or handled is self:
            return
        link = handled
        while link.context is not None:
            if link.context is self:
                link.context = None
                break
            link = link.context
        self.context = handled

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.cls.__name__})"


def _handled_outside() -> bool:
    """Do the compiled function's callers handle an exception (``sys.exc_info()`` at its entry,
    where its guards run)?"""
    return sys.exc_info()[0] is not None


def handled_exception(tx: Translator) -> VariableTracker:
    """The exception being handled where the trace is: the innermost one of the trace's own
    handlers, else None, guarded that the callers handle none (one they handle is not known to
    the trace: its read breaks)."""
    if tx.output.exc_info:
        return tx.output.exc_info[-1]
    if _handled_outside():
        raise Unsupported("exception", "reading the exception the callers handle")
    tx.output.assume_state(("handled outside",), _handled_outside, False)
    return ConstantVariable(None)


@call_rule(sys.exc_info)
def exc_info(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``sys.exc_info()``: the handled exception's type, itself and its traceback."""
    if args or kwargs:
        return None
    exc = handled_exception(tx)
    if not isinstance(exc, ExceptionVariable):
        return TupleVariable([exc, exc, exc])
    return TupleVariable([tx.wrap_static(exc.cls), exc, exc.var_getattr(tx, "__traceback__")])


@call_rule(sys.exception)
def exception(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``sys.exception()``: the handled exception, or None."""
    return None if args or kwargs else handled_exception(tx)


@dataclass(eq=False)
class TracebackVariable(VariableTracker):
    """The ``__traceback__`` of an exception raised in the trace: a traceback, which the trace
    knows to be one (``tb is None`` is false) and does not model further."""

    def python_type(self) -> type:
        return types.TracebackType

    def reconstruct(self, cg: Codegen) -> None:
        raise Unsupported("reconstruct", "a traceback of the trace cannot be rebuilt outside it")


def _text_returned(obj: VariableTracker, name: str, result: VariableTracker) -> VariableTracker:
    """What ``obj``'s ``__str__`` or ``__repr__`` (``name``) written in Python gave, as ``str()``
    and ``repr()`` take it: a text the trace makes (``f"Box({self.t})"``: made after the graph) or
    a constant string; anything else is CPython's ``TypeError``."""
    if isinstance(result, TextVariable):
        return result
    if not result.is_python_constant():
        raise Unsupported("builtin", f"{name} of {obj!r} gave {result!r}")
    if type(result.as_python_constant()) is not str:
        kind = type(result.as_python_constant()).__name__
        raise PythonError(TypeError(f"{name} returned non-string (type {kind})"))
    return result


def exception_text(tx: Translator, exc: ExceptionVariable, name: str) -> VariableTracker:
    """``str(exc)`` (``name`` ``"__str__"``) or ``repr(exc)`` (``"__repr__"``) of an exception
    whose class keeps CPython's methods, from its arguments' texts as the trace makes them:
    ``BaseException.__str__`` is ``""``, ``str(a)`` or ``repr(args)`` for 0, 1 or more
    arguments (``KeyError.__str__``: ``repr(a)`` for one); ``BaseException.__repr__`` is
    ``Name(repr(a))`` for one, ``Name`` followed by ``repr(args)`` for any other count. A method
    the class writes in Python is inlined; other C methods (``OSError``'s, ``ImportError``'s)
    break the graph."""
    method = type_lookup(exc.cls, name)
    args = list(exc.args)
    if isinstance(method, types.FunctionType):  # the class's own, inlined
        result = UserFunctionVariable(method, None, self_vt=exc).call_function(tx, [], {})
        return _text_returned(exc, name, result)

    def text(fn: Callable, value: VariableTracker) -> VariableTracker:
        return dispatch.call_builtin(tx, fn, [value], {})

    if method is BaseException.__repr__:
        type_name = containers.c_name(exc.cls).rpartition(".")[2]
        inner = [text(repr, args[0]), ")"] if len(args) == 1 else [text(repr, TupleVariable(args))]
        return joined_text([type_name + "(" * (len(args) == 1), *inner])
    if method is KeyError.__str__ and len(args) == 1:
        return text(repr, args[0])
    if method in (BaseException.__str__, KeyError.__str__):
        if len(args) <= 1:
            return text(str, args[0]) if args else ConstantVariable("")
        return text(repr, TupleVariable(args))
    raise Unsupported("builtin", f"{name} of {exc.cls.__name__}, written by its class")


#: Attributes builtin exceptions derive from their arguments.
_PLAIN_ATTRIBUTES = frozenset({"errno", "strerror", "filename", "code", "msg", "name", "value"})


#: Attributes builtin exceptions take as keyword arguments, not from their arguments.
_KEYWORD_ATTRIBUTES = {
    AttributeError: ("name", "obj"),
    NameError: ("name",),
    ImportError: ("name", "path"),
}


class TrackedValue:
    """An attribute of an exception raised in the trace's place given as the tracker of the value
    (``AttributeError(obj=...)``: the object read, whatever it is, hashable or not)."""

    __slots__ = ("vt",)

    def __init__(self, vt: VariableTracker) -> None:
        self.vt = vt


def keyword_attributes(tx: Translator, exc: BaseException) -> dict[str, VariableTracker]:
    """The attributes a builtin exception raised in the trace's place (a missing attribute's
    ``AttributeError``) was given by keyword, as trackers: ``e.name`` is what CPython's has. One
    given as a ``TrackedValue`` is its tracker (``e.obj``, the object read)."""
    for cls, names in _KEYWORD_ATTRIBUTES.items():
        if isinstance(exc, cls):
            values = {n: getattr(exc, n) for n in names if getattr(exc, n) is not None}
            return {
                n: v.vt if isinstance(v, TrackedValue) else tx.fold(v) for n, v in values.items()
            }
    return {}


def writes_methods(cls: type) -> bool:
    """Does a class of ``cls``'s MRO outside ``builtins`` define a function?"""
    return any(
        isinstance(v, (types.FunctionType, classmethod, staticmethod, property))
        for klass in cls.__mro__
        if klass.__module__ != "builtins"
        for v in vars(klass).values()
    )


def is_simple_exception(cls: type) -> bool:
    """An exception class whose instances are just their arguments: no ``__init__``/``__new__``
    written in Python anywhere in its MRO."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return False
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            continue
        if "__init__" in vars(klass) or "__new__" in vars(klass):
            return False
    return True


# ``obj.name`` where the class's ``name`` is a C method that has a polyfill (``obj.__reduce_ex__``
# of a plain object is ``object.__reduce_ex__`` bound to it): a bound method whose call runs the
# polyfill with the object first, as the C method would run with it as ``self``. Escaping the trace
# it is read again from the object (``obj.name``), the real bound method.

#: descriptors of methods written in C (a class method's is bound to the class)
C_METHODS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)


@dataclass(eq=False)
class PolyfilledMethodVariable(VariableTracker):
    """``descriptor`` (a C method of ``owner``'s class, or a C class method of ``owner``, a
    class) bound to ``owner``."""

    owner: VariableTracker
    name: str
    descriptor: Any

    def python_type(self) -> type:
        return (
            types.MethodWrapperType
            if isinstance(self.descriptor, types.WrapperDescriptorType)
            else types.BuiltinMethodType
        )

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        fn = polyfills.lookup(self.descriptor)
        return UserFunctionVariable(fn).call_function(tx, [self.owner, *args], kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        self.owner.reconstruct(cg)
        cg.load_attr(self.name)

    def __repr__(self) -> str:
        return f"PolyfilledMethodVariable({self.name})"


def bind_polyfilled(owner: VariableTracker, name: str, static: Any) -> VariableTracker | None:
    """``owner.name`` for ``static``, found on the class, if it is a C method with a polyfill."""
    if isinstance(static, C_METHODS) and polyfills.lookup(static) is not None:
        return PolyfilledMethodVariable(owner, name, static)
    return None


@dispatch.rule("getattr", UserFunctionVariable)
def _function_attribute(tx: Translator, obj: UserFunctionVariable, name: str) -> VariableTracker:
    """A bound method finds a name on its class first (``method_getattro``), then on its
    function: a C method of ``MethodType`` with a polyfill (``m.__reduce_ex__``, ``object``'s)
    is bound to the method; every other attribute is the function's own protocol."""
    if obj.self_vt is not None:
        bound = bind_polyfilled(obj, name, type_lookup(types.MethodType, name))
        if bound is not None:
            return bound
    return obj.var_getattr(tx, name)


# CPython's attribute protocol, for the objects bytegraph traces: where ``obj.name`` is found and
# what ``obj.name = value`` runs.
#
# ``type_lookup`` finds a name on a class's MRO without running metaclass code,
# ``is_data_descriptor`` says which class attributes take precedence over the instance dict,
# ``read_descriptor`` and ``write_descriptor`` inline a Python property's ``fget``/``fset`` or a
# descriptor's ``__get__``/ ``__set__``, ``bind_class_attribute`` binds what an instance finds on
# its class, and ``class_attr_source`` names a class attribute for guards without running it. What
# is not modelled raises ``Unsupported``: a write is never recorded as a plain store unless CPython
# would make one. The entry points are ``store_attribute`` (every attribute store)
# and the ``var_getattr`` of ``UserObjectVariable`` and ``NewObjectVariable``.


def is_data_descriptor(value: Any) -> bool:
    """A class attribute whose type defines ``__set__`` or ``__delete__``: it wins over the instance
    dict on reads, and writes go through it."""
    kind = type(value)
    return (
        type_lookup(kind, "__set__") is not MISSING
        or type_lookup(kind, "__delete__") is not MISSING
    )


def class_attr_source(cls_source: Source | None, cls: type, name: str) -> Source | None:
    """Where a guard reads the class attribute ``name`` of ``cls`` (at ``cls_source``) without
    calling its ``__get__``: ``C['K'].__dict__['name']``, or through ``__mro__[i]`` when a base
    class defines it."""
    if cls_source is None:
        return None
    index = owner_index(cls, name)
    owner = cls_source if index == 0 else ItemSource(AttrSource(cls_source, "__mro__"), index)
    return ItemSource(AttrSource(owner, "__dict__"), name)


def python_method(descriptor: Any, name: str) -> types.FunctionType | None:
    """``type(descriptor).name`` when it is a plain Python function (``__get__``, ``__set__``)."""
    method = type_lookup(type(descriptor), name)
    return method if isinstance(method, types.FunctionType) else None


def read_descriptor(
    tx: Translator,
    obj: VariableTracker,
    cls_vt: VariableTracker,
    static: Any,
    source: Source | None,
) -> VariableTracker:
    """``obj.name`` through the class attribute ``static`` (found at ``source``): a property's
    ``fget`` or a Python descriptor's ``__get__(obj, cls)``, inlined."""
    if isinstance(static, property):
        if not isinstance(static.fget, types.FunctionType):
            raise Unsupported("descriptor", "a property whose getter is not a Python function")
        fget = _wrap_part(tx, static.fget, source, "fget")
        return fget.call_function(tx, [obj], {})
    getter = python_method(static, "__get__")
    if getter is None:
        raise Unsupported(
            "descriptor", f"a {type(static).__name__} descriptor bytegraph cannot run"
        )
    return _bound_method(tx, static, getter, "__get__", source).call_function(tx, [obj, cls_vt], {})


def write_descriptor(
    tx: Translator,
    obj: VariableTracker,
    static: Any,
    name: str,
    value: VariableTracker,
    source: Source | None,
) -> bool:
    """``obj.name = value`` where the class attribute ``static`` is a data descriptor: run a
    property's ``fset`` or a Python ``__set__`` (True), or say that the write goes to a slot of the
    instance (False: the caller records a plain store). Anything else raises ``Unsupported``."""
    if isinstance(static, types.MemberDescriptorType):
        return False  # a ``__slots__`` entry: the store lands in the instance, like a dict entry
    if isinstance(static, property):
        if static.fset is None:
            raise Unsupported("python_error", f"AttributeError: property {name!r} has no setter")
        if not isinstance(static.fset, types.FunctionType):
            raise Unsupported("store_attr", f"the setter of property {name!r} is not Python code")
        fset = _wrap_part(tx, static.fset, source, "fset")
        fset.call_function(tx, [obj, value], {})
        return True
    setter = python_method(static, "__set__")
    if setter is None:
        raise Unsupported(
            "store_attr", f"{name!r} is a {type(static).__name__} descriptor bytegraph cannot run"
        )
    _bound_method(tx, static, setter, "__set__", source).call_function(tx, [obj, value], {})
    return True


def delete_descriptor(
    tx: Translator, obj: VariableTracker, static: Any, name: str, source: Source | None
) -> None:
    """``del obj.name`` where the class attribute ``static`` is a data descriptor: a property's
    ``fdel`` or a Python ``__delete__`` runs in the trace. Anything else (a ``__slots__`` entry, a
    C descriptor) raises ``Unsupported``."""
    if isinstance(static, property):
        if static.fdel is None:
            raise Unsupported("python_error", f"AttributeError: property {name!r} has no deleter")
        if not isinstance(static.fdel, types.FunctionType):
            raise Unsupported("delete_attr", f"the deleter of property {name!r} is not Python code")
        _wrap_part(tx, static.fdel, source, "fdel").call_function(tx, [obj], {})
        return
    deleter = python_method(static, "__delete__")
    if deleter is None:
        raise Unsupported("delete_attr", f"del .{name}: a {type(static).__name__} descriptor")
    _bound_method(tx, static, deleter, "__delete__", source).call_function(tx, [obj], {})


def _bound_method(
    tx: Translator, descriptor: Any, fn: types.FunctionType, name: str, source: Source | None
) -> UserFunctionVariable:
    """``descriptor.name`` bound, the descriptor and its class's method guarded when sourced."""
    if source is None:
        return UserFunctionVariable(fn, None, self_vt=tx.wrap_static(descriptor))
    method = tx.wrap(fn, AttrSource(TypeSource(source), name))
    return UserFunctionVariable(fn, method.source, self_vt=tx.wrap(descriptor, source))


def bind_class_attribute(
    tx: Translator,
    obj: VariableTracker,
    cls_vt: VariableTracker,
    static: Any,
    name: str,
    source: Source | None,
) -> VariableTracker:
    """``obj.name`` found on the class (no instance attribute shadows it): methods are bound,
    static and class methods unwrapped, Python descriptors' ``__get__`` run, plain values wrapped
    (and guarded through ``source``)."""
    if isinstance(static, types.FunctionType):
        fn = tx.wrap(static, source) if source is not None else UserFunctionVariable(static)
        return UserFunctionVariable(static, fn.source, self_vt=obj)
    if isinstance(static, (staticmethod, classmethod)):
        inner = static.__func__
        inner_source = AttrSource(source, "__func__") if source is not None else None
        fn = tx.wrap(inner, inner_source) if inner_source is not None else tx.wrap_static(inner)
        if isinstance(static, staticmethod):
            return fn
        if not isinstance(fn, UserFunctionVariable):
            raise Unsupported("descriptor", f"classmethod {name!r} is not a Python function")
        return fn.clone(self_vt=cls_vt)
    if python_method(static, "__get__") is not None:
        return read_descriptor(tx, obj, cls_vt, static, source)
    polyfilled = bind_polyfilled(obj, name, static)  # a C method with a polyfill
    if polyfilled is not None:
        return polyfilled
    if type_lookup(type(static), "__get__") is not MISSING and not isinstance(static, torch.Tensor):
        raise Unsupported("descriptor", f"{name!r} is a {type(static).__name__}")
    return tx.wrap(static, source) if source is not None else tx.wrap_static(static)


def _wrap_part(tx: Translator, fn: types.FunctionType, source: Source | None, part: str):
    """A property's ``fget``/``fset``/``fdel``, guarded through the property when it has a
    source."""
    if source is None:
        return UserFunctionVariable(fn)
    return tx.wrap(fn, AttrSource(source, part))


# Existing user objects and Python modules (classes are ``ClassVariable``, ``nn.Module`` instances
# in ``modules/``).
#
# Attribute reads on these go back through ``builder.wrap`` with an ``AttrSource``, so every
# attribute the trace depends on is guarded. Methods are inlined with ``self`` bound. Attribute
# writes on objects that came from inputs are side effects (replayed by the rewritten code). Classes
# with a custom ``__getattr__``/``__getattribute__`` are refused (``custom_getattr``) except the
# allowlist ``PURE_GETATTR_CLASSES`` (``transformers`` configs), whose reads use the real
# ``getattr`` and whose guards therefore call that ``__getattribute__``.


# ``GlobalsVariable``: ``globals()`` of the compiled function's own module, the dict ``LOAD_GLOBAL``
# reads. A name's value is the global (its pending store, else its value guarded); ``name in
# globals()`` guards the key's presence or absence; whatever reads the key set (iteration, the
# views, ``len``) guards all its keys (``DICT_KEYS``). Writes are stores to the globals (side
# effects, replayed in program order) and deletions (``DELETE_GLOBAL``). Every method of ``dict``
# is either traced (``_GLOBALS_METHODS``) or breaks with a reason (``GLOBALS_UNTRACED``). Given
# back to Python it is ``globals()`` again.


@dataclass(eq=False)
class GlobalsVariable(VariableTracker):
    """The globals dict of the compiled function (``G``), which only the root frame's code and
    functions of its module share."""

    f_globals: dict

    @property
    def items(self) -> GlobalsItems:
        """The dict as the trace has it now, for the dict views and iterators to read."""
        return GlobalsItems(self.f_globals)

    def python_type(self) -> type:
        return dict

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in _GLOBALS_METHODS:
            return containers.BoundMethodVariable(self, name)
        if type_lookup(dict, name) is not MISSING:
            reason = GLOBALS_UNTRACED.get(name, "not traced")
            raise Unsupported("globals", f"globals().{name}: {reason}")
        raise PythonError(AttributeError(f"'dict' object has no attribute '{name}'"))

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(globals)  # the rewritten code runs in the compiled function's globals
        cg.call_function(0)

    def __repr__(self) -> str:
        return "GlobalsVariable()"


class GlobalsItems(collections.abc.Mapping):
    """The names of the globals dict as the trace left it: the real keys (guarded as a whole once
    read) less those it deleted, then the names it stored anew, in the order eager adds them; each
    value as ``LOAD_GLOBAL`` reads it. Asked outside a trace (rebuilding an iterator at a break,
    once the stores are replayed) it reads the keys the trace guarded."""

    def __init__(self, f_globals: dict) -> None:
        self.f_globals = f_globals

    def __iter__(self) -> Iterator[str]:
        tx = RUNNING.tx
        real = tuple(self.f_globals)
        if tx is None:
            return iter(real)
        tx.output.assume_keys(GlobalsSource(), real)
        effects = tx.output.side_effects
        kept = [k for k in real if not effects.global_deleted(k)]
        added = [k for k in effects.global_stores if k not in self.f_globals]
        return iter(kept + [k for k in added if not effects.global_deleted(k)])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        tx = RUNNING.tx
        if type(name) is not str:
            raise Unsupported("globals", f"globals() indexed by {name!r}")
        effects = tx.output.side_effects
        if name in effects.global_stores:
            return not effects.global_deleted(name)
        return _real_global(tx, self.f_globals, name)

    def __getitem__(self, name: str) -> VariableTracker:
        if RUNNING.tx is None:  # rewritten code making a loop's rest of items, after the replay
            return GlobalValueVariable(name)
        if name not in self:
            raise KeyError(name)
        return RUNNING.tx.root.load_global(name)


@dataclass(eq=False)
class GlobalValueVariable(VariableTracker):
    """A global as rewritten code reads it after the replay of the trace's stores (the rest of a
    loop over ``globals().items()`` handed to a resume function): ``globals()[name]``."""

    name: str

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(globals)
        cg.call_function(0)
        cg.load_const(self.name)
        cg.subscr()


def _real_global(tx: Translator, f_globals: dict, name: str) -> bool:
    """Is ``name`` a key of the real globals? Guarded either way."""
    present = name in f_globals
    assume = tx.output.assume_key_present if present else tx.output.assume_key_absent
    assume(GlobalsSource(), name)
    return present


def _global_name(vt: VariableTracker) -> str:
    if not vt.is_python_constant() or type(vt.as_python_constant()) is not str:
        raise Unsupported("globals", f"globals() indexed by {vt}")
    return vt.as_python_constant()


def _store_global(tx: Translator, name: str, value: VariableTracker) -> None:
    if tx.parent is not None:  # as ``STORE_GLOBAL``: inlined code reads no pending store
        raise Unsupported("global_store", "a store to globals() inside an inlined function")
    tx.output.side_effects.store_global(name, value)


def _globals_get(tx, vt, key, default=containers.NONE):
    name = _global_name(key)
    return vt.items[name] if name in vt.items else default


def _globals_getitem(tx, vt, key):
    name = _global_name(key)
    if name not in vt.items:
        raise PythonError(KeyError(name))
    return vt.items[name]


def _globals_setitem(tx, vt, key, value):
    _store_global(tx, _global_name(key), value)
    return containers.NONE


def _globals_setdefault(tx, vt, key, default=containers.NONE):
    name = _global_name(key)
    if name in vt.items:
        return vt.items[name]
    _store_global(tx, name, default)
    return default


def _globals_delitem(tx, vt, key):
    name = _global_name(key)
    if name not in vt.items:
        raise PythonError(KeyError(name))
    if tx.parent is not None:
        raise Unsupported("global_store", "a deletion from globals() inside an inlined function")
    existed = _real_global(tx, vt.f_globals, name)
    tx.output.side_effects.delete_global(name, existed)
    return containers.NONE


def _globals_pop(tx, vt, key, *default):
    name = _global_name(key)
    if name not in vt.items:
        if default:
            return default[0]
        raise PythonError(KeyError(name))
    value = vt.items[name]
    _globals_delitem(tx, vt, key)
    return value


def _globals_update(tx, vt, *args, **kwargs):
    """``dict.update`` as CPython's ``dict_update_arg`` runs it: a mapping (an object with
    ``keys``) item by item through ``keys()`` and ``[k]``, else an iterable of pairs; then the
    keywords."""
    if len(args) > 1:
        raise PythonError(TypeError(f"update expected at most 1 argument, got {len(args)}"))
    for other in args:
        if type_lookup(other.python_type(), "keys") is not MISSING:
            keys = dispatch.call(tx, dispatch.getattr_(tx, other, "keys"), [], {})
            for key in dispatch.iterate(tx, keys):
                _globals_setitem(tx, vt, key, dispatch.getitem(tx, other, key))
            continue
        for index, pair in enumerate(dispatch.iterate(tx, other)):
            parts = dispatch.iterate(tx, pair)
            if len(parts) != 2:
                raise PythonError(
                    ValueError(
                        f"dictionary update sequence element #{index} has length "
                        f"{len(parts)}; 2 is required"
                    )
                )
            _globals_setitem(tx, vt, *parts)
    for name, value in kwargs.items():
        _store_global(tx, name, value)
    return containers.NONE


#: The methods of ``dict`` traced on ``globals()``: name -> (mutates a tracked container: never,
#: the writes are global stores; implementation).
_GLOBALS_METHODS: dict[str, tuple[bool, Callable[..., VariableTracker]]] = {
    "__contains__": (False, lambda tx, vt, k: ConstantVariable(_global_name(k) in vt.items)),
    "__getitem__": (False, _globals_getitem),
    "get": (False, _globals_get),
    "__setitem__": (False, _globals_setitem),
    "setdefault": (False, _globals_setdefault),
    "__delitem__": (False, _globals_delitem),
    "pop": (False, _globals_pop),
    "update": (False, _globals_update),
    "keys": (False, lambda tx, vt: containers.DictViewVariable(vt, "keys")),
    "values": (False, lambda tx, vt: containers.DictViewVariable(vt, "values")),
    "items": (False, lambda tx, vt: containers.DictViewVariable(vt, "items")),
    "__iter__": (False, lambda tx, vt: dict_iter(vt, "keys")),
    "__len__": (False, lambda tx, vt: ConstantVariable(len(vt.items))),
}
containers.METHODS[GlobalsVariable] = _GLOBALS_METHODS

#: The methods of ``dict`` a trace does not take on ``globals()``, each with the reason: the break
#: runs it in Python.
GLOBALS_UNTRACED: dict[str, str] = {
    "clear": "empties the module",
    "popitem": "deletes the module's last name",
    "__ior__": "a merge into the module's namespace (use update)",
    "__or__": "a copy holding every global",
    "__ror__": "a copy holding every global",
    "copy": "a copy holding every global",
    "__reversed__": "iterates the names last first",
    "__eq__": "compares every global",
    "__ne__": "compares every global",
    "__lt__": "dicts have no order",
    "__le__": "dicts have no order",
    "__gt__": "dicts have no order",
    "__ge__": "dicts have no order",
    "__repr__": "the text of every global",
    "__str__": "the text of every global",
    "__format__": "the text of every global",
    "__sizeof__": "the size of the namespace's table",
    "__reduce__": "pickles the namespace",
    "__reduce_ex__": "pickles the namespace",
    "__getstate__": "pickles the namespace",
    "__init__": "fills the namespace again",
    "__new__": "makes a dict",
    "fromkeys": "makes a dict",
    "__class_getitem__": "a generic alias",
    "__init_subclass__": "a class hook",
    "__subclasshook__": "a class hook",
    "__getattribute__": "reads an attribute",
    "__setattr__": "dicts take no attributes",
    "__delattr__": "dicts take no attributes",
    "__dir__": "the attributes of dict",
}


@dispatch.rule("contains", GlobalsVariable)
def _globals_contains(tx: Translator, vt: GlobalsVariable, item: VariableTracker) -> bool:
    return _global_name(item) in vt.items


@dispatch.rule("getitem", GlobalsVariable)
def _getitem_rule(tx: Translator, vt: GlobalsVariable, key: VariableTracker) -> VariableTracker:
    return _globals_getitem(tx, vt, key)


@dispatch.rule("setitem", GlobalsVariable)
def _setitem_rule(
    tx: Translator, vt: GlobalsVariable, key: VariableTracker, value: VariableTracker
) -> None:
    _globals_setitem(tx, vt, key, value)


@dispatch.rule("delitem", GlobalsVariable)
def _delitem_rule(tx: Translator, vt: GlobalsVariable, key: VariableTracker) -> None:
    _globals_delitem(tx, vt, key)


@dispatch.rule("get_iter", GlobalsVariable)
def _globals_iter(tx: Translator, vt: GlobalsVariable) -> VariableTracker:
    return dict_iter(vt, "keys")


@dispatch.rule("iterate", GlobalsVariable)
def _globals_names(tx: Translator, vt: GlobalsVariable) -> list[VariableTracker]:
    return [ConstantVariable(name) for name in vt.items]


@builtin(globals)
def _globals(tx: Translator) -> VariableTracker:
    if tx.f_globals is not tx.root.f_globals:
        raise Unsupported(
            "globals", "globals() of another module", hint="frame introspection runs in Python"
        )
    return GlobalsVariable(tx.f_globals)


@dataclass(eq=False)
class PythonModuleVariable(ConstantLikeVariable):
    value: types.ModuleType
    source: Source | None = None

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)  # a module reached without a source (a key folded back)
        return None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        stored = tx.output.side_effects.own_attr(self, self.value, name)
        if stored is not None:
            return stored
        if not hasattr(self.value, name):
            if self.source is not None:  # ``hasattr``/``getattr(m, name, default)`` rely on it
                namespace = AttrSource(self.source, "__dict__")
                for key in (name, "__getattr__"):
                    tx.output.assume_key_absent(namespace, key)
                if "__getattr__" not in vars(self.value):  # the generic lookup's own error
                    raise PythonError(_lookup_error(self.value, name))
            raise Unsupported("getattr", f"module {self.value.__name__} has no attribute {name!r}")
        if name == "__dict__" and self.source is not None:
            return unstored_dict(tx, self, self.value, self.source)
        attr_source = AttrSource(self.source, name) if self.source is not None else None
        module_name = getattr(self.value, "__name__", None)
        if (
            attr_source is None
            and name in vars(self.value)
            and sys.modules.get(module_name) is self.value
        ):
            # a module from ``import m`` inside the function: its attributes are its globals,
            # ``M['m']['name']`` (guarded, and what the trace mutates there is replayed)
            attr_source = ModuleGlobalSource(module_name, name)
        return tx.wrap(getattr(self.value, name), attr_source)


@dataclass(eq=False)
class InstanceDictVariable(DictVariable):
    """``obj.__dict__`` (``SideEffects.instance_dict``): the trace reads it as a dict of the
    object's attributes, the rewritten code loads the object's real one (the same object)."""

    owner: VariableTracker | None = None

    def store_into_dict(self, tx: Translator, name: Any, value: VariableTracker) -> None:
        """``obj.__dict__[name] = value`` on a plain object: a pending store of the object into
        its ``__dict__``, replayed with ``object.__setattr__``, which writes there for a name the
        class has no data descriptor of (guarded: the class's attribute unchanged, or absent). A
        key that is no string, a module's dict, a data descriptor's name and a key deleted in
        the trace before (the replay would keep its old place) break."""
        owner = self.owner
        if type(name) is not str or not isinstance(owner, UserObjectVariable):
            raise Unsupported("instance_dict", f"__dict__[{name!r}] written")
        cls = type(owner.value)
        static = type_lookup(cls, name)
        cls_source = class_vt(tx, owner).source
        if (
            isinstance(owner.value, nn.Module)
            or cls_source is None
            or (static is not MISSING and is_data_descriptor(static))
        ):
            raise Unsupported("instance_dict", f"__dict__[{name!r}] of a {cls.__name__} written")
        effects = tx.output.side_effects
        if effects.is_deleted(owner, name):
            raise Unsupported("instance_dict", f"__dict__[{name!r}] stored after its deletion")
        if owner.source is None:  # made in the trace: an attribute store, built with the object
            if type_lookup(cls, "__setattr__") is not object.__setattr__:
                raise Unsupported(
                    "instance_dict", f"__dict__[{name!r}] of a {cls.__name__} written"
                )
            effects.store_attr(owner, name, value)
            return
        if static is MISSING:
            tx.output.assume_class_lacks(cls_source, (name,))
        else:
            tx.wrap(static, class_attr_source(cls_source, cls, name))
        effects.store_attr(owner, name, value, into_dict=True)

    def reconstruct(self, cg: Codegen) -> None:
        self.owner.reconstruct(cg)
        cg.load_attr("__dict__")


def _instance_dict_setitem(
    tx: Translator, vt: InstanceDictVariable, key: VariableTracker, value: VariableTracker
) -> VariableTracker:
    name = key.as_python_constant() if key.is_python_constant() else key
    vt.store_into_dict(tx, name, value)
    return ConstantVariable(None)


def _instance_dict_update(
    tx: Translator, vt: InstanceDictVariable, *others: VariableTracker, **kwargs: VariableTracker
) -> VariableTracker:
    """``vars(obj).update(mapping, **kwargs)``: each pair stored in turn, as ``dict.update``
    stores them; a mapping other than a plain dict tracker breaks (its reads could fail part
    way, after some stores)."""
    pairs: dict[Any, VariableTracker] = {}
    for other in others:
        if type(other) is not DictVariable or other.cls is not dict or len(others) > 1:
            raise Unsupported("instance_dict", f"__dict__.update({other})")
        pairs.update(other.items)
    pairs.update(kwargs)
    if any(type(name) is not str for name in pairs):
        raise Unsupported("instance_dict", "__dict__.update() with keys other than strings")
    for name, value in pairs.items():
        vt.store_into_dict(tx, name, value)
    return ConstantVariable(None)


#: the instance dict's writes, each a store of the object (``store_into_dict``); its other
#: writes change the dict tracker itself, which ``SideEffects.before_mutation`` refuses (a break)
containers.METHODS[InstanceDictVariable] = {
    **containers.METHODS[DictVariable],
    "__setitem__": (False, _instance_dict_setitem),
    "update": (False, _instance_dict_update),
}


def _generic_dict(value: Any, static: Any) -> bool:
    """``static``, found on the class as ``__dict__``, is the getter of the instance dict CPython
    gives instances of classes written in Python."""
    return (
        isinstance(static, types.GetSetDescriptorType)
        and static.__name__ == "__dict__"
        and type(static.__get__(value, type(value))) is dict
    )


def _lookup_error(value: Any, name: str) -> BaseException:
    """The ``AttributeError`` CPython raises for ``getattr(value, name)``, which must fail."""
    try:
        getattr(value, name)
    except AttributeError as e:
        return e
    raise AssertionError(f"{value!r} has attribute {name!r}")


#: Methods written in C: reading one binds it (nothing else), so the read is traced and a call of
#: it is what breaks, once.
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)


@dataclass(eq=False)
class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object bytegraph has no special tracker for)."""

    value: Any
    source: Source | None = None

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        effects = tx.output.side_effects
        pending = effects.load_attr(self, name)
        if pending is not None:
            return pending
        cls = type(self.value)
        if effects.is_deleted(self, name):
            found = type_lookup(cls, name)
            hooked = _has_custom_getattr(cls)
            if found is MISSING and not hooked:
                message = f"'{cls.__name__}' object has no attribute '{name}'"
                raise PythonError(AttributeError(message))
            if (
                self.source is not None and not hooked and not hasattr(type(found), "__get__")
            ):  # the instance's is gone: CPython finds the class's plain value
                return tx.wrap(found, AttrSource(TypeSource(self.source), name))
            raise Unsupported("getattr", f"{cls.__name__}.{name} was deleted in the trace")
        if tx.output.side_effects.class_attr_changed(cls, name):
            raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned in the trace")
        if cls is os._Environ and name in DictReadVariable.METHODS and self.source is not None:
            return DictReadVariable(self, name)  # ``os.environ`` reads, guarded key by key
        static = inspect.getattr_static(self.value, name, MISSING)
        if _has_custom_getattr(cls):
            if _pure_getattr(cls):
                return self._pure_getattr(tx, name)
            hook = _getattr_fallback(cls)
            if hook is not None and static is MISSING:
                return self._call_getattr_hook(tx, name, hook)
            if hook is not None and _python_property(static):
                return self._property_before_hook(tx, name, static)
            if hook is None or not _plain_lookup(self.value, static, name):
                raise Unsupported(
                    "custom_getattr", f"{cls.__name__} defines __getattr__/__getattribute__"
                )
        if (
            name == "__dict__"
            and self.source is not None
            and _generic_dict(self.value, static)
            and not isinstance(self.value, torch.nn.Module)  # its stores file members elsewhere
        ):
            return effects.instance_dict(self, lambda stored: self._instance_dict(tx, stored))
        if name == "__class__" and static is _OBJECT_CLASS:  # ``obj.__class__`` is ``type(obj)``
            return (
                tx.wrap(cls, TypeSource(self.source))
                if self.source is not None
                else tx.wrap_static(cls)
            )
        if static is MISSING:
            return self._missing_attribute(tx, name)
        # Attributes found on the class are guarded where they live (``type(obj).name``): a class
        # attribute can be monkeypatched after compiling, and an instance attribute set later would
        # shadow a method (``'name' not in obj.__dict__``; a property is a data descriptor: it
        # cannot be shadowed).
        class_source = None if self.source is None else AttrSource(TypeSource(self.source), name)
        if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)
            method = tx.wrap(static, class_source)
            return UserFunctionVariable(static, getattr(method, "source", None), self_vt=self)
        if isinstance(static, LRU_CACHE_WRAPPER) and name not in _instance_dict(self.value):
            self._guard_not_shadowed(tx, name)  # ``logger.warning_once``: a memoized method
            method = tx.wrap(static, class_source)
            return MemoizedFunctionVariable(static, getattr(method, "source", None), self_vt=self)
        if _python_property(static):
            return self._read_property(tx, static, class_source)
        if isinstance(static, (staticmethod, classmethod)) and name not in _instance_dict(
            self.value
        ):
            self._guard_not_shadowed(tx, name)
            fn = static.__func__
            fn_source = class_source
            if class_source is not None and isinstance(static, classmethod):
                fn_source = AttrSource(class_source, "__func__")
            if fn_source is not None:
                wrapped = tx.wrap(fn, fn_source)
            if isinstance(static, staticmethod) and not isinstance(fn, types.FunctionType):
                # a C function (``bytearray.maketrans``): what it is as a value
                return wrapped if fn_source is not None else tx.wrap_static(fn)
            bound = UserFunctionVariable(fn, fn_source)
            if isinstance(static, staticmethod):
                return bound
            cls_vt = (
                tx.wrap_static(cls)
                if self.source is None
                else tx.wrap(cls, TypeSource(self.source))
            )
            return bound.clone(self_vt=cls_vt)
        if name in DictReadVariable.METHODS and static is vars(dict).get(name):
            return DictReadVariable(self, name)  # a dict read by key, guarded key by key
        if python_method(static, "__get__") is not None and (
            is_data_descriptor(static) or name not in _instance_dict(self.value)
        ):  # a descriptor written in Python: its ``__get__`` is inlined
            if not is_data_descriptor(static):
                self._guard_not_shadowed(tx, name)
            cls_vt = (
                tx.wrap_static(cls)
                if self.source is None
                else tx.wrap(cls, TypeSource(self.source))
            )
            source = None if self.source is None else class_attr_source(cls_vt.source, cls, name)
            return read_descriptor(tx, self, cls_vt, static, source)
        polyfilled = None
        if name not in _instance_dict(self.value):  # a C method with a polyfill runs it
            owner = self
            if isinstance(static, types.ClassMethodDescriptorType):  # bound to the class
                owner = (
                    tx.wrap_static(cls)
                    if self.source is None
                    else tx.wrap(cls, TypeSource(self.source))
                )
            polyfilled = bind_polyfilled(owner, name, static)
        if isinstance(static, types.MemberDescriptorType):
            # a ``__slots__`` entry (``dataclasses.Field.name``): a plain read of the slot,
            # guarded like an instance attribute; an empty slot raises AttributeError
            if not hasattr(self.value, name):
                if type_lookup(cls, "__getattr__") is not MISSING:  # the hook runs next
                    raise Unsupported("getattr", f"slot {cls.__name__}.{name} is empty")
                if self.source is not None:  # read by the slot's getter alone: no code runs
                    tx.output.assume_attr_absent(self.source, name)
                raise PythonError(error_of(getattr, self.value, name))
        elif (
            polyfilled is None
            and hasattr(static, "__get__")
            # a namedtuple field's accessor reads the tuple's item in C: read as the attribute
            and not isinstance(static, (types.FunctionType, _TUPLE_GETTER, *_C_METHODS))
            and name not in _instance_dict(self.value)
            and not _is_plain_data(static)
        ):
            raise Unsupported(
                "descriptor", f"{cls.__name__}.{name} is a descriptor bytegraph cannot trace"
            )
        if self.source is None:
            if polyfilled is not None:
                return polyfilled
            return tx.wrap_unsourced(getattr(self.value, name), f"{cls.__name__}.{name}")
        source = AttrSource(self.source, name)
        if python_method(type_lookup(cls, name), "__get__") is not None:
            # the instance's value shadows a class descriptor written in Python (a
            # ``cached_property``): guarded in the instance dict, where reading it runs no
            # ``__get__`` once the instance's is gone
            source = ItemSource(AttrSource(self.source, "__dict__", generic=True), name)
        value = tx.wrap(getattr(self.value, name), source)  # guarded
        return polyfilled if polyfilled is not None else value

    def _missing_attribute(self, tx: Translator, name: str) -> VariableTracker:
        """``obj.name`` that neither the instance's ``__dict__`` nor the class has: CPython's
        AttributeError, which a traced ``except AttributeError``, ``hasattr`` and
        ``getattr(obj, name, default)`` catch, guarded so (no instance or class attribute
        ``name`` appears). An ``nn.Module``'s ``__getattr__`` runs first: torch's raises that
        same error where the member tables lack ``name`` (``NNModuleVariable.var_getattr``
        guards each table's key absent: the module-tree guard does not cover those keys), and the
        class must keep it; a class's own ``__getattr__`` (a Python function) is inlined."""
        cls = type(self.value)
        hook = type_lookup(cls, "__getattr__") if isinstance(self.value, nn.Module) else None
        if hook is not None and hook is not nn.Module.__getattr__:
            fallback = _getattr_fallback(cls)
            if fallback is None:
                raise Unsupported("custom_getattr", f"{cls.__name__} defines __getattr__")
            return self._call_getattr_hook(tx, name, fallback)
        if self.source is None:
            raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
        self._guard_not_shadowed(tx, name)
        guard_no_class_attr(tx, TypeSource(self.source), name, None if hook else "__getattr__")
        if hook is not None:  # read through the MRO: a subclass may gain a ``__getattr__``
            tx.output.assume_identity(AttrSource(TypeSource(self.source), "__getattr__"), hook)
        raise PythonError(
            AttributeError(
                f"'{cls.__name__}' object has no attribute '{name}'",
                name=name,
                obj=TrackedValue(self),
            )
        )

    def _instance_dict(self, tx: Translator, stored: dict) -> VariableTracker:
        """``obj.__dict__``, the object's real dict (guarded) with the trace's stores applied."""
        real = tx.wrap(_instance_dict(self.value), AttrSource(self.source, "__dict__"))
        if type(real) not in PLAIN_DICTS:
            raise Unsupported("instance_dict", f"{type(self.value).__name__}.__dict__ is {real}")
        return InstanceDictVariable({**real.items, **stored}, owner=self)

    def _pure_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """``obj.name`` on an allowlisted class (``PURE_GETATTR_CLASSES``): the real lookup at trace
        time, guarded through ``AttrSource`` (present) or ``ATTR_ABSENT`` (missing); both guards run
        the class's ``__getattribute__``, unless they may read past it (``_hooks_passed``: the
        generic lookup's value, or its miss: no key of the instance dict, no class attribute).
        Functions found on the class are inlined as methods."""
        try:
            value = getattr(self.value, name)
        except AttributeError:
            if (
                self.source is not None
                and type_lookup(type(self.value), name) is MISSING  # (not a raising property)
                and name not in _instance_dict(self.value)
                and self._hooks_passed(tx, name)
            ):
                # what the generic lookup would find: no instance, class or ``__getattr__`` one
                own = AttrSource(self.source, "__dict__", generic=True)
                tx.output.assume_key_absent(own, name)
                guard_no_class_attr(tx, TypeSource(self.source), name)
            elif self.source is not None:
                tx.output.assume_attr_absent(self.source, name)
            raise Unsupported(
                "getattr", f"{type(self.value).__name__} object has no attribute {name!r}"
            ) from None
        except Exception as e:  # noqa: BLE001 (an error of the real lookup runs again in Python)
            raise Unsupported(
                "custom_getattr", f"{type(self.value).__name__}.{name} raised {e!r}"
            ) from None
        if isinstance(value, types.MethodType) and value.__self__ is self.value:
            static = inspect.getattr_static(self.value, name, MISSING)
            if isinstance(static, types.FunctionType) and name not in _instance_dict(self.value):
                self._guard_not_shadowed(tx, name)
                source = (
                    AttrSource(TypeSource(self.source), name) if self.source is not None else None
                )
                method = tx.wrap(static, source)
                return UserFunctionVariable(static, getattr(method, "source", None), self_vt=self)
            raise Unsupported(
                "descriptor", f"{type(self.value).__name__}.{name} is not a plain method"
            )
        if self.source is None:
            return tx.wrap_unsourced(value, f"{type(self.value).__name__}.{name}")
        return tx.wrap(value, AttrSource(self.source, name, generic=self._hooks_passed(tx, name)))

    def _hooks_passed(self, tx: Translator, name: str) -> bool:
        """Whether guards may read ``obj.name`` past the class's ``__getattribute__`` hooks, with
        ``object.__getattribute__`` (in C: a hook in Python costs a microsecond a read, and a
        model's guards read a config's attributes by the dozen). Where every hook is an
        allowlisted one whose code is what ``PURE_GETATTR_CLASSES`` says (an alias map looked up, a
        per-layer spec checked) and neither applies to ``name`` now: guarded that the hooks stay
        those functions, that ``name`` is no alias and that the object has no per-layer spec."""
        cls = type(self.value)
        hooks = [
            (i, k) for i, k in enumerate(cls.__mro__) if "__getattribute__" in vars(k)
        ]  # the generic one (``object``'s) last
        found = [PURE_GETATTR_CLASSES.get((k.__module__, k.__qualname__)) for _, k in hooks[:-1]]
        if (
            not found
            or None in found
            or hooks[-1][1] is not object
            or not all(_hook_is(k, kind) for (_, k), kind in zip(hooks[:-1], found, strict=True))
        ):
            return False
        real = self.value
        if "aliases" in found:
            aliases = object.__getattribute__(real, "attribute_map")
            if name == "attribute_map" or type(aliases) is not dict or name in aliases:
                return False
        if "per_layer" in found and "_heterogeneity_spec" in object.__getattribute__(
            real, "__dict__"
        ):
            return False
        tx.output.assume_type(self.source, cls)
        mro = AttrSource(TypeSource(self.source), "__mro__")
        for i, k in hooks[:-1]:
            where = ItemSource(AttrSource(ItemSource(mro, i), "__dict__"), "__getattribute__")
            tx.output.assume_identity(where, vars(k)["__getattribute__"])
        if "aliases" in found:
            aliases_at = AttrSource(self.source, "attribute_map", generic=True)
            tx.output.assume_type(aliases_at, dict)
            tx.output.assume_key_absent(aliases_at, name)
        if "per_layer" in found:
            own = AttrSource(self.source, "__dict__", generic=True)
            tx.output.assume_key_absent(own, "_heterogeneity_spec")
        return True

    def _read_property(
        self, tx: Translator, prop: property, class_source: Source | None
    ) -> VariableTracker:
        """``obj.name`` for a property whose getter is a Python function: the getter inlined."""
        fget_source = None if class_source is None else AttrSource(class_source, "fget")
        if fget_source is not None:
            tx.wrap(prop.fget, fget_source)
        return UserFunctionVariable(prop.fget, fget_source).call_function(tx, [self], {})

    def _property_before_hook(self, tx: Translator, name: str, prop: property) -> VariableTracker:
        """A property of a class with a ``__getattr__`` of its own (diffusers' ``ConfigMixin``:
        ``scheduler.config``): the getter inlined, as for any class, where it returns; where it
        raises AttributeError CPython calls ``__getattr__`` next, which the trace does not follow
        (a break)."""
        source = None if self.source is None else AttrSource(TypeSource(self.source), name)
        tx.builtin_catches.append(AttributeError)
        try:
            return self._read_property(tx, prop, source)
        except TracedException as te:
            if not issubclass(te.exc.cls, AttributeError):
                raise
        except PythonError as e:
            if not isinstance(e.exc, AttributeError):
                raise
        finally:
            tx.builtin_catches.pop()
        raise Unsupported(
            "custom_getattr",
            f"{type(self.value).__name__}.{name} raised AttributeError: __getattr__ runs next",
        )

    def _call_getattr_hook(self, tx: Translator, name: str, hook: Any) -> VariableTracker:
        """``obj.name`` that the generic lookup does not find: the class's ``__getattr__`` (a
        Python function, or ``dict.__getitem__`` on a dict subclass: the ``AttrDict`` pattern).
        Guarded: no instance or class attribute ``name`` appears, the hook stays the same."""
        cls = type(self.value)
        if self.source is not None:
            self._guard_not_shadowed(tx, name)
            guard_no_class_attr(tx, TypeSource(self.source), name, None)
            hook_source = class_attr_source(TypeSource(self.source), cls, "__getattr__")
            tx.output.assume_identity(hook_source, hook)
        key = ConstantVariable(name)
        if isinstance(hook, types.FunctionType):
            return UserFunctionVariable(hook, None, self_vt=self).call_function(tx, [key], {})
        return DictReadVariable(self, "__getitem__").call_function(tx, [key], {})

    def _guard_not_shadowed(self, tx: Translator, name: str) -> None:
        """Guard that no instance attribute ``name`` hides the class attribute the trace used."""
        if self.source is not None and _has_instance_dict(self.value):
            tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        call = inspect.getattr_static(type(self.value), "__call__", None)
        unbound = _container_method_call(tx, self.value, args, kwargs)
        if unbound is not None:
            return unbound
        if type(self.value) is weakref.ref and self.source is not None and not args and not kwargs:
            return tx.wrap(self.value(), CallSource(self.source))  # guarded like any input
        if isinstance(call, types.FunctionType):
            return self.class_method(tx, "__call__", call).call_function(tx, args, kwargs)
        if self.source is not None and plain_partial(type(self.value)):
            # an instance of a ``functools.partial`` subclass that keeps partial's call: its
            # function with the stored arguments first, each read (and guarded) through it
            func, stored, keywords = (
                tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
                for name in ("func", "args", "keywords")
            )
            return dispatch.call(
                tx, func, [*stored.items, *args], {**_keywords(keywords), **kwargs}
            )
        raise Unsupported("call", f"calling a {type(self.value).__name__} object")

    def class_source(self) -> Source | None:
        """Where guards read this object's class (``type(L['obj'])``), if anywhere."""
        return TypeSource(self.source) if self.source is not None else None

    def class_method(self, tx: Translator, name: str, fn: types.FunctionType) -> VariableTracker:
        """``fn``, found as ``name`` on the class, bound to this object and read through the class
        (see ``method_source``)."""
        source = self.class_source()
        source = None if source is None else method_source(tx, self, AttrSource(source, name), fn)
        return UserFunctionVariable(fn, source, self_vt=self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__name__})"


@dataclass(eq=False)
class CFunctionVariable(UserObjectVariable):
    """A C function or method bytegraph cannot trace (``os.getpid``, ``np.asarray``): loading it is
    fine, calling it is a graph break *at the call*, which then runs inline in the rewritten
    code."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        raise Unsupported(
            "c_function",
            f"call to the C function {getattr(self.value, '__qualname__', self.value)}",
            hint="move the call out of the compiled function",
        )


def _container_method_call(
    tx: Translator, method: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``list.copy(xs)``, ``dict.update(d, ...)``: a C method of a builtin container type called
    unbound on a container of exactly that type (whose own method it is) is that container's
    method call; None for anything else."""
    if (
        not isinstance(method, (types.MethodDescriptorType, types.WrapperDescriptorType))
        or not args
    ):
        return None
    receiver = args[0]
    owner = method.__objclass__
    if isinstance(receiver, DictObjectVariable) and issubclass(receiver.cls, owner):
        # ``dict.__getitem__(obj, k)`` in a subclass's method: the storage's. ``dict``'s own
        # methods that change an ``OrderedDict`` bypass its order, which is not modelled
        reads = method.__name__ in _DICT_READS
        if owner is containers.dict_base(receiver.cls) or (owner is dict and reads):
            return storage_method(receiver, method).call_function(tx, list(args[1:]), kwargs)
        raise Unsupported("call_method", f"{owner.__name__}.{method.__name__} on a subclass")
    if isinstance(receiver, ContainerObject) and owner in CONTAINER_OBJECTS:  # ``set.add(s, v)``
        if owner is container_object_base(receiver.cls):
            return storage_method(receiver, method).call_function(tx, list(args[1:]), kwargs)
    if owner in (*CONSTANT_TYPES, *IMMUTABLE_C_KINDS) and value_arguments(args, kwargs):
        # ``str.lower(s)``, ``map(str.capitalize, words)``, ``re.Match.__copy__(m)``: a method
        # of an immutable type, pure on constants (it checks its receiver's type itself, raising
        # CPython's TypeError)
        return tx.fold_call(method, args, kwargs)
    if owner not in (list, dict, set, frozenset, tuple):
        return None
    if not isinstance(receiver, (BaseSequenceVariable, DictVariable, SetVariable)):
        return None
    if receiver.python_type() is not owner:
        return None
    return receiver.call_method(tx, method.__name__, list(args[1:]), kwargs)


#: dict's methods that only read the storage
_DICT_READS = frozenset(
    {"__getitem__", "get", "keys", "values", "items", "__contains__", "__len__"}
)


def plain_partial(cls: type) -> bool:
    """A subclass of ``functools.partial`` whose construction, call and stored parts are
    partial's own (it may add methods)."""
    return issubclass(cls, functools.partial) and all(
        type_lookup(cls, name) is type_lookup(functools.partial, name)
        for name in ("__new__", "__init__", "__call__", "func", "args", "keywords")
    )


def _keywords(vt: VariableTracker) -> dict[str, VariableTracker]:
    """The stored keyword arguments of a partial, a dict of str keys."""
    items = getattr(vt, "items", None)
    if not isinstance(items, dict) or not all(type(k) is str for k in items):
        raise Unsupported("call", f"keyword arguments of a partial: {vt}")
    return dict(items)


def method_source(
    tx: Translator, obj: VariableTracker, source: Source, fn: types.FunctionType
) -> Source | None:
    """The source to inline ``fn``, a method of ``obj``'s class read at ``source``, with. It is
    guarded (the class can be monkeypatched), and its closure cells get sources: what it reads
    there is guarded, what it mutates there is replayed. The class of a module reached from an
    input is trusted as its ``MODULE_TREE`` check trusts it (one guard per layer would make guards
    grow with depth): no guard, a source only when the method has closure cells or a mutable
    default (a ``dict()`` default: its contents are read through the source, guarded there)."""
    if isinstance(getattr(obj, "value", None), torch.nn.Module) and obj.source is not None:
        closure = [n for n in fn.__code__.co_freevars if n != "__class__"]
        return source if closure or _mutable_defaults(fn) else None
    return getattr(tx.wrap(fn, source), "source", None)


def _mutable_defaults(fn: types.FunctionType) -> bool:
    """Does ``fn`` have a default that is a builtin mutable container (its contents may change
    between calls)?"""
    values = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    return any(type(v) in (list, dict, set, bytearray) for v in values)


_OBJECT_CLASS = vars(object)["__class__"]


def _instance_dict(obj: Any) -> dict[str, Any]:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def guard_no_class_attr(
    tx: Translator, class_source: Source, name: str, getattr_name: str | None = "__getattr__"
) -> None:
    """Guard that no class of the MRO gains ``name`` (or a ``__getattr__`` that would supply it)."""
    names = (name, getattr_name) if getattr_name else (name,)
    tx.output.assume_class_lacks(class_source, names)


def _has_instance_dict(obj: Any) -> bool:
    try:
        object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return False
    return True


_PYTHON_API = ctypes.pythonapi
_PYTHON_API.PyType_GetSlot.restype = ctypes.c_void_p
_PYTHON_API.PyType_GetSlot.argtypes = [ctypes.py_object, ctypes.c_int]
_TP_GETATTRO = 58  #: ``Py_tp_getattro`` of CPython's stable ABI (``typeslots.h``)
_GENERIC_GETATTRO = ctypes.cast(_PYTHON_API.PyObject_GenericGetAttr, ctypes.c_void_p).value


def _generic_getattribute(klass: type) -> bool:
    """Whether ``klass`` looks attributes up with CPython's generic lookup
    (``PyObject_GenericGetAttr``, its ``tp_getattro``): true of ``object``, of builtin types that
    name it (``bytearray``, ``memoryview``, generators list its slot wrapper in their ``__dict__``)
    and of classes inheriting it; false of a class with a ``__getattribute__`` or ``__getattr__``
    written in Python and of C types with their own lookup (modules, ``type``, weakref proxies)."""
    return _PYTHON_API.PyType_GetSlot(klass, _TP_GETATTRO) == _GENERIC_GETATTRO


def _getattr_fallback(cls: type) -> Any:
    """The ``__getattr__`` of a class whose ``__getattribute__`` is the generic one, when the trace
    can call it (a Python function, or ``dict.__getitem__`` of a dict subclass); else None."""
    if any(
        "__getattribute__" in vars(klass) and not _generic_getattribute(klass)
        for klass in cls.__mro__
    ):
        return None
    hook = type_lookup(cls, "__getattr__")
    if isinstance(hook, types.FunctionType):
        return hook
    if hook is dict.__getitem__ and type_lookup(cls, "__getitem__") is dict.__getitem__:
        return hook
    return None


def _python_property(static: Any) -> bool:
    return isinstance(static, property) and isinstance(static.fget, types.FunctionType)


def _plain_lookup(obj: Any, static: Any, name: str) -> bool:
    """A found attribute whose read cannot raise AttributeError (which would call ``__getattr__``):
    an instance attribute, a function or C method, plain class data, or the instance dict
    (``self.__dict__[...]`` inside a ``__getattr__``)."""
    return (
        name in _instance_dict(obj)
        or isinstance(static, (types.FunctionType, *_C_METHODS))
        or _is_plain_data(static)
        or (name == "__dict__" and _generic_dict(obj, static))
    )


def _has_custom_getattr(cls: type) -> bool:
    """A ``__getattr__`` anywhere in the MRO, or a ``__getattribute__`` other than the generic one
    (an ``OrderedDict`` subclass inherits dict's slot wrapper, which is the generic lookup)."""
    if issubclass(cls, torch.nn.Module):
        return False  # nn.Module.__getattr__ is understood by NNModuleVariable
    return type_lookup(cls, "__getattr__") is not MISSING or any(
        "__getattribute__" in vars(klass) and not _generic_getattribute(klass)
        for klass in cls.__mro__
    )


#: Classes (by ``(module, qualname)`` of a class in the MRO) whose custom ``__getattribute__`` is
#: known to be free of side effects and deterministic for a given instance state, so the tracer may
#: read attributes with the real ``getattr``, each with what it does before the generic lookup:
#: ``"aliases"``: ``transformers``' ``PreTrainedConfig.__getattribute__`` looks ``name`` up in the
#: class's ``attribute_map`` and replaces it by its alias; ``"per_layer"``: its
#: ``HeterogeneousConfigMixin`` only raises (or warns once) for per-layer attributes of a config
#: holding a ``_heterogeneity_spec`` (an error at trace time becomes a graph break, the read then
#: runs in Python). Such reads are guarded through their ``AttrSource``
#: (``L['self'].config.use_cache``), so *these guards call that ``__getattribute__``*: the one
#: exception to "guards never run user code", except where they read past it
#: (``UserObjectVariable._hooks_passed``, after checking the hook's code: ``_hook_is``).
PURE_GETATTR_CLASSES = {
    ("transformers.configuration_utils", "PreTrainedConfig"): "aliases",
    ("transformers.configuration_utils", "PretrainedConfig"): "aliases",
    ("transformers.integrations.heterogeneity.configuration_utils", "HeterogeneousConfigMixin"): (
        "per_layer"
    ),
}
#: The names and a constant the code of each kind of hook has (``_hook_is``).
_HOOK_MARKS = {
    "aliases": ({"__getattribute__", "super"}, "attribute_map"),
    "per_layer": ({"__getattribute__", "super", "get"}, "_heterogeneity_spec"),
}


def _hook_is(cls: type, kind: str) -> bool:
    """Whether ``cls.__getattribute__`` is code of ``kind`` (``PURE_GETATTR_CLASSES``): it reads the
    names and holds the constant that code has (another release's hook that does more does not
    pass)."""
    code = getattr(vars(cls)["__getattribute__"], "__code__", None)
    names, constant = _HOOK_MARKS[kind]
    return code is not None and names <= set(code.co_names) and constant in code.co_consts


def store_config_attribute(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> bool:
    """``config.name = constant`` on an allowlisted class (``PURE_GETATTR_CLASSES``: its
    ``__setattr__`` maps aliases through ``attribute_map`` and runs the strict dataclass
    validators of the field before setting it). The validators run now, on the constant (an
    invalid value raises in Python, at the store); the store is a side effect replayed with the
    real ``__setattr__``. Aliased names are refused: reads of the other name would not see it.
    False when this does not apply (not such a class, not a constant)."""
    cls = obj.python_type()
    if obj.source is None or not _pure_getattr(cls) or not value.is_python_constant():
        return False
    aliases = getattr(cls, "attribute_map", None) or {}
    if name in aliases or name in aliases.values():
        raise Unsupported("store_attr", f"{cls.__name__}.{name} has an alias")
    constant = value.as_python_constant()
    try:
        for validator in (getattr(cls, "__validators__", None) or {}).get(name, ()):
            validator(constant)
    except Exception as e:  # noqa: BLE001 (the store runs in Python, where it raises)
        raise Unsupported("python_error", f"{cls.__name__}.{name} = {constant!r}: {e}") from None
    tx.output.side_effects.store_attr(obj, name, value)
    return True


def _pure_getattr(cls: type) -> bool:
    """Whether every custom attribute hook of ``cls`` comes from an allowlisted class."""
    if type_lookup(cls, "__getattr__") is not MISSING:
        return False
    allowed = {k for k in cls.__mro__ if (k.__module__, k.__qualname__) in PURE_GETATTR_CLASSES}
    return bool(allowed) and all(
        k in allowed or _generic_getattribute(k)
        for k in cls.__mro__
        if "__getattribute__" in vars(k)
    )


def _is_plain_data(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, bytes, tuple, type(None), torch.Tensor))


def number_conversion(tx: Translator, value: VariableTracker, kind: type) -> VariableTracker | None:
    """``int(obj)``/``float(obj)`` of an object whose class defines the conversion in Python: the
    first of ``__int__``/``__float__`` and ``__index__`` its type has, inlined, and its result
    checked as CPython checks it (an exact int or float passes; another type raises CPython's
    TypeError; a subclass of it warns at run time, so the trace breaks there). None where the
    class has no such method written in Python."""
    cls = value.python_type()
    for name in (f"__{kind.__name__}__", "__index__"):
        method = type_lookup(cls, name)
        if method is MISSING:
            continue
        if not isinstance(method, types.FunctionType):
            return None
        result = value.call_method(tx, name, [], {})
        want = kind if name != "__index__" else int
        if isinstance(result, SymNodeVariable) and result.python_type() is want:
            if want is kind:
                return result
            return tx.output.call_function(torch.sym_float, (result,), {})
        return ConstantVariable(_checked_conversion(cls, name, kind, result, want))
    return None


def _checked_conversion(
    cls: type, name: str, kind: type, result: VariableTracker, want: type
) -> int | float:
    """``kind(obj)`` where ``type(obj).<name>`` returns ``result``: computed by CPython on a
    stand-in of the same class name whose method returns the result (a constant), or an instance
    of an empty class named as the result's type where that is no ``want``, so that CPython's
    error is raised."""
    if result.is_python_constant():
        returned = result.as_python_constant()
    else:
        rtype = result.python_type()
        if issubclass(rtype, want):
            raise Unsupported("builtin", f"{cls.__name__}.{name} returned {result}")
        returned = type(rtype.__name__, (), {})()
    stand_in = type(cls.__name__, (), {name: lambda self: returned})()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            converted = kind(stand_in)
        except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
            raise PythonError(e) from None
    if warned:  # a subclass of int or float returned: CPython warns each time it runs
        raise Unsupported("builtin", f"{cls.__name__}.{name} returned {result}")
    return converted


def python_next(value: VariableTracker) -> bool:
    """``value`` is an object whose class defines ``__next__`` in Python (an iterator written as
    a class; modules have their own iteration)."""
    if not isinstance(value, UserObjectVariable) or isinstance(value.value, nn.Module):
        return False
    return isinstance(type_lookup(type(value.value), "__next__"), types.FunctionType)


@dataclass(eq=False)
class UserIteratorVariable(IteratorVariable):
    """An object whose class defines ``__next__`` in Python, as a loop or a builtin consumes it
    (what ``iter(obj)``'s ``__iter__`` returned): each item is its ``__next__``, inlined, until that
    raises ``StopIteration`` (caught here, as ``FOR_ITER`` catches it). The object keeps the
    position itself, so it is asked again on each ``next``; the rewritten code loads the object.
    Only the consumers hold this tracker: ``iter(obj)`` gives the object itself (its identity)."""

    obj: VariableTracker | None = None
    #: the value of the last ``StopIteration`` (``yield from``'s result), where it had one
    stop_value: Any = None

    def next_item(self, tx: Translator | None = None) -> VariableTracker | None:
        if tx is None:
            raise Unsupported("iterator", f"{self.obj} taken from outside the trace")
        tx.builtin_catches.append(StopIteration)
        try:
            return self.obj.call_method(tx, "__next__", [], {})
        except TracedException as te:
            if not issubclass(te.exc.cls, StopIteration):
                raise
            self.stop_value = te.exc.args or None
        except PythonError as e:
            if not isinstance(e.exc, StopIteration):
                raise
            self.stop_value = e.exc.args or None
        finally:
            tx.builtin_catches.pop()
        return None

    @property
    def result(self) -> VariableTracker | None:
        """What ``yield from`` over the object gives: None where its ``StopIteration`` had no
        value; a value it had is not followed here (a break)."""
        if self.stop_value is None:
            return None
        raise Unsupported("iterator", f"the value of {self.obj}'s StopIteration")

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        return drain(self, tx)

    def python_type(self) -> type:
        return self.obj.python_type()

    def reconstruct(self, cg: Codegen) -> None:
        self.obj.reconstruct(cg)


#: Keys ``DictReadVariable`` reads by: compared exactly, written back by their ``repr`` in guards.
_KEY_TYPES = (str, int, bytes, bool, type(None))


@dataclass(eq=False, repr=False)
class DictReadVariable(BoundAttributeVariable):
    """``dict.get``/``dict.__getitem__``/``dict.__contains__`` on an input-reachable dict that is
    not a ``DictVariable``: an instance of a ``dict`` subclass (``super().get(key)`` in a registry
    class), a dict with keys other than str/int, or ``os.environ`` (keyed by bytes). Only
    constant str, int, bytes, bool or None keys; a present key is read and guarded through
    ``ItemSource`` (``G['reg']['key']``), an absent one by ``KEY_ABSENT``: only the keys read are
    guarded. Both checks run ``dict``'s own lookup, so the class must not override ``__getitem__``
    or ``__contains__`` in Python."""

    METHODS = ("get", "__getitem__", "__contains__")

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        name = self.name
        if kwargs or not args or not all(a.is_python_constant() for a in args):
            raise Unsupported("super", f"dict.{name} on {self.obj} with these arguments")
        key = args[0].as_python_constant()
        if type(key) not in _KEY_TYPES or len(args) > (2 if name == "get" else 1):
            raise Unsupported("super", f"dict.{name} with key {key!r}")
        mapping, source, key, decode = self._target(tx, key)
        value = read_dict_key(tx, mapping, source, key, tx.wrap)
        if value is None:
            if name == "__getitem__":
                raise Unsupported("python_error", f"KeyError: {key!r}")
            return (
                ConstantVariable(False)
                if name == "__contains__"
                else (args[1] if len(args) > 1 else ConstantVariable(None))
            )
        if name == "__contains__":
            return ConstantVariable(True)
        return value if decode is None else ConstantVariable(decode(dict.__getitem__(mapping, key)))

    def _target(self, tx: Translator, key: Any) -> tuple[dict, Source, Any, Any]:
        """The real dict, its source, the key in it and how to decode its values. ``os.environ``
        keeps encoded keys and values in ``_data``: reads go there (``G['os'].environ._data[b'K']``)
        and the value read is decoded at trace time."""
        obj = self.obj
        cls = type(getattr(obj, "value", None))
        if isinstance(obj, UserObjectVariable) and obj.source is not None and cls is os._Environ:
            if type(key) is not str:
                raise Unsupported("super", f"os.environ[{key!r}]")
            env = obj.value
            source = AttrSource(obj.source, "_data")
            # its type only (a dict): wrapping it would guard every variable of the environment
            tx.output.assume_type(source, dict)
            return env._data, source, env.encodekey(key), env.decodevalue
        if (
            not isinstance(obj, UserObjectVariable)
            or obj.source is None
            or not issubclass(cls, dict)
            or cls.__contains__ is not dict.__contains__  # the ``KEY_ABSENT`` guard uses ``in``
        ):
            raise Unsupported("super", f"dict.{self.name} on {obj}")
        return obj.value, obj.source, key, None


def dict_item_source(mapping: dict) -> type:
    """How guards read an item of the dict (or dict subclass) ``mapping``: ``d[k]`` where its
    class keeps dict's ``__getitem__``, else ``dict.__getitem__(d, k)`` (a Python ``__getitem__``,
    ``super().__getitem__`` in an override, must not run in guards). Either is read after a guard
    on the dict's keys (a shallower source's runs first), so a ``__missing__`` never runs."""
    return ItemSource if type(mapping).__getitem__ is dict.__getitem__ else DictItemSource


def read_dict_key(
    tx: Translator,
    mapping: dict,
    source: Source,
    key: Any,
    wrap: Callable[[Any, Source], VariableTracker],
) -> VariableTracker | None:
    """The value of the dict ``mapping`` (at ``source``) at the constant ``key``, read alone:
    its presence guarded (``KEY_PRESENT``/``KEY_ABSENT``, dict's own lookup: no Python code for
    a str, int, bytes, bool or None key) and the value, if there, wrapped by ``wrap`` at
    ``dict_item_source``; None where it is absent. The one rule of a dict read key by key
    (``DictReadVariable``, ``containers.KeyedReads``)."""
    if not dict.__contains__(mapping, key):
        tx.output.assume_key_absent(source, key)
        return None
    tx.output.assume_key_present(source, key)
    return wrap(dict.__getitem__(mapping, key), dict_item_source(mapping)(source, key))


# Classes in the trace: ``ClassVariable`` (a class reached from an input or a global: calling it
# constructs, its attributes are read through the class with guards) and ``super()``
# (``SuperVariable``: attribute lookups that start after a class in an object's MRO).


#: Attributes of classes that another family answers: name -> ``rule(tx, cls_vt)``, giving the
#: attribute's tracker, or None where the class is not one it knows (``Function.apply``:
#: ``torch_calls.py``).
CLASS_ATTRIBUTES: dict[str, Callable[[Translator, VariableTracker], VariableTracker | None]] = {}


@dataclass(eq=False, repr=False)
class SubclassesMethodVariable(BoundAttributeVariable):
    """``cls.__subclasses__`` where ``cls`` keeps ``type``'s: a call gives a new list of the
    subclasses alive now, each read through the call (``G['K'].__subclasses__()`` guarded as an
    input list is: its length, each class by identity), so a class defined later recompiles."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        cls_vt = self.obj
        if args or kwargs or cls_vt.source is None:  # unguarded, a list nobody reads again
            raise Unsupported("c_function", f"{cls_vt.value.__name__}.__subclasses__()")
        source = CallSource(AttrSource(cls_vt.source, "__subclasses__"))
        subclasses = cls_vt.value.__subclasses__()
        tx.output.assume_len(source, len(subclasses))
        return ListVariable([tx.wrap(c, ItemSource(source, i)) for i, c in enumerate(subclasses)])


def _subclasses(tx: Translator, cls_vt: VariableTracker) -> VariableTracker | None:
    """``cls.__subclasses__`` found on ``type`` (no class of the MRO defines it, guarded)."""
    cls = cls_vt.value
    if type_lookup(type(cls), "__subclasses__") is not _TYPE_SUBCLASSES:
        return None
    if type_lookup(cls, "__subclasses__") is not MISSING:
        return None
    if cls_vt.source is not None:
        guard_no_class_attr(tx, cls_vt.source, "__subclasses__", None)
    return SubclassesMethodVariable(cls_vt, "__subclasses__")


_TYPE_SUBCLASSES = vars(type)["__subclasses__"]
CLASS_ATTRIBUTES["__subclasses__"] = _subclasses


def _namespace(tx: Translator, cls_vt: VariableTracker) -> VariableTracker | None:
    """``cls.__dict__`` where the metaclass keeps ``type``'s: the class's namespace, a read-only
    proxy (``MappingProxyVariable``) over its items read through it, its keys and the values
    guarded as inputs are; None for a class reached without a source, or a namespace with a key
    that is no string."""
    cls = cls_vt.value
    meta = type(cls)
    if (
        cls_vt.source is None
        or type_lookup(meta, "__dict__") is not _TYPE_DICT
        or meta.__getattribute__ is not type.__getattribute__
    ):
        return None
    namespace = vars(cls)
    if not all(type(k) is str for k in namespace):
        return None
    stores = _namespace_stores(tx, cls)
    tx.output.side_effects.namespaces.add(id(class_namespace(cls)))  # no store to it after this
    source = AttrSource(cls_vt.source, "__dict__")
    tx.output.assume_keys(source, tuple(namespace))
    items = {
        k: stores.pop(k) if k in stores else tx.wrap(v, ItemSource(source, k))
        for k, v in namespace.items()
    }
    items.update(stores)
    return containers.MappingProxyVariable(DictVariable(items, source), source, owner=cls_vt)


def _namespace_stores(tx: Translator, cls: type) -> dict[str, VariableTracker]:
    """The trace's pending stores to attributes of ``cls`` itself (replayed after the graph), in
    the order first made: the namespace as the replay leaves it has a stored name that it had in
    its place and a new one appended, in that order, as CPython's dict keeps them (the trace
    deletes no class attribute: ``del cls.name`` breaks). A name stored through two trackers of
    the class (which one last?), and one of a data descriptor of the metaclass (``__name__``:
    the store goes there, maybe not into the namespace), break."""
    stores: dict[str, VariableTracker] = {}
    for obj, name, value in tx.output.side_effects.attr_stores.values():
        if isinstance(obj, ClassVariable) and obj.value is cls:
            if (
                name in stores
                or not isinstance(value, VariableTracker)
                or is_data_descriptor(type_lookup(type(cls), name))
            ):
                raise Unsupported("class_dict", f"{cls.__name__}.__dict__ after {name} changed")
            stores[name] = value
    return stores


_TYPE_DICT = vars(type)["__dict__"]
CLASS_ATTRIBUTES["__dict__"] = _namespace


def refuse_changed_namespace(tx: Translator, mapping: Any) -> None:
    """Before the trace reads ``mapping`` through a proxy: refuse where it is the namespace of a
    class the trace stored an attribute to (the store is pending: the real namespace does not
    show it yet); after, the class takes no store in this trace (``_store_class_attribute``)."""
    effects = tx.output.side_effects
    for klass, _ in effects.changed_class_attrs:
        if class_namespace(klass) is mapping:
            raise Unsupported("class_dict", f"{klass.__name__}.__dict__ after a store to the class")
    effects.namespaces.add(id(mapping))


@dataclass(eq=False)
class ClassVariable(ConstantLikeVariable):
    """A class used as a value: ``isinstance`` targets, ``type(x) is Foo``, constructing simple
    objects."""

    value: type
    source: Source | None = None

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        effects = tx.output.side_effects
        if effects.class_attr_changed(self.value, name):
            pending = self._stored(tx, name)
            if pending is not None:
                return pending
        rule = CLASS_ATTRIBUTES.get(name)
        if rule is not None and (made := rule(tx, self)) is not None:
            return made
        if name == "__members__" and _enum_members(self.value):
            # a read-only view of the members, which an enum class never changes: read as a dict
            # of them (as ``Signature.parameters``), so iteration, views and lookups are traced
            return tx.fold(dict(self.value.__members__))
        static = inspect.getattr_static(self.value, name, MISSING)
        if isinstance(static, types.FunctionType):
            if self.source is None:
                return UserFunctionVariable(static, None)
            return tx.wrap(
                static, AttrSource(self.source, name)
            )  # guarded: it can be monkeypatched
        if static is MISSING:
            return self._missing_attribute(tx, name)
        if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
            # bound to this class, a new method at each read (``A.c is A.c`` is False)
            source = AttrSource(self.source, name) if self.source else None
            return bind_class_attribute(tx, self, self, static, name, source)
        try:
            value = getattr(self.value, name)
        except AttributeError as e:  # a descriptor raising it (``type.__abstractmethods__``)
            raise PythonError(e) from None
        bound = tx.wrap(value, AttrSource(self.source, name) if self.source else None)
        if isinstance(static, types.ClassMethodDescriptorType):  # ``Plain.__subclasshook__``
            return bind_polyfilled(self, name, static) or bound
        return bound

    def _stored(self, tx: Translator, name: str) -> VariableTracker | None:
        """``cls.name`` where the trace stored ``name`` on the class or a class of its MRO: the
        value stored, where the first class of the MRO holding ``name`` (as the trace left them)
        is one the trace stored it on; None where it is one it did not (the real lookup finds
        it). A metaclass's data descriptor of that name, or a store through another tracker of
        the class, breaks."""
        cls = self.value
        if is_data_descriptor(type_lookup(type(cls), name)):
            raise Unsupported("class_attr", f"{cls.__name__}.{name} is its metaclass's descriptor")
        stores: dict[int, list[VariableTracker]] = {}
        for obj, stored, value in tx.output.side_effects.attr_stores.values():
            if stored == name and isinstance(obj, ClassVariable):
                stores.setdefault(id(obj.value), []).append(value)
        for klass in cls.__mro__:
            if id(klass) in stores:
                if len(stores[id(klass)]) > 1:  # through two trackers of the class: which last?
                    raise Unsupported("class_attr", f"{klass.__name__}.{name} changed in the trace")
                return stores[id(klass)][0]
            if name in vars(klass):
                return None
        return None

    def _missing_attribute(self, tx: Translator, name: str) -> VariableTracker:
        """``cls.name`` that neither the class's MRO nor its metaclass's defines: the metaclass's
        ``__getattr__`` (found on the metaclass's MRO, a Python function) is called with the
        class, else CPython's AttributeError, which a traced ``except AttributeError`` catches.
        Guarded: no class of either MRO gains ``name``, the hook stays the same (or none
        appears). A ``__getattr__`` of the class itself is its objects' hook, not the class's."""
        meta = type(self.value)
        hook = type_lookup(meta, "__getattr__")
        meta_source = TypeSource(self.source) if self.source is not None else None
        if meta_source is not None:
            guard_no_class_attr(tx, self.source, name, None)
            if hook is MISSING:
                guard_no_class_attr(tx, meta_source, name)
            else:
                guard_no_class_attr(tx, meta_source, name, None)
                source = class_attr_source(meta_source, meta, "__getattr__")
                tx.output.assume_identity(source, hook)
        if meta.__getattribute__ is not type.__getattribute__:
            raise Unsupported("getattr", f"class {self.value.__name__}'s metaclass reads {name!r}")
        if hook is MISSING:
            raise PythonError(
                AttributeError(f"type object '{self.value.__name__}' has no attribute '{name}'")
            )
        if not isinstance(hook, types.FunctionType):
            raise Unsupported("getattr", f"class {self.value.__name__} has no attribute {name!r}")
        key = ConstantVariable(name)
        return UserFunctionVariable(hook, None, self_vt=self).call_function(tx, [key], {})

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.construct(tx, self, args, kwargs)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        """Iterating an enum class (``for c in Color``, ``list(Color)``): its members in order,
        where its metaclass iterates as the enum metaclass does; like ``__members__``, the members
        of an enum class never change."""
        cls = self.value
        if isinstance(cls, enum.EnumMeta) and type_lookup(type(cls), "__iter__") is _ITER:
            return [tx.wrap_static(member) for member in cls]
        return super().unpack(tx)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)
        cg.load_const(self.value)
        return None


# Making a dataclass of a class writes the class's attributes and methods, made by ``exec``: the
# call runs in Python, one break, the class then read as it is. ``dataclass(cls)`` breaks where it
# is called; ``dataclass(frozen=True)`` only makes the decorator, traced, whose call comes to
# ``_process_class``. ``make_dataclass`` makes a class too (``types.new_class``).
call_rules_for(
    dataclasses._process_class, dataclasses.make_dataclass, owner=__name__, effect="python"
)


@call_rule(dataclasses.dataclass)
def _dataclass_of(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    if not args:
        return None
    raise Unsupported("class_effect", "dataclass() writes the class's methods: run in Python")


@dataclass(eq=False)
class SuperVariable(VariableTracker):
    """``super()`` inside a traced method: attribute lookups start after ``cls`` in the MRO of
    ``self``'s class; functions found there are bound to ``self``. In a classmethod ``obj`` is a
    class (a subclass of ``cls``): lookups go through its own MRO, classmethods found there are
    bound to it, plain functions stay unbound."""

    cls: type
    obj: VariableTracker
    source: Source | None = None

    @classmethod
    def of(cls, tx: Translator, start: VariableTracker, obj: VariableTracker) -> SuperVariable:
        """``super(start, obj)`` written out (two arguments) for an instance ``obj`` of the class
        ``start``; other forms (``super(C, cls)`` in a classmethod, an unbound super) break."""
        klass = start.as_python_constant() if start.is_python_constant() else None
        if not isinstance(klass, type):
            raise Unsupported("super", f"super() of {start}")
        return cls(klass, obj)

    def __post_init__(self) -> None:
        if not (self._of_class() or self.cls in self.obj.python_type().__mro__):
            # the frame's first argument is no instance of its class: CPython raises TypeError
            raise Unsupported("super", f"super({self.cls.__name__}, {self.obj})")

    def _of_class(self) -> bool:
        """``super(cls, klass)`` for a subclass ``klass`` (in a classmethod)."""
        obj = self.obj
        return (
            isinstance(obj, ClassVariable)
            and isinstance(obj.value, type)
            and self.cls in obj.value.__mro__
            and self.cls not in type(obj.value).__mro__  # a metaclass's own super(): instance
        )

    def reconstruct(self, cg: Codegen) -> None:
        """``super(cls, obj)`` made again where the rewritten code needs it (a break at a call of
        a method it found: ``super().seed(a)`` in ``random.Random.seed``), the object rebuilt."""
        cg.load_const(super)
        cg.load_const(self.cls)
        self.obj.reconstruct(cg)
        cg.call_function(2)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__class__":  # ``super`` answers it itself, not the MRO
            return tx.wrap_static(super)
        if self._of_class():
            return self._class_getattr(tx, name)
        mro = self.obj.python_type().__mro__
        for klass in mro[mro.index(self.cls) + 1 :]:
            if name in vars(klass):
                attr = vars(klass)[name]
                if (
                    klass is torch.nn.Module
                    and name == "__init__"
                    and hasattr(self.obj, "init_called")
                ):  # (whatever ``nn.Module.__init__`` is now: torch._dynamo replaces it)
                    self.obj.init_called = True  # a module made in the trace: already done
                    return UserFunctionVariable(_module_init_done)
                if klass is torch.nn.Module and name in _MODULE_CALLS:
                    # ``super().__call__(x)`` under a module class's own ``__call__``: the
                    # module's standard call (hooks, ``forward``), which its tracker runs
                    return MethodCallVariable(self.obj, _MODULE_CALLS[name])
                if isinstance(attr, types.FunctionType):
                    return UserFunctionVariable(
                        attr, self._method_source(tx, mro.index(klass), name, attr), self.obj
                    )
                if klass is type and name == "__call__":  # in a metaclass's ``__call__``
                    return PartialVariable(BuiltinVariable(type.__call__), [self.obj], {})
                bound = storage_method(self.obj, attr)
                if bound is not None:  # ``super().__init__(**kw)`` in a dict subclass
                    return bound
                if klass is dict and name in DictReadVariable.METHODS:
                    return DictReadVariable(self.obj, name)
                if klass is object and name in OBJECT_METHODS:  # bound to ``self``
                    return PartialVariable(BuiltinVariable(OBJECT_METHODS[name]), [self.obj], {})
                break
        raise Unsupported("super", f"super().{name} is not a plain method")

    def _class_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """``super().name`` in a classmethod (or ``__new__``): the class's MRO after ``cls``."""
        mro = self.obj.value.__mro__
        for index in range(mro.index(self.cls) + 1, len(mro)):
            if name not in vars(mro[index]):
                continue
            attr = vars(mro[index])[name]
            if (
                not mro[index].__flags__ & HEAP_TYPE
                and type_lookup(type(attr), "__get__") is MISSING
            ):
                return tx.wrap_static(attr)  # a builtin class's, unbound: ``object.__new__``
            fn = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
            if not isinstance(fn, types.FunctionType):
                break
            source = None
            if self.obj.source is not None:
                owner = ItemSource(AttrSource(self.obj.source, "__mro__"), index)
                source = ItemSource(AttrSource(owner, "__dict__"), name)
                source = AttrSource(source, "__func__") if fn is not attr else source
                source = method_source(tx, self.obj, source, fn)
            bound = self.obj if isinstance(attr, classmethod) else None
            return UserFunctionVariable(fn, source, bound)
        raise Unsupported("super", f"super().{name} in a classmethod is not a plain method")

    def _method_source(
        self, tx: Translator, index: int, name: str, fn: types.FunctionType
    ) -> Source | None:
        """``type(self).__mro__[index].__dict__[name]``, guarded (the method's closure cells then
        get sources too)."""
        class_source = getattr(self.obj, "class_source", lambda: None)()
        if class_source is None:
            return None
        owner = ItemSource(AttrSource(class_source, "__mro__"), index)
        return method_source(tx, self.obj, ItemSource(AttrSource(owner, "__dict__"), name), fn)


def _enum_members(cls: type) -> bool:
    """Is ``cls.__members__`` the enum metaclass's own read-only view of the members?"""
    return isinstance(cls, enum.EnumMeta) and type_lookup(type(cls), "__members__") is _MEMBERS


_MEMBERS = vars(enum.EnumMeta)["__members__"]
_ITER = vars(enum.EnumMeta)["__iter__"]

#: ``nn.Module``'s call methods, each as the name its tracker's ``call_method`` answers
_MODULE_CALLS = {
    "__call__": "_wrapped_call_impl",
    "_wrapped_call_impl": "_wrapped_call_impl",
    "_call_impl": "_call_impl",
}


def _module_init_done() -> None:
    """``nn.Module.__init__()`` of a module made in the trace (``modules.py``): its
    blank instance was initialized when it was made."""


# ``weakref.ref(obj)`` made in the trace: calling it gives ``obj`` back (the trace holds it, so it
# is alive), and the rewritten code makes it again as ``weakref.ref(obj)``, which CPython answers
# with the object's one callback-less reference: the same object eager code would hold. A callback,
# or an object that cannot be weakly referenced, is not traced (the call runs in Python).


@dataclass(eq=False)
class WeakRefVariable(VariableTracker):
    referent: VariableTracker

    def python_type(self) -> type:
        return weakref.ReferenceType

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("python_error", "TypeError: weakref() takes no arguments")
        return self.referent

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__callback__":
            return ConstantVariable(None)
        raise Unsupported("getattr", f"weakref.{name}")

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_callable(lambda: cg.load_const(weakref.ref))
        self.referent.reconstruct(cg)
        cg.call(1)


def make_ref(
    tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> WeakRefVariable:
    """``weakref.ref(obj)`` called in the trace."""
    if len(args) != 1 or kwargs:
        raise Unsupported("weakref", "weakref.ref() with a callback")
    referent = args[0]
    if not type.__dict__["__weakrefoffset__"].__get__(referent.python_type()):
        raise Unsupported("weakref", f"weakref.ref() of a {referent.python_type().__name__}")
    return WeakRefVariable(referent)


# Objects created during the trace.
#
# ``operations.construct_class(tx, cls_vt, args, kwargs)`` is what calling a class does. A plain
# Python class (or a dataclass) becomes a ``NewObjectVariable``: ``__init__`` (and
# ``__post_init__``) are inlined, the object's attributes live in ``side_effects`` like writes to
# existing objects. A namedtuple subclass whose instances have a ``__dict__`` becomes a
# ``NamedTupleObjectVariable``. ``nn.Module`` classes are ``modules.construct_module``'s. Enum
# lookups (``Color(1)``) are folded. New objects that escape (returned, stored in a global, an
# attribute or a container that outlives the call, or live at a graph break) are rebuilt after the
# graph with their final attributes (``SideEffects.plan``/``codegen``); the others never exist at
# run time. Nothing is guarded on their identity.
#
# Attribute stores, on these and on existing objects, are ``store_attribute``'s.

_OBJECT_NEW = object.__dict__["__new__"]
OBJECT_INIT = object.__dict__["__init__"]
_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
#: ``__setattr__``/``__delattr__`` slots that are ``object``'s generic ones (3.11 and 3.12 list
#: SimpleNamespace's in its ``__dict__``, 3.13 does not)
_NAMESPACE_DICT = vars(types.SimpleNamespace)["__dict__"]  #: a member descriptor, not a getset


@dataclass(eq=False)
class NewObjectVariable(UserObjectVariable):
    """An instance of a user class created during the trace.

    ``value`` is a blank instance (``object.__new__(cls)``) used only for its type and identity: it
    is never written to. The object's attributes are pending stores in ``side_effects``; ``cls_vt``
    is the class as the trace reached it (class attributes are guarded through its source). If the
    object escapes, the rewritten code creates it into the local ``name``."""

    value: Any = None
    source: Source | None = None
    cls_vt: VariableTracker | None = None
    name: str = ""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        return load_new_attribute(tx, self, name)

    def class_source(self) -> Source | None:
        return self.cls_vt.source

    def create(self, cg: Codegen) -> None:
        cg.load_const(object.__new__)
        cg.load_const(self.python_type())
        cg.call_function(1)

    def reconstruct(self, cg: Codegen) -> None:
        _load_created(cg, self.name)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.python_type().__name__})"


@dataclass(eq=False)
class NamespaceVariable(NewObjectVariable):
    """A ``types.SimpleNamespace`` created during the trace: its attributes (the constructor's
    arguments first) are pending stores, as any new object's; it is made as ``SimpleNamespace()``
    and given them with ``STORE_ATTR`` (its ``__setattr__`` is the generic one)."""

    raw_replay = False

    def create(self, cg: Codegen) -> None:
        cg.load_const(self.python_type())
        cg.call_function(0)

    def __repr__(self) -> str:
        return "NamespaceVariable()"


@dataclass(eq=False)
class NamedTupleObjectVariable(TupleVariable):
    """An instance of a namedtuple subclass with a ``__dict__``, or of a plain ``tuple`` subclass
    (``class Shape(tuple)``), created during the trace: a tuple (``items``) that also has
    attributes (pending stores in ``side_effects``), its class's methods and an identity."""

    cls_vt: VariableTracker | None = None
    name: str = ""

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        fields = getattr(self.cls, "_fields", ())
        if name in fields:
            return self.items[fields.index(name)]
        pending = tx.output.side_effects.load_attr(self, name)
        if pending is not None:
            return pending
        if not fields and _defined_by_subclass(self.cls, name):  # the class's own methods
            return namedtuple_attribute(tx, self, name)
        return super().var_getattr(tx, name)

    def create(self, cg: Codegen) -> None:
        """Made from its items by the namedtuple's ``_make``, or ``tuple.__new__(cls, items)``:
        no ``__new__`` of the class's own runs again."""
        made = getattr(self.cls, "_make", None)
        if made is not None:
            cg.load_const(made)
        else:
            cg.load_const(tuple.__new__)
            cg.load_const(self.cls)
        self._reconstruct_items(cg)
        cg.build_tuple(len(self.items))
        cg.call_function(1 if made is not None else 2)

    def reconstruct(self, cg: Codegen) -> None:
        _load_created(cg, self.name)

    def __repr__(self) -> str:
        return f"NamedTupleObjectVariable({self.cls.__name__})"


class ContainerObject:
    """What the trackers of objects of user subclasses of a builtin container share (mixed in
    before the container's tracker): an identity (``name``, or ``source`` for one from outside the
    call, ``real``), the object's own attributes (pending stores in ``side_effects``, and those
    ``real`` had before the call, read from its ``__dict__`` as the trace asks), and CPython's
    generic attribute lookup (``load_new_attribute``), in which the class's Python methods are
    inlined with ``self`` bound to the object and the base's C methods act on the storage
    (``storage_method``). Escaping, the object is made blank by the base's allocation
    (``create``: a ``__new__`` of the class's own, which the trace ran, is not run again) and
    given its contents by the base's own C methods (``fill``: no Python code of the class runs
    again), then its attributes by ``object.__setattr__``."""

    #: the builtin classes whose C methods act on the storage
    storage_bases: tuple[type, ...] = ()

    def is_python_constant(self) -> bool:
        return False

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        return load_new_attribute(tx, self, name)

    def own_attribute(self, tx: Translator, name: str) -> VariableTracker | None:
        """The object's own attribute ``name`` from before the call (None where it has none,
        guarded), for one from outside the call; None for one made in the trace."""
        if self.real is None or tx.output.side_effects.is_deleted(self, name):
            return None
        if name in vars(self.real):
            return tx.wrap(vars(self.real)[name], AttrSource(self.source, name))
        tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)
        return None

    def create(self, cg: Codegen) -> None:
        """Made blank by its base's allocation (``list.__new__(cls)``, ``set.__new__(cls)``...)."""
        cg.load_const(container_object_base(self.cls).__new__)
        cg.load_const(self.cls)
        cg.call_function(1)

    def own_attributes(self, tx: Translator) -> dict[Any, VariableTracker]:
        """The attributes the object had before the call (its ``__dict__``, guarded)."""
        if self.real is None:
            return {}
        own = tx.wrap(vars(self.real), AttrSource(self.source, "__dict__"))
        if type(own) not in PLAIN_DICTS:
            raise Unsupported("instance_dict", f"{self.cls.__name__}.__dict__ is {own}")
        return own.items

    def class_source(self) -> Source | None:
        return self.cls_vt.source

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        _load_created(cg, self.name)


@dataclass(eq=False)
class DictObjectVariable(ContainerObject, DictVariable):
    """An instance of a user subclass of ``dict`` or ``OrderedDict`` created during the trace, or
    of one of those or of ``defaultdict`` from outside the call (``real``, at ``source``: its
    items refilled after the graph where the trace changed them, ``replay_items``): the
    dict's storage (``items``, changed in place by the C methods it inherits, as a dict's) plus
    the object's own attributes (pending stores in ``side_effects``, as any new object's). Its
    attributes follow CPython's generic lookup (``load_new_attribute``): the class's Python
    methods are inlined with ``self`` bound to it, dict's C methods act on the storage, then
    ``__getattr__``. ``obj[k]`` and ``obj[k] = v`` run the class's ``__getitem__`` /
    ``__setitem__`` where it defines them in Python. Escaping, it is made blank by the base's
    ``__new__`` (``create``: a ``__new__`` of the class's own, which the trace ran, is not run
    again), given its items by the base's own ``__setitem__`` (``fill``: no
    Python code of the class runs again), then its attributes by ``object.__setattr__``."""

    cls_vt: VariableTracker | None = None
    name: str = ""
    #: the object itself, for one from outside the call (``builder.wrap``, with a source)
    real: Any = None
    storage_bases = (dict, collections.OrderedDict, collections.Counter)

    def replay_items(self, cg: Codegen) -> None:
        """Refill one from outside the call with the items the trace left it: its base's own
        ``clear`` and ``__setitem__`` (no Python method of the class runs again: the trace ran
        them where CPython does)."""
        base = containers.dict_base(self.cls)
        DictVariable(dict(self.items)).reconstruct(cg)
        cg.store_local("__bg_contents")
        cg.load_const(base.clear)
        self.source.reconstruct(cg)
        cg.call_function(1)
        cg.pop_top()
        cg.load_const(fill_dict_object)
        self.source.reconstruct(cg)
        cg.load_const(base.__setitem__)
        cg.load_local("__bg_contents")
        cg.call_function(3)
        cg.pop_top()

    def create(self, cg: Codegen) -> None:
        cg.load_const(type_lookup(containers.dict_base(self.cls), "__new__"))
        cg.load_const(self.cls)
        cg.call_function(1)

    def fill(self, cg: Codegen) -> None:
        cg.load_const(fill_dict_object)
        cg.load_local(self.name)
        cg.load_const(containers.dict_base(self.cls).__setitem__)
        DictVariable(self.items).reconstruct(cg)
        cg.call_function(3)
        cg.pop_top()

    def __repr__(self) -> str:
        return f"DictObjectVariable({self.cls.__name__}, {list(self.items)})"


class LazyDictObjectVariable(KeyedReads, DictObjectVariable):
    """An object of a user subclass of ``dict`` from outside the call whose keys are strs and
    ints, its storage read key by key (``KeyedReads``): a registry the call looks one key up in
    (transformers' ``_CAN_RECORD_REGISTRY``, keyed by the names of the model classes made so
    far) guards that key, not every class made since."""

    def __init__(
        self,
        value: dict,
        read_items: Callable[[], dict],
        read_item: Callable[[Any], VariableTracker | None],
        **fields: Any,
    ) -> None:
        self._lazy(value, read_items, read_item)
        DictObjectVariable.__init__(self, None, **fields)  # ``items`` None: unread

    def walk_children(self) -> list[Any]:
        """What ``base.walk`` visits (the dict's values only once read)."""
        fields = [getattr(self, f.name) for f in _DICT_OBJECT_FIELDS]
        return [*fields, self.items if self.read else self.unread_children()]

    def __repr__(self) -> str:
        if self.read:
            return super().__repr__()
        return f"DictObjectVariable({self.cls.__name__}, unread)"


_DICT_OBJECT_FIELDS = [
    f for f in dataclasses.fields(DictObjectVariable) if f.name not in ("items", "source")
]


@dataclass(eq=False)
class ListObjectVariable(ContainerObject, ListVariable):
    """An instance of a user subclass of ``list`` (``list_class_refused`` says which), made in
    the trace or from outside the call (``real``, at ``source``: its items written back after
    the graph where the trace changed them, ``replay_items``): the list's storage (``items``,
    changed in place by the C methods it inherits, as a list's) plus the object's own
    attributes (``ContainerObject``). What list's C code makes from it (a slice, ``xs + ys``,
    ``xs.copy()``) is a plain list."""

    cls: type = list
    cls_vt: VariableTracker | None = None
    name: str = ""
    #: the object itself, for one from outside the call (``builder.wrap``, with a source)
    real: Any = None
    storage_bases = (list,)

    def python_type(self) -> type:
        return self.cls

    def replay_items(self, cg: Codegen) -> None:
        """``list.__setitem__(src, slice(None), [items])``: list's own, no method of the class."""
        cg.load_const(list.__setitem__)
        self.source.reconstruct(cg)
        cg.load_const(slice(None))
        ListVariable(list(self.items)).reconstruct(cg)
        cg.call_function(3)
        cg.pop_top()

    def fill(self, cg: Codegen) -> None:
        cg.load_const(list.extend)
        cg.load_local(self.name)
        ListVariable(list(self.items)).reconstruct(cg)
        cg.call_function(2)
        cg.pop_top()

    def __repr__(self) -> str:
        return f"ListObjectVariable({self.cls.__name__}, {len(self.items)} items)"


@dataclass(eq=False)
class SetObjectVariable(ContainerObject, SetVariable):
    """An instance of a user subclass of ``set`` (``container_class_refused`` says which), made
    in the trace or from outside the call (``real``, at ``source``: the trace's in-place calls
    replayed on it through set's own methods, ``replay_log``, or its items written back,
    ``replay_items``): the set's storage (``items``, laid out as CPython's, changed in place by
    the C methods it inherits, as a set's) plus the object's own attributes
    (``ContainerObject``). What set's C code makes from it (``s | t``, ``s.copy()``) is a plain
    set. Escaping, it is made blank by ``set.__new__``, then the calls that made its storage run
    on it again (``fill``), so that it iterates as CPython's object does."""

    cls: type = set
    cls_vt: VariableTracker | None = None
    name: str = ""
    #: the object itself, for one from outside the call (``builder.wrap``, with a source)
    real: Any = None
    storage_bases = (set,)

    def python_type(self) -> type:
        return self.cls

    def _contents(self) -> VariableTracker:
        """What to merge into a blank object for it to iterate in the trace's order: a set where
        merging the rebuilt set into an empty one does, else a tuple of the items in that order
        where adding them one by one does; a break where neither does."""
        keys = self.in_order()
        found = containers.ordered_keys(keys, sys.getsizeof(self.items), False)
        if found is not None and _merged_in_order(found[1], keys):
            contents = SetVariable(
                self.items,
                own_table=self.own_table,
                order_known=self.order_known,
                mirror=self.mirror,
            )  # rebuilt by ``SetVariable.reconstruct`` as ``found``
        elif _merged_in_order(tuple(keys), keys):
            contents = TupleVariable([containers.key_vt(k) for k in keys])
        else:
            raise Unsupported("set_order", f"refilling a {self.cls.__name__} in the trace's order")
        return contents

    def _update_with_contents(self, cg: Codegen, load: Callable[[], None]) -> None:
        """``set.update(obj, contents)``, ``obj`` loaded by ``load`` (``_contents``)."""
        cg.load_const(set.update)
        load()
        self._contents().reconstruct(cg)
        cg.call_function(2)
        cg.pop_top()

    def replay_items(self, cg: Codegen) -> None:
        """``set.clear(src)`` then its items put back (``set.update``): no method of the class."""
        cg.load_const(set.clear)
        self.source.reconstruct(cg)
        cg.call_function(1)
        cg.pop_top()
        self._update_with_contents(cg, lambda: self.source.reconstruct(cg))

    def fill(self, cg: Codegen) -> None:
        """The calls that made the storage repeated on the object (``SetRecipe.emit_into``),
        else its items put in (``set.update``)."""
        recipe = self.recipe
        if recipe is not None and recipe.valid() and recipe.into():
            recipe.emit_into(cg, lambda: cg.load_local(self.name))
            cg.pop_top()
        elif self.items:
            self._update_with_contents(cg, lambda: cg.load_local(self.name))

    def __repr__(self) -> str:
        return f"SetObjectVariable({self.cls.__name__}, {len(self.items)} items)"


@dataclass(eq=False)
class FrozenSetObjectVariable(SetObjectVariable):
    """An instance of a user subclass of ``frozenset`` (``container_class_refused`` says which),
    made in the trace or from outside the call: a frozenset's storage (``items``, fixed when
    ``frozenset.__new__`` made it, laid out as CPython's) plus the object's own attributes
    (``ContainerObject``). What frozenset's C code makes from it (``t | s``, ``t.copy()``) is a
    plain frozenset. Escaping, it is made whole by ``frozenset.__new__(cls, contents)``, which
    lays it out as the trace's (no ``__new__`` or ``__init__`` of the class runs again)."""

    frozen: bool = True
    storage_bases = (frozenset,)

    @staticmethod
    def allocated(
        tx: Translator, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> tuple[frozenset[Any], containers.SetRecipe | None]:
        """The keys ``frozenset.__new__(cls, *args, **kwargs)`` fills the object with, and the
        call that lays a frozenset out as them; CPython's TypeError for arguments it refuses
        (checked on the real ``__new__``, which runs no code of the class)."""
        try:
            frozenset.__new__(cls, *[()] * len(args), **dict.fromkeys(kwargs))
        except TypeError as e:
            raise PythonError(e) from None
        if not args:
            return frozenset(), containers.SetRecipe(frozenset, ())
        real, taken = containers.read_iterable(tx, args[0])
        return frozenset(real), containers.SetRecipe.call(frozenset, [args[0]], [taken])

    def create(self, cg: Codegen) -> None:
        """``frozenset.__new__(cls, ...)`` with the arguments of the ``frozenset(...)`` call
        that lays a frozenset out as the trace's (its ``recipe``), else with ``_contents``."""
        cg.load_const(frozenset.__new__)
        cg.load_const(self.cls)
        recipe = self.recipe
        if recipe is not None and recipe.fn is frozenset and recipe.valid():
            recipe.emit_parts(cg)
            cg.call_function(1 + len(recipe.parts))
            return
        self._contents().reconstruct(cg)
        cg.call_function(2)

    def fill(self, cg: Codegen) -> None:
        """Nothing: ``create`` made it whole."""

    def __repr__(self) -> str:
        return f"FrozenSetObjectVariable({self.cls.__name__}, {len(self.items)} items)"


def _merged_in_order(table: Any, keys: list[Any]) -> bool:
    """Does ``set.update`` of an empty set with ``table`` (a set: merged whole; a tuple: added
    one by one) iterate as ``keys``? What the rewritten code's ``set.update`` does to the blank
    object, whose table is an empty set's, run on the real keys (hashing as the values)."""
    probe: set[Any] = set()
    set.update(probe, table)
    return [id(k) for k in probe] == [id(k) for k in keys]


@dataclass(eq=False)
class DequeObjectVariable(ContainerObject, DequeVariable):
    """An instance of a user subclass of ``collections.deque`` (``container_class_refused`` says
    which), made in the trace or from outside the call (``real``, at ``source``: its items
    written back after the graph where the trace changed them, ``replay_items``): the deque's
    storage (``items``, at most ``maxlen``, changed in place by the C methods it inherits) plus
    the object's own attributes (``ContainerObject``). deque's C code copies it (``copy()``,
    ``d + e``) by calling its class (``copy_deque_object``)."""

    cls: type = collections.deque
    cls_vt: VariableTracker | None = None
    name: str = ""
    #: the object itself, for one from outside the call (``builder.wrap``, with a source)
    real: Any = None
    storage_bases = (collections.deque,)

    def python_type(self) -> type:
        return self.cls

    def replay_items(self, cg: Codegen) -> None:
        """``deque.clear(src)``, ``deque.extend(src, [items])``: deque's own, no method of the
        class (its ``maxlen`` is the object's, which the trace guarded)."""
        cg.load_const(collections.deque.clear)
        self.source.reconstruct(cg)
        cg.call_function(1)
        cg.pop_top()
        cg.load_const(collections.deque.extend)
        self.source.reconstruct(cg)
        ListVariable(list(self.items)).reconstruct(cg)
        cg.call_function(2)
        cg.pop_top()

    def fill(self, cg: Codegen) -> None:
        """``deque.__init__(obj, [items], maxlen)``: deque's own, which calls no method of the
        class."""
        cg.load_const(collections.deque.__init__)
        cg.load_local(self.name)
        ListVariable(list(self.items)).reconstruct(cg)
        cg.load_const(self.maxlen)
        cg.call_function(3)
        cg.pop_top()

    def __repr__(self) -> str:
        return f"DequeObjectVariable({self.cls.__name__}, {len(self.items)} items)"


def copy_deque_object(tx: Translator, obj: DequeObjectVariable) -> VariableTracker:
    """``d.copy()`` of a deque object, as deque's C code makes it: ``type(d)(d)``, or
    ``type(d)(d, maxlen)`` for a bounded one (the class's ``__init__`` runs), which must give a
    deque."""
    args: list[VariableTracker] = [obj]
    if obj.maxlen is not None:
        args.append(ConstantVariable(obj.maxlen))
    made = dispatch.call(tx, obj.cls_vt, args, {})
    if not issubclass(made.python_type(), collections.deque):
        kind = made.python_type().__name__
        raise PythonError(TypeError(f"{obj.cls.__name__}() must return a deque, not {kind}"))
    return made


containers.METHODS[DequeObjectVariable] = {
    **containers.METHODS[containers.DequeVariable],
    "copy": (False, copy_deque_object),
    "__copy__": (False, copy_deque_object),
}


def fill_dict_object(obj: dict, setitem: Any, items: dict) -> None:
    """Called by the rewritten code: the items of a dict object made in the trace, stored in
    order by its base class's own ``__setitem__``."""
    for key, value in items.items():
        setitem(obj, key, value)


def storage_method(obj: VariableTracker, static: Any) -> VariableTracker | None:
    """``static`` (a class attribute of ``obj``'s class) bound to the container object ``obj``
    where it is a C method of its builtin base (or a Python one of ``Counter`` that the
    trackers model), acting on the storage; None otherwise."""
    if not isinstance(obj, ContainerObject):
        return None
    for base in obj.cls.__mro__:
        if base in obj.storage_bases:
            name = next((n for n, v in vars(base).items() if v is static), None)
            if name is None or not callable(static):
                continue
            if isinstance(static, types.FunctionType) and not containers.models_method(base, name):
                return None  # a Python method of the base (``Counter``'s): inlined
            return containers.BoundMethodVariable(obj, name)
    return None


def _load_created(cg: Codegen, name: str) -> None:
    if name not in cg.new_objects:  # the escape analysis (``SideEffects.plan``) missed it
        raise AssertionError(f"object {name} made in the trace is used before it is created")
    cg.load_local(name)


# -- creating objects ------------------------------------------------------------------------------
def construct_instance(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    through_metaclass: bool = True,
) -> VariableTracker:
    """``cls(*args, **kwargs)`` of a plain Python class: a ``NewObjectVariable`` made by
    ``object.__new__``, its ``__init__`` inlined."""
    cls = cls_vt.as_python_constant()
    _check_plain_class(cls, through_metaclass)
    try:
        blank = object.__new__(cls)
    except TypeError as e:  # an abstract class
        raise Unsupported("python_error", f"{cls.__name__}(): TypeError: {e}") from None
    effects = tx.output.side_effects
    obj = NewObjectVariable(blank, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    init = type_lookup(cls, "__init__")
    if init is OBJECT_INIT:
        if args or kwargs:
            raise Unsupported("python_error", f"TypeError: {cls.__name__}() takes no arguments")
        return obj
    if not isinstance(init, types.FunctionType):
        raise Unsupported("new_object", f"{cls.__name__}.__init__ is not a Python function")
    result = class_function(tx, cls_vt, "__init__", init, obj).call_function(tx, args, kwargs)
    if not (result.is_python_constant() and result.as_python_constant() is None):
        raise Unsupported("python_error", f"TypeError: {cls.__name__}.__init__ returned a value")
    return obj


#: builtin bases whose allocation (``base.__new__(cls)``) the trace models: ``object_new``,
#: ``builtin_type_new``, ``tuple_type_new``
_ALLOCATED_BASES = (
    object,
    dict,
    collections.OrderedDict,
    tuple,
    list,
    set,
    frozenset,
    collections.deque,
)


def python_new(cls: type) -> types.FunctionType | None:
    """``cls.__new__`` where a user class of its MRO defines it in Python (a static method of a
    function) over a builtin base in ``_ALLOCATED_BASES``, else None; the one ``namedtuple()``
    writes is the tuple's own allocation."""
    static = type_lookup(cls, "__new__")
    if not isinstance(static, staticmethod) or not isinstance(static.__func__, types.FunctionType):
        return None
    builtin_base = next(k for k in cls.__mro__ if not k.__flags__ & HEAP_TYPE)
    owner = cls.__mro__[owner_index(cls, "__new__")]
    if builtin_base not in _ALLOCATED_BASES or "_fields" in vars(owner):
        return None
    return static.__func__


def construct_by_new(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    through_metaclass: bool = True,
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a class whose ``__new__`` is a Python function, as
    ``type.__call__`` makes it: that ``__new__`` inlined with the class and the arguments (the
    ``super().__new__(cls)``, ``object.__new__(cls)`` or ``dict.__new__(cls)`` it calls makes the
    blank object: ``object_new``, ``builtin_type_new``), then, where it returned an instance of
    ``cls``, its class's ``__init__`` with the same arguments."""
    cls = cls_vt.as_python_constant()
    if through_metaclass and type(cls).__call__ is not type.__call__:
        raise Unsupported("new_object", f"the metaclass of {cls.__name__} defines __call__")
    source = class_attr_source(cls_vt.source, cls, "__new__")
    new = bind_class_attribute(tx, cls_vt, cls_vt, type_lookup(cls, "__new__"), "__new__", source)
    obj = new.call_function(tx, [cls_vt, *args], kwargs)
    made = obj.python_type()
    if not issubclass(made, cls):
        return obj  # CPython runs no ``__init__`` on what is not an instance of ``cls``
    made_vt = cls_vt if made is cls else getattr(obj, "cls_vt", None)
    if made_vt is None:
        raise Unsupported("new_object", f"{cls.__name__}.__new__ made a {made.__name__}")
    init_instance(tx, made_vt, obj, args, kwargs)
    return obj


def init_instance(
    tx: Translator,
    cls_vt: VariableTracker,
    obj: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> None:
    """``type(obj).__init__(obj, *args, **kwargs)``, the second step of making ``obj``, whose
    ``__new__`` is not ``object``'s (so ``object.__init__`` takes any arguments): a Python one
    inlined, a builtin container base's on the storage of a container object."""
    cls = cls_vt.as_python_constant()
    init = type_lookup(cls, "__init__")
    if isinstance(init, types.FunctionType):
        result = class_function(tx, cls_vt, "__init__", init, obj).call_function(tx, args, kwargs)
        if not (result.is_python_constant() and result.as_python_constant() is None):
            raise PythonError(TypeError("__init__() should return None"))
    elif isinstance(obj, ContainerObject) and init is type_lookup(obj.cls, "__init__"):
        containers.call_method(tx, obj, "__init__", args, kwargs)
    elif init is not OBJECT_INIT:
        raise Unsupported("new_object", f"{cls.__name__}.__init__ is not a Python function")


def metaclass_call(tx: Translator, cls_vt: VariableTracker, fn: types.FunctionType):
    """The metaclass's ``__call__`` bound to the class, read (and guarded) through it."""
    source = cls_vt.source
    if source is not None:
        source = getattr(tx.wrap(fn, AttrSource(TypeSource(source), "__call__")), "source", None)
    return UserFunctionVariable(fn, source, self_vt=cls_vt)


def _check_plain_class(cls: type, through_metaclass: bool = True) -> None:
    """Classes whose instances ``NewObjectVariable`` models exactly: made by ``object.__new__``
    through ``type.__call__``, with the generic attribute lookup and no finalizer."""
    why = None
    if issubclass(cls, contextlib._GeneratorContextManagerBase):
        # holds a suspended generator, which cannot be rebuilt at a graph break: left to
        # ``contexts.py`` (``@contextmanager`` functions used in ``with``)
        why = "a @contextmanager context (not traced as an object)"
    elif through_metaclass and type(cls).__call__ is not type.__call__:
        why = f"its metaclass {type(cls).__name__} defines __call__"
    elif type_lookup(cls, "__new__") is not _OBJECT_NEW:
        why = "it defines __new__ (or derives from a builtin type)"
    elif type_lookup(cls, "__del__") is not MISSING:
        why = "it defines __del__ (the finalizer would run when the object dies)"
    elif type_lookup(cls, "__getattribute__") is not _OBJECT_GETATTRIBUTE:
        why = "it defines __getattribute__"
    if why is not None:
        raise Unsupported(
            "new_object",
            f"creating a {cls.__name__} object: {why}",
            hint="create the object outside the compiled function",
        )


def has_instance_dict(cls: type) -> bool:
    return type_lookup(cls, "__dict__") is not MISSING


def construct_namedtuple_object(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    cls = cls_vt.as_python_constant()
    base = next(k for k in cls.__mro__ if "_fields" in vars(k))  # made by ``namedtuple()``
    if type_lookup(cls, "__new__") is not vars(base).get("__new__") or (
        type_lookup(cls, "__init__") is not OBJECT_INIT
    ):
        raise Unsupported("new_object", f"{cls.__name__} overrides __new__ or __init__")
    if changed := namedtuple_overrides(cls):
        raise Unsupported("new_object", f"{cls.__name__} overrides tuple's {', '.join(changed)}")
    items = containers.namedtuple_fields(tx, cls, args, kwargs)
    effects = tx.output.side_effects
    obj = NamedTupleObjectVariable(items, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    return obj


def _defined_by_subclass(cls: type, name: str) -> bool:
    owner = next((k for k in cls.__mro__ if name in vars(k)), tuple)
    return owner is not tuple and owner is not object


#: What a plain ``tuple`` subclass must keep of ``tuple`` for its instances to be tuples of their
#: items (made by ``tuple.__new__(cls, iterable)``, read and compared as tuples).
_TUPLE_PROTOCOL = (
    "__new__",
    "__init__",
    "__getattribute__",
    "__iter__",
    "__len__",
    "__getitem__",
    "__contains__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__add__",
    "__mul__",
    "__rmul__",
    "__bool__",
    "__reversed__",
    "index",
    "count",
)


def plain_tuple_subclass(cls: type) -> bool:
    """A ``tuple`` subclass (not a namedtuple) that adds methods or attributes only: its objects
    are tuples of their items, made, read and compared as tuples are."""
    return (
        issubclass(cls, tuple)
        and cls is not tuple
        and not hasattr(cls, "_fields")
        and not _tuple_overrides(cls)
    )


def _tuple_overrides(cls: type) -> list[str]:
    return [n for n in _TUPLE_PROTOCOL if type_lookup(cls, n) is not type_lookup(tuple, n)]


def namedtuple_overrides(cls: type) -> list[str]:
    """tuple's protocol that ``cls``, a namedtuple class or a subclass of one, defines anew (its
    own ``__new__``, from ``namedtuple()``, aside): the tuple trackers answer ``x in t``,
    ``iter(t)``, ``reversed(t)``... from the items, so such objects are not traced as tuples."""
    return [n for n in _tuple_overrides(cls) if n not in ("__new__", "__init__")]


def construct_tuple_subclass(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``Shape((2, 3))`` for a ``tuple`` subclass that adds methods or attributes only."""
    cls = cls_vt.as_python_constant()
    changed = _tuple_overrides(cls)
    if changed:
        raise Unsupported("new_object", f"{cls.__name__} overrides tuple's {', '.join(changed)}")
    if kwargs or len(args) > 1:
        raise Unsupported("python_error", f"TypeError: bad arguments to {cls.__name__}()")
    items = dispatch.iterate(tx, args[0]) if args else []
    effects = tx.output.side_effects
    obj = NamedTupleObjectVariable(items, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    return obj


#: what every class body defines (3.13's ``__firstlineno__`` and ``__static_attributes__`` too)
_CLASS_METADATA = frozenset(
    {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"}
    | {"__firstlineno__", "__static_attributes__"}
)

#: dict's and OrderedDict's methods a subclass may define in Python: the item methods the
#: tracker runs through the class, and methods read as attributes; other dunders that the C code
#: and the tracer read the storage behind (``__len__``, ``__iter__``, ``__eq__``, ``__repr__``...)
#: are not modelled.
_DICT_OVERRIDABLE = frozenset(
    {"__new__", "__init__", "__getitem__", "__setitem__", "__setattr__", "__class_getitem__"}
    | {"__init_subclass__"}
    | _CLASS_METADATA
    | {n for n in vars(dict) if not n.startswith("__")}
    | {n for n in vars(collections.OrderedDict) if not n.startswith("__")}
)


#: what a ``Counter`` subclass may define: its methods (read as attributes), not the dict methods
#: through which ``Counter``'s Python methods, which the trace models
#: (``containers.DICT_SUBCLASS_METHODS``) or inlines, read and write the storage
_COUNTER_OVERRIDABLE = (
    _DICT_OVERRIDABLE | {n for n in vars(collections.Counter) if not n.startswith("_")}
) - {"__getitem__", "__setitem__", "get", "items", "values", "keys"}

#: the dict classes whose user subclasses' objects are made in the trace (``defaultdict``'s only
#: come from outside the call: its ``__init__``, which takes the factory, never runs then)
_DICT_OBJECT_BASES = (dict, collections.OrderedDict, collections.Counter)


def dict_class_refused(cls: type, made: bool = True) -> str | None:
    """Why instances of the dict subclass ``cls`` are not traced as ``DictObjectVariable``s:
    those ``made`` in the trace, or those from outside the call."""
    base = containers.dict_base(cls)
    bases = _DICT_OBJECT_BASES if made else (*_DICT_OBJECT_BASES, collections.defaultdict)
    if base not in bases:
        return f"a subclass of {base.__name__}"
    for name in ("__getattribute__", "__delattr__"):
        if type_lookup(cls, name) is not type_lookup(base, name):
            return f"it defines {name}"
    overridable = _COUNTER_OVERRIDABLE if base is collections.Counter else _DICT_OVERRIDABLE
    return _container_class_refused(cls, base, overridable)


def _container_class_refused(
    cls: type, base: type, overridable: frozenset[str], extra: tuple[str, ...] = ()
) -> str | None:
    """Why instances of ``cls``, a user subclass of the builtin container ``base``, are not traced
    as the container's storage plus attributes, or None: a metaclass ``__call__``, an allocation in
    C, ``__del__`` or ``__slots__``, or an attribute of ``base`` (or one of ``extra``, which
    ``base``'s C code calls, or ``__bool__``, which CPython's truth test asks before the length
    the tracker answers it with) that the class defines outside ``overridable``."""
    if type(cls).__call__ is not type.__call__:
        return f"its metaclass {type(cls).__name__} defines __call__"
    if type_lookup(cls, "__new__") is not type_lookup(base, "__new__") and python_new(cls) is None:
        return "it allocates its objects in C"
    if type_lookup(cls, "__del__") is not MISSING or not has_instance_dict(cls):
        return "it defines __del__ or __slots__"
    for klass in cls.__mro__[: cls.__mro__.index(base)]:
        for name in vars(klass):
            if name not in overridable and (
                hasattr(base, name) or name in extra or name == "__bool__"
            ):
                return f"it defines {name}"
    return None


def construct_dict_object(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user subclass of ``dict`` or ``OrderedDict``: an empty
    ``DictObjectVariable`` (the base's ``__new__`` ignores the arguments), then ``__init__``:
    the class's Python one inlined, or the base's on the storage."""
    obj = new_dict_object(tx, cls_vt)
    init_instance(tx, cls_vt, obj, args, kwargs)
    return obj


def new_dict_object(tx: Translator, cls_vt: VariableTracker) -> DictObjectVariable:
    """A blank ``DictObjectVariable`` of the user dict class ``cls_vt``, as its base's
    ``__new__`` makes it (empty, whatever the arguments)."""
    cls = cls_vt.as_python_constant()
    why = dict_class_refused(cls)
    if why is not None:
        raise Unsupported("new_object", f"creating a {cls.__name__} object: {why}")
    effects = tx.output.side_effects
    obj = DictObjectVariable({}, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    return obj


def _dict_object_item_method(
    tx: Translator, obj: DictObjectVariable, name: str, args: list[VariableTracker]
) -> VariableTracker:
    """``obj.name(*args)`` of an item method: the class's Python one, else the storage's."""
    method = type_lookup(obj.cls, name)
    if isinstance(method, types.FunctionType):
        return class_function(tx, obj.cls_vt, name, method, obj).call_function(tx, args, {})
    return containers.call_method(tx, obj, name, args, {})


@dispatch.rule("getitem", DictObjectVariable)
def _dict_object_getitem(
    tx: Translator, obj: DictObjectVariable, key: VariableTracker
) -> VariableTracker:
    return _dict_object_item_method(tx, obj, "__getitem__", [key])


@dispatch.rule("setitem", DictObjectVariable)
def _dict_object_setitem(
    tx: Translator, obj: DictObjectVariable, key: VariableTracker, value: VariableTracker
) -> None:
    _dict_object_item_method(tx, obj, "__setitem__", [key, value])


def _overridable(base: type) -> frozenset[str]:
    """``base``'s attributes a subclass may define in Python: its methods, read as attributes (a
    Python ``append`` runs where the code calls it; the container's C code never calls it), and
    the steps of making an object. The dunders that the C code and the tracer read the storage
    behind (``__len__``, ``__getitem__``, ``__iter__``, ``__eq__``, ``__add__``, ``__repr__``...)
    are not modelled."""
    return frozenset(
        {"__new__", "__init__", "__class_getitem__", "__init_subclass__"}
        | _CLASS_METADATA
        | {n for n, v in vars(base).items() if not n.startswith("__") and not is_data_descriptor(v)}
    )


#: the builtin containers (dict's aside: ``DictObjectVariable``) whose user subclasses' objects
#: are traced as the container's storage plus the object's attributes, with their trackers
CONTAINER_OBJECTS: dict[type, type[ContainerObject]] = {
    list: ListObjectVariable,
    set: SetObjectVariable,
    frozenset: FrozenSetObjectVariable,
    collections.deque: DequeObjectVariable,
}
_CONTAINER_OVERRIDABLE = {base: _overridable(base) for base in CONTAINER_OBJECTS}


def container_object_base(cls: type) -> type | None:
    """The base in ``CONTAINER_OBJECTS`` of ``cls``, a user subclass of it; None for another
    class (the base itself among them)."""
    base = next((k for k in cls.__mro__ if k in CONTAINER_OBJECTS), None)
    return None if base is cls else base


def container_class_refused(cls: type) -> str | None:
    """Why instances of ``cls``, a user subclass of a base in ``CONTAINER_OBJECTS``, are not
    traced as its tracker's objects (the same for those made in the trace and those from
    outside the call), or None."""
    base = container_object_base(cls)
    return _container_class_refused(cls, base, _CONTAINER_OVERRIDABLE[base])


def construct_container_object(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user subclass of ``list``, ``set``, ``frozenset`` or
    ``deque``: the object its base's ``__new__`` makes (blank, whatever the arguments; a
    frozenset's with its items), then ``__init__``: the class's Python one inlined, or the
    base's on the storage."""
    obj = new_container_object(tx, cls_vt, args, kwargs)
    init_instance(tx, cls_vt, obj, args, kwargs)
    return obj


def new_container_object(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> ContainerObject:
    """An object of the user container class ``cls_vt`` as its base's ``__new__(cls, *args,
    **kwargs)`` makes it: empty, whatever the arguments; a frozenset's filled from them."""
    cls = cls_vt.as_python_constant()
    why = container_class_refused(cls)
    if why is not None:
        raise Unsupported("new_object", f"creating a {cls.__name__} object: {why}")
    effects = tx.output.side_effects
    tracker = CONTAINER_OBJECTS[container_object_base(cls)]
    if tracker is FrozenSetObjectVariable:
        items, recipe = FrozenSetObjectVariable.allocated(tx, cls, args, kwargs)
        obj = tracker(items, cls=cls, cls_vt=cls_vt, name=effects.new_name(), recipe=recipe)
    else:
        items = set() if tracker is SetObjectVariable else []
        obj = tracker(items, cls=cls, cls_vt=cls_vt, name=effects.new_name())
    if tracker is SetObjectVariable:  # laid out as an empty set, as a display makes it
        obj.recipe = containers.SetRecipe(set, (("keys", []),))
    effects.track_new(obj)
    return obj


def _takes_mapping() -> bool:
    """Does this Python's ``SimpleNamespace`` take a positional mapping (3.13 does)?"""
    try:
        types.SimpleNamespace({})
    except TypeError:
        return False
    return True


_NAMESPACE_TAKES_MAPPING = _takes_mapping()


def construct_namespace(
    tx: Translator,
    cls_vt: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``SimpleNamespace(mapping_or_pairs, /, **kwargs)`` with CPython's checks: at most one
    positional argument (none before 3.13), a mapping or pairs with string keys, then ``kwargs``.
    They fill its ``__dict__`` directly (no ``__setattr__`` runs)."""
    if len(args) > (1 if _NAMESPACE_TAKES_MAPPING else 0):
        raise Unsupported("python_error", "TypeError: SimpleNamespace(): too many arguments")
    pairs = _namespace_pairs(tx, args[0]) if args else []
    pairs += [(ConstantVariable(k), v) for k, v in kwargs.items()]
    effects = tx.output.side_effects
    obj = NamespaceVariable(types.SimpleNamespace(), cls_vt=cls_vt, name=effects.new_name())
    effects.track_new(obj)
    for key, value in pairs:
        if not (key.is_python_constant() and type(key.as_python_constant()) is str):
            raise Unsupported("python_error", "TypeError: keywords must be strings")
        effects.store_attr(obj, key.as_python_constant(), value)
    return obj


def _namespace_pairs(
    tx: Translator, arg: VariableTracker
) -> list[tuple[VariableTracker, VariableTracker]]:
    """The (key, value) pairs of ``SimpleNamespace``'s positional argument."""
    if isinstance(arg, DictVariable):
        return [(key_vt(k), v) for k, v in arg.items.items()]
    pairs = []
    for item in dispatch.iterate(tx, arg):
        pair = dispatch.iterate(tx, item)
        if len(pair) != 2:
            raise Unsupported("python_error", "ValueError: SimpleNamespace() takes pairs")
        pairs.append((pair[0], pair[1]))
    return pairs


def namespace_dict(tx: Translator, vt: VariableTracker) -> VariableTracker | None:
    """The attributes of ``vt`` as a dict tracker if it is a ``SimpleNamespace`` (made in the
    trace or given to it) whose class keeps SimpleNamespace's ``__eq__`` and ``__repr__``, which
    only read them; else None."""
    if not isinstance(vt, UserObjectVariable) or not isinstance(vt.value, types.SimpleNamespace):
        return None
    cls, own = type(vt.value), vars(types.SimpleNamespace)
    if any(type_lookup(cls, m) is not own[m] for m in ("__eq__", "__repr__")):
        return None
    if vt.source is None and not isinstance(vt, NewObjectVariable):
        return None
    attributes = vt.var_getattr(tx, "__dict__")
    return attributes if isinstance(attributes, DictVariable) else None


@builtin(repr)
def repr_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return _text(tx, obj, "__repr__")


@builtin(str)
def str_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    return _text(tx, obj, "__str__")


@builtin(ascii)
def ascii_(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """``ascii(obj)``: ``repr(obj)`` as the trace makes it, its non-ASCII characters escaped."""
    return ascii_text(repr_(tx, obj))


@builtin(format)
def format_(
    tx: Translator, obj: VariableTracker, spec: VariableTracker | None = None
) -> VariableTracker:
    """``format(obj, spec)`` (an f-string's field) where the class keeps ``object.__format__``:
    ``str(obj)`` for an empty spec, CPython's TypeError for any other. Of a tensor, or of a number
    computed from tensor data, a text made after the graph."""
    text = "" if spec is None else spec.as_python_constant() if spec.is_python_constant() else None
    if type(text) is str and isinstance(obj, TensorVariable):
        return tensor_text(tx, obj, format, text)
    if type(text) is str and isinstance(obj, SymNodeVariable) and obj.unbacked:
        return number_text(obj, format, text)
    if type(text) is str and isinstance(obj, TextVariable):
        return text_formatted(obj, text) if text else obj
    cls = obj.python_type()
    if type(text) is not str or type_lookup(cls, "__format__") is not object.__format__:
        raise Unsupported("builtin", f"format() of {obj} with {spec}")
    if text:
        name = containers.c_name(cls)
        raise PythonError(TypeError(f"unsupported format string passed to {name}.__format__"))
    return str_(tx, obj)


def _text(tx: Translator, obj: VariableTracker, name: str) -> VariableTracker:
    """``repr(obj)`` / ``str(obj)`` of a user object whose class writes the method in Python
    (``__str__``, or ``__repr__`` where ``str`` finds ``object.__str__``): inlined, its result a
    string (else CPython's TypeError); of a builtin container: ``container_repr``; of a
    ``SimpleNamespace``: ``namespace_repr``; of a tensor: its text, made after the graph
    (``tensor_text``), as ``str`` of such a text is itself and its ``repr`` one too; of a bound
    method: ``_method_text``; of a number computed from tensor data: ``number_text``; of an
    object made in the trace keeping ``object.__repr__``: its type and address, made after the
    graph; other values break the graph."""
    if isinstance(obj, TensorVariable):
        return tensor_text(tx, obj, repr if name == "__repr__" else str)
    if isinstance(obj, SymNodeVariable) and obj.unbacked:
        return number_text(obj, repr if name == "__repr__" else str)
    if isinstance(obj, TextVariable):
        return obj if name == "__str__" else TextVariable((TextPiece(repr, obj),))
    if isinstance(obj, ExceptionVariable):
        return exception_text(tx, obj, name)
    text = _method_text(tx, obj)
    if text is not None:
        return text
    objects = (UserObjectVariable, ContainerObject)
    cls = obj.python_type() if isinstance(obj, objects) else None
    if cls is not None and name == "__str__" and type_lookup(cls, name) is object.__str__:
        name = "__repr__"
    if cls is not None and isinstance(type_lookup(cls, name), types.FunctionType):
        if isinstance(obj, ContainerObject):  # its methods are its attributes' (inlined)
            result = obj.var_getattr(tx, name).call_function(tx, [], {})
        else:
            result = obj.call_method(tx, name, [], {})
        return _text_returned(obj, name, result)
    new = cls is not None and tx.output.side_effects.is_new(obj)
    if new and type_lookup(cls, name) is object.__repr__:  # its type and address: after the graph
        return TextVariable((TextPiece(repr, obj),))
    text = container_repr(tx, obj, lambda item: dispatch.call_builtin(tx, repr, [item], {}))
    return text if text is not None else namespace_repr(tx, obj)


def _method_text(tx: Translator, obj: VariableTracker) -> VariableTracker | None:
    """``repr(obj.f)`` (``str`` is the same) of a method bound to a value the trace has no real
    object for (a tensor, an object or container made in the trace; ``evaluate`` computes the
    others), or None for any other value. CPython's ``method_repr`` writes ``<bound method
    QUALNAME of REPR>`` for a Python function, so that is the object's text as the trace makes it;
    a C method's (``meth_repr``, ``wrapper_repr``) names only its object's type and address, which
    the rewritten code reads after the graph from the method it rebuilds, whatever the object
    holds by then."""
    if isinstance(obj, UserFunctionVariable) and obj.self_vt is not None:
        function, owner = obj.fn, obj.self_vt
    elif method_bound(obj) is not None:
        function, owner = method_bound(obj), obj.obj
    else:
        return None
    if isinstance(function, types.FunctionType):
        owner_text = dispatch.call_builtin(tx, repr, [owner], {})
        return joined_text([f"<bound method {function.__qualname__} of ", owner_text, ">"])
    if isinstance(owner, ConstantVariable):
        return None  # its identity is not kept: the rebuilt constant may be another object
    return TextVariable((TextPiece(repr, obj),))


def namespace_repr(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """``repr(ns)`` (and ``str``, which is ``repr`` for it) of a ``SimpleNamespace`` whose
    attributes are Python constants: CPython's text, ``namespace(a=1)`` (the class name for a
    subclass). Other values break the graph."""
    attributes = namespace_dict(tx, obj)
    if attributes is None or not attributes.is_python_constant():
        raise Unsupported("builtin", f"repr() on {obj!r}")
    real = types.SimpleNamespace.__new__(obj.python_type())
    vars(real).update(attributes.as_python_constant())
    return ConstantVariable(repr(real))


def enum_member(
    cls: enum.EnumMeta, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``Color(1)``: a lookup of an existing member, folded; ``Flag(3)``: the member the ``enum``
    module's own ``_missing_`` makes of the value (a user's ``_missing_`` is not run); CPython's
    ValueError for a value with no member."""
    if kwargs or len(args) != 1 or not args[0].is_python_constant():
        raise Unsupported("new_object", f"{cls.__name__}(...) creating a new enum class")
    if getattr(type_lookup(cls, "_missing_"), "__module__", None) != "enum":
        raise Unsupported("new_object", f"{cls.__name__} defines _missing_")
    try:
        return ConstantVariable(cls(args[0].as_python_constant()))
    except ValueError as e:
        raise PythonError(e) from None


# -- reading attributes of new objects -------------------------------------------------------------
def load_new_attribute(tx: Translator, obj: NewObjectVariable, name: str) -> VariableTracker:
    """``obj.name`` by CPython's generic lookup: data descriptors of the class, then the object's
    own attributes, then other class attributes, then ``__getattr__``."""
    cls = obj.python_type()
    effects = tx.output.side_effects
    check_class_unchanged(tx, cls, name)
    if name == "__class__":
        return obj.cls_vt
    static = type_lookup(cls, name)
    if name == "__dict__" and (
        isinstance(static, types.GetSetDescriptorType) or static is _NAMESPACE_DICT
    ):
        own = obj.own_attributes(tx) if isinstance(obj, ContainerObject) else {}
        return effects.instance_dict(
            obj, lambda items: InstanceDictVariable({**own, **items}, owner=obj)
        )
    source = class_attr_source(obj.cls_vt.source, cls, name) if static is not MISSING else None
    if static is not MISSING and is_data_descriptor(static):
        if isinstance(static, types.MemberDescriptorType):  # a slot
            pending = effects.load_attr(obj, name)
            if pending is None and type_lookup(cls, "__getattr__") is MISSING:  # empty
                error = error_of(static.__get__, _OBJECT_NEW(cls), cls)  # CPython's message
                error.name = name
                raise PythonError(error)
            if pending is None:
                raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")
            return pending
        if isinstance(obj, ContainerObject) and any(
            vars(base).get(name) is static for base in obj.storage_bases
        ):  # the base's own (``d.maxlen``): the storage's tracker answers
            return super(ContainerObject, obj).var_getattr(tx, name)
        return read_descriptor(tx, obj, obj.cls_vt, static, source)
    pending = effects.load_attr(obj, name)
    if pending is not None:
        return pending
    own = obj.own_attribute(tx, name) if isinstance(obj, ContainerObject) else None
    if own is not None:
        return own
    if static is not MISSING:
        bound = storage_method(obj, static)
        if bound is not None:
            return bound
        return bind_class_attribute(tx, obj, obj.cls_vt, static, name, source)
    hook = type_lookup(cls, "__getattr__")
    if isinstance(hook, types.FunctionType):
        fn = class_function(tx, obj.cls_vt, "__getattr__", hook, obj)
        return fn.call_function(tx, [ConstantVariable(name)], {})
    bound = storage_method(obj, hook)  # ``__getattr__ = dict.__getitem__``
    if bound is not None:
        return bound.call_function(tx, [ConstantVariable(name)], {})
    if isinstance(obj, ContainerObject):
        if obj.cls_vt.source is not None:
            tx.output.assume_class_lacks(obj.cls_vt.source, (name, "__getattr__"))
        error = f"'{cls.__name__}' object has no attribute '{name}'"
        raise PythonError(AttributeError(error))
    if obj.cls_vt.source is not None:  # a class attribute added later would be found instead
        names = (name, "__getattr__")
        tx.output.assume_class_lacks(obj.cls_vt.source, names)
    raise Unsupported("getattr", f"{cls.__name__} object has no attribute {name!r}")


@dispatch.rule("namedtuple_attribute")
def namedtuple_attribute(tx: Translator, tup: TupleVariable, name: str) -> VariableTracker:
    """``tup.name`` for a method, property or class attribute a namedtuple class defines
    (``typing.NamedTuple`` classes with methods, subclasses of ``namedtuple()`` classes)."""
    cls = tup.python_type()
    static = type_lookup(cls, name)
    owner = next((k for k in cls.__mro__ if name in vars(k)), tuple)
    if static is MISSING and not has_instance_dict(cls) and not _has_custom_getattr(cls):
        # no instance attributes: absent as long as no class of the MRO gains it
        where = getattr(getattr(tup, "cls_vt", None), "source", None)
        if tup.source is not None:
            where = TypeSource(tup.source)
        if where is None:
            raise Unsupported("getattr", f"{cls.__name__} has no attribute {name!r}")
        guard_no_class_attr(tx, where, name)
        raise PythonError(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))
    if static is MISSING or owner is tuple or owner is object:
        raise Unsupported("getattr", f"{cls.__name__} has no attribute {name!r}")
    cls_vt = getattr(tup, "cls_vt", None)
    if cls_vt is None:
        cls_vt = tx.wrap(cls, TypeSource(tup.source)) if tup.source else tx.wrap_static(cls)
    source = class_attr_source(cls_vt.source, cls, name)
    if is_data_descriptor(static) and not isinstance(static, property):
        raise Unsupported("descriptor", f"{cls.__name__}.{name} is a {type(static).__name__}")
    if isinstance(static, property):
        return read_descriptor(tx, tup, cls_vt, static, source)
    return bind_class_attribute(tx, tup, cls_vt, static, name, source)


def class_function(
    tx: Translator, cls_vt: VariableTracker, name: str, fn: types.FunctionType, obj: VariableTracker
) -> UserFunctionVariable:
    """``type(obj).name`` (a Python function) bound to ``obj``, guarded through the class."""
    source = cls_vt.source
    if source is None:
        return UserFunctionVariable(fn, None, self_vt=obj)
    cls = cls_vt.as_python_constant()
    method = tx.wrap(fn, class_attr_source(source, cls, name))
    return UserFunctionVariable(fn, method.source, self_vt=obj)


def check_class_unchanged(tx: Translator, cls: type, name: str) -> None:
    """An attribute of a class stored earlier in the trace is not seen by instance lookups
    (they read the real class): refuse instead."""
    if tx.output.side_effects.class_attr_changed(cls, name):
        raise Unsupported("class_attr", f"{cls.__name__}.{name} was assigned earlier in the trace")


# Every attribute store and deletion: ``obj.name = value`` (``STORE_ATTR``, ``setattr``) and
# ``del obj.name`` run ``__setattr__``/``__delattr__`` overrides, property setters and descriptors'
# ``__set__`` as CPython would, and record a plain store or deletion (in ``side_effects``) only
# where CPython makes one, or raise CPython's error where it fails; ``vars(obj)``, the live dict
# those change; ``object.__setattr__`` and ``object.__init__`` called explicitly.

_OBJECT_SETATTR = object.__dict__["__setattr__"]
_OBJECT_DELATTR = object.__dict__["__delattr__"]
#: C types' own slot wrappers that run the generic protocol (3.11 lists them on these types)
_GENERIC_SETATTR = tuple(
    v for t in (types.SimpleNamespace, types.ModuleType) if (v := vars(t).get("__setattr__"))
)
_GENERIC_DELATTR = tuple(
    v for t in (types.SimpleNamespace, types.ModuleType) if (v := vars(t).get("__delattr__"))
)


# -- storing attributes ----------------------------------------------------------------------------
@dispatch.rule("store_attr")
def store_attribute(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> None:
    """``obj.name = value``, as CPython would run it."""
    effects = tx.output.side_effects
    if isinstance(obj, ClassVariable) and obj.source is not None:
        _store_class_attribute(tx, obj, name, value)
    elif isinstance(obj, (NamedTupleObjectVariable, ContainerObject)) or (
        isinstance(obj, UserObjectVariable) and (obj.source is not None or effects.is_new(obj))
    ):
        cls = obj.python_type()
        check_class_unchanged(tx, cls, name)
        if store_config_attribute(tx, obj, name, value):
            return
        hook = type_lookup(cls, "__setattr__")
        if hook is _OBJECT_SETATTR or hook in _GENERIC_SETATTR:
            _guard_class_attr(tx, obj, "__setattr__", hook)
            generic_setattr(tx, obj, name, value)
        elif isinstance(hook, types.FunctionType):
            fn = class_function(tx, class_vt(tx, obj), "__setattr__", hook, obj)
            fn.call_function(tx, [ConstantVariable(name), value], {})
        elif (bound := storage_method(obj, hook)) is not None:  # ``= dict.__setitem__``
            bound.call_function(tx, [ConstantVariable(name), value], {})
        else:
            raise Unsupported("store_attr", f"{cls.__name__}.__setattr__ is not Python code")
    elif isinstance(obj, NestedFunctionVariable):  # ``functools.update_wrapper``
        obj.store_attr(tx, name, value)
    elif isinstance(obj, ClosureCellVariable) and name == "cell_contents":
        obj.store(tx, value)  # a frame's cell a resume function took (``ResumePoint.cell_args``)
    elif isinstance(obj, TensorVariable) and name == "grad":
        obj.store_grad(tx, value)
    elif type(obj) is DictVariable and obj.source is None and _plain_attribute(obj.cls, name):
        effects.check_unfrozen(obj)
        if not effects.is_new(obj):  # an ``OrderedDict`` made in the trace, given attributes
            effects.track_new(obj)  # (``DictVariable.create``)
        effects.store_attr(obj, name, value)
    elif (real := _plain_own_attribute(tx, obj, name, "__setattr__")) is not MISSING:
        effects.store_attr(_log_owner(tx, obj, real), name, value)  # into its own __dict__
    else:
        error = _doomed(tx, obj, name, setattr)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("store_attr", f"attribute store .{name} on {obj}")


def _plain_attribute(cls: type, name: str) -> bool:
    """Does ``obj.name = v`` on an instance of ``cls``, a builtin class, only write ``name`` into
    the instance's ``__dict__``? (``object.__setattr__``, no class attribute of that name, not
    a special name.)"""
    return (
        has_instance_dict(cls)
        and type_lookup(cls, "__setattr__") is _OBJECT_SETATTR
        and type_lookup(cls, name) is MISSING
        and not (name.startswith("__") and name.endswith("__"))
    )


def existing_object(tx: Translator, obj: VariableTracker) -> Any:
    """The object from outside the call that ``obj`` stands for, where its attributes are its own
    ``__dict__``'s and no Python class of its own decides them: an input tensor, a module, a plain
    function, an enum member (``MISSING`` for anything else; user objects have their own rules)."""
    if isinstance(obj, TensorVariable):
        if obj.source is None:
            return MISSING
        real = tx.output.input_value(obj.source)
        return real if isinstance(real, torch.Tensor) else MISSING
    if type(obj) is PythonModuleVariable:
        return obj.value
    if type(obj) is UserFunctionVariable and obj.self_vt is None:
        return obj.fn
    if type(obj) is ConstantVariable and isinstance(obj.value, enum.Enum):
        return obj.value
    return MISSING


def _log_owner(tx: Translator, obj: VariableTracker, real: Any) -> VariableTracker:
    """The tracker the side-effect log files the attributes of ``real``, ``obj``'s object, under
    (one per object: an enum member has a tracker per read)."""
    return obj if isinstance(obj, TensorVariable) else tx.output.side_effects.owner(obj, real)


def _plain_own_attribute(tx: Translator, obj: VariableTracker, name: str, hook: str) -> Any:
    """The existing object ``obj`` stands for (``existing_object``), where it keeps ``name`` in its
    own ``__dict__``, which ``hook`` (``__setattr__`` or ``__delattr__``) changes as
    ``object``'s does: its class neither defines it nor has its own hook (both guarded through the
    object's source, which it must have). Special names are left to Python (a module's
    ``__getattr__`` changes its lookup), and so are the globals of the compiled function
    (``MISSING`` for all of these)."""
    real = existing_object(tx, obj)
    if real is MISSING or (name.startswith("__") and name.endswith("__")):
        return MISSING
    cls = type(real)
    found = type_lookup(cls, hook)
    generic = (
        (_OBJECT_SETATTR, *_GENERIC_SETATTR)
        if hook == "__setattr__"
        else (_OBJECT_DELATTR, *_GENERIC_DELATTR)
    )
    if hasattr(cls, name) or found not in generic or not has_instance_dict(cls):
        return MISSING
    if isinstance(real, types.ModuleType) and (
        vars(real) is tx.root.f_globals or (hook == "__delattr__" and "__getattr__" in vars(real))
    ):
        return MISSING  # its globals (``global_stores``), or a lookup that ``__getattr__`` ends
    if obj.source is None:  # its class and its ``__dict__`` cannot be guarded, nor read live
        return MISSING
    _guard_class_attr(tx, obj, hook, found)
    tx.output.assume_class_lacks(TypeSource(obj.source), (name,))
    return real


def generic_setattr(
    tx: Translator, obj: VariableTracker, name: str, value: VariableTracker
) -> None:
    """``object.__setattr__(obj, name, value)``: through a data descriptor of the class if there is
    one, else into the instance."""
    cls = obj.python_type()
    cls_vt = class_vt(tx, obj)
    static = type_lookup(cls, name)
    source = class_attr_source(cls_vt.source, cls, name) if static is not MISSING else None
    if static is not MISSING and is_data_descriptor(static):
        if write_descriptor(tx, obj, static, name, value, source):
            return
        if isinstance(obj, NamedTupleObjectVariable):
            raise Unsupported("python_error", f"AttributeError: can't set attribute {name!r}")
    else:
        if not has_instance_dict(cls):
            raise PythonError(_no_attribute_to_set(obj, cls, name))
        if cls_vt.source is not None:  # the class must not gain a data descriptor ``name``
            if static is MISSING:
                tx.output.assume_class_lacks(cls_vt.source, (name,))
            else:
                tx.wrap(static, source)
    effects = tx.output.side_effects
    raw = type_lookup(cls, "__setattr__") is not _OBJECT_SETATTR and not effects.is_new(obj)
    effects.store_attr(obj, name, value, raw=raw)


def _no_attribute_to_set(obj: VariableTracker, cls: type, name: str) -> AttributeError:
    """The error of ``obj.name = v`` through ``object.__setattr__`` where ``cls`` has no slot
    ``name`` and no instance dict, as this CPython words it: made by CPython on an object of a
    stand-in class of the same name, its ``obj`` then ``obj``'s tracker."""
    stand_in = type(cls.__name__, (), {"__slots__": ()})()
    try:
        object.__setattr__(stand_in, name, None)
    except AttributeError as e:
        held = None if e.obj is None else TrackedValue(obj)
        return AttributeError(*e.args, name=e.name, obj=held)
    raise AssertionError(f"{cls.__name__}() took .{name}")  # pragma: no cover


def class_vt(tx: Translator, obj: VariableTracker) -> VariableTracker:
    """The class of ``obj`` as a tracker whose source guards it (``type(L['obj'])``)."""
    if getattr(obj, "cls_vt", None) is not None:  # made in the trace
        return obj.cls_vt
    cls = obj.python_type()
    if obj.source is None:
        return tx.wrap_static(cls)
    return tx.wrap(cls, TypeSource(obj.source))


def _guard_class_attr(tx: Translator, obj: VariableTracker, name: str, value: Any) -> None:
    """Guard that the class of ``obj`` still finds ``value`` as ``name`` (a builtin slot)."""
    source = class_vt(tx, obj).source
    if source is not None:
        attr = AttrSource(source, name)
        tx.output.assume_identity(attr, value)


def _store_class_attribute(
    tx: Translator, obj: ClassVariable, name: str, value: VariableTracker
) -> None:
    cls = obj.value
    if type(cls).__setattr__ is not type.__setattr__ or (
        name.startswith("__") and name.endswith("__")
    ):
        raise Unsupported("store_attr", f"class attribute store {cls.__name__}.{name}")
    if id(class_namespace(cls)) in tx.output.side_effects.namespaces:  # a stale ``__dict__``
        raise Unsupported("store_attr", f"{cls.__name__}.{name} = ... after reading its __dict__")
    tx.output.side_effects.store_class_attr(obj, name, value)


# -- deleting attributes ---------------------------------------------------------------------------
def delete_attribute(tx: Translator, obj: VariableTracker, name: str) -> None:
    """``del obj.name`` (``DELETE_ATTR``, ``delattr``) as CPython runs it, on an object made in the
    trace or one from outside it: a ``__delattr__`` written in Python is inlined, the generic one
    is ``generic_delattr``. CPython's error where the deletion must fail; elsewhere it runs in
    Python (a graph break)."""
    if (real := _plain_own_attribute(tx, obj, name, "__delattr__")) is not MISSING:
        missing = AttributeError(f"'{type(real).__name__}' object has no attribute '{name}'")
        _delete_existing(tx, obj, _log_owner(tx, obj, real), real, name, missing, raw=False)
        return
    if not _deletable(tx, obj):
        error = _doomed(tx, obj, name, delattr)
        if error is not None:
            raise PythonError(error)
        raise Unsupported("delete_attr", f"del .{name} on {obj}", hint="deleting runs in Python")
    cls = obj.python_type()
    check_class_unchanged(tx, cls, name)
    hook = type_lookup(cls, "__delattr__")
    if hook is _OBJECT_DELATTR or hook in _GENERIC_DELATTR:
        _guard_class_attr(tx, obj, "__delattr__", hook)
        generic_delattr(tx, obj, name)
    elif isinstance(hook, types.FunctionType):  # a frozen dataclass's, say
        fn = class_function(tx, class_vt(tx, obj), "__delattr__", hook, obj)
        fn.call_function(tx, [ConstantVariable(name)], {})
    else:
        raise Unsupported("delete_attr", f"{cls.__name__}.__delattr__ is not Python code")


def _deletable(tx: Translator, obj: VariableTracker) -> bool:
    """An object whose deletions the trace records: one made in the trace, or an instance of a
    Python class reached from outside the function."""
    if isinstance(obj, NewObjectVariable) and tx.output.side_effects.is_new(obj):
        return True
    if isinstance(obj, ContainerObject):  # made in the trace, or from outside it
        return obj.real is not None or tx.output.side_effects.is_new(obj)
    return type(obj) is UserObjectVariable and obj.source is not None


def generic_delattr(tx: Translator, obj: VariableTracker, name: str) -> None:
    """``object.__delattr__(obj, name)`` on an object ``_deletable`` allows: the attribute leaves
    the instance (a later read finds the class attribute, or raises), recorded for the replay
    where the object had it before the call (guarded); CPython's ``AttributeError`` where it has
    none by then. A data descriptor of the class deletes it instead (``delete_descriptor``)."""
    cls = obj.python_type()
    static = type_lookup(cls, name)
    if static is not MISSING and is_data_descriptor(static):
        source = class_attr_source(class_vt(tx, obj).source, cls, name)
        delete_descriptor(tx, obj, static, name, source)
        return
    if not has_instance_dict(cls):
        raise Unsupported("delete_attr", f"del .{name}: {cls.__name__} has no __dict__")
    _guard_class_lacks_descriptor(tx, obj, name, static)
    missing = AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    effects = tx.output.side_effects
    if effects.is_new(obj):
        if not effects.delete_new_attr(obj, name):
            raise PythonError(missing)
        return
    hook = type_lookup(cls, "__delattr__")
    raw = hook is not _OBJECT_DELATTR and hook not in _GENERIC_DELATTR
    real = obj.real if isinstance(obj, ContainerObject) else obj.value
    _delete_existing(tx, obj, obj, real, name, missing, raw)


def _delete_existing(
    tx: Translator,
    obj: VariableTracker,
    owner: VariableTracker,
    real: Any,
    name: str,
    missing: BaseException,
    raw: bool,
) -> None:
    """``del obj.name`` from the own ``__dict__`` of ``real``, an object from outside the call (at
    ``obj.source``; ``owner`` files its attributes in the log): recorded for the replay where the
    object had it before the call (guarded); ``missing`` where it has none by then."""
    effects = tx.output.side_effects
    own = object.__getattribute__(real, "__dict__")
    had = name in own
    if had:  # the guard on its value fails where the object lacks it
        tx.wrap(own[name], AttrSource(obj.source, name))
    else:
        tx.output.assume_key_absent(AttrSource(obj.source, "__dict__"), name)
    stored = effects.load_attr(owner, name) is not None
    if not stored and (not had or effects.is_deleted(owner, name)):
        raise PythonError(missing)
    effects.delete_attr(owner, name, replay=had, raw=raw)


def _guard_class_lacks_descriptor(
    tx: Translator, obj: VariableTracker, name: str, static: Any
) -> None:
    """The class of ``obj`` (from outside the function) still has no data descriptor ``name``."""
    cls_source = class_vt(tx, obj).source
    if cls_source is None:
        return
    if static is MISSING:
        tx.output.assume_class_lacks(cls_source, (name,))
    else:
        tx.wrap(static, class_attr_source(cls_source, obj.python_type(), name))


def _doomed(tx: Translator, obj: VariableTracker, name: str, op: Any) -> BaseException | None:
    """CPython's error for ``setattr(obj, name, v)`` or ``delattr(obj, name)`` (``op``) where it
    must fail, whatever the object's state (guarded): an immutable value or C type, a field of a
    namedtuple; for ``delattr``, an attribute that an object of a class with the generic
    ``__delattr__`` (an enum member, a function) lacks. None where it may succeed."""
    args = (name, None) if op is setattr else (name,)
    if isinstance(obj, UserFunctionVariable) and obj.self_vt is not None:
        return error_of(op, _StandIn().method, *args)  # a method object: nothing to set or delete
    fixed = fixed_attributes(obj)
    if fixed is not None and _refuses(fixed[0], name, op):
        return error_of(op, fixed[0], *args)
    try:
        cls = obj.python_type()
    except Unsupported:
        return None
    static = type_lookup(cls, name)
    generic = type_lookup(cls, "__setattr__" if op is setattr else "__delattr__") in (
        _OBJECT_SETATTR,
        _OBJECT_DELATTR,
    )
    if isinstance(obj, TupleVariable) and type(static) is _TUPLE_GETTER and generic:
        if obj.source is not None:
            tx.output.assume_identity(AttrSource(TypeSource(obj.source), name), static)
        stand_in = tuple.__new__(cls, (None,) * len(obj.items))  # a field: read-only in C
        return error_of(op, stand_in, *args)
    source = obj.source
    if (
        op is delattr
        and generic
        and source is not None
        and not isinstance(obj, PythonModuleVariable)
        and obj.is_python_constant()
        and static is MISSING
        and has_instance_dict(cls)
    ):
        value = obj.as_python_constant()
        if name not in object.__getattribute__(value, "__dict__"):
            _guard_absent(tx, source, name, type_lookup(cls, "__delattr__"))
            return AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    return None


def _guard_absent(tx: Translator, source: Source, name: str, hook: Any) -> None:
    """Neither the object at ``source`` nor its class has ``name``; its class still deletes with
    ``hook``."""
    tx.output.assume_key_absent(AttrSource(source, "__dict__"), name)
    tx.output.assume_class_lacks(TypeSource(source), (name,))
    tx.output.assume_identity(AttrSource(TypeSource(source), "__delattr__"), hook)


class _StandIn:
    """Its bound method stands for any: a method object has no instance dict and read-only
    attributes of its own, whatever function and object it binds."""

    def method(self) -> None:
        pass


#: the type of a namedtuple's field accessors (``collections._tuplegetter``)
_TUPLE_GETTER = type(collections.namedtuple("_Point", "x").x)


def _refuses(value: Any, name: str, op: Any) -> bool:
    """``op(value, name...)`` (``setattr`` or ``delattr``) fails without changing anything, on a
    value ``fixed_attributes`` gave: of an immutable builtin type, a C type, an empty builtin
    container standing for one, or an instance of a C type without an instance dict whose class
    neither defines ``name`` nor sets attributes its own way."""
    if type(value) in (*CONSTANT_TYPES, list, tuple, dict, set) or isinstance(value, type):
        return True
    cls = type(value)
    hook = type_lookup(cls, "__setattr__" if op is setattr else "__delattr__")
    return hook in (_OBJECT_SETATTR, _OBJECT_DELATTR) and type_lookup(cls, name) is MISSING


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
    static = not type(value).__flags__ & HEAP_TYPE
    if isinstance(value, type):
        return (value,) if not value.__flags__ & HEAP_TYPE else None
    return (value,) if static and not hasattr(value, "__dict__") else None


@builtin(delattr)
def delattr_(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    if not (name.is_python_constant() and type(name.as_python_constant()) is str):
        raise Unsupported("python_error", "TypeError: attribute name must be string")
    delete_attribute(tx, obj, name.as_python_constant())
    return ConstantVariable(None)


# -- the instance dict -----------------------------------------------------------------------------
@builtin(vars)
def vars_(tx: Translator, *args: VariableTracker) -> VariableTracker:
    """``vars(x)`` is ``x.__dict__``: of an object of a Python class, the live dict (stores and
    deletions update it; writes through it break); of a value that has none (a constant, an
    exact builtin container, a namedtuple, an object with ``__slots__``), CPython's TypeError;
    ``vars()`` lists the frame's names."""
    if len(args) != 1:
        raise Unsupported("vars", "call to vars()", hint="frame introspection")
    obj = args[0]
    fixed = fixed_attributes(obj)
    if fixed is not None and not hasattr(fixed[0], "__dict__"):
        raise PythonError(error_of(vars, fixed[0]))
    if obj.source is not None and isinstance(obj, (PythonModuleVariable, ClassVariable)):
        return obj.var_getattr(tx, "__dict__")
    if obj.source is not None and isinstance(obj, UserFunctionVariable):
        return unstored_dict(tx, obj, obj.fn, obj.source)  # a bound method's: its function's
    member = obj.as_python_constant() if obj.is_python_constant() else None
    if isinstance(member, type) and not member.__flags__ & HEAP_TYPE:  # ``vars(int)``
        if obj.source is None:  # a builtin: its fixed namespace
            return obj.var_getattr(tx, "__dict__")
        return tx.wrap(vars(member), AttrSource(obj.source, "__dict__"))
    if obj.source is not None and isinstance(member, enum.Enum):
        return unstored_dict(tx, obj, member, obj.source)
    new = isinstance(obj, NewObjectVariable) and tx.output.side_effects.is_new(obj)
    if obj.source is not None and isinstance(getattr(obj, "value", None), nn.Module):
        return dispatch.getattr_(tx, obj, "__dict__")  # the module family's view of it
    if isinstance(obj, ContainerObject):
        return obj.var_getattr(tx, "__dict__")
    if not (new or type(obj) is UserObjectVariable or isinstance(obj, TupleVariable)):
        raise Unsupported("builtin", f"vars() on {obj}")
    cls = obj.python_type()
    if not _lacks_dict(cls):
        if isinstance(obj, TupleVariable) and not new:
            raise Unsupported("builtin", f"vars() on {obj}")
        return obj.var_getattr(tx, "__dict__")
    cls_source = getattr(obj, "cls_vt", None)
    cls_source = cls_source.source if new else obj.source and TypeSource(obj.source)
    if cls_source is None and issubclass(type(cls), type) and cls.__flags__ & HEAP_TYPE:
        raise Unsupported("builtin", f"vars() on {obj}: its class is not guarded")
    if cls_source is not None:  # the class gains no ``__dict__`` nor ``__getattr__``
        tx.output.assume_class_lacks(cls_source, ("__dict__", "__getattr__"))
    raise PythonError(error_of(vars, None))


def _lacks_dict(cls: type) -> bool:
    """Instances of ``cls`` have no ``__dict__``, and the generic attribute lookup."""
    lookup = type_lookup(cls, "__getattribute__")
    return (
        not has_instance_dict(cls)
        and type_lookup(cls, "__getattr__") is MISSING
        and lookup in (_OBJECT_GETATTRIBUTE, type_lookup(tuple, "__getattribute__"))
    )


#: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement (whose attributes can change)
HEAP_TYPE = 1 << 9


# -- object's own slots called explicitly ----------------------------------------------------------
@builtin(_OBJECT_SETATTR)
def object_setattr(
    tx: Translator, obj: VariableTracker, name: VariableTracker, value: VariableTracker
) -> VariableTracker:
    """``object.__setattr__(obj, name, value)`` (frozen dataclasses, ``__setattr__`` overrides)."""
    kinds = (UserObjectVariable, NamedTupleObjectVariable, ContainerObject)
    if not isinstance(obj, kinds) or issubclass(obj.python_type(), nn.Module):
        raise Unsupported("store_attr", f"object.__setattr__ on {obj}")
    if obj.source is None and not tx.output.side_effects.is_new(obj):
        raise Unsupported("store_attr", f"object.__setattr__ on {obj}")
    generic_setattr(tx, obj, name.as_python_constant(), value)
    return ConstantVariable(None)


@builtin(_OBJECT_DELATTR)
def object_delattr(tx: Translator, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    """``object.__delattr__(obj, name)`` (a ``__delattr__`` override deferring to it)."""
    if not _deletable(tx, obj) or type(name.as_python_constant()) is not str:
        raise Unsupported("delete_attr", f"object.__delattr__ on {obj}")
    generic_delattr(tx, obj, name.as_python_constant())
    return ConstantVariable(None)


@builtin(OBJECT_INIT)
def object_init(tx: Translator, obj: VariableTracker, *args: VariableTracker) -> VariableTracker:
    """``object.__init__(self)`` / ``super().__init__()`` reaching ``object``: nothing to do."""
    if args:
        raise Unsupported("python_error", "TypeError: object.__init__() takes no arguments")
    return ConstantVariable(None)


# ``T.__new__(cls, ...)`` called directly: the allocation step of making an object, without
# ``__init__`` (what ``copy``, ``pickle`` and a class's own ``__new__`` calling ``super().__new__``
# do).
#
# ``object.__new__(cls)`` of a plain Python class makes a blank ``NewObjectVariable`` (its
# attributes set afterwards, as pending stores); with extra arguments it raises CPython's TypeError
# where CPython does. ``__new__`` of a builtin type called with that exact type (``int.__new__(int,
# "7")``, ``list.__new__(list)``) makes what the type's allocation makes: the value for an immutable
# type (folded), an empty container for a mutable one (whose ``__init__`` is not run); with a user
# dict, list, set or deque class, a blank object of it (``DictObjectVariable``,
# ``CONTAINER_OBJECTS``). Other forms (a
# subclass of another builtin type, a class with its own allocation in C) break the graph.

#: builtin types whose ``__new__`` makes the whole value from its arguments (``tuple.__new__``
#: is ``functions.py``'s)
_IMMUTABLE = (int, float, bool, complex, str, bytes, frozenset)
#: builtin containers whose ``__new__`` makes an empty one whatever the arguments
_MUTABLE = (list, dict, set, collections.deque)


@call_rule(*(vars(t)["__new__"] for t in (*_IMMUTABLE, *_MUTABLE)))
def builtin_type_new(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``T.__new__(T, ...)`` of a builtin type: folded on constants (CPython's errors raised in
    the trace), an empty container for ``list``/``dict``/``set``/``deque``; ``dict.__new__(cls)``
    of a user dict class (its own ``__new__`` calling ``super().__new__(cls)``), and the like of
    a list, set or deque class: a blank object of it."""
    cls = _class_argument(fn, args)
    user_dict = cls is not None and issubclass(cls, dict) and containers.is_user_dict(cls)
    if fn.__self__ is dict and user_dict:
        return new_dict_object(tx, args[0])
    if cls is not None and fn.__self__ is container_object_base(cls):  # ``set.__new__(cls)``
        return new_container_object(tx, args[0], list(args[1:]), kwargs)
    if cls is None or cls is not fn.__self__:
        return None  # a subclass (or no class): its instances are not modelled here
    if cls in _MUTABLE:
        return dispatch.call_builtin(tx, cls, [], {})
    if not all(a.is_python_constant() for a in [*args[1:], *kwargs.values()]):
        return None
    values = [a.as_python_constant() for a in args[1:]]
    named = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        return ConstantVariable(fn(cls, *values, **named))
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None


@call_rule(_OBJECT_NEW)
def object_new(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``object.__new__(cls, ...)``: a blank object of a plain Python class, made in the trace;
    ``object.__new__(object)`` is left to the caller."""
    cls = _class_argument(fn, args)
    if cls is None:
        return None
    if (args[1:] or kwargs) and (
        type_lookup(cls, "__new__") is not _OBJECT_NEW
        or type_lookup(cls, "__init__") is OBJECT_INIT
    ):
        raise PythonError(_error(cls, len(args) - 1, kwargs))
    if cls is object:
        return None  # a bare ``object()``: not modelled
    why = _not_plain(cls)
    if why is not None:
        raise Unsupported("new_object", f"object.__new__({cls.__name__}): {why}")
    try:
        blank = object.__new__(cls)
    except TypeError as e:  # an abstract class: CPython's own error
        raise PythonError(e) from None
    effects = tx.output.side_effects
    obj = NewObjectVariable(blank, cls_vt=args[0], name=effects.new_name())
    effects.track_new(obj)
    return obj


@call_rule(tuple.__new__)
def tuple_type_new(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``tuple.__new__(cls, iterable=())``: a tuple of ``tuple`` or of a ``namedtuple()`` class
    (``functions.tuple_new``), or, where a user subclass's own ``__new__`` calls it through
    ``super().__new__``, an object of that subclass as ``cls(...)`` makes it without one."""
    made = tuple_new(tx, args, kwargs)
    cls = _class_argument(fn, args)
    if made is not None or cls is None or kwargs or len(args) > 2 or not issubclass(cls, tuple):
        return made
    items = list(dispatch.iterate(tx, args[1])) if len(args) == 2 else []
    if hasattr(cls, "_fields") and not has_instance_dict(cls):
        return TupleVariable(items, cls=cls)
    if not hasattr(cls, "_fields") and [n for n in _tuple_overrides(cls) if n != "__new__"]:
        return None
    effects = tx.output.side_effects
    obj = NamedTupleObjectVariable(items, cls=cls, cls_vt=args[0], name=effects.new_name())
    effects.track_new(obj)
    return obj


def _class_argument(fn: Any, args: list[VariableTracker]) -> type | None:
    if not args or not args[0].is_python_constant():
        return None
    cls = args[0].as_python_constant()
    return cls if isinstance(cls, type) else None


def _error(cls: type, count: int, kwargs: dict[str, VariableTracker]) -> TypeError:
    """CPython's error for ``object.__new__(cls, *args)`` with arguments it does not take."""
    try:
        object.__new__(cls, *([None] * count), **dict.fromkeys(kwargs))
    except TypeError as e:
        return e
    raise AssertionError(f"object.__new__({cls.__name__}, ...) raised nothing")


def _not_plain(cls: type) -> str | None:
    """Why objects of ``cls`` are not modelled by ``NewObjectVariable`` (None: they are): a
    builtin base's layout, a finalizer, its own attribute lookup."""
    if any(base is not object and not base.__flags__ & HEAP_TYPE for base in cls.__mro__):
        return "it derives from a builtin type"
    if type_lookup(cls, "__del__") is not MISSING:
        return "it defines __del__ (the finalizer would run when the object dies)"
    if type_lookup(cls, "__getattribute__") is not _OBJECT_GETATTRIBUTE:
        return "it defines __getattribute__"
    return None


# -- slot names ------------------------------------------------------------------------------------
# ``object.__getstate__`` (so ``copy.copy``, ``copy.deepcopy`` and ``pickle`` of a plain object)
# asks for the class's slot names, which ``copyreg._slotnames`` finds and caches on the class as
# ``cls.__slotnames__``. The trace runs that lookup for real on a class it knows rather than
# tracing it and replaying the cache's store after the graph. The names are a function of the
# class alone, and caching them is idempotent: once the cache is there, CPython's later calls read
# it and set nothing, and the compiled code's calls do nothing either, the guard below checking
# that the cache is still there and unchanged (a deleted or changed one makes a new trace, which
# reads or caches again as CPython's next call would). The cache is made by the call that makes
# CPython make it, before its graph runs rather than when the run reaches the copy: no Python code
# of that call runs in between. A replayed store would instead have read the class's namespace in
# the trace (guarding all its keys), stored a new list on every call, and made a second trace
# once the cache was there.
@call_rule(polyfills.copy.slot_names)
def slot_names(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The slot names of a class known to the trace (``polyfills/copy.py``), found and cached at
    trace time: a constant tuple."""
    if kwargs or len(args) != 1 or not isinstance(args[0], ClassVariable):
        return None
    cls = args[0].value
    try:
        names = fn(cls)
    except Exception as e:  # noqa: BLE001 (CPython's own error, raised in the trace)
        raise PythonError(e) from None
    check = functools.partial(_slot_names_cache, weakref.ref(cls))
    tx.output.assume_state(("slotnames", id(cls)), check, check())
    return ConstantVariable(names)


def _slot_names_cache(ref: weakref.ref) -> tuple:
    """What the class holds as ``__slotnames__``: ``()`` where it has none of its own, else
    ``(names,)``, a list's items as a tuple."""
    cls = ref()
    namespace = _TYPE_DICT.__get__(cls) if cls is not None else {}
    if "__slotnames__" not in namespace:
        return ()
    names = namespace["__slotnames__"]
    return (tuple(names) if isinstance(names, list) else names,)


@call_rule(polyfills.slots.has_slot)
def has_slot(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """Whether a class the trace knows fills the slot ``name`` (``polyfills/slots.py``), read on
    the real class's MRO: a constant. Guarded where the class is read through the inputs: no
    class of its MRO gains ``name``, or the one that defines it keeps it."""
    if kwargs or len(args) != 2 or not all(a.is_python_constant() for a in args):
        return None
    cls, name = (a.as_python_constant() for a in args)
    if not isinstance(cls, type) or not isinstance(name, str):
        return None
    found = type_lookup(cls, name)
    source = args[0].source
    if source is not None and found is MISSING:
        tx.output.assume_class_lacks(source, (name,))
    elif source is not None:
        tx.output.assume_identity(class_attr_source(source, cls, name), found)
    return ConstantVariable(found is not MISSING)


# -- loggers -------------------------------------------------------------------------------------
# ``logging``'s loggers are objects the trace does not model; what the program asks of them is
# answered here from the real logger, guarded, and what they emit is kept for the compiled call
# (``run_time_logging``).


def _logger_of(vt: VariableTracker) -> logging.Logger | None:
    """The real logger ``vt`` stands for, where its record path is logging's own and the trace
    reads it from where the call will (its identity guarded)."""
    if not isinstance(vt, UserObjectVariable) or vt.source is None:
        return None
    return vt.value if run_time_logging.plain_logger(vt.value) else None


@call_rule(*run_time_logging.LEVEL_METHODS)
def logging_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``logger.info(msg, *args)``, and the other level methods of a logger: nothing where the
    level is disabled for the logger, else its record, made and handled by the compiled call
    after the graph (``run_time_logging.emit_later``: only values logged; any other form runs in
    Python); the answer guarded. Calls CPython refuses are left to be traced as written."""
    logger = _logger_of(args[0]) if args else None
    rest = args[1:]
    if logger is None or "msg" in kwargs or "level" in kwargs:
        return None
    level = run_time_logging.LEVEL_METHODS[fn]
    if level is None:  # ``log(level, msg, ...)``: an int level (else CPython raises, or returns)
        if not rest or not rest[0].is_python_constant():
            return None
        level, rest = rest[0].as_python_constant(), rest[1:]
    if not isinstance(level, int) or not rest:
        return None
    tx.output.assume_identity(args[0].source, logger)
    if not run_time_logging.enabled(tx, logger, level):
        return ConstantVariable(None)
    if not value_arguments(rest, kwargs):
        raise Unsupported(
            "logging",
            f"{fn.__name__}() of a value not known at trace time (a tensor's?)",
            hint="log values after the compiled function, or at a disabled level",
        )
    values = [a.as_python_constant() for a in rest]
    named = {k: v.as_python_constant() for k, v in kwargs.items()}
    run_time_logging.emit_later(tx, args[0], level, values, named)
    return ConstantVariable(None)


@call_rule(logging.Logger.isEnabledFor)
def logger_enabled_for(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``logger.isEnabledFor(level)`` with an int level: the logger's answer, guarded."""
    logger = _logger_of(args[0]) if args else None
    if logger is None or kwargs or len(args) != 2 or not args[1].is_python_constant():
        return None
    level = args[1].as_python_constant()
    if type(level) is not int:
        return None
    tx.output.assume_identity(args[0].source, logger)
    return ConstantVariable(run_time_logging.enabled(tx, logger, level))


@call_rule(logging.getLogger)
def get_logger(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``logging.getLogger(name)`` with a name the trace knows: the logger the call gives (made
    now where it is missing, as the call makes it), read where the call finds it, the root
    logger or ``Logger.manager.loggerDict[name]``, which guards check as they check inputs."""
    given = [*args, *kwargs.values()]
    if len(given) > 1 or kwargs.keys() - {"name"} or not value_arguments(args, kwargs):
        return None
    name = given[0].as_python_constant() if given else None
    if name is not None and type(name) is not str:
        return None
    logger = logging.getLogger(name)
    if logger is logging.root:
        return tx.wrap(logger, ModuleGlobalSource("logging", "root"))
    loggers = AttrSource(
        AttrSource(ModuleGlobalSource("logging", "Logger"), "manager"), "loggerDict"
    )
    return tx.wrap(logger, ItemSource(loggers, name))
