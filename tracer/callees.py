"""Functions that a graph break sends to plain Python, called through their own compiled versions.

When a break cannot resume inside the function it happened in (a call inside a ``try`` block of
its caller, say: the caller's handlers must see the callee's exceptions), the call runs in plain
Python, and with it everything the callee does. torch.compile's frame hook compiles each such frame
on its own; bytegraph has no hook, so the rewritten code calls the callee's compiled version
instead (same settings, one compiled version per function, cached), and a break inside it is
handled there, recursively. A module is called through ``call_module``'s compiled version, whose
trace inlines the call (hooks, then ``forward``) with the module as its input. Functions of torch,
bytegraph and the standard library are called as they are, and so is everything that is not a
Python function, a method of one or a module whose ``forward`` (or a child's) is user code.

A code object is *left alone* (``leave_alone``) once its trace returned without recording a
tensor operation (tensor-free; not a resume function's, see ``driver``), or once its first trace
failed in a way the tracer reports
(``Unsupported``; an internal error keeps the guards it reached): from then on every function with
that code runs as it is, whatever its arguments, with no guards, as torch.compile skips such a
frame for good. The mark belongs to the code object: a function given new code is decided anew
(but for one defined at module level that calls nothing, which the router keeps as it is: its new
code runs as it is).
As torch.compile's hook still sees the frames a skipped frame calls, a function left alone runs as
its routed copy (``codegen/route_calls.py``; the function itself when it calls nothing), so a
decorator's wrapper that is tensor-free around one function it wraps still calls the others
compiled. ``call_module``'s code, which every container's call shares, is never marked; a module
class whose ``call_module`` is left alone is called as it is.

Routed code looks each callable up in ``CalleeCompiler.table`` (``RouteTable``), so this is on
the path of every call plain Python makes: a callable decided on before that lives as long as its
module (a function or class defined at module level, a builtin) is found there, one dict lookup
in the calling code itself (for one called as it is, one identity test against what the call
site found last, else one set test, ``RouteTable.as_is``; for one called through its compiled
version or routed copy, one identity test against the one the call site found there last,
else the lookup); so is what a method load pushes (the
class's function or a C type's method: no bound method is made; before 3.13, where the call site
is paired with its load). A function left alone is found with its routed copy behind a check
that it keeps its code (``entry.make_code_checked``: the copy runs that code only; a function
given new code is decided anew). A miss goes to ``RouteTable.__missing__``: bound methods and
modules are answered there; the rest go to ``CalleeCompiler.route`` (``_decide``).
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from torch import nn

from ..codegen.frame_locals import PASS_THROUGH_FILES, READERS
from ..codegen.route_calls import SiteCache, routed
from ..guards.epoch import unseen_by_dynamo
from . import markers
from .entry import make_code_checked

#: Top-level packages whose functions a break's call runs as they are (torch's own Python code is
#: traced when user code calls it, never compiled on its own, as in torch.compile).
_LIBRARY_ROOTS = frozenset({"torch", "bytegraph", "triton", *sys.stdlib_module_names})

#: Functions whose calls suspend: a compiled version could not stand for them.
_SUSPENDING = (
    inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ITERABLE_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)

#: What ``CalleeCompiler`` keeps for a function it calls as it is (not the function itself, which,
#: as the value of a weak-keyed entry, would keep its own key alive).
_AS_IS = object()
_MISSING = object()  #: not in ``CalleeCompiler._known``


#: What ``RouteTable.__missing__`` (on the path of calls made anew) compares with, read as globals.
_BUILTIN_METHOD, _METHOD = types.BuiltinMethodType, types.MethodType
_FUNCTION, _MODULE = types.FunctionType, types.ModuleType


class RouteTable(dict):
    """Callable -> what routed code calls instead, for callables decided on before; a callable
    not in it is passed to ``route``, which decides (and remembers it here where it may). It is
    a constant of routed code, whose code objects hash and compare their constants: it hashes
    and compares by identity.

    The callables made anew at each call, and so never found, are answered here without the
    router: a C method bound to an object (``x.view``) is called as it is; a bound method as its
    function is (looked up here, unbound); a module goes to ``modules`` (its compiled caller or
    itself). Call sites tell the first two, and a library leaf module, by their types where
    they are called as they are, with no call of ``__missing__`` (``route_calls._unbound``)."""

    __slots__ = ("route", "modules", "as_is", "sites", "leaves")
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__

    def __init__(self) -> None:
        super().__init__()
        #: the keys held for themselves (called as they are): what a call site tests first
        self.as_is: set[Any] = set()
        #: the call sites' caches of what they found last (``SiteCache``)
        self.sites: weakref.WeakSet[SiteCache] = weakref.WeakSet()
        #: library module classes whose modules without children are called as they are, to
        #: the ``forward`` they had (``_LIBRARY_LEAVES``): call sites test them as
        #: ``__missing__`` does, without its call (``route_calls._library_leaf``)
        self.leaves = _LIBRARY_LEAVES

    def put(self, obj: Any, target: Any) -> None:
        if obj in self:  # decided anew: the call sites that found it forget it
            self.discard(obj)
        self[obj] = target
        if target is obj:
            self.as_is.add(obj)

    def discard(self, obj: Any) -> None:
        self.as_is.discard(obj)  # first: a call site finding it there reads no more
        for site in list(self.sites):
            site.forget(obj)
        self.pop(obj, None)

    def clear(self) -> None:
        self.as_is.clear()
        for site in list(self.sites):
            site.clear()
        super().clear()

    def __missing__(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is _BUILTIN_METHOD:
            owner = obj.__self__
            if owner is not None and type(owner) is not _MODULE:
                return obj
        elif kind is _METHOD:
            fn = obj.__func__
            if type(fn) is _FUNCTION:
                if fn in self.as_is:
                    return obj
                target = self[fn]
                return obj if target is fn else _METHOD(target, obj.__self__)
        elif isinstance(obj, nn.Module):
            if not obj._modules and _LIBRARY_LEAVES.get(kind, _MISSING) is kind.forward:
                return obj  # a library leaf (``CalleeCompiler.__call__``), without the call
            return self.modules(obj)
        return self.route(obj)


class CalleeCompiler:
    """``compiler(obj)``: ``obj`` compiled if it is a user function (or a method of one), else
    ``obj``. ``compile_fn(fn)`` makes the compiled version of a function; a code object gets at
    most ``version_limit()`` of them.

    Routed code holds this compiler's router, table and call sites' caches as constants, and a
    code object is outside the cyclic collector's reach: nothing they hold may hold this
    compiler, or its owner (``compile_fn``'s object), strongly, else neither is ever freed.
    The router and the table call back into it weakly; once it dies, its tables are emptied,
    so what they held (compiled versions, routed copies: code holding them again) goes too."""

    def __init__(
        self,
        compile_fn: Callable[[types.FunctionType], Any],
        version_limit: Callable[[], int],
    ) -> None:
        self._compile = compile_fn
        self._version_limit = version_limit  #: the recompile limit, asked when one is made
        #: function -> its compiled version, ``_AS_IS``, or for a function left alone ``(its code,
        #: its routed copy)`` (the copy runs that code only)
        self._compiled: weakref.WeakKeyDictionary[types.FunctionType, Any] = (
            weakref.WeakKeyDictionary()
        )
        #: long-lived callables (functions and classes defined at module level, builtins) ->
        #: what ``route`` returns for them, as ``_compiled`` holds it (the callable itself for
        #: ``_AS_IS``); keeps them alive, as the module defining them does
        self._known: dict[Any, Any] = {}
        #: ``_known`` with each routed copy behind a check that its function keeps its code:
        #: what routed code looks its callables up in (``codegen/route_calls.py``); a miss asks
        #: ``route``
        self.table = RouteTable()
        #: module class whose ``forward`` is user code, defined at module level -> the compiled
        #: caller of its modules, or None (called as they are)
        self._module_callers: dict[type, Any] = {}
        self.route = self.table.route = self._make_route()
        self.route.table = self.table  # type: ignore[attr-defined]
        self.table.modules = _weakly(self.__call__)
        weakref.finalize(self, _release, self._known, self.table).atexit = False
        _COMPILERS.add(self)

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, nn.Module):
            cls = type(obj)
            caller = self._module_callers.get(cls, _MISSING)
            if caller is _MISSING:
                if not obj._modules and _LIBRARY_LEAVES.get(cls, _MISSING) is cls.forward:
                    return obj
                caller = self._module_caller(obj) if _user_module(obj) else None
            return obj if caller is None else functools.partial(caller, obj)
        fn = obj.__func__ if isinstance(obj, types.MethodType) else obj
        if type(fn) is not types.FunctionType:
            return obj
        target = self._target(fn)
        if target is fn:
            return obj
        return types.MethodType(target, obj.__self__) if fn is not obj else target

    def _make_route(self) -> Callable[[Any], Any]:
        """``route(obj)``: what code run in plain Python calls instead of ``obj``
        (``codegen/route_calls.py``): its compiled version, or ``obj``. One dict lookup for a
        callable decided on before. It holds this compiler weakly (it is a constant of routed
        code): once the compiler is gone, what it had not decided on is called as it is."""
        known, decide, missing = self._known.get, _weakly(self._decide), _MISSING

        def route(obj: Any) -> Any:
            try:
                target = known(obj, missing)
            except TypeError:  # not hashable
                return decide(obj)
            if target is obj:  # called as it is: the common case first
                return obj
            if target is missing:
                return decide(obj)
            if target.__class__ is tuple:  # a routed copy: while the function keeps its code
                return target[1] if obj.__code__ is target[0] else decide(obj)
            return target

        return route

    def _decide(self, obj: Any) -> Any:
        """``route``'s answer for a callable not found in ``_known``; kept there where ``obj``
        lives as long as the code that defines it."""
        kind = type(obj)
        if kind in _C_METHODS:  # a C type's method, pushed by a method load
            self._remember(obj, obj)
            return obj
        if kind is types.BuiltinFunctionType:  # a builtin, or a C method bound to an object
            owner = obj.__self__
            # ``locals()`` and its kind read the calling frame: in routed code, a generated one
            target = READERS.get(obj, obj)
            if owner is None or type(owner) is types.ModuleType:
                self._remember(obj, target)
            return target
        if kind is types.MethodType:  # new at each call: decided through its function
            fn = obj.__func__
            if type(fn) is not types.FunctionType:
                return obj
            target = self.route(fn)
            return obj if target is fn else types.MethodType(target, obj.__self__)
        if kind is types.FunctionType:
            if obj in READERS:  # ``inspect.currentframe``: reads its caller's frame too
                self._remember(obj, READERS[obj])
                return READERS[obj]
            target = self._target(obj)
            if "<locals>" not in obj.__qualname__:
                kept = self._compiled.get(obj)
                plain = kept is None or kept is _AS_IS or (type(kept) is tuple and kept[1] is obj)
                self._remember(obj, obj if plain else kept)
            return target
        if isinstance(obj, nn.Module):
            return self(obj)
        if isinstance(obj, type) and "<locals>" not in obj.__qualname__:
            self._remember(obj, obj)
        return obj

    def _remember(self, obj: Any, target: Any) -> None:
        self._known[obj] = target
        if type(target) is tuple:  # a routed copy, behind the check that ``obj`` keeps its code
            target = make_code_checked(obj, target[1], self.route)
        self.table.put(obj, target)

    def _target(self, fn: types.FunctionType) -> Any:
        """What a call of ``fn`` runs: its compiled version, its routed copy, or ``fn``."""
        kept = self._compiled.get(fn)
        if kept is None or (type(kept) is tuple and kept[0] is not fn.__code__):
            shared = self._shared_caller(fn)
            if shared is not None:  # not kept: the bound method holds ``fn``
                return types.MethodType(shared, fn)
            kept = self._compiled[fn] = self._decide_function(fn)
        if type(kept) is tuple:
            return kept[1]
        return fn if kept is _AS_IS else kept

    def _decide_function(self, fn: types.FunctionType) -> Any:
        code = fn.__code__
        if code in _LEFT_ALONE:
            try:
                return (code, routed(fn, self.route))
            except Exception:  # noqa: BLE001 (code the rewrite cannot take runs as it is)
                return _AS_IS
        compiled = self._compiled_version(fn) if compiles_on_its_own(fn) else None
        return _AS_IS if compiled is None else compiled

    def _compiled_version(self, fn: types.FunctionType) -> Any:
        """``fn``'s compiled version; None once its code has the limit of them (a function made
        anew at each call, a closure, would otherwise be traced at each call)."""
        compiled = self._compiled.get(fn)
        if compiled is None or compiled is _AS_IS or type(compiled) is tuple:
            made = _VERSIONS.get(fn.__code__, 0)
            if made >= self._version_limit():
                return None
            _VERSIONS[fn.__code__] = made + 1
            compiled = self._compiled[fn] = self._compile(fn)
        return compiled

    def _shared_caller(self, fn: types.FunctionType) -> Any:
        """For a function made in another function's body of its code, cells and defaults alone
        (a closure made anew at each call, most often, ``def inner(x, cache=None)`` too): the
        compiled ``call_function`` that every function with its code goes through, with the
        function as its input, guarded by what it is made of (``markers.REBUILT``); else
        None."""
        if "<locals>" not in fn.__qualname__:
            return None
        code = fn.__code__
        if fn.__dict__ or code in _LEFT_ALONE or not compiles_on_its_own(fn):
            return None
        caller = _FUNCTION_CALLERS.get(code)
        if caller is None:
            caller = _FUNCTION_CALLERS[code] = _caller_of(call_function, code.co_qualname)
        if caller.__code__ in _LEFT_ALONE:  # so are the functions it calls
            leave_alone(code)
            return None
        compiled = self._compiled_version(caller)
        if compiled is not None:
            markers.REBUILT.add(fn)
        return compiled

    def _module_caller(self, module: nn.Module) -> Any:
        """The compiled ``call_module`` a call of ``module`` goes through: one per class whose
        ``forward`` is user code, shared by its instances (the module is the compiled function's
        input, its tree guarded by structure, not identity); one for all containers of user
        modules. None where the call runs as it is (its class is tensor-free, or the limit of
        compiled versions is reached)."""
        cls = type(module)
        if not compiles_on_its_own(cls.forward):
            return self._compiled_version(call_module)
        caller = _MODULE_CALLERS.get(cls)
        if caller is None:
            caller = _MODULE_CALLERS[cls] = _caller_of(call_module, cls.__qualname__)
        compiled = None if caller.__code__ in _LEFT_ALONE else self._compiled_version(caller)
        if "<locals>" not in cls.__qualname__:
            self._module_callers[cls] = compiled
        return compiled

    def forget(self, code: types.CodeType) -> None:
        """Decide again on the functions with ``code`` (it was just left alone). Other threads
        may route meanwhile: the tables are copied (atomically) before they are walked."""
        for fn in list(self._known):
            if getattr(fn, "__code__", None) is code:
                self._known.pop(fn, None)
                self.table.discard(fn)
        for ref in self._compiled.keyrefs():
            fn = ref()
            if fn is not None and fn.__code__ is code:
                self._compiled.pop(fn, None)
        self._module_callers.clear()  # decided again, each at its next call


def _weakly(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``method`` (of one argument), holding its object weakly: once that is gone, the
    argument itself is returned (a callable called as it is)."""
    ref = weakref.WeakMethod(method)

    def call(obj: Any) -> Any:
        bound = ref()
        return obj if bound is None else bound(obj)

    return call


