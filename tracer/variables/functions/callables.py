"""Callables: user Python functions (inlined), functions made during the trace, builtins, torch ops.

``UserFunctionVariable`` wraps a real Python function (guarded by identity when it came from an
input or global); ``NestedFunctionVariable`` is a closure created by ``MAKE_FUNCTION`` inside the
trace. Both are inlined by ``tx.inline_call`` (a generator function's call gives a lazily run
``GeneratorVariable``). ``BuiltinVariable`` routes to ``dispatch`` (torch's callables are
``torch_calls.torch_functions.TorchVariable``). ``PartialVariable`` is a ``functools.partial``.
Closure cells are in ``cells.py``.
"""

from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....codegen.pyversion import FUNCTIONS_HAVE_TYPE_PARAMS
from ....guards.sources import AttrSource, ItemSource, Source
from ...exc import PythonError, Unsupported
from ...liveness import code_cell_writes
from ...markers import REBUILT, graph_break
from ..base import BoundAttributeVariable, VariableTracker
from ..constants.constant import ConstantVariable
from ..containers.builtin_containers import DictVariable, TupleVariable
from ..iterators import generator_restart
from .cells import ClosureCellVariable, closure_cell, reconstruct_cell
from .marked_calls import call_marked

if TYPE_CHECKING:
    from ....codegen.emit import Codegen
    from ...translator import Translator


#: Functions traced specially, by code object (``@contextmanager``'s wrapper:
#: ``generator_contexts``): ``hook(tx, fn_vt, args, kwargs)`` is called instead of inlining the
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

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        if (
            name == "__code__"
        ):  # a sourced function's code is guarded by identity (``builder.wrap``)
            return ConstantVariable(self.fn.__code__)
        if name == "__class__":  # ``type(f)``: torchvision's ``_log_api_usage_once(f)`` reads it
            return tx.wrap_static(self.python_type())
        if name == "__get__" and self.self_vt is None:
            return MethodCallVariable(self, name)
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
        if self.fn is graph_break:
            raise Unsupported(
                "graph_break",
                "explicit bytegraph.graph_break()",
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
            closure[name] = closure_cell(tx, cell, _cell_source(self.source, self.fn, name))
        result = tx.inline_call(
            self.fn.__code__,
            self.fn.__globals__,
            args,
            kwargs,
            defaults=_defaults_vt(tx, self.fn, self.source),
            closure=closure,
            fn=self.fn,
        )
        return generator_restart.made_by(result, self.fn)

    def closure_value(self, tx: Translator, name: str) -> VariableTracker:
        """The contents of the function's closure cell ``name`` (guarded through the function)."""
        index = self.fn.__code__.co_freevars.index(name)
        value = self.fn.__closure__[index].cell_contents
        source = _cell_source(self.source, self.fn, name)
        return tx.wrap(value, source) if source is not None else tx.wrap_static(value)

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None and (self.self_vt is None or self.bound_source):
            return self.source.reconstruct(cg)
        if self.self_vt is not None:
            cg.load_const(types.MethodType)
            cg.load_const(self.fn)
            self.self_vt.reconstruct(cg)
            cg.call_function(2)
            return None
        cg.load_const(self.fn)
        return None

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.fn.__qualname__})"


def same_bound_method(a: UserFunctionVariable, b: UserFunctionVariable) -> bool | None:
    """``a is b`` for two bound methods, or None where that is not known. One the trace was given
    (``bound_source``) is the object its source loads; one made in the trace (an ``obj.method``
    read) is a new object, never one given."""
    if a.bound_source and b.bound_source:
        return True if a.source == b.source else None
    if a.bound_source or b.bound_source:
        return False
    return None


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


def _cell_source(fn_source: Source | None, fn: types.FunctionType, name: str) -> Source | None:
    if fn_source is None:
        return None
    index = fn.__code__.co_freevars.index(name)

    return AttrSource(ItemSource(AttrSource(fn_source, "__closure__"), index), "cell_contents")


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
        return generator_restart.made_by(result, self)

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
#: implemented in ``objects/attribute_stores.py``.
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
        return tx.wrap_static(attr)

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


@dataclass(eq=False, repr=False)
class MethodCallVariable(BoundAttributeVariable):
    """``obj.name`` before the call, for methods ``obj.call_method`` answers itself."""

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
