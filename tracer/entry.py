"""The entry function every call of a compiled function goes through.

``make_entry(fn, state)`` generates it with ``fn``'s exact signature::

    def fn(a, b):
        ___v = ___cache.guard_fn(a, b)                  # generated guards pick a variant
        if ___v is None:
            ___v = ___state.on_miss({'a': a, 'b': b})   # trace, compile, install (or fall back)
        try:
            return ___v(a, b)
        except ___Rerun:                                # a deferred check failed after the graph
            return ___state.rerun()(a, b)               # (``deferred_checks``): run it in Python

``state`` is the function's ``driver.CompiledCode``. This is the per-call hot path: it does nothing
a compile could do instead. The first check (torch.compile tracing the entry) is made only where
the user may call the entry; the code check only where the code is the user's (see
``make_entry``). A function left alone (``callees.py``: every call runs it in Python,
whatever the arguments) has no guards to ask: ``run_directly`` gives its entry code that, after
the checks before the guards, calls what runs it (``dispatch`` gives the first code back)::

    def fn(a, b):
        ...                                             # torch.compile tracing; code replaced
        return ___direct(a, b)
"""

from __future__ import annotations

import functools
import inspect
import keyword
import types
import weakref
from typing import TYPE_CHECKING, Any

import torch

from ..codegen.frame_locals import ENTRY_FILE
from .code_reader import parameters
from .exc import Rerun

if TYPE_CHECKING:
    from .driver import CompiledCode

#: ``torch.compiler.is_compiling()`` as each call of an entry asks it, at half the cost where
#: torch keeps its flag as a module global (2.11 to 2.15): Dynamo folds ``is_dynamo_compiling()``
#: to True where it traces the entry, and the flag is what ``is_compiling()`` returns otherwise
#: (torch.export's tracing sets it).
_COMPILING = (
    "___is_dynamo_compiling() or ___compiler._is_compiling_flag"
    if isinstance(getattr(torch.compiler, "_is_compiling_flag", None), bool)
    else "___is_compiling()"
)


def make_entry(
    fn: types.FunctionType, state: CompiledCode, resume: bool = False, callee: bool = False
) -> types.FunctionType:
    """Generate the entry function with ``fn``'s exact signature (see the module docstring).
    ``resume``: ``fn`` is a resume function, which only the code its compiled caller's entry
    chose calls (torch.compile's tracing took the caller itself), and whose code is bytegraph's:
    its entry goes straight to the guards. ``callee``: the entry is ``fn``'s compiled version
    that only bytegraph's own code calls (``callees.py``: a routed call, a call a break makes),
    which runs where the user's entry chose a variant or its fallback, never where
    torch.compile traces (it traces the user's function the entry calls instead): its entry
    checks ``fn``'s code only."""
    params, call_args, names, keys = _signature(fn)
    locals_dict = ", ".join(f"{k!r}: {n}" for k, n in zip(keys, names, strict=True))
    compiling = (
        # torch.compile tracing a compiled function (the model bytegraph.compile compiled in
        # place, say) traces the function itself: Dynamo folds is_compiling() to True
        f"    if {_COMPILING}:\n        return ___fn({', '.join(call_args)})\n"
    )
    code_check = (
        f"    if ___fn.__code__ is not ___code:\n"
        f"        return ___state.code_replaced()({', '.join(call_args)})\n"
    )
    checks = "" if resume else code_check if callee else compiling + code_check
    head = f"def ___entry({', '.join(params)}):\n{checks}"
    source = (
        f"{head}"
        f"    ___v = ___cache.guard_fn({', '.join(names)})\n"
        f"    if ___v is None:\n"
        f"        ___v = ___state.on_miss({{{locals_dict}}})\n"
        f"    try:\n"
        f"        return ___v({', '.join(call_args)})\n"
        f"    except ___Rerun:\n"  # a deferred check failed (``deferred_checks``): run it in Python
        f"        return ___state.rerun()({', '.join(call_args)})\n"
    )
    namespace: dict[str, Any] = {
        "___state": state,
        "___cache": state.cache,
        "___fn": fn,
        "___code": fn.__code__,
        "___Rerun": Rerun,
        "___is_compiling": torch.compiler.is_compiling,
        "___is_dynamo_compiling": torch.compiler.is_dynamo_compiling,
        "___compiler": torch.compiler,
    }
    entry = _made(source, namespace, "___entry", fn)
    entry.__bytegraph__ = state
    state.entry = weakref.ref(entry)
    namespace["___dispatch"] = entry.__code__
    namespace["___direct_source"] = f"{head}    return ___direct({', '.join(call_args)})\n"
    return entry