@unseen_by_dynamo  # a death callback: the collector runs it inside torch.compile's code too
def _release(known: dict[Any, Any], table: RouteTable) -> None:
    """A dead ``CalleeCompiler``'s tables let go of what they hold (routed code, which holds
    the table, may live on)."""
    known.clear()
    table.clear()


#: The kinds of a C type's methods (``list.append``, ``object.__init__``): they live as long as
#: their type, and a call of one runs no user code.
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)

#: Compiled versions made per code object, by every ``CalleeCompiler`` since ``reset``.
_VERSIONS: weakref.WeakKeyDictionary[types.CodeType, int] = weakref.WeakKeyDictionary()
#: Code objects run as they are, whatever the arguments (``leave_alone``).
_LEFT_ALONE: weakref.WeakSet[types.CodeType] = weakref.WeakSet()
#: Every live ``CalleeCompiler``, told when a code is marked.
_COMPILERS: weakref.WeakSet[CalleeCompiler] = weakref.WeakSet()


def leave_alone(code: types.CodeType) -> None:
    """Functions with ``code`` run as they are from now on, their calls routed (see the
    module)."""
    if code is call_module.__code__:
        return
    _LEFT_ALONE.add(code)
    for compiler in list(_COMPILERS):
        compiler.forget(code)


