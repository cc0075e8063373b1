"""Functions and methods: ``UserFunctionVariable`` (a Python function, inlined by a nested
translator), ``BuiltinVariable``, bound methods, closure cells (``ClosureCellVariable``),
``functools`` caches and partials, functions marked for the tracer (``CALL_HOOKS``) and calls that
make classes (``namedtuple``, ``type``). What calling a known callable means is first
``call_rules.py``'s table.
"""

from __future__ import annotations

import abc
import collections
import functools
import gc
import inspect
import operator
import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from ...backends.registry import notice_once
from ...codegen.pyversion import FUNCTIONS_HAVE_TYPE_PARAMS
from ...guards.build import GuardSet, exec_function
from ...guards.sources import (
    AttrSource,
    CallSource,
    ClosureSource,
    ConstSource,
    DictItemSource,
    DictValueSource,
    FreshSource,
    GlobalSource,
    GlobalsSource,
    ItemSource,
    ModuleGlobalSource,
    Source,
    TypeSource,
)
from ..breaks.liveness import code_cell_writes
from ..exc import PythonError, Unsupported
from ..markers import (
    REBUILT,
    REGION_ATTR,
    disabled_by,
    display_name,
    has_constant_result,
    is_allowed,
    is_graph_break,
    patched_by_torch_compile,
)
from ..polyfills import functools as polyfill_functools
from . import dispatch, iterators
from .base import (
    MISSING,
    MethodCallVariable,
    VariableTracker,
    type_lookup,
)
from .call_rules import builtin, call_rule
from .constants import (
    CONSTANT_TYPES,
    IMMUTABLE_C_KINDS,
    READING_METHODS,
    ConstantVariable,
    SymNodeVariable,
    reading_method,
    unstored_dict,
)
from .containers import (
    PLAIN_DICTS,
    DictVariable,
    ListVariable,
    MappingProxyVariable,
    TupleVariable,
    hash_key,
    is_key_value,
    key_value,
)

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ...guards.guard import Guard
    from ..translator import Translator


# Closure cells during a trace: ``ClosureCellVariable`` is a real cell (of a function the trace
# reached, or one a resume function took as an argument: ``ResumePoint.cell_args``), one tracker per
# cell object (``closure_cell``), read through its contents and written as a side effect;
# ``LocalCellVariable`` is a cell of a frame being traced, whose value lives in the frame's symbolic
# locals; ``SavedCellVariable`` is 3.12's saved cell around an inlined comprehension.
# ``reconstruct_cell`` pushes a cell for rewritten code (a closure made in the trace, a resume
# call).


@dataclass(eq=False)
class ClosureCellVariable(VariableTracker):
    """A real closure cell of a user function; its contents are wrapped (and guarded) when read.
    A cell a resume function takes as an argument (``ResumePoint.cell_args``: the frame's cell,
    shared with closures made before the break) is one too: its code reads and writes
    ``cell_contents``, writes are side effects replayed on the cell."""

    cell: types.CellType
    source: Source | None = None  #: source of the cell *contents*

    def cell_source(self) -> Source | None:
        """Where the cell object itself is found (``f.__closure__[i]``, a resume argument)."""
        source = self.source
        if isinstance(source, AttrSource) and source.attr == "cell_contents":
            return source.base
        return None

    def reachable(self) -> bool:
        """Can the replay write the cell: the compiled function's own, or one with a source."""
        return isinstance(self.source, ClosureSource) or self.cell_source() is not None

    def python_type(self) -> type:
        return types.CellType

    def contents(self, tx: Translator, name: str) -> VariableTracker:
        """What the cell holds now: a value stored in the trace (by the compiled function itself
        for its own closure, ``C[name]``), else its real contents."""
        effects = tx.output.side_effects
        if isinstance(self.source, ClosureSource) and self.source.name in effects.cell_stores:
            return effects.cell_stores[self.source.name]
        pending = effects.load_attr(self, "cell_contents")
        if pending is not None:
            return pending
        try:
            contents = self.cell.cell_contents
        except ValueError:
            raise Unsupported("unbound_local", f"free variable {name!r} is empty") from None
        if self.source is None:  # a cell of a function reached without a source
            return tx.wrap_unsourced(contents, f"free variable {name!r}")
        return tx.wrap(contents, self.source)

    def store(self, tx: Translator, value: VariableTracker) -> None:
        """``cell.cell_contents = value``: replayed on the cell after the graph (the compiled
        function's own closure cell as the frame's own stores are, ``C[name]``)."""
        if isinstance(self.source, ClosureSource):
            tx.output.side_effects.store_cell(self.source.name, value)
            return
        if self.cell_source() is None:
            raise Unsupported("closure_store", "a store to a cell that cannot be reached again")
        tx.output.side_effects.store_attr(self, "cell_contents", value)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name != "cell_contents":
            raise Unsupported("getattr", f"cell.{name}")
        return self.contents(tx, "cell_contents")

    def reconstruct(self, cg: Codegen) -> None:
        base = self.cell_source()
        if base is not None:
            base.reconstruct(cg)  # ``f.__closure__[i]`` of this call's ``f``, a resume argument
        else:
            cg.load_cell_value(f"__bg_cell_{id(self.cell)}", self.cell)


def closure_cell(tx: Translator, cell: types.CellType, source: Source | None) -> VariableTracker:
    """The tracker of a real cell, one per cell object in a trace (the cell a resume function took
    as an argument and the same cell in a closure it calls must see the same stores)."""
    known = tx.output.wrapped.get(id(cell))
    if known is not None and known[0] is cell and isinstance(known[1], ClosureCellVariable):
        return known[1]
    vt = ClosureCellVariable(cell, source)
    if source is not None:
        tx.output.wrapped[id(cell)] = (cell, vt)
    return vt


@dataclass(eq=False)
class LocalCellVariable(VariableTracker):
    """A cell of a frame being traced: reads and writes go to ``frame_locals[name]``, the frame's
    symbolic locals while the cell is the frame's current one. A cell the frame replaced (3.12
    comprehensions make a new cell for their variable) is detached: ``frame_locals`` becomes a
    private dict holding its last value. Mutable on purpose, like the cell it stands for."""

    frame_locals: dict[str, VariableTracker]
    name: str

    def detach(self) -> None:
        value = self.frame_locals.get(self.name)
        self.frame_locals = {} if value is None else {self.name: value}


@dataclass(eq=False)
class SavedCellVariable(VariableTracker):
    """3.12: what LOAD_FAST_AND_CLEAR saves for a cell variable around an inlined comprehension: the
    outer cell (if a closure holds it) and the outer value, restored by the matching STORE_FAST."""

    cell: LocalCellVariable | None
    value: VariableTracker | None


def reconstruct_cell(cg: Codegen, cell: VariableTracker) -> None:
    if isinstance(cell, ClosureCellVariable):  # a real cell: the same cell object
        cell.reconstruct(cg)
        return
    if not isinstance(cell, LocalCellVariable):
        raise Unsupported("escaping_closure", f"a closure over {cell}")

    def build() -> None:
        cg.load_const(types.CellType)
        if cell.name in cell.frame_locals:
            cell.frame_locals[cell.name].reconstruct(cg)
            cg.call_function(1)
        else:
            cg.call_function(0)

    cg.build_once(cell, build)


# Calls that make a new class: ``collections.namedtuple(...)`` called in the compiled function,
# and the objects of such a class: ``tuple.__new__(cls, items)``, which the methods of the class it
# made call (``P._make``), and which ``objects.tuple_type_new`` reaches through ``tuple_new``.
#
# CPython's factory builds the class with ``eval`` (its ``__new__``) and ``type(name, bases, ns)``,
# which the trace cannot follow; called on Python constants it is a pure function of them (as
# torch.compile treats it), so the trace runs the real factory once, when the call is traced, and
# the class it made is a constant of the trace. Its ``__module__`` is the caller's ``__name__``, as
# CPython gives it (the real caller, while tracing, would be the tracer). Arguments only known at
# run time (a tensor as a default) are a graph break.