def run_directly(entry: types.FunctionType, target: Any) -> None:
    """From now on ``entry`` calls ``target`` after its checks, without asking guards (see the
    module). Its code is made here, for the few entries that need it."""
    namespace = entry.__globals__
    namespace["___direct"] = target
    direct: dict[str, Any] = {}
    exec(_compiled(namespace["___direct_source"], entry.__code__.co_filename), direct)
    entry.__code__ = direct["___entry"].__code__


def dispatch(entry: types.FunctionType) -> None:
    """``entry`` asks its guards again (undoes ``run_directly``)."""
    entry.__code__ = entry.__globals__["___dispatch"]


def make_code_checked(
    fn: types.FunctionType, copy: types.FunctionType, on_new_code: Any
) -> types.FunctionType:
    """A function with ``fn``'s exact signature that calls ``copy`` (which runs ``fn``'s code as
    it is now) while ``fn`` keeps that code, and once ``fn.__code__`` is replaced calls what
    ``on_new_code(fn)`` returns instead::

        def fn(a, b):
            if ___fn.__code__ is ___code:
                return ___copy(a, b)
            return ___on_new_code(___fn)(a, b)

    A call of it is a call of ``fn`` as it is now, so a table may hold it for ``fn`` for good
    (``callees.py``: the routed copy of a function left alone)."""
    params, call_args, _, _ = _signature(fn)
    args = ", ".join(call_args)
    source = (
        f"def ___checked({', '.join(params)}):\n"
        f"    if ___fn.__code__ is ___code:\n"
        f"        return ___copy({args})\n"
        f"    return ___on_new_code(___fn)({args})\n"
    )
    namespace = {"___fn": fn, "___code": fn.__code__, "___copy": copy}
    namespace["___on_new_code"] = on_new_code
    return _made(source, namespace, "___checked", fn)


def _signature(fn: types.FunctionType) -> tuple[list[str], list[str], list[str], list[str]]:
    """``fn``'s parameters as generated code declares them (``*``, ``/`` and ``**`` included),
    the arguments that pass them on, their names in generated code, and their real names."""
    params, call_args, names, keys = [], [], [], []
    saw_kwonly = False
    for i, (name, kind) in enumerate(parameters(fn.__code__)):
        # Names that are not identifiers (pytest's ``@py_assert1`` locals reach resume functions)
        # get a safe parameter name; ``L`` keeps the real one. Such parameters are always
        # positional.
        param = name if name.isidentifier() and not keyword.iskeyword(name) else f"___p{i}"
        names.append(param)
        keys.append(name)
        if kind is inspect.Parameter.VAR_POSITIONAL:
            params.append(f"*{param}")
            call_args.append(f"*{param}")
            saw_kwonly = True
        elif kind is inspect.Parameter.VAR_KEYWORD:
            params.append(f"**{param}")
            call_args.append(f"**{param}")
        elif kind is inspect.Parameter.KEYWORD_ONLY:
            if not saw_kwonly:
                params.append("*")
                saw_kwonly = True
            params.append(param)
            call_args.append(f"{param}={param}")
        else:
            params.append(param)
            call_args.append(param)
    if fn.__code__.co_posonlyargcount:
        params.insert(fn.__code__.co_posonlyargcount, "/")
    return params, call_args, names, keys


def _made(
    source: str, namespace: dict[str, Any], name: str, fn: types.FunctionType
) -> types.FunctionType:
    """The function ``name`` that ``source`` defines, with ``fn``'s defaults, names and
    attributes; its file is the entry functions' (``ENTRY_FILE``: frames the user's stack, as
    ``locals()`` and ``warnings.warn`` in generated code count it, leaves out)."""
    exec(_compiled(source, _filename(fn)), namespace)
    made = namespace[name]
    made.__defaults__ = fn.__defaults__
    made.__kwdefaults__ = fn.__kwdefaults__
    functools.update_wrapper(made, fn)
    return made


def _filename(fn: types.FunctionType) -> str:
    return f"{ENTRY_FILE}{fn.__qualname__}>"


@functools.lru_cache(maxsize=256)
def _compiled(source: str, filename: str) -> types.CodeType:
    """The code of an entry's text, compiled once: entries of functions with the same signature
    and name (closures made again and again) share it; each ``exec`` makes a new function over
    its own namespace."""
    return compile(source, filename, "exec")
