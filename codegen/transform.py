"""Assemble instruction lists into real Python functions (``bytecode`` computes stack size and
tables; straight-line code, most rewritten functions, gets its stack size from one scan here).

``make_function(template, instrs, ...)`` builds a function with ``template``'s signature and closure
plus extra closure cells (``cells``): that is how rewritten code reaches compiled graphs and
constants without writing into the user's globals and without embedding any object's repr in code.
``Numbering`` numbers the names of those cells and of resume functions.
"""

from __future__ import annotations

import inspect
import itertools
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bytecode import Bytecode, CompilerFlags, Instr, SetLineno, TryBegin

from . import frame_locals

_SIGNATURE_FLAGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_PLAIN_FLAGS = inspect.CO_OPTIMIZED | inspect.CO_NEWLOCALS
#: code starting with a value on the stack (before 3.13), which ``straight_stacksize`` leaves to
#: ``bytecode``
_RESUMABLE_FLAGS = CompilerFlags.GENERATOR | CompilerFlags.COROUTINE | CompilerFlags.ASYNC_GENERATOR


def make_function(
    template: types.FunctionType | types.CodeType,
    instrs: list[Any],
    *,
    name: str,
    cells: Mapping[str, Any] = {},
    argnames: tuple[str, ...] | None = None,
    first_lineno: int | None = None,
    cellvars: list[str] | None = None,
    prologue: bool = True,
    globals_: dict[str, Any] | None = None,
    compute_exception_depths: bool = True,
    freevars: tuple[str, ...] | None = None,
    code_name: tuple[str, str] | None = None,
) -> types.FunctionType:
    """A function running ``instrs`` whose globals and closure come from ``template``.

    With ``argnames=None`` the signature (positional/keyword-only/varargs, defaults) is the
    template's; otherwise the function takes exactly ``argnames`` positionally. ``cells`` become
    extra free variables, loaded with ``LOAD_DEREF name``. With ``prologue=False`` ``instrs``
    already start with the code's own ``COPY_FREE_VARS``/``MAKE_CELL``/``RESUME`` (resume functions
    reuse the original's). ``freevars``: the template's free variables it keeps (all by default),
    closing over the template's cells of those. ``code_name``: the code's ``co_name`` and
    ``co_qualname`` (``name`` by default), what tracebacks and frames show.
    """
    func = template if isinstance(template, types.FunctionType) else None
    code = func.__code__ if func else template
    kept = code.co_freevars if freevars is None else freevars
    free = list(kept) + list(cells)
    bc = Bytecode((_prologue(len(free)) if prologue else []) + list(instrs))
    bc.name, bc.qualname = code_name or (name, name)
    bc.filename = code.co_filename
    bc.first_lineno = first_lineno if first_lineno is not None else code.co_firstlineno
    bc.freevars = free
    bc.cellvars = list(cellvars or [])
    if argnames is None:
        bc.argcount = code.co_argcount
        bc.posonlyargcount = code.co_posonlyargcount
        bc.kwonlyargcount = code.co_kwonlyargcount
        nargs = code.co_argcount + code.co_kwonlyargcount
        nargs += bool(code.co_flags & inspect.CO_VARARGS) + bool(
            code.co_flags & inspect.CO_VARKEYWORDS
        )
        bc.argnames = list(code.co_varnames[:nargs])
        bc.flags = _PLAIN_FLAGS | (code.co_flags & _SIGNATURE_FLAGS)
    else:
        bc.argcount = len(argnames)
        bc.posonlyargcount = bc.kwonlyargcount = 0
        bc.argnames = list(argnames)
        bc.flags = _PLAIN_FLAGS
    if free:
        bc.flags |= inspect.CO_NESTED
    stacksize = straight_stacksize(bc)
    if stacksize is None and not (compute_exception_depths and _has_try(bc)):
        # no depth to compute: ``to_code`` would build the control flow graph for the stack size,
        # then rebuild the instructions from it; the graph alone gives the same size
        stacksize = bc.compute_stacksize()
    if stacksize is not None:  # no exception range depth to compute
        new_code = bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    else:
        new_code = bc.to_code(compute_exception_stack_depths=True)
    own = dict(zip(code.co_freevars, func.__closure__ or (), strict=True)) if func else {}
    closure = tuple(own[n] for n in kept) if func else ()
    closure += tuple(types.CellType(v) for v in cells.values())
    if globals_ is None:
        globals_ = func.__globals__ if func else {}
    fn = types.FunctionType(new_code, globals_, name, None, closure or None)
    fn.__qualname__ = name  # (its code's by default)
    # the user's frame the new code runs: a resume function's, else the template's from its start
    user = frame_locals.registered(code) or frame_locals.UserFrame.of(code, resumed=False)
    frame_locals.register(new_code, user)
    if func is not None and argnames is None:
        fn.__defaults__ = func.__defaults__
        fn.__kwdefaults__ = func.__kwdefaults__
    return fn


def straight_stacksize(bc: Bytecode) -> int | None:
    """The stack size ``bytecode`` computes for ``bc``, where it is straight-line code (no label,
    jump or exception range anywhere) that is not a generator; None otherwise. Its control flow
    graph (built, walked and flattened back in ``Bytecode.to_code``) is then one block read up to
    its first final instruction (what follows one is never reached): the deepest the stack gets
    there, each instruction's pops applied before its pushes."""
    if bc.flags & _RESUMABLE_FLAGS:
        return None
    code = [instr for instr in bc if not isinstance(instr, SetLineno)]
    if not all(isinstance(instr, Instr) and not instr.has_jump() for instr in code):
        return None
    size = deepest = 0
    for instr in code:
        pre, post = instr.pre_and_post_stack_effect(jump=False)
        size += pre
        if size < 0:
            return None  # malformed: ``bytecode`` raises its own error
        size += post
        deepest = max(deepest, size)
        if instr.is_final():
            break
    return deepest


def _has_try(bc: Bytecode) -> bool:
    return any(isinstance(item, TryBegin) for item in bc)


def _prologue(nfree: int) -> list[Instr]:
    prologue = [Instr("COPY_FREE_VARS", nfree)] if nfree else []
    return prologue + [Instr("RESUME", 0)]


@dataclass
class Numbering:
    """Numbers for the names one compiled function gives its graphs (``__compiled_fn_N``) and resume
    functions (``__resume_at_I_N``), shared with its resume functions so that names never repeat
    within one generated code object.

    Per function, not global: such names become closure-cell and code names, which CPython interns
    (forever, on 3.12), so a process compiling many short-lived functions would keep every name
    it ever made; per-function numbers reuse the same few strings."""

    graphs: Iterator[int] = field(default_factory=itertools.count)
    resumes: Iterator[int] = field(default_factory=itertools.count)

    def restart(self) -> None:
        """Number from 0 again (``bytegraph.reset()``: every name made so far is gone)."""
        self.graphs, self.resumes = itertools.count(), itertools.count()
