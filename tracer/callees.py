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

from . import markers

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


class CalleeCompiler:
    """``compiler(obj)``: ``obj`` compiled if it is a user function (or a method of one), else
    ``obj``. ``compile_fn(fn)`` makes the compiled version of a function; a code object gets at
    most ``version_limit()`` of them."""

    def __init__(
        self,
        compile_fn: Callable[[types.FunctionType], Any],
        version_limit: Callable[[], int],
    ) -> None:
        self._compile = compile_fn
        self._version_limit = version_limit  #: the recompile limit, asked when one is made
        self._compiled: weakref.WeakKeyDictionary[types.FunctionType, Any] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, nn.Module):
            if not _user_module(obj):
                return obj
            return functools.partial(self._compiled_version(call_module) or call_module, obj)
        fn = obj.__func__ if isinstance(obj, types.MethodType) else obj
        if type(fn) is not types.FunctionType:
            return obj
        compiled = self._compiled.get(fn)  # each call of the break's code asks: the cache first
        if compiled is None:
            if not compiles_on_its_own(fn):
                return obj
            compiled = self._compiled_version(fn)
            if compiled is None:
                return obj
        return types.MethodType(compiled, obj.__self__) if fn is not obj else compiled

    def route(self, obj: Any) -> Any:
        """What code run in plain Python calls instead of ``obj`` (``codegen/route_calls.py``):
        its compiled version, or ``obj``. Asked at every call of that code: anything but a
        function, a method or a module is returned at once."""
        kind = type(obj)
        if kind is types.FunctionType or kind is types.MethodType or isinstance(obj, nn.Module):
            return self(obj)
        return obj

    def _compiled_version(self, fn: types.FunctionType) -> Any:
        """``fn``'s compiled version; None once its code has the limit of them (a function made
        anew at each call, a closure, would otherwise be traced at each call)."""
        compiled = self._compiled.get(fn)
        if compiled is None:
            made = _VERSIONS.get(fn.__code__, 0)
            if made >= self._version_limit():
                return None
            _VERSIONS[fn.__code__] = made + 1
            compiled = self._compiled[fn] = self._compile(fn)
        return compiled


#: Compiled versions made per code object, by every ``CalleeCompiler`` since ``reset``.
_VERSIONS: weakref.WeakKeyDictionary[types.CodeType, int] = weakref.WeakKeyDictionary()


def reset() -> None:
    """``bytegraph.reset()``: each code may have its number of compiled versions again."""
    _VERSIONS.clear()


def call_module(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """What a module call that a break leaves to Python goes through, compiled: ``module(...)``."""
    return module(*args, **kwargs)


def _user_module(module: nn.Module) -> bool:
    """Does calling ``module`` run user code: its ``forward``, or a child's (a ``Sequential`` of
    user blocks)? Asked at each run of the break's code: kept per module (a child added later
    changes only whether the call compiles, never what it does)."""
    known = _USER_MODULES.get(module)
    if known is None:
        known = _USER_MODULES[module] = any(
            compiles_on_its_own(type(m).forward) for m in module.modules()
        )
    return known


_USER_MODULES: weakref.WeakKeyDictionary[nn.Module, bool] = weakref.WeakKeyDictionary()


def compiles_on_its_own(fn: Any) -> bool:
    """Is ``fn`` a user's Python function that a break's call runs compiled?"""
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__bytegraph__"):
        return False  # not a Python function, or compiled already (an entry)
    if fn.__code__.co_flags & _SUSPENDING or markers.is_disabled(fn):
        return False
    module = getattr(fn, "__module__", None) or ""
    return module.split(".", 1)[0] not in _LIBRARY_ROOTS