def is_left_alone(code: types.CodeType) -> bool:
    return code in _LEFT_ALONE


def reset() -> None:
    """``bytegraph.reset()``: each code may have its number of compiled versions again, and is
    traced again even where it was left alone."""
    _VERSIONS.clear()
    _LEFT_ALONE.clear()
    for compiler in list(_COMPILERS):
        compiler._known.clear()
        compiler.table.clear()
        compiler._module_callers.clear()


def call_module(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """What a module call that a break leaves to Python goes through, compiled: ``module(...)``."""
    return module(*args, **kwargs)


def call_function(fn: types.FunctionType, *args: Any, **kwargs: Any) -> Any:
    """What a call of a function made in another function's body goes through, compiled (one per
    code of such functions): ``fn(...)``."""
    return fn(*args, **kwargs)


#: a frame of ``call_module`` or ``call_function`` (or of their compiled code) is none of the user's
PASS_THROUGH_FILES.add(call_module.__code__.co_filename)


def is_caller(fn: types.FunctionType) -> bool:
    """Is ``fn`` ``call_module`` or ``call_function``, or a copy of one (``_caller_of``)?"""
    return fn.__code__.co_filename == _CALLERS_FILE and fn.__module__ == __name__


def _caller_of(caller: types.FunctionType, what: str) -> types.FunctionType:
    """``caller`` with code of its own, named ``caller[what]`` (compiled versions are counted,
    and marks kept, per code object)."""
    qualname = f"{caller.__name__}[{what}]"
    # a name of its own too (an identifier: generated code is named after it), as code objects
    # that differ only in their qualified name compare equal, and the tables of compiled
    # versions and marks are keyed by code
    name = "".join(c if c.isalnum() else "_" for c in qualname.rstrip("]"))
    code = caller.__code__.replace(co_name=name, co_qualname=qualname)
    made = types.FunctionType(code, caller.__globals__, caller.__name__)
    made.__qualname__ = qualname
    made.__module__ = caller.__module__
    return made


_CALLERS_FILE = call_module.__code__.co_filename

#: The ``call_module`` of each module class whose ``forward`` is user code.
_MODULE_CALLERS: weakref.WeakKeyDictionary[type, types.FunctionType] = weakref.WeakKeyDictionary()
#: The ``call_function`` of each code of functions made in a function's body.
_FUNCTION_CALLERS: weakref.WeakKeyDictionary[types.CodeType, types.FunctionType] = (
    weakref.WeakKeyDictionary()
)


def _user_module(module: nn.Module) -> bool:
    """Does calling ``module`` run user code: its ``forward``, or a child's (a ``Sequential`` of
    user blocks)? Asked at each run of the break's code: kept per module (a child added later
    changes only whether the call compiles, never what it does)."""
    known = _USER_MODULES.get(module)
    if known is None:
        known = _USER_MODULES[module] = any(
            compiles_on_its_own(type(m).forward) for m in module.modules()
        )
        cls = type(module)
        if not known and not module._modules and "<locals>" not in cls.__qualname__:
            _LIBRARY_LEAVES[cls] = cls.forward
    return known


_USER_MODULES: weakref.WeakKeyDictionary[nn.Module, bool] = weakref.WeakKeyDictionary()
#: Module classes defined at module level whose ``forward`` (kept: it may be replaced) is not
#: user code: their modules without children are called as they are, with no per-module lookup.
_LIBRARY_LEAVES: dict[type, Any] = {}


def compiles_on_its_own(fn: Any) -> bool:
    """Is ``fn`` a user's Python function that a break's call runs compiled?"""
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__bytegraph__"):
        return False  # not a Python function, or compiled already (an entry)
    if fn.__code__.co_flags & _SUSPENDING or markers.is_disabled(fn):
        return False
    module = getattr(fn, "__module__", None) or ""
    return module.split(".", 1)[0] not in _LIBRARY_ROOTS