@call_rule(collections.namedtuple)
def make_class(
    tx: Translator, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """The class ``target(*args, **kwargs)`` makes, when ``target`` is a class factory."""
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


def tuple_new(
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


# Calls of functions the user marked for the tracer (the registries are ``tracer/markers.py``): a
# disabled function breaks the graph at the call, an allowed one becomes one graph node, one with a
# constant result is called now, and an ``error_on_graph_break`` region marks the breaks inside it.
# Entry point: ``call_marked``.


def call_marked(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """Trace a call of a marked function, or None when ``vt.fn`` carries no mark."""
    fn = vt.fn
    disabled = disabled_by(fn)
    if disabled is not None and patched_by_torch_compile(fn):
        return vt.clone(fn=fn.__wrapped__, source=None).call_function(tx, args, kwargs)
    if disabled is not None:
        by, reason = disabled
        raise Unsupported(
            "disabled",
            f"{display_name(fn)} is marked with {by}: it runs in Python",
            hint=reason or f"remove {by} to trace it into the graph",
        )
    if is_allowed(fn):
        if vt.self_vt is not None:
            args = [vt.self_vt, *args]
        return tx.output.call_function(fn, tuple(args), kwargs)
    if has_constant_result(fn):
        return _call_for_constant(tx, vt, args, kwargs)
    region = getattr(fn, REGION_ATTR, None)
    if isinstance(region, tuple):
        return _call_in_region(tx, vt, region, args, kwargs)
    return None


def _call_for_constant(
    tx: Translator,
    vt: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """``assume_constant_result``: call the real function now; its result is a constant."""
    values = [*args, *kwargs.values()]
    if not all(a.is_python_constant() for a in values):
        raise Unsupported(
            "constant_result",
            f"{display_name(vt.fn)} (assume_constant_result) called with non-constant arguments",
            hint="call it with Python constants, or drop assume_constant_result",
        )
    real_args = [a.as_python_constant() for a in args]
    if vt.self_vt is not None:
        owner = vt.self_vt
        if owner.source is None or not hasattr(owner, "value"):
            raise Unsupported(
                "constant_result",
                f"{display_name(vt.fn)} is a method of an object made in the trace",
            )
        real_args.insert(0, owner.value)
    result = vt.fn(*real_args, **{k: v.as_python_constant() for k, v in kwargs.items()})
    return tx.fold(result)


def _call_in_region(
    tx: Translator,
    vt: UserFunctionVariable,
    region: tuple[bool, Any],
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """Trace the function an ``error_on_graph_break(value)`` decorator wraps, marking a break in
    it (if no inner region marked it first) with ``value``."""
    value, wrapped = region
    inner = vt.clone(fn=wrapped, source=None)
    try:
        return inner.call_function(tx, args, kwargs)
    except Exception as e:  # Unsupported, or the translator's GraphBreak carrying one
        reason = e if isinstance(e, Unsupported) else getattr(e, "reason", None)
        if isinstance(reason, Unsupported) and reason.strict is None:
            reason.strict = value
        raise


# Callables: user Python functions (inlined), functions made during the trace, builtins, torch ops.
#
# ``UserFunctionVariable`` wraps a real Python function (guarded by identity when it came from an
# input or global); ``NestedFunctionVariable`` is a closure created by ``MAKE_FUNCTION`` inside the
# trace. Both are inlined by ``tx.inline_call`` (a generator function's call gives a lazily run
# ``GeneratorVariable``). ``BuiltinVariable`` routes to ``dispatch`` (torch's callables are
# ``torch_calls.TorchVariable``). ``PartialVariable`` is a ``functools.partial``.
# Closure cells are ``ClosureCellVariable`` (below).

#: Functions traced specially, by code object (``@contextmanager``'s wrapper:
#: ``contexts.py``): ``hook(tx, fn_vt, args, kwargs)`` is called instead of inlining the
#: function.
CALL_HOOKS: dict[types.CodeType, Any] = {}


@dataclass(eq=False)
class UserFunctionVariable(VariableTracker):
    """A Python function, or one bound to ``self_vt``. ``source`` loads the function, except where
    ``bound_source`` says it loads the bound method itself (one the trace was given, ``V =
    obj.method``): rebuilt as that object, so ``r is V`` holds for it as in CPython. A bound
    method's ``__defaults__``, ``__closure__`` and ``__code__`` are its function's, so guards read
    them through either source."""

    fn: types.FunctionType
    source: Source | None = None
    self_vt: VariableTracker | None = None  #: the bound ``self`` for methods of user objects
    bound_source: bool = False  #: ``source`` loads the bound method, not the function

    def clone(self, **changes: Any) -> VariableTracker:
        if self.bound_source and changes.get("self_vt", self.self_vt) is not self.self_vt:
            # bound to something else: no longer that object, only its function
            changes.setdefault("source", AttrSource(self.source, "__func__"))
            changes["bound_source"] = False
        return super().clone(**changes)

    def python_type(self) -> type:
        return types.MethodType if self.self_vt is not None else types.FunctionType

    def is_python_constant(self) -> bool:
        return self.self_vt is None

    def as_python_constant(self) -> Any:
        return self.fn

    def pin_identity(self, tx: Translator) -> None:
        """Guard that the function is the object the trace read (``builder._guard_function``
        guards what it is made of): the trace read something of the object itself."""
        if self.source is None:
            return
        source = AttrSource(self.source, "__func__") if self.bound_source else self.source
        tx.output.assume_identity(source, self.fn)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in _NAMING and self.source is not None:
            # read through its source, guarded by value: a function made anew at each call (a
            # closure a graph break gives back) keeps its name
            return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name))
        if name not in _CALL_PARTS:  # the attributes of the object itself (``f.__name__``)
            self.pin_identity(tx)
        if name in _NAMING:
            return ConstantVariable(getattr(self.fn, name))
        if name == "__type_params__":  # 3.12+: read by update_wrapper, through bound methods too
            return tx.wrap_static(getattr(self.fn, name))
        if (
            name == "__code__"
        ):  # a sourced function's code is guarded by identity (``builder.wrap``)
            return ConstantVariable(self.fn.__code__)
        if name == "__class__":  # ``type(f)``: torchvision's ``_log_api_usage_once(f)`` reads it
            return tx.wrap_static(self.python_type())
        if name == "__get__" and self.self_vt is None:
            return MethodCallVariable(self, name)
        if name == "__self__" and self.self_vt is not None:
            return self.self_vt
        if name == "__func__" and self.self_vt is not None:
            return self.clone(self_vt=None)
        stored = tx.output.side_effects.own_attr(self, self.fn, name)
        if stored is not None:  # set in the trace (a bound method reads its function's)
            return stored
        if name in ("__closure__", "__defaults__", "__kwdefaults__") and self.source is not None:
            return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name))  # guarded there
        if self.self_vt is None and name in READING_METHODS and name not in vars(self.fn):
            method = getattr(self.fn, name)  # ``f.__repr__``: folded when called
            if reading_method(method):
                if self.source is not None:  # not shadowed by the function's own attribute
                    tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)
                return ConstantVariable(method)
        if name == "__dict__" and self.self_vt is None and self.source is not None:
            return unstored_dict(tx, self, self.fn, self.source)  # ``functools.update_wrapper``
        classes = (type(self.fn),) if self.self_vt is None else (type(self.fn), types.MethodType)
        if self.source is not None and not any(hasattr(k, name) for k in classes):
            # the function's own attribute (a bound method forwards the read to its function)
            own = vars(self.fn)
            if name in own:
                return tx.wrap(own[name], AttrSource(self.source, name))
            tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)
            message = f"'{type(self.fn).__name__}' object has no attribute '{name}'"
            raise PythonError(AttributeError(message))
        raise Unsupported("getattr", f"attribute {name!r} of function {self.fn.__qualname__}")

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        """``f.__get__(obj[, cls])``: ``f`` bound to ``obj`` (``f`` itself for ``obj`` None)."""
        if name == "__get__" and self.self_vt is None and not kwargs and 1 <= len(args) <= 2:
            obj = args[0]
            if isinstance(obj, ConstantVariable) and obj.value is None:
                return self
            return self.clone(self_vt=obj)
        return super().call_method(tx, name, args, kwargs)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if is_graph_break(self.fn):
            raise Unsupported(
                "graph_break",
                f"explicit graph_break() ({self.fn.__module__})",
                hint="remove the graph_break() call to get one graph",
            )
        if self.fn is inspect.signature and len(args) == 1 and not kwargs:
            return _signature(tx, args[0])
        marked = call_marked(tx, self, args, kwargs)
        if marked is not None:
            return marked
        hook = CALL_HOOKS.get(self.fn.__code__)
        if hook is not None and (self.self_vt is None or getattr(hook, "accepts_bound", False)):
            hooked = hook(tx, self, args, kwargs)
            if hooked is not None:  # None: the hook only looked; the call is inlined as usual
                return hooked
        if self.self_vt is not None:
            args = [self.self_vt, *args]
        closure = {}
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or (), strict=True):
            closure[name] = closure_cell(tx, cell, _cell_source(tx, self.source, self.fn, name))
        result = tx.inline_call(
            self.fn.__code__,
            self.fn.__globals__,
            args,
            kwargs,
            defaults=_defaults_vt(tx, self.fn, self.source),
            closure=closure,
            fn=self.fn,
        )
        return iterators.made_by(result, self.fn)

    def closure_value(self, tx: Translator, name: str) -> VariableTracker:
        """The contents of the function's closure cell ``name`` (guarded through the function)."""
        index = self.fn.__code__.co_freevars.index(name)
        value = self.fn.__closure__[index].cell_contents
        source = _cell_source(tx, self.source, self.fn, name)
        return tx.wrap(value, source) if source is not None else tx.wrap_static(value)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None and (self.self_vt is None or self.bound_source):
            return self.source.reconstruct(cg)
        if self.self_vt is not None:  # made in the trace: one object wherever it is held

            def build() -> None:
                cg.load_const(types.MethodType)
                cg.load_const(self.fn)
                self.self_vt.reconstruct(cg)
                cg.call_function(2)

            cg.build_once(self, build)
            return None
        cg.load_const(self.fn)
        return None

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.fn.__qualname__})"


#: What a function is made of, which ``builder._guard_function`` guards (or the trace guards
#: where it reads them): reading these leaves the function's identity free; reading any other
#: attribute guards it (``UserFunctionVariable.pin_identity``).
_CALL_PARTS = frozenset(
    {"__code__", "__closure__", "__defaults__", "__kwdefaults__", "__globals__", "__get__"}
    | {"__class__", "__self__", "__func__"}
)


#: A function's names and text, plain attributes it may have set anew (``functools.wraps``)
_NAMING = ("__name__", "__qualname__", "__module__", "__doc__")


def same_bound_method(a: UserFunctionVariable, b: UserFunctionVariable) -> bool | None:
    """``a is b`` for two trackers of bound methods, or None where that is not known. One the trace
    was given (``bound_source``) is the object its source loads; one made in the trace (an
    ``obj.method`` read, which makes a new object in CPython: ``a.f is a.f`` is False) is a new
    object, never one given nor another one made (an object made in the trace has one tracker)."""
    if a.bound_source and b.bound_source:
        return True if a.source == b.source else None
    return False


def _signature(tx: Translator, fn: VariableTracker) -> VariableTracker:
    """``inspect.signature(f)`` of a plain Python function or method, computed at trace time
    (inlining ``inspect`` would walk descriptors and wrappers). What it depends on is guarded with
    the function: its identity and code (``builder.wrap``) and its defaults (``_defaults_vt``).
    Functions carrying a ``__signature__`` or ``__wrapped__`` (decorators) are left to Python."""
    if not isinstance(fn, UserFunctionVariable) or {"__signature__", "__wrapped__"} & set(
        vars(fn.fn)
    ):
        raise Unsupported("call", f"inspect.signature of {fn}")
    _defaults_vt(tx, fn.fn, fn.source)
    real = fn.fn if fn.self_vt is None else types.MethodType(fn.fn, object())
    return ConstantVariable(inspect.signature(real))


