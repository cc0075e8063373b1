"""Assemble instruction lists into real Python functions (``bytecode`` assembles them and
computes the depths of try blocks it is asked for; the stack size comes from one walk over the
instructions here, ``flat_stacksize``, without ``bytecode``'s control flow graph).

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

from bytecode import Bytecode, CompilerFlags, Instr, Label, TryBegin

from . import frame_locals

_SIGNATURE_FLAGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_PLAIN_FLAGS = inspect.CO_OPTIMIZED | inspect.CO_NEWLOCALS
#: code starting with a value on the stack (before 3.13), which ``flat_stacksize`` leaves to
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
    new_code = assemble(bc, compute_exception_depths=compute_exception_depths)
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


def assemble(bc: Bytecode, *, compute_exception_depths: bool = True) -> types.CodeType:
    """``bc.to_code()``. Its stack size comes from ``flat_stacksize`` where that knows it, and
    where no try block's depth is to be computed (none, or all given: ``compute_exception_depths``
    False): ``to_code`` would otherwise build the control flow graph for it, then rebuild the
    instructions from the graph."""
    if not (compute_exception_depths and _has_try(bc)):
        stacksize = flat_stacksize(bc)
        if stacksize is None:
            stacksize = bc.compute_stacksize()
        return bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    return bc.to_code(compute_exception_stack_depths=True)


def flat_stacksize(bc: Bytecode) -> int | None:
    """The stack size ``bytecode`` computes for ``bc`` (the deepest the stack gets after an
    instruction, each instruction's pops applied before its pushes), found by one walk over the
    instruction list from each place control reaches: the start, a jump's target, a try block's
    handler (entered at its ``TryBegin``'s given depth, plus the exception and, with
    ``push_lasti``, the offset). What follows a final instruction or an unconditional jump is
    reached only through a label. None where the walk cannot tell: a generator (its code starts
    with a value on the stack before 3.13), a try block with no depth given, a place reached at
    two depths or one where the stack would go below empty (``bytecode`` then decides)."""
    if bc.flags & _RESUMABLE_FLAGS:
        return None
    items = list(bc)
    index = {id(item): n for n, item in enumerate(items) if isinstance(item, Label)}
    entered: dict[int, int] = {}  # label index -> the depth control reaches it with
    pending = [(0, 0)]
    deepest = 0
    while pending:
        n, size = pending.pop()
        while n < len(items):
            item = items[n]
            if isinstance(item, Label):
                if n in entered:
                    if entered[n] != size:
                        return None
                    break
                entered[n] = size
            elif isinstance(item, Instr):
                if item.has_jump():
                    pre, post = item.pre_and_post_stack_effect(jump=True)
                    if size + pre < 0:
                        return None
                    deepest = max(deepest, size + pre + post)
                    pending.append((index[id(item.arg)], size + pre + post))
                    if item.is_uncond_jump():
                        break
                pre, post = item.pre_and_post_stack_effect(jump=False)
                if size + pre < 0:
                    return None
                size += pre + post
                deepest = max(deepest, size)
                if item.is_final():
                    break
            elif isinstance(item, TryBegin):
                if not isinstance(item.stack_depth, int):
                    return None
                handler = item.stack_depth + 1 + bool(item.push_lasti)
                deepest = max(deepest, handler)
                pending.append((index[id(item.target)], handler))
            n += 1  # (a TryEnd or SetLineno changes nothing)
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