@call_rule(types.MethodType)
def make_method(
    tx: Translator, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``types.MethodType(function, obj)`` of a Python function (``contextlib.ExitStack`` binds
    a context manager's ``__exit__`` so): that function bound to ``obj``, a method made in the
    trace. Other forms go on as a call of the class."""
    if kwargs or len(args) != 2:
        return None
    fn, obj = args
    if not isinstance(fn, UserFunctionVariable) or fn.self_vt is not None:
        return None
    return UserFunctionVariable(fn.fn, fn.source, self_vt=obj)


def _cell_source(
    tx: Translator, fn_source: Source | None, fn: types.FunctionType, name: str
) -> Source | None:
    """Where the contents of ``fn``'s cell ``name`` are read: through the function; one reached
    without a source, whose cell holds a mutable container (the running set of
    ``reprlib.recursive_repr``), through where its module names it (``_home_source``)."""
    index = fn.__code__.co_freevars.index(name)
    if fn_source is None and isinstance(_contents(fn.__closure__[index]), _MUTABLE):
        fn_source = _home_source(tx, fn)
    if fn_source is None:
        return None

    return AttrSource(ItemSource(AttrSource(fn_source, "__closure__"), index), "cell_contents")


#: what a cell holds that the trace changes in place and the replay must reach
_MUTABLE = (list, dict, set, collections.deque, bytearray)


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _home_source(tx: Translator, fn: types.FunctionType) -> Source | None:
    """``fn`` read where its module names it by its qualified name (a method of a class defined
    at module level: ``M['mod']['Cfg'].__dict__['__repr__']``), its identity guarded there; None
    where that name does not lead to it (a function made in a call, ``<locals>``)."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    parts = fn.__qualname__.split(".")
    if module is None or "<locals>" in parts:
        return None
    found = vars(module).get(parts[0])
    source: Source = ModuleGlobalSource(module.__name__, parts[0])
    for part in parts[1:]:
        if not isinstance(found, type):
            return None
        found = vars(found).get(part)
        source = ItemSource(AttrSource(source, "__dict__"), part)
    if found is not fn:
        return None
    tx.output.assume_identity(source, fn)
    return source


def _defaults_vt(
    tx: Translator, fn: types.FunctionType, source: Source | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Positional and keyword-only defaults. Those of a function with a source are wrapped (so
    guarded) through it, ``G['f'].__defaults__[0]``: ``__defaults__`` can be rebound and a mutable
    default mutated. Otherwise real values (wrapped by the inliner as constants of the trace)."""
    code = fn.__code__
    pos = fn.__defaults__ or ()
    names = code.co_varnames[code.co_argcount - len(pos) : code.co_argcount]
    if source is None:
        return dict(zip(names, pos, strict=True)), dict(fn.__kwdefaults__ or {})
    # No defaults now: the call binds every parameter, so defaults added later change nothing.
    pos_vt = tx.wrap(fn.__defaults__, AttrSource(source, "__defaults__")) if pos else None
    kw_vt = (
        tx.wrap(fn.__kwdefaults__, AttrSource(source, "__kwdefaults__"))
        if fn.__kwdefaults__
        else None
    )
    pos_items = pos_vt.items if isinstance(pos_vt, TupleVariable) else []
    kw_items = kw_vt.items if isinstance(kw_vt, DictVariable) else {}
    return dict(zip(names, pos_items, strict=True)), dict(kw_items)


@dataclass(eq=False)
class NestedFunctionVariable(VariableTracker):
    """A function made during the trace by MAKE_FUNCTION (a lambda, closure, comprehension)."""

    code: types.CodeType
    f_globals: dict[str, Any]
    defaults: tuple[VariableTracker, ...] = ()
    kwdefaults: dict[str, VariableTracker] = field(default_factory=dict)
    closure: dict[str, VariableTracker] = field(default_factory=dict)  #: name -> cell variable
    source: Source | None = None
    #: attributes stored on it in the trace (``functools.wraps``: ``__name__``, ``__wrapped__``,
    #: ``__dict__``...), mutable like a container's items; set again when it is rebuilt
    attrs: dict[str, VariableTracker] = field(default_factory=dict)
    has_annotations: bool = False

    def python_type(self) -> type:
        return types.FunctionType

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "__name__":
            return ConstantVariable(self.code.co_name)
        if name == "__qualname__":
            return ConstantVariable(self.code.co_qualname)
        if name == "__module__":
            return ConstantVariable(self.f_globals.get("__name__"))
        if name == "__doc__":  # CPython's function takes its first constant when a str
            consts = self.code.co_consts
            return ConstantVariable(consts[0] if consts and isinstance(consts[0], str) else None)
        if name == "__class__":
            return tx.wrap_static(types.FunctionType)
        if name == "__type_params__" and FUNCTIONS_HAVE_TYPE_PARAMS:
            return ConstantVariable(())
        if name == "__dict__" or (name == "__annotations__" and not self.has_annotations):
            tx.output.side_effects.before_mutation(self)
            self.attrs[name] = made = DictVariable({})  # made on first read, as CPython does
            return made
        namespace = self.attrs.get("__dict__")
        if namespace is not None and name in namespace.items:
            return namespace.items[name]
        raise Unsupported("getattr", f"attribute {name!r} of a function made in the trace")

    def store_attr(self, tx: Translator, name: str, value: VariableTracker) -> None:
        """``fn.name = value`` (``functools.update_wrapper``): the function's own fields, or an
        item of its ``__dict__``."""
        if name in ("__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__"):
            raise Unsupported("store_attr", f"{name} of a function made in the trace")
        if name in ("__name__", "__qualname__") and not (
            value.is_python_constant() and isinstance(value.as_python_constant(), str)
        ):
            raise Unsupported("store_attr", f"{name} set to {value}")
        if name in _FUNCTION_FIELDS:
            tx.output.side_effects.before_mutation(self)
            self.attrs[name] = value
            return
        dispatch.setitem(tx, self.var_getattr(tx, "__dict__"), ConstantVariable(name), value)

    def save_state(self) -> Any:
        return dict(self.attrs)

    def restore_state(self, state: Any) -> None:
        self.attrs.clear()
        self.attrs.update(state)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        code = self.code
        names = code.co_varnames[code.co_argcount - len(self.defaults) : code.co_argcount]
        result = tx.inline_call(
            code,
            self.f_globals,
            args,
            kwargs,
            defaults=(dict(zip(names, self.defaults, strict=True)), dict(self.kwdefaults)),
            closure=dict(self.closure),
            fn=None,
        )
        return iterators.made_by(result, self)

    def reconstruct(self, cg: Codegen) -> None:
        """The function made again by ``make_function`` (code, globals, defaults, cells). A cell of
        a traced frame becomes a new cell holding its final value. At a graph break the frame goes
        on in a resume function with cells of its own: the new cell stands for the frame's only
        while neither this function nor the resumed frame writes it (``_cells_rebuildable``); else
        the closure cannot escape there (the call runs in Python)."""
        if id(self) in _BUILDING:
            raise Unsupported("escaping_closure", f"{self.code.co_name} refers to itself")
        cells = [self.closure[name] for name in self.code.co_freevars]
        if cg.resumes and not self._cells_rebuildable(cg, cells):
            raise Unsupported(
                "escaping_closure",
                f"function {self.code.co_name} made in the trace escapes at a graph break",
                hint="define the function outside the compiled region",
            )
        _BUILDING.add(id(self))
        try:
            cg.build_once(self, lambda: self._build(cg, cells))
        finally:
            _BUILDING.discard(id(self))

    def _cells_rebuildable(self, cg: Codegen, cells: list[VariableTracker]) -> bool:
        """At a graph break, may the cells of the traced frames be rebuilt as new cells? Yes while
        no one writes them after the break: not this function (``nonlocal``), nor its frame once
        resumed (``cg.shared_cells``, from ``break_frames.cells_written_after``); a frame that has
        returned no longer writes its cells. A cell its resumed frame takes as the cell itself
        (``break_frames.passed_cells``) is shared whoever writes it."""
        shared = getattr(cg, "shared_cells", None)
        passed = {id(c) for c in getattr(cg, "passed_cell_vts", ())}
        own = code_cell_writes(self.code)
        for name, cell in zip(self.code.co_freevars, cells, strict=True):
            if isinstance(cell, ClosureCellVariable) or id(cell) in passed:
                continue  # the same cell object: shared with the resumed frame
            if shared is None or name in own or id(cell) in shared:
                return False
        return True

    def _build(self, cg: Codegen, cells: list[VariableTracker]) -> None:
        cg.load_const(make_function)
        cg.load_const(self.code)
        cg.load_cell_value(f"__bg_globals_{id(self.f_globals)}", self.f_globals)
        for value in self.defaults:
            value.reconstruct(cg)
        cg.build_tuple(len(self.defaults))
        for name, value in self.kwdefaults.items():
            cg.load_const(name)
            value.reconstruct(cg)
        cg.build_map(len(self.kwdefaults))
        for cell in cells:
            reconstruct_cell(cg, cell)
        cg.build_tuple(len(cells))
        for name, value in self.attrs.items():
            cg.load_const(name)
            value.reconstruct(cg)
        cg.build_map(len(self.attrs))
        cg.call_function(6)

    def __repr__(self) -> str:
        return f"NestedFunctionVariable({self.code.co_name})"


#: A function's attributes that are not items of its ``__dict__``.
_FUNCTION_FIELDS = frozenset(
    {"__name__", "__qualname__", "__doc__", "__module__", "__annotations__", "__type_params__"}
)
_BUILDING: set[int] = set()  #: closures being rebuilt (a closure reaching itself cannot be)


def make_function(
    code: types.CodeType,
    f_globals: dict[str, Any],
    defaults: tuple,
    kwdefaults: dict[str, Any],
    closure: tuple[types.CellType, ...],
    attrs: dict[str, Any],
) -> types.FunctionType:
    """Runtime helper of the rewritten code: a function made in the trace, made again (with the
    attributes the trace stored on it)."""
    fn = types.FunctionType(code, f_globals, code.co_name, defaults or None, closure or None)
    fn.__kwdefaults__ = kwdefaults or None
    fn.__qualname__ = code.co_qualname
    for name, value in attrs.items():
        if name == "__dict__":
            fn.__dict__.update(value)
        else:
            setattr(fn, name, value)
    if not (defaults or kwdefaults or attrs):
        REBUILT.add(fn)  # a resume function's argument: guarded by what it is made of
    return fn


#: ``object``'s own methods that traced code may call explicitly (``super().__init__()`` reaching
#: ``object``, ``object.__setattr__(self, n, v)``, ``object.__delattr__(self, n)``): builtins
#: implemented in ``objects.py``.
OBJECT_METHODS = {
    name: object.__dict__[name] for name in ("__setattr__", "__delattr__", "__init__")
}


@dataclass(eq=False)
class BuiltinVariable(VariableTracker):
    fn: Any  #: a builtin such as ``len`` or ``isinstance``
    source: Source | None = None

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.fn

    def python_type(self) -> type:
        return type(self.fn)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.call_builtin(tx, self.fn, args, kwargs)

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        """Attributes of a builtin: its name, a type's methods (``dict.fromkeys``: calls go through
        the polyfill registry)."""
        if self.fn is object and name in OBJECT_METHODS:
            return BuiltinVariable(OBJECT_METHODS[name])
        try:
            attr = getattr(self.fn, name)
        except AttributeError:
            kind = getattr(self.fn, "__name__", self.fn)
            raise Unsupported("getattr", f"{kind} has no attribute {name!r}") from None
        # a builtin type or function takes no attributes: what it holds is fixed
        label = f"{getattr(self.fn, '__name__', 'builtin')}.{name}"
        if name == "__dict__" and isinstance(attr, types.MappingProxyType):
            # a builtin type's namespace (``functools.update_wrapper(w, int)`` copies it)
            source = ConstSource(attr, label)
            items = {k: tx.wrap_fixed(v, f"{label}[{k!r}]") for k, v in attr.items()}
            return MappingProxyVariable(DictVariable(items, source), source, owner=self)
        return tx.wrap_fixed(attr, label)

    def reconstruct(self, cg: Codegen) -> None:
        cg.load_const(self.fn)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


@dataclass(eq=False)
class PartialVariable(VariableTracker):
    """``functools.partial(fn, *args, **kwargs)``: calls ``fn`` with the stored arguments first."""

    fn: VariableTracker
    args: list[VariableTracker]
    kwargs: dict[str, VariableTracker]
    source: Source | None = None
    cls: type = functools.partial  #: or a subclass that keeps partial's call and parts

    def python_type(self) -> type:
        return self.cls

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "func":
            return self.fn
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "keywords":
            return DictVariable(dict(self.kwargs))
        raise Unsupported("getattr", f"functools.partial has no attribute {name!r}")

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return dispatch.call(tx, self.fn, [*self.args, *args], {**self.kwargs, **kwargs})

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:
            return self.source.reconstruct(cg)

        def build() -> None:
            cg.load_const(self.cls)
            self.fn.reconstruct(cg)
            for arg in self.args:
                arg.reconstruct(cg)
            for value in self.kwargs.values():
                value.reconstruct(cg)
            cg.call_function(1 + len(self.args) + len(self.kwargs), tuple(self.kwargs))

        cg.build_once(self, build)
        return None

    def __repr__(self) -> str:
        return f"PartialVariable({self.fn!r})"


def make_partial(
    fn: VariableTracker,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
    cls: type = functools.partial,
) -> PartialVariable:
    """``cls(fn, *args, **kwargs)``. A partial of a partial made in the trace is flattened, as
    CPython's ``partial.__new__`` makes it: the inner function, both argument lists, the inner
    keywords updated by the outer (``q.func is f`` for ``q = partial(partial(f, 1), 2)``). The
    inner partial's ``__dict__``, whose existence stops the flattening, is never made in a trace;
    a partial given to the trace is kept whole."""
    if isinstance(fn, PartialVariable) and fn.source is None:
        return PartialVariable(fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, cls=cls)
    return PartialVariable(fn, args, kwargs, cls=cls)


def called_by_partials(callee: VariableTracker) -> VariableTracker:
    """The callable that ``callee`` runs when called: through any ``functools.partial`` around it
    (partial calls its function from C, so no frame lies between)."""
    while isinstance(callee, PartialVariable):
        callee = callee.fn
    return callee


# ``functools.lru_cache``/``functools.cache`` wrappers: a call with constant arguments is made
# once, for real, at trace time, and its (immutable) result becomes a constant of the trace.
#
# That is what the eager program does on its first call: the wrapped function runs once per distinct
# arguments (a miss), later calls return the cached result with no effect (hits). Tracing happens
# during the first call, so the real call at trace time is that call's (a ``logger.warning_once``
# message appears once); where the entry is cached already, the trace reads it without a call
# (``_CacheEntry``). A miss after effects of the frame the replay makes later breaks: the body
# would run before them. Later calls are guarded to find the same entry, holding the same result
# (after ``cache_clear()`` or an eviction eager runs the body again, with its effects, and may get
# another result: the trace is made again, where the call misses), and the compiled code calls
# the wrapper after the graph, a hit, so that ``cache_info()`` and a bounded cache's recency order
# are eager's. transformers calls ``is_torch_greater_or_equal("2.9.0")`` and
# ``logger.warning_once(...)`` this way. Arguments must be constants (a ``torch.Size`` of static
# sizes among them), objects reached through a source and hashed by identity (the logger of
# ``warning_once``), guarded by identity, or objects hashed by identity that another cached call
# returned (einops gives ``_prepare_transformation_recipe``'s recipe to
# ``_reconstruct_from_shape``), that call's guard then taking no other object alike. Results that
# are no constants are the cached objects (``_trace_cached``). A call with symbolic numbers traces
# the wrapped function, each key's result one tracker (``_trace_symbolic``); one with tensors traces
# it without the cache, as torch.compile does (with a notice). What does not fit otherwise is a
# graph break at the call.

LRU_CACHE_WRAPPER = functools._lru_cache_wrapper


@dataclass(eq=False)
class MemoizedFunctionVariable(VariableTracker):
    """An ``lru_cache`` wrapper (``value``), or one bound to ``self_vt`` as a method."""

    value: Any
    source: Source | None = None
    self_vt: VariableTracker | None = None

    def python_type(self) -> type:
        return type(self.value)

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.self_vt is not None:
            args = [self.self_vt, *args]
        name = getattr(self.value, "__qualname__", repr(self.value))
        pins: list[_CachedObjectGuard] = []
        try:
            real_args = [_argument(tx, a, name, pins) for a in args]
            real_kwargs = {k: _argument(tx, v, name, pins) for k, v in kwargs.items()}
        except Unsupported:
            return self._call_wrapped(tx, args, kwargs, name)
        for guard in pins:  # (``cached_part``): the key holds that very object
            guard.pinned = True
        entry = _CacheEntry.of(self.value, real_args, real_kwargs, name)
        result = entry.cached_result()
        missed = result is _UNREADABLE
        if missed and _effects_pending(tx.output.side_effects):
            entry.assume_missing(tx)  # a later call finding it cached is traced again
            raise Unsupported(
                "memoized_call",
                f"{name}() is not cached for these arguments: its body runs after the effects "
                "the frame made before the call",
            )
        if missed:
            try:
                result = self.value(*real_args, **real_kwargs)
            except Exception as e:  # noqa: BLE001 (the call runs again in Python, where it raises)
                raise Unsupported(
                    "python_error", f"{name}() raised {type(e).__name__}: {e}"
                ) from None
        if not _immutable(result):
            return self._trace_cached(tx, args, kwargs, entry, missed, result)
        folded = tx.fold(result)
        entry.assume_hit(tx, result, folded, missed)
        return folded

    def _trace_cached(
        self,
        tx: Translator,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        entry: _CacheEntry,
        made: bool,
        result: Any,
    ) -> VariableTracker:
        """A cached result that is no constant (an object of the user's): the wrapped function's
        body is traced on the same arguments, where it has no effect on what existed before the
        call and puts nothing in the graph (else a break, the call made by CPython). Its result is
        the cached object: the same tracker for a key called again in the trace unless ``maxsize``
        other keys were called in between (``lru_cache`` dropped it then); the trace may not
        change it; the replay calls the wrapper again, in call order, which gives eager's object
        (and leaves the cache as eager does) for wherever the result escapes. Where a trace of
        this process ran the body for this key already, and the cached object is as it found it,
        the trackers are built from the object instead (``_rebuilt``). Either way each part of
        the object that is no constant has one tracker in the trace (``_parts``): reached through
        another name later, it is that tracker (``cached_part``)."""
        name = getattr(self.value, "__qualname__", repr(self.value))
        wrapped = getattr(self.value, "__wrapped__", None)
        if self.self_vt is not None or not isinstance(wrapped, types.FunctionType):
            raise Unsupported(
                "memoized_call", f"{name}() returned a {type(result).__name__}, not a constant"
            )
        effects = tx.output.side_effects
        real_args, real_kwargs = list(entry.args), entry.kwargs
        key = (tuple(real_args), tuple(real_kwargs.items()))
        call = _skip_first(self.value, result) if made else self.value  # (``assume_hit``)
        earlier = _cached_in_trace(effects, self.value, key)
        if earlier is not None:
            effects.memo_call(call, tuple(real_args), real_kwargs, key, earlier)
            return earlier
        state = _state_of(result)
        record = _record_key(key)
        built = _rebuilt(tx, self.value, record, result, state)
        if built is None:
            built = self._trace_body(tx, args, kwargs, real_args, real_kwargs, state, name)
        vt, body_guards = built
        parts = _parts(tx, vt, result)
        guard = _CachedObjectGuard(entry.lookup(), entry.args, state, result)
        label = ("lru_cache", id(self.value), repr(key), id(result))
        tx.output.assume_state(label, guard.getter, True)
        local = effects.memo_call(call, tuple(real_args), real_kwargs, key, vt)
        recorded = record is not _UNREADABLE and body_guards is not None
        if _freeze(effects, vt, FreshSource(local)) and recorded:
            _VERIFIED.setdefault(self.value, {})[record] = (state, body_guards)
        for part, part_vt in parts:
            effects.add_cached_part(part, part_vt, guard)
        kinds = {type(part) for part, _ in parts}
        if any(type(value) in kinds for value, _ in tx.output.wrapped.values()):
            guard.pinned = True  # (``wrapped_alike``)
        return vt

    def _trace_body(
        self,
        tx: Translator,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        real_args: list[Any],
        real_kwargs: dict[str, Any],
        state: Any,
        name: str,
    ) -> tuple[VariableTracker, tuple[Guard, ...] | None]:
        """The wrapped function's body traced on the call's arguments: its result, the trackers
        of a cached object whose ``_state_of`` is ``state`` (else a break), and the guards its
        trace asked for, as a trace of any other frame can install them (``_portable``)."""
        effects = tx.output.side_effects
        snapshot = effects.snapshot()
        nodes = len(tx.output.graph.nodes)
        wrapped = self.value.__wrapped__
        outer_log, tx.output.guard_log = tx.output.guard_log, []
        try:
            source = AttrSource(self.source, "__wrapped__") if self.source is not None else None
            fn = tx.wrap(wrapped, source) if source is not None else tx.wrap_static(wrapped)
            traced = dispatch.call(tx, fn, args, kwargs)
        finally:
            log, tx.output.guard_log = tx.output.guard_log, outer_log
            if outer_log is not None:  # a cached call in a cached call's body
                outer_log.extend(log)
        if effects.changed_since(snapshot) or len(tx.output.graph.nodes) != nodes:
            raise Unsupported(
                "memoized_call", f"the body of the lru_cache'd {name}() has effects or uses tensors"
            )
        # the trace computed a fresh result; eager's is the cached object, which may have been
        # changed since it was cached: both must be alike now (the body runs for real, having no
        # effects), and stay alike on later calls (a guard, checked after all others, so the body
        # it may run on a miss is the traced one: eager would run it in this call too)
        fresh = _memo_state(wrapped, tuple(real_args), real_kwargs)
        if state is _UNREADABLE or state != fresh:
            raise Unsupported(
                "memoized_call", f"{name}()'s cached object is not what its body makes now"
            )
        return traced, _portable(tx, log)

    def _trace_symbolic(
        self,
        tx: Translator,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        fn: VariableTracker,
        name: str,
    ) -> VariableTracker:
        """A call with a symbolic number among its arguments (no key of the cache: it would be
        specialised): the body is traced, the numbers kept symbolic. Eager's result is the cached
        object, made once per key: the trace gives the tracker of an earlier call with the same
        arguments (the same symbolic values) while ``lru_cache`` holds it, so ``is`` holds as in
        eager. The replay makes the call after the graph, with the values the numbers have; the
        lists and tuples of the result are the objects it returns (``_freeze_symbolic``: the
        trace may not change them; where they escape they are read from there), as einops'
        ``_reconstruct_from_shape`` gives its shapes. A body with effects (run on a miss only),
        or a result holding anything else (a dict, an object), breaks: the call is made in
        Python."""
        effects = tx.output.side_effects
        key = ("symbolic", _symbolic_key([*args]), _symbolic_key([*kwargs.values()]), *kwargs)
        pins: list[_CachedObjectGuard] = []
        try:  # the replay's arguments: the symbolic ones rebuilt, the others as they are
            replay = [a if _holds_symbol(a) else _argument(tx, a, name, pins) for a in args]
            replay_kw = {
                k: v if _holds_symbol(v) else _argument(tx, v, name, pins)
                for k, v in kwargs.items()
            }
        except Unsupported:
            raise Unsupported(
                "memoized_call", f"{name}() called with a symbolic number and no constants"
            ) from None
        for guard in pins:  # (``cached_part``): the key holds that very object
            guard.pinned = True
        earlier = _cached_in_trace(effects, self.value, key)
        if earlier is None:
            snapshot = effects.snapshot()
            earlier = dispatch.call(tx, fn, args, kwargs)
            if effects.changed_since(snapshot):
                raise Unsupported(
                    "memoized_call", f"the body of the lru_cache'd {name}() has effects"
                )
            local = effects.memo_call(self.value, tuple(replay), replay_kw, key, earlier)
            if not _freeze_symbolic(effects, earlier, FreshSource(local)):
                raise Unsupported(
                    "memoized_call",
                    f"{name}() called with a symbolic number returns an object the cache shares",
                )
            return earlier
        effects.memo_call(self.value, tuple(replay), replay_kw, key, earlier)
        return earlier

    def _call_wrapped(
        self,
        tx: Translator,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
        name: str,
    ) -> VariableTracker:
        """Arguments that are no constants (tensors): the wrapped function is traced, the cache
        left aside, as torch.compile does (with a notice, as it warns). Eager would store the
        result in the cache and return it again for the same argument objects; the compiled call
        computes it anew, which is the same value unless the function has effects."""
        wrapped = getattr(self.value, "__wrapped__", None)
        if not isinstance(wrapped, types.FunctionType):
            raise Unsupported("memoized_call", f"{name}() called with values that are no constants")
        notice_once(
            f"lru_cache:{id(self.value)}",
            f"{name}() is a functools.lru_cache wrapper called with tensors (or other values "
            "that are no constants): its function is traced, without the cache",
        )
        source = AttrSource(self.source, "__wrapped__") if self.source is not None else None
        fn = tx.wrap(wrapped, source) if source is not None else tx.wrap_static(wrapped)
        if any(map(_holds_symbol, [*args, *kwargs.values()])):
            return self._trace_symbolic(tx, args, kwargs, fn, name)
        return dispatch.call(tx, fn, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        if self.self_vt is None and self.source is not None:
            self.source.reconstruct(cg)
            return
        raise Unsupported("reconstruct", f"a bound {self.value!r} escapes the trace")

    def __repr__(self) -> str:
        return f"MemoizedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


class _CacheEntry:
    """The entry of a real ``lru_cache`` wrapper for one call's arguments, read without calling
    the wrapper (a call counts a hit or a miss, and a miss runs the body). CPython's wrapper has
    no attribute for its cache: the dict is what the garbage collector sees it hold beside its
    ``__dict__`` (cleared in place by ``cache_clear``), keyed as CPython's ``lru_cache_make_key``
    keys a call (``_key``), holding the result (``maxsize=None``) or the link of the recency
    list that holds it; the collector sees each link's key and result in the list
    (``_link_result``)."""

    __slots__ = ("wrapper", "args", "kwargs", "cache", "key", "bounded")

    def __init__(self, wrapper: Any, args: list, kwargs: dict, cache: dict, key: Any) -> None:
        self.wrapper, self.args, self.kwargs = wrapper, tuple(args), dict(kwargs)
        self.cache, self.key = cache, key
        self.bounded = wrapper.cache_parameters()["maxsize"] is not None

    @classmethod
    def of(cls, wrapper: Any, args: list, kwargs: dict, name: str) -> _CacheEntry:
        parameters = wrapper.cache_parameters()
        if parameters["maxsize"] == 0:  # no cache: the body runs on every call
            raise Unsupported("memoized_call", f"{name}() is an lru_cache of maxsize 0")
        own = getattr(wrapper, "__dict__", None)
        referents = gc.get_referents(wrapper)
        found = [r for r in referents if type(r) is dict and r is not own]
        marks = [r for r in referents if type(r) is object]
        if len(found) != 1 or (kwargs and len(marks) != 1):
            raise Unsupported("memoized_call", f"the cache of {name}() cannot be read")
        key = _key(args, kwargs, parameters["typed"], marks[0] if kwargs else None)
        return cls(wrapper, args, kwargs, found[0], key)

    def cached_result(self) -> Any:
        """What a call would return from the cache now (a hit), or ``_UNREADABLE`` (a miss)."""
        stored = self.cache.get(self.key, _UNREADABLE)
        if stored is _UNREADABLE or not self.bounded:
            return stored
        return _link_result(self.wrapper, self.cache, stored)

    def lookup(self) -> Callable[[], Any]:
        """``cached_result`` as a guard reads it on every call. A bounded cache gives a link to
        another key (and maybe back to this one) only on a miss with the cache full; entries
        leave it only so, or all at once (``cache_clear``, which drops the links). So the link
        read before, found in a cache not full, holds what it held; in a full one, where the
        cache missed since (``misses``, which ``cache_info()`` reads slowly), it is read again."""
        cache, key = self.cache, self.key
        cache_get = cache.get
        if not self.bounded:
            return lambda: cache_get(key, _UNREADABLE)
        info, read = self.wrapper.cache_info, self.cached_result
        maxsize = self.wrapper.cache_parameters()["maxsize"]
        known: list[Any] = [_UNREADABLE, _UNREADABLE, -1]  # the link, its result, misses then

        def lookup() -> Any:
            link = cache_get(key, _UNREADABLE)
            if link is _UNREADABLE or (link is known[0] and len(cache) < maxsize):
                return known[1] if link is not _UNREADABLE else link
            misses = info().misses
            if link is not known[0] or misses != known[2]:
                known[:] = [link, read(), misses]
            return known[1]

        return lookup

    def assume_missing(self, tx: Translator) -> None:
        """Guard that the entry is still missing (the trace breaks at the call then)."""
        cache, key = self.cache, self.key
        label = ("lru_cache_missing", id(self.wrapper), repr(key))
        tx.output.assume_state(label, lambda: key not in cache, True)

    def assume_hit(self, tx: Translator, result: Any, folded: VariableTracker, made: bool) -> None:
        """The trace folded ``result``: guard that each later call finds it in this entry (else
        eager's call would run the body, or return another object), and make the call there
        for real after the graph, a hit, as eager's is (the cache counts it and, for a bounded
        cache, moves the entry up), in call order with the other cached calls. ``made``: this
        trace made the call (a miss), which is this call's: the replay skips its first run."""
        stored = self.cache.get(self.key, _UNREADABLE)
        if stored is _UNREADABLE:
            raise Unsupported("memoized_call", "an lru_cache'd call left no entry in its cache")
        # numbered in call order (the order of the guards' labels): nothing is called there
        number = int(tx.output.side_effects.new_name("").lstrip("_"))
        label = ("lru_cache_entry", f"{number:09d}", id(self.wrapper), repr(self.key))
        lookup = self.lookup()
        tx.output.assume_state(label, lambda: lookup() is result, True)
        call = _skip_first(self.wrapper, result) if made else self.wrapper
        key = (self.args, tuple(self.kwargs.items()))
        tx.output.side_effects.memo_call(call, self.args, self.kwargs, key, folded)


def _link_result(wrapper: Any, cache: dict, link: Any) -> Any:
    """The result ``link``, a link of ``wrapper``'s recency list, holds: the collector sees the
    wrapper's type, then each link's key, result and type, then the cache; the key object is the
    one ``cache`` holds ``link`` under."""
    stored = [k for k, v in cache.items() if v is link]
    referents = gc.get_referents(wrapper)
    for i in range(1, len(referents) - 2, 3):
        if stored and referents[i] is stored[0] and referents[i + 2] is type(link):
            return referents[i + 1]
    return _UNREADABLE


def _skip_first(wrapper: Any, result: Any) -> Callable[..., Any]:
    """``wrapper``, called by the replay, but not on its first run, the run of the call the
    trace made the wrapper's call for (a miss): that run gives what the call returned."""
    first = [result]

    def call(*args: Any, **kwargs: Any) -> Any:
        if first:
            return first.pop()
        return wrapper(*args, **kwargs)

    return call


def _key(args: list, kwargs: dict, typed: bool, mark: Any) -> Any:
    """CPython's ``lru_cache_make_key`` for a call: one exact int or str argument is its own key,
    other calls the tuple of the arguments, then ``mark`` and the keyword pairs, then (``typed``)
    the types of all the values."""
    if not typed and not kwargs:
        if len(args) == 1 and type(args[0]) in (int, str):
            return args[0]
        return tuple(args)
    key = [*args]
    if kwargs:
        key.append(mark)
        for name, value in kwargs.items():
            key += [name, value]
    if typed:
        key += [type(v) for v in [*args, *kwargs.values()]]
    return tuple(key)


def _effects_pending(effects: Any) -> bool:
    """The trace recorded an effect on what existed before it (replayed after the graph): a
    body run at trace time would run before it, where eager runs it after."""
    own = any(not effects.is_new(obj) for obj, _, _ in effects.attr_stores.values())
    return own or bool(
        effects.global_stores
        or effects.cell_stores
        or effects.mutated
        or effects.hook_removals
        or effects.calls
    )


@dataclass(eq=False)
class NewMemoizedVariable(VariableTracker):
    """An ``lru_cache`` wrapper made in the trace (``functools.cache(f)``, ``lru_cache(n)(f)``):
    its cache lives in the tracker, keyed as ``lru_cache`` keys its calls (the arguments as dict
    keys, ``1`` and ``True`` alike unless ``typed``; keyword arguments apart), so a call with
    arguments seen before gives the same result object and runs nothing, as in CPython, and at
    most ``maxsize`` results are kept, the least recently used dropped first. The wrapper cannot
    leave the trace (its cache has no real counterpart)."""

    fn: VariableTracker
    maxsize: int | None
    typed: bool
    cache: dict[Any, VariableTracker] = field(default_factory=dict)
    source: Source | None = None

    def python_type(self) -> type:
        return LRU_CACHE_WRAPPER

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name == "__wrapped__":
            return self.fn
        raise Unsupported(
            "getattr", f"attribute {name!r} of an lru_cache wrapper made in the trace"
        )

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.maxsize == 0 or any(map(_holds_symbol, [*args, *kwargs.values()])):
            # CPython's uncached wrapper: no key is made; or a symbolic number, no key either
            # (``_holds_symbol``): the function is traced, the cache left aside
            return dispatch.call(tx, self.fn, args, kwargs)
        key = self._key(args, kwargs)
        if key in self.cache:
            self.cache[key] = self.cache.pop(key)  # now the most recently used
            return self.cache[key]
        result = dispatch.call(tx, self.fn, args, kwargs)
        self.cache[key] = result
        if self.maxsize is not None and len(self.cache) > self.maxsize:
            del self.cache[next(iter(self.cache))]
        return result

    def _key(self, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Any:
        """CPython's ``lru_cache_make_key``: one exact int or str argument is its own key, other
        calls the tuple of the arguments, then a mark and the keyword pairs, then (``typed``)
        the types of all the values."""
        keys = [hash_key(a) for a in args]
        if not self.typed and not kwargs:
            if len(args) == 1 and args[0].is_python_constant():
                if type(args[0].as_python_constant()) in (int, str):
                    return keys[0]
            return tuple(keys)
        flat = keys
        if kwargs:
            flat.append(_KWD_MARK)
            for name, value in kwargs.items():
                flat += [name, hash_key(value)]
        if self.typed:
            flat += [v.python_type() for v in [*args, *kwargs.values()]]
        return tuple(flat)

    def reconstruct(self, cg: Codegen) -> None:
        raise Unsupported("reconstruct", "an lru_cache wrapper made in the trace leaves it")

    def __repr__(self) -> str:
        return f"NewMemoizedVariable({self.fn!r})"


_KWD_MARK = object()  #: between the positional and the keyword arguments of a key


@call_rule(polyfill_functools.cache_wrapper)
def cache_wrapper(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``lru_cache``'s wrapper of a function, made in the trace (its polyfill calls this)."""
    user_function, maxsize, typed = args
    if kwargs or not (maxsize.is_python_constant() and typed.is_python_constant()):
        return None
    return NewMemoizedVariable(
        user_function, maxsize.as_python_constant(), bool(typed.as_python_constant())
    )


def _argument(tx: Translator, vt: VariableTracker, name: str, pins: list) -> Any:
    """The real value of one argument: a constant, or an object hashed by identity, guarded where
    it has a source; where it is (part of) another cached call's result, the object that call
    returned, whose guard is added to ``pins``: a call taking this trace must get that object
    again (the key is its identity), not one alike."""
    if _holds_symbol(vt):  # before ``as_python_constant``, which would specialise it
        raise Unsupported("memoized_call", f"{name}() called with a symbolic number")
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if _immutable(value) or _static_size(vt, value):
            return value
    part = _cached_object(tx, vt)
    if part is not None and _by_identity(part[0]):
        pins.append(part[1])
        return part[0]
    value = getattr(vt, "value", None)
    source = getattr(vt, "source", None)
    if source is not None and value is not None and _by_identity(value):
        tx.output.assume_identity(source, value)
        return value
    raise Unsupported("memoized_call", f"{name}() called with {vt}, not a constant")


def _symbolic_key(items: list[VariableTracker]) -> tuple:
    """The arguments of a call with symbolic numbers as the trace tells them apart: a symbolic
    number by its graph node (one value), a constant by its value and type, a tuple or list by its
    items; anything else by its tracker."""
    key: list[Any] = []
    for vt in items:
        if isinstance(vt, SymNodeVariable):
            key.append(("node", vt.node))
        elif isinstance(vt, ConstantVariable) and _immutable(vt.value):
            key.append((type(vt.value), vt.value))
        elif isinstance(vt, (TupleVariable, ListVariable)):
            key.append((vt.python_type(), _symbolic_key(vt.items)))
        else:
            key.append(("tracker", id(vt)))
    return tuple(key)


def _freeze_symbolic(effects: Any, vt: VariableTracker, place: Source) -> bool:
    """``vt``, the result of a cached call's body traced on symbolic numbers, as the object the
    replay's call returns at ``place`` (``_freeze``, without specialising a number): constants,
    symbolic numbers, objects from before the call (the trace reads them where they live: einops'
    shapes hold the recipe's lists), and lists, tuples and dicts of them the body made. False for
    anything else the body made."""
    if isinstance(vt, SymNodeVariable):
        return True
    if isinstance(vt, ConstantVariable):
        return _immutable(vt.value)
    if id(vt) in effects.frozen or vt.source is not None:
        return True  # shared within the result; an object from before the call (itself)
    if type(vt) in PLAIN_DICTS and vt.default_factory is None:
        if not all(is_key_value(k) for k in vt.items):
            return False
        items = [(key_value(k), v) for k, v in vt.items.items()]
    elif type(vt) in (ListVariable, TupleVariable) and vt.python_type() in (list, tuple):
        items = list(enumerate(vt.items))
    else:
        return False
    effects.freeze(vt, place)
    vt.source = place
    return all([_freeze_symbolic(effects, v, ItemSource(place, k)) for k, v in items])


def _holds_symbol(vt: VariableTracker) -> bool:
    """A symbolic number, or a tuple or list (a ``torch.Size``) holding one: no key of the cache.
    torch's ``SymInt`` is unhashable (an lru_cache called with one raises ``TypeError``); made
    into a key, it would be specialised to its value now, and the trace guarded on it, one variant
    per value (einops' ``_reconstruct_from_shape(recipe, x.shape, ...)``). The wrapped function is
    traced instead, keeping it symbolic, as torch.compile does."""
    if isinstance(vt, SymNodeVariable):
        return True
    items = getattr(vt, "items", None)
    return isinstance(items, (list, tuple)) and any(_holds_symbol(i) for i in items)


def _static_size(vt: VariableTracker, value: Any) -> bool:
    """A ``torch.Size`` whose sizes are all plain ints in the trace (none symbolic): immutable,
    hashed and compared as the tuple of its ints."""
    items = getattr(vt, "items", None)
    return type(value) is torch.Size and items is not None and all(map(_plain_int, items))


def _plain_int(vt: VariableTracker) -> bool:
    return isinstance(vt, ConstantVariable) and type(vt.value) is int


def _by_identity(value: Any) -> bool:
    """Hashed and compared by identity: as an ``lru_cache`` key, it is that object alone."""
    return type(value).__hash__ is object.__hash__ and type(value).__eq__ is object.__eq__


def _cached_object(tx: Translator, vt: VariableTracker) -> tuple[Any, Any] | None:
    """The real object ``vt`` stands for where it is a part of a cached call's result (the trace
    may not change it: it is frozen), and that call's guard; else None."""
    for part, part_vt, guard in tx.output.side_effects.cached_parts.values():
        if part_vt is vt:
            return part, guard
    return None


_UNREADABLE = object()  #: the state of a value ``_state_of`` cannot read without running code


def _memo_state(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """What ``fn(*args, **kwargs)`` holds now (``_state_of``), for the guard on a cached result."""
    try:
        return _state_of(fn(*args, **kwargs))
    except Exception:  # noqa: BLE001 (the guard fails; the call raises again in the trace)
        return _UNREADABLE


def _state_of(value: Any, budget: list[int] | None = None, seen: dict | None = None) -> Any:
    """The contents of ``value`` as a tree of constants, read without running the user's code:
    constants, builtin lists, tuples and dicts, and objects by their type and ``__dict__``; at most
    ``_STATE_ITEMS`` values (a guard reads it on every call). A part that is no constant and was
    met before reads as ``(_SAME, n)``, ``n`` counting such parts in the order met, so two
    states are equal only where the same parts are one object (``a.x is a.y`` is read too)."""
    budget = [_STATE_ITEMS] if budget is None else budget
    seen = {} if seen is None else seen
    budget[0] -= 1
    if budget[0] < 0:
        return _UNREADABLE
    kind = type(value)
    if kind in CONSTANT_TYPES and kind is not frozenset:
        return (kind, value)
    if id(value) in seen:
        return (_SAME, seen[id(value)])
    if kind is not tuple or not _immutable(value):  # (a constant's identity is not modelled)
        seen[id(value)] = len(seen)
    if kind in (list, tuple):
        items = tuple(_state_of(v, budget, seen) for v in value)
        return _UNREADABLE if any(v is _UNREADABLE for v in items) else (kind, items)
    namespace = value
    if kind is not dict:
        descriptor = _dict_descriptor(kind)
        namespace = descriptor.__get__(value, kind) if descriptor is not None else None
        if type(namespace) is not dict:
            return _UNREADABLE
    if not all(type(k) in (int, str) for k in namespace):
        return _UNREADABLE
    items = tuple((k, _state_of(v, budget, seen)) for k, v in namespace.items())
    if any(v is _UNREADABLE for _, v in items):
        return _UNREADABLE
    return (kind, (dict, items)) if kind is not dict else (dict, items)


_SAME = "same"  #: marks a part met before in a ``_state_of`` (no type, so no other state)
_STATE_ITEMS = 2000


def _dict_descriptor(kind: type) -> Any:
    """The descriptor of the plain instance dict of ``kind``'s objects (their whole state, for
    ``_state_of``); None for objects of a C type or of a class over one (a function, a list
    subclass's object: their state is elsewhere too), or where slots hold state beside the dict."""
    if any(not c.__flags__ & _HEAP_TYPE or "__slots__" in vars(c) for c in kind.__mro__[:-1]):
        return None
    descriptor = type_lookup(kind, "__dict__")
    return descriptor if isinstance(descriptor, types.GetSetDescriptorType) else None


_HEAP_TYPE = 1 << 9  #: ``Py_TPFLAGS_HEAPTYPE``: a class made by a class statement or ``type()``


#: scalars whose ``==`` is C code comparing values of that exact type (a slice's compares what
#: it holds, any objects: it is read as a container)
_VALUE_TYPES = tuple(t for t in CONSTANT_TYPES if t not in (frozenset, slice))


def _same(now: Any, then: Any, kind: type | None) -> bool:
    """``now`` is ``then``, or both are scalars of the exact type ``kind`` (one of
    ``_VALUE_TYPES``, or None) and equal."""
    return now is then or (kind is not None and type(now) is kind and now == then)


class _CachedObjectGuard:
    """The guard on an ``lru_cache``'d object the trace read (``getter``, of ``assume_state``):
    true while the object the cache holds for the call (read without calling the wrapper) has
    the ``_state_of`` the trace saw. Building that state on every call costs more than many
    graphs, so the guard first checks what implies it, without building anything: the cache
    holds the object the guard holds (so that its identity stays meaningful), and each mutable
    part of that object (``nodes``: a list, a dict, an object's type and instance dict) still
    holds the same items, scalars compared by exact type and value (``1``, ``True`` and ``1.0``
    apart), anything else by identity (a node itself, or immutable with its parts nodes), so no
    user ``__eq__`` runs. Where that fails (the object was
    dropped and made again, a part replaced by an equal one, or changed) the states are compared,
    and a new object found alike is held in its place, unless the trace assumed the identity of a
    part (``pinned``). Once a call finds the object held and unchanged, ``check`` is the first
    test written out for it (``_check_source``: each item by identity, one line each), the loops
    of ``_unchanged`` only where an item differs."""

    __slots__ = (
        "lookup",
        "args",
        "state",
        "held",
        "pinned",
        "check",
        "written",
        "getter",
    )

    def __init__(self, lookup: Callable[[], Any], args: tuple, state: Any, root: Any) -> None:
        #: what the cache holds for the call now, read without calling the wrapper (a call
        #: counts in ``cache_info()``, and a miss would run the body): ``_CacheEntry.lookup``
        self.lookup, self.args, self.state = lookup, args, state
        #: the trace found a part of the object under another name (``cached_part``): only that
        #: object, with the same parts, is the one the trace read (no other found alike)
        self.pinned = False
        #: ``(root, nodes)``, replaced as one (a thread reads one pair); each node is ``(obj,
        #: kind, descriptor, keys, items, scalar types of items)``: ``obj`` a list (``keys``
        #: None), a dict, or an object of type ``kind`` read through ``descriptor``
        self.held: tuple[Any, list[tuple]] = (_UNREADABLE, [])
        #: ``() -> bool``: the guard (the pair it reads is its own: ``held`` may change meanwhile)
        self.check: Callable[[], bool] = self._call_and_settle
        self.written = 0  #: how many times ``check`` was written out (``_check_source``)
        self._hold(root)
        #: the guard as the guard function calls it: a plain function calling ``check`` (an
        #: object's ``__call__`` costs more than the written check itself)
        self.getter: Callable[[], bool] = exec_function(
            "def ___cached_object():\n    return ___guard.check()\n",
            "___cached_object",
            {"___guard": self},
            "<bytegraph lru_cache guard>",
        )
        self.getter.cached_object_guard = self

    @staticmethod
    def of(getter: Callable[[], Any]) -> _CachedObjectGuard | None:
        """The guard whose ``getter`` is ``getter`` (a ``GLOBAL_STATE`` guard's), or None."""
        guard = getattr(getter, "cached_object_guard", None)
        return guard if isinstance(guard, _CachedObjectGuard) else None

    def _hold(self, root: Any) -> None:
        """Check ``root`` by its nodes from now on (where they can all be read: else states)."""
        nodes: list[tuple] = []
        self.held = (root, nodes) if _add_nodes(root, nodes, set()) else (_UNREADABLE, [])
        self.check = self._call_and_settle

    def _call_and_settle(self) -> bool:
        """The guard where ``check`` is not written out: written out for the object held once a
        call finds it held and unchanged (an object the cache keeps), at most ``_CHECK_WRITTEN``
        times (an object whose scalars are replaced on every call keeps this one)."""
        root = self.lookup()
        held, nodes = self.held
        if not self._settle(root):
            return False
        if root is held and self.written < _CHECK_WRITTEN and len(nodes) <= _CHECK_NODES:
            self.written += 1
            self.check = _written_check(self, root, nodes)
        return True

    def _recheck(self, root: Any) -> bool:
        """The guard where the written ``check`` found ``root`` not as held item by item. Where
        it is held and unchanged still (an item replaced by an equal scalar) its items are read
        again, and the check written again on a later call."""
        held = self.held[0]
        if not self._settle(root):
            return False
        if root is held:
            self._hold(root)
        return True

    def _settle(self, root: Any) -> bool:
        """The guard for ``root``, the object the wrapper returned."""
        if root is _UNREADABLE:  # not cached: eager's call runs the body
            return False
        try:
            held, nodes = self.held
            if root is held and _unchanged(nodes):
                return True
            if self.pinned or _state_of(root) != self.state:
                return False
        except Exception:  # noqa: BLE001 (the guard fails; the call raises again in the trace)
            return False
        self._hold(root)
        return True


def _written_check(guard: _CachedObjectGuard, root: Any, nodes: list[tuple]) -> Any:
    """``guard.check`` for ``root`` and its ``nodes`` (``_check_source``)."""
    source, closure = _check_source(guard, root, nodes)
    return exec_function(source, "___check", closure, "<bytegraph lru_cache guard>")


_CHECK_NODES = 64  #: the most nodes a check is written out for (one line per item or so)
_CHECK_ITEMS = 8  #: the most items of one node read one by one (more: ``map(is_, ...)``)
_CHECK_WRITTEN = 4  #: the most times one guard's check is written out


def _check_source(guard: _CachedObjectGuard, root: Any, nodes: list[tuple]) -> tuple[str, dict]:
    """The source of ``guard.check`` (the cache read, ``guard.lookup``; its result the held
    ``root``, each node holding its items by identity, else ``guard._recheck``) and its closure
    values. The text depends only on the shape of the nodes, so objects alike share the compiled
    code (``exec_function``)::

        def ___check():
            ___r = ___w()
            try:
                if ___r is ___root and (type(___n0) is ___K0
                        and type(___d0 := ___get0(___n0)) is ___dict and len(___d0) == 2
                        and all(map(___is, ___d0, ___keys0))
                        and ___d0[___k0_0] is ___v0_0 and ___d0[___k0_1] is ___v0_1
                        and not ___n1 and ...):
                    return True
            except Exception:
                pass
            return ___recheck(___r)
    """
    closure: dict[str, Any] = {
        "___w": guard.lookup,
        "___root": root,
        "___recheck": guard._recheck,
        "___is": operator.is_,
        "___dict": dict,
    }
    tests = ["___r is ___root"]
    for i, (obj, kind, descriptor, keys, items, _) in enumerate(nodes):
        node = f"___n{i}"
        closure[node] = obj
        if descriptor is not None:
            closure[f"___K{i}"], closure[f"___get{i}"] = kind, descriptor.__get__
            tests.append(f"type({node}) is ___K{i}")
            tests.append(f"type(___d{i} := ___get{i}({node})) is ___dict")
            node = f"___d{i}"
        tests.extend(_node_tests(closure, i, node, keys, items))
    body = "\n                    and ".join(tests)
    source = (
        "def ___check():\n"
        "    ___r = ___w()\n"
        "    try:\n"
        f"        if ({body}):\n"
        "            return True\n"
        "    except Exception:\n"
        "        pass\n"
        "    return ___recheck(___r)\n"
    )
    return source, closure


def _node_tests(closure: dict, i: int, node: str, keys: tuple | None, items: tuple) -> list[str]:
    """The tests that the node read as ``node`` (a list where ``keys`` is None, else a dict)
    holds ``items`` (and ``keys``, in order) by identity; the values they read go in
    ``closure``."""
    if not items:
        return [f"not {node}"]
    tests = [f"len({node}) == {len(items)}"]
    if keys is not None:
        closure[f"___keys{i}"] = keys
        tests.append(f"all(map(___is, {node}, ___keys{i}))")
    if len(items) > _CHECK_ITEMS:
        closure[f"___items{i}"] = items
        values = node if keys is None else f"{node}.values()"
        return [*tests, f"all(map(___is, {values}, ___items{i}))"]
    for j, item in enumerate(items):
        closure[f"___v{i}_{j}"] = item
        if keys is None:
            tests.append(f"{node}[{j}] is ___v{i}_{j}")
        else:  # its keys are the held ones, in order (just tested): no user ``__eq__`` runs
            closure[f"___k{i}_{j}"] = keys[j]
            tests.append(f"{node}[___k{i}_{j}] is ___v{i}_{j}")
    return tests


def _unchanged(nodes: list[tuple]) -> bool:
    """Each node (``_CachedObjectGuard.held``) holds the items it held."""
    is_ = operator.is_
    for obj, kind, descriptor, keys, items, kinds in nodes:
        if descriptor is not None:
            if type(obj) is not kind:
                return False
            obj = descriptor.__get__(obj, kind)
            if type(obj) is not dict:
                return False
        if len(obj) != len(items):
            return False
        now = obj if keys is None else obj.values()
        if not (all(map(is_, now, items)) or all(map(_same, now, items, kinds))):
            return False
        if keys is not None and not all(map(is_, obj, keys)):
            if not all(map(_same, obj, keys, map(type, keys))):
                return False
    return True


def _add_nodes(value: Any, nodes: list, seen: set[int]) -> bool:
    """Add the mutable parts of ``value`` to ``nodes`` (``_CachedObjectGuard.held``), each once;
    False where a part is none of those ``_state_of`` reads."""
    kind = type(value)
    if kind in _VALUE_TYPES or id(value) in seen:
        return True
    seen.add(id(value))
    if kind in (tuple, slice):  # immutable: only their parts can change
        parts = value if kind is tuple else (value.start, value.stop, value.step)
        return all(_add_nodes(v, nodes, seen) for v in parts)
    descriptor = None
    if kind is list or kind is dict:
        mapping = value
    else:
        descriptor = _dict_descriptor(kind)
        mapping = descriptor.__get__(value, kind) if descriptor is not None else None
        if type(mapping) is not dict:
            return False
    keys = None
    if kind is not list:
        keys = tuple(mapping)
        if not all(type(k) in (int, str) for k in keys):
            return False
    items = tuple(mapping) if kind is list else tuple(mapping.values())
    scalars = tuple(type(v) if type(v) in _VALUE_TYPES else None for v in items)
    nodes.append((value, kind, descriptor, keys, items, scalars))
    return all(_add_nodes(v, nodes, seen) for v in items)


def _cached_in_trace(effects: Any, wrapper: Any, key: Any) -> VariableTracker | None:
    """The tracker an earlier call of ``wrapper`` with ``key`` in this trace returned, if
    ``lru_cache`` still holds it: fewer than ``maxsize`` other keys called since (each a hit moving
    it up or a miss adding it; at ``maxsize`` more recent keys it is gone)."""
    maxsize = wrapper.cache_parameters()["maxsize"]
    others: set[Any] = set()
    for fn, k, vt in reversed(effects.memo_results):
        if fn is not wrapper:
            continue
        if k == key:
            return vt if maxsize is None or len(others) < maxsize else None
        others.add(k)
    return None


#: lru_cache wrapper -> {``_record_key`` of a call's key: (the ``_state_of`` of the result its
#: body made when a trace ran it, found to have no effects and to make the cached object; the
#: guards that trace of the body asked for)}; a later trace finding the cached object in that
#: state builds its trackers from it and installs those guards (``_rebuilt``)
_VERIFIED: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def _portable(tx: Translator, log: list[Guard]) -> tuple[Guard, ...] | None:
    """The guards of a body's trace (``log``) as any frame's trace can install them: global
    state, and values read through module globals (``G[...]`` of the frame traced, a module's
    globals, read as ``M[module][...]``). A body whose result is built again without tracing it
    must still depend on what it read (a global flag making it effectful: eager runs its effect
    in program order, the wrapper's guard would run it before the call on a miss). None where
    one is read otherwise (through a closure, an argument): no record then. A guard comparing
    two sources (``DUPLICATE_INPUT``: einops' ``ParsedExpression`` read through two modules) is
    portable where both are."""
    name = tx.root.f_globals.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    home = name if getattr(module, "__dict__", None) is tx.root.f_globals else None
    portable = []
    for guard in dict.fromkeys(log):
        if guard.source is None:
            if isinstance(guard.arg, tuple) and _CachedObjectGuard.of(guard.arg[1]) is not None:
                return None  # another cached call's: its guard holds that trace's object
            portable.append(guard)
            continue
        source = _rooted_at_module(guard.source, home)
        if source is None:
            return None
        if isinstance(guard.arg, Source):  # a second source, rooted at a module too
            other = _rooted_at_module(guard.arg, home)
            if other is None:
                return None
            portable.append(guard.kind(source, other))
            continue
        portable.append(replace(guard, source=source))
    return tuple(portable)


def _rooted_at_module(source: Source, home: str | None) -> Source | None:
    """``source`` rooted at ``M[module]`` (``G`` being ``home``'s globals), or None."""
    if isinstance(source, ModuleGlobalSource):
        return source
    if isinstance(source, GlobalSource):
        return ModuleGlobalSource(home, source.name) if home is not None else None
    if isinstance(source, GlobalsSource):  # a name the body found in builtins: still not here
        module = source.module or home
        return GlobalsSource(module) if module is not None else None
    if type(source) in (AttrSource, ItemSource, DictItemSource, DictValueSource, TypeSource):
        base = _rooted_at_module(source.base, home)
        return replace(source, base=base) if base is not None else None
    return None


def _record_key(key: Any) -> Any:
    """``key`` with the type of each value (``1`` and ``True`` are one ``lru_cache`` key, whose
    body may yet tell them apart), or ``_UNREADABLE``. An argument hashed by identity (einops'
    recipe given to ``_reconstruct_from_shape``) is recorded by its identity and its contents
    (``_state_of``, read now): the body's trace read them, so the same object holding the same
    contents makes the same trace (an id reused by another object must hold the same contents
    too)."""
    if _immutable(key):
        return _state_of(key)
    args, kwargs = key
    values = (*args, *(v for _, v in kwargs))
    objects = [v for v in values if not _immutable(v) and not _static(v)]
    if not all(map(_by_identity, objects)):
        return _UNREADABLE
    budget, seen = [_STATE_ITEMS], {}
    # a static ``torch.Size`` (``_argument``) by its ints; the rest as ``_state_of`` reads them
    states = [(torch.Size, v) if _static(v) else _state_of(v, budget, seen) for v in values]
    if any(state is _UNREADABLE for state in states):
        return _UNREADABLE
    return (tuple(states), tuple(k for k, _ in kwargs), tuple(map(id, objects)))


def _static(value: Any) -> bool:
    """A ``torch.Size`` of ints (the only ones ``_argument`` gives a cached call)."""
    return type(value) is torch.Size and all(type(v) is int for v in value)


def _rebuilt(
    tx: Translator, wrapper: Any, record: Any, result: Any, state: Any
) -> tuple[VariableTracker, tuple[Guard, ...]] | None:
    """The trackers of ``result``, the cached object, built from it where a trace of this
    process ran the body for this key and found it in the state it has now (``_VERIFIED``), and
    the guards of that trace of the body, installed: the trace depends only on that state, which
    ``_CachedObjectGuard`` checks on every call as it does for a traced body's result, and on
    what the body read. None where it was not, or where the builder cannot make the body's
    trackers exactly (``_build``)."""
    verified = _VERIFIED.get(wrapper, {}).get(record)
    if state is _UNREADABLE or verified is None or verified[0] != state:
        return None
    if GuardSet(list(verified[1])).first_failure({}) is not None:
        return None  # what the body read changed: it is traced again
    effects = tx.output.side_effects
    snapshot = effects.snapshot()
    try:
        vt = _build(tx, result, {})
    except (Unsupported, PythonError):
        effects.restore(snapshot)
        return None
    for guard in verified[1]:  # what the body's trace read (a module's global flag...)
        tx.output.add_guard(guard)
    return vt, verified[1]


def _build(tx: Translator, value: Any, built: dict[int, VariableTracker]) -> VariableTracker:
    """A tracker for ``value``, a part of a cached object whose parts its body made or another
    cached call's result holds (``_freeze`` found no other; such a part is that call's tracker in
    this trace), as the trace of the body makes it: constants; new lists, tuples and dicts;
    objects of a module's class with a plain instance dict as new objects of it holding their
    attributes. ``built`` (id -> tracker) makes a shared part once, so ``is`` holds. Raises
    Unsupported for anything else."""
    kind = type(value)
    parts = (value.start, value.stop, value.step) if kind is slice else value
    if kind in CONSTANT_TYPES and _immutable(parts):
        return ConstantVariable(value)
    if id(value) in built:
        return built[id(value)]
    held = tx.output.side_effects.cached_parts.get(id(value))
    if held is not None and held[0] is value and held[1] is not None:
        return held[1]  # another cached call's part (its tracker, frozen): one object, one tracker
    if kind is tuple:
        vt = TupleVariable([_build(tx, v, built) for v in value])
    elif kind is list:
        vt = ListVariable([_build(tx, v, built) for v in value])
    elif kind is dict and all(type(k) in (int, str) for k in value):
        vt = DictVariable({k: _build(tx, v, built) for k, v in value.items()})
    else:
        vt = _build_object(tx, value, built)
    built[id(value)] = vt
    return vt


def _build_object(tx: Translator, value: Any, built: dict[int, VariableTracker]) -> VariableTracker:
    """``value``, an object whose whole state is its instance dict, as a new object of its class
    (``object.__new__``'s rule: plain classes only) with its attributes stored. Its class is read
    where it lives, a global of its module, and guarded to have no attribute of those names, as
    the stores of the body's trace guard it (a data descriptor added later would be read instead
    of the dict; one there now: the full path)."""
    kind = type(value)
    descriptor = _dict_descriptor(kind)
    module = sys.modules.get(kind.__module__)
    if descriptor is None or getattr(module, "__dict__", {}).get(kind.__qualname__) is not kind:
        raise Unsupported("memoized_call", f"a cached {kind.__name__} object is not rebuilt")
    attributes = descriptor.__get__(value, kind)
    if any(type_lookup(kind, name) is not MISSING for name in attributes):
        raise Unsupported("memoized_call", f"{kind.__name__} has class attributes of its names")
    cls_vt = tx.wrap(kind, ModuleGlobalSource(kind.__module__, kind.__qualname__))
    if cls_vt.source is None:
        raise Unsupported("memoized_call", f"the class {kind.__name__} has no source")
    tx.output.assume_class_lacks(cls_vt.source, tuple(attributes))
    obj = dispatch.call(tx, tx.wrap_static(object.__new__), [cls_vt], {})
    built[id(value)] = obj
    effects = tx.output.side_effects
    for name, item in attributes.items():
        effects.store_attr(obj, name, _build(tx, item, built))
    return obj


def _freeze(effects: Any, vt: VariableTracker, place: Source) -> bool:
    """Mark ``vt`` and what it holds that the body made as the real objects at ``place``: the
    trace may not change them, and where they escape they are read from there. True where all
    of it was made by this call's body or is a part of another cached call's result (frozen
    already), nothing from before the call."""
    if vt.is_python_constant() and _immutable(vt.as_python_constant()):
        return True
    if id(vt) in effects.frozen:  # shared within this result, or another cached call's part
        return True  # (einops' cooked recipe holds its recipe's list): ``_build`` reuses it
    if vt.source is not None:
        return False  # an object from before the call is rebuilt from where it lives
    effects.freeze(vt, place)
    if effects.is_new(vt):  # an object the body made: what its attributes hold
        stores = [(attr, v) for obj, attr, v in effects.attr_stores.values() if obj is vt]
        return all([_freeze(effects, v, AttrSource(place, attr)) for attr, v in stores])
    if isinstance(vt, (ListVariable, TupleVariable)):
        vt.source = place
        return all([_freeze(effects, v, ItemSource(place, i)) for i, v in enumerate(vt.items)])
    if type(vt) in PLAIN_DICTS and vt.default_factory is None:
        vt.source = place
        if not all(is_key_value(k) for k in vt.items):
            raise Unsupported("memoized_call", "an lru_cache'd result holds a dict with such keys")
        items = vt.items.items()
        return all([_freeze(effects, v, ItemSource(place, key_value(k))) for k, v in items])
    raise Unsupported(
        "memoized_call",
        f"an lru_cache'd result holds a {vt.python_type().__name__} made in its body",
    )


def _parts(
    tx: Translator, vt: VariableTracker, result: Any
) -> list[tuple[Any, VariableTracker | None]]:
    """The parts of ``result``, the cached object, that are no constants, each with its tracker
    in ``vt`` (the body's trace or ``_build``; an object's instance dict with none), read side by
    side: one real object must have one tracker. Raises Unsupported where a part was given
    another tracker before the call (reached through another name: that tracker may hold changes
    the result's does not) or where the trackers share otherwise than the parts."""
    pairs: dict[int, tuple[Any, VariableTracker | None]] = {}
    _pair(tx, vt, result, pairs, {})
    return list(pairs.values())


def _pair(
    tx: Translator,
    vt: VariableTracker,
    value: Any,
    pairs: dict[int, tuple[Any, VariableTracker | None]],
    owners: dict[int, Any],
) -> None:
    """Add ``value`` (``vt``) and its parts to ``pairs`` (``_parts``); ``owners``: id(tracker)
    -> its part."""
    if _immutable(value):
        return
    known = pairs.get(id(value))
    if known is not None or id(vt) in owners:
        if known is None or known[1] is not vt or owners[id(vt)] is not value:
            raise Unsupported(
                "memoized_call", "an lru_cache'd object shares parts unlike its trace"
            )
        return
    effects = tx.output.side_effects
    held = effects.cached_parts.get(id(value)) or tx.output.wrapped.get(id(value))
    if held is not None and held[0] is value:
        if held[1] is not vt:
            raise Unsupported(
                "memoized_call",
                f"a {type(value).__name__} of an lru_cache'd object was read before the call",
            )
        return  # another cached call's part, or an object from before the call, tracked already
    pairs[id(value)] = (value, vt)
    owners[id(vt)] = value
    kind = type(value)
    if kind in (list, tuple) and isinstance(vt, (ListVariable, TupleVariable)):
        if len(vt.items) == len(value):
            for item_vt, item in zip(vt.items, value, strict=True):
                _pair(tx, item_vt, item, pairs, owners)
            return
    elif kind is dict and type(vt) in PLAIN_DICTS and all(map(is_key_value, vt.items)):
        items = {key_value(k): v for k, v in vt.items.items()}
        if list(items) == list(value):
            for key, item in value.items():
                _pair(tx, items[key], item, pairs, owners)
            return
    elif effects.is_new(vt) and (descriptor := _dict_descriptor(kind)) is not None:
        namespace = descriptor.__get__(value, kind)
        stored = {name: effects.load_attr(vt, name) for name in namespace}
        if None not in stored.values():
            _pair_namespace(tx, namespace, pairs)
            for name, item in namespace.items():
                _pair(tx, stored[name], item, pairs, owners)
            return
    raise Unsupported("memoized_call", f"a {kind.__name__} of an lru_cache'd object is not read")


def _pair_namespace(tx: Translator, namespace: dict, pairs: dict[int, tuple]) -> None:
    """The instance dict of an object of the result, filed with no tracker: the trace reads the
    object's attributes from its own stores, so the dict reached as a dict (``vars(o)`` kept in
    a global) would be a second model of them."""
    held = tx.output.side_effects.cached_parts.get(id(namespace))
    known = tx.output.wrapped.get(id(namespace))
    if held is None and known is not None and known[0] is namespace:
        raise Unsupported(
            "memoized_call", "the instance dict of an lru_cache'd object was read before the call"
        )
    if held is None:
        pairs[id(namespace)] = (namespace, None)


def cached_part(
    tx: Translator, entry: tuple[Any, VariableTracker | None, Any], source: Source
) -> VariableTracker:
    """A part of a cached call's result (``SideEffects.cached_parts`` ``entry``) reached again
    through ``source``: its tracker (frozen: a change through either name breaks). The trace
    now assumes ``source`` is that part: its identity is guarded, and the call's guard takes no
    other object alike in place of the cached one (``pinned``): it would not hold this part.
    An object's instance dict (no tracker) breaks."""
    part, vt, guard = entry
    if vt is None:
        raise Unsupported(
            "memoized_call", f"{source.expr} is the instance dict of an lru_cache'd object"
        )
    if not isinstance(source.root, (ConstSource, FreshSource)):
        tx.output.assume_identity(source, part)
    guard.pinned = True
    return vt


def wrapped_alike(tx: Translator, value: Any) -> None:
    """``value``, no part of a cached call's result, was wrapped at a source. The trace takes it
    apart from those parts; but where it is of a part's type, a later call may find the cached
    object made again (``lru_cache`` cleared) with ``value`` reached there as its part: that
    call's guard takes no other object alike then (``pinned``)."""
    kind = type(value)
    for part, _, guard in tx.output.side_effects.cached_parts.values():
        if type(part) is kind:
            guard.pinned = True


def _immutable(value: Any) -> bool:
    """A constant, an immutable C value (a compiled pattern), a C method bound to either
    (``fnmatch``'s cached ``re.compile(p).match``), or a tuple or frozenset of them."""
    if type(value) in (tuple, frozenset):
        return all(_immutable(v) for v in value)
    if isinstance(value, types.BuiltinMethodType) and not isinstance(value.__self__, type):
        value = value.__self__
    return type(value) in CONSTANT_TYPES or type(value) in IMMUTABLE_C_KINDS


# ``functools.singledispatch``: its ``dispatch(cls)`` is a function of the class alone, given the
# registry (a dict keyed by classes, changed only by ``register``) and, where the registry holds an
# abstract class, the ``abc`` cache token (``register`` of a virtual subclass bumps it). Its caches
# are weak-keyed dicts, which the trace does not model; so the call is made for real at trace time
# on a class the trace knows (the effect is the eager call's own: the cache filled), and its result
# is the registry's value, read through the function's closure. The registry is guarded (its keys,
# each value's identity) and so is the token where the lookup reads it: a later ``register``
# changes a guarded value and the next call traces again.
_SINGLEDISPATCH_CODE = functools.singledispatch(lambda x: x).dispatch.__code__


def _singledispatch_call(
    tx: Translator,
    fn: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """``dispatch(cls)`` of a singledispatch function, on a class known at trace time."""
    if kwargs or len(args) != 1 or fn.source is None or fn.self_vt is not None:
        return None
    if not args[0].is_python_constant() or not isinstance(args[0].as_python_constant(), type):
        return None
    real = fn.fn
    cells = dict(zip(real.__code__.co_freevars, real.__closure__, strict=True))
    registry = cells["registry"].cell_contents
    try:
        impl = real(args[0].as_python_constant())
    except Exception:  # noqa: BLE001 (an ambiguous MRO: the call raises it again, in Python)
        return None
    chosen = next((i for i, v in enumerate(registry.values()) if v is impl), None)
    if type(registry) is not dict or chosen is None:
        return None
    registry_vt = fn.closure_value(tx, "registry")  # its keys and values guarded
    if not isinstance(registry_vt, DictVariable) or len(registry_vt.items) != len(registry):
        return None
    if cells["cache_token"].cell_contents is not None:  # the registry holds an abstract class
        token = CallSource(ModuleGlobalSource("abc", "get_cache_token"))
        tx.output.assume_equal(token, abc.get_cache_token())
    return list(registry_vt.items.values())[chosen]


CALL_HOOKS[_SINGLEDISPATCH_CODE] = _singledispatch_call


# ``functools.singledispatchmethod.__get__`` where the descriptor caches the method it makes for
# each instance in a weak-keyed dict (``_method_cache``, Python 3.13; None once an instance could
# not key it): the trace does not model that dict, so ``__get__`` is called for real at trace time
# on the instance, as ``dispatch`` above (the effect is the eager call's own: the cache filled, and
# every later ``__get__`` gives the same method). The method is read again through the same call,
# which gives the cached object. Without a cache ``__get__`` is inlined as written.
def _singledispatchmethod_get(
    tx: Translator,
    fn: UserFunctionVariable,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker | None:
    """``descriptor.__get__(obj, cls)`` of a caching singledispatchmethod, ``obj`` an existing
    object and ``cls`` a class, both known at trace time."""
    descriptor_vt = fn.self_vt
    descriptor = getattr(descriptor_vt, "value", None)
    if kwargs or len(args) != 2 or descriptor_vt.source is None:
        return None
    if not isinstance(descriptor, functools.singledispatchmethod):
        return None
    obj_vt, cls_vt = args
    obj = getattr(obj_vt, "value", None)
    if getattr(descriptor, "_method_cache", None) is None or obj is None or obj_vt.source is None:
        return None
    if type(obj) is not obj_vt.python_type() or cls_vt.source is None:
        return None
    if not cls_vt.is_python_constant() or not isinstance(cls_vt.as_python_constant(), type):
        return None
    try:
        method = descriptor.__get__(obj, cls_vt.as_python_constant())
    except Exception:  # noqa: BLE001 (raises again in Python)
        return None
    get = AttrSource(descriptor_vt.source, "__get__")
    return tx.wrap(method, CallSource(get, (obj_vt.source, cls_vt.source)))


_singledispatchmethod_get.accepts_bound = True  # type: ignore[attr-defined]
CALL_HOOKS[functools.singledispatchmethod.__get__.__code__] = _singledispatchmethod_get


# ``staticmethod(v)`` and ``classmethod(v)`` made in the trace, of any value: the wrapper CPython
# makes, whose ``__func__`` (and ``__wrapped__``) is ``v`` itself; a staticmethod object calls it.
@dataclass(eq=False)
class MethodDescriptorObjectVariable(VariableTracker):
    """A ``staticmethod`` or ``classmethod`` object made in the trace around ``func``'s value;
    rebuilt once (one object however often it is returned)."""

    kind: type  #: ``staticmethod`` or ``classmethod``
    func: VariableTracker
    source: Source | None = None

    def python_type(self) -> type:
        return self.kind

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("__func__", "__wrapped__"):
            return self.func
        if name == "__class__":
            return tx.wrap_static(self.kind)
        raise Unsupported("getattr", f"attribute {name!r} of a {self.kind.__name__} object")

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.kind is not staticmethod:
            raise PythonError(TypeError(f"'{self.kind.__name__}' object is not callable"))
        return dispatch.call(tx, self.func, args, kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        def build() -> None:
            cg.push_callable(lambda: cg.load_const(self.kind))
            self.func.reconstruct(cg)
            cg.call(1)

        cg.build_once(self, build)


def _wrapper_of(kind: type) -> Callable[..., VariableTracker]:
    def wrap(tx: Translator, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        if kwargs:
            raise PythonError(TypeError(f"{kind.__name__}() takes no keyword arguments"))
        if len(args) != 1:
            message = f"{kind.__name__} expected 1 argument, got {len(args)}"
            raise PythonError(TypeError(message))
        return MethodDescriptorObjectVariable(kind, args[0])

    return wrap


builtin(staticmethod)(_wrapper_of(staticmethod))
builtin(classmethod)(_wrapper_of(classmethod))
