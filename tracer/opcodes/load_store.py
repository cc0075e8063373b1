"""Loads and stores: constants, fast locals, globals, cells, attributes.

Each handler's docstring gives its stack effect and the ``dis`` documentation link.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
import types
from typing import TYPE_CHECKING

from bytecode import CellVar, FreeVar, Instr

from ...codegen.pyversion import LOAD_ATTR_TAKES_METHOD_FLAG
from ...guards.sources import ModuleGlobalSource
from ..exc import Unsupported
from ..variables import dispatch
from ..variables.base import NULL
from ..variables.functions import ClosureCellVariable, LocalCellVariable, SavedCellVariable
from ..variables.objects import SuperVariable, delete_attribute
from ..variables.torch_calls import FunctionCtxVariable
from .calls import push_callable
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


@handler("LOAD_CONST", frame_only=True)
def load_const(tx: Translator, inst: Instr) -> None:
    """(-- const)  https://docs.python.org/3.11/library/dis.html#opcode-LOAD_CONST"""
    tx.push(tx.fold(inst.arg))


@handler("IMPORT_NAME")
def import_name(tx: Translator, inst: Instr) -> None:
    """(level fromlist -- module)  https://docs.python.org/3.11/library/dis.html#opcode-IMPORT_NAME

    Only modules already imported (in ``sys.modules``) are traced, as the same module objects
    ``__import__`` returns; anything else runs the import in Python (a graph break)."""
    fromlist, level = tx.pop().as_python_constant(), tx.pop().as_python_constant()
    name = inst.arg
    if level:
        package = tx.f_globals.get("__package__") or ""
        try:
            name = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError):
            raise Unsupported("import", f"relative import of {inst.arg!r}") from None
    if (
        name not in sys.modules
        or not isinstance(tx.f_builtins, dict)
        or tx.f_builtins.get("__import__") is not builtins.__import__
    ):
        raise Unsupported(
            "import",
            f"import of {name!r} (not imported yet)",
            hint="import the module at the top of its file",
        )
    module = sys.modules[name] if fromlist else sys.modules[name.partition(".")[0]]
    tx.push(tx.wrap_static(module))


@handler("IMPORT_FROM")
def import_from(tx: Translator, inst: Instr) -> None:
    """(module -- module value)  https://docs.python.org/3.11/library/dis.html#opcode-IMPORT_FROM

    A name of a module's namespace is guarded like a global of that module
    (``M['mod']['name']``)."""
    module = tx.stack[-1].as_python_constant()
    if not isinstance(module, types.ModuleType) or inst.arg not in vars(module):
        raise Unsupported("import", f"from {getattr(module, '__name__', module)} import {inst.arg}")
    stored = tx.output.side_effects.namespace_store(vars(module), inst.arg)
    if stored is not None:  # set as an attribute of the module in the trace
        tx.push(stored)
        return
    tx.push(tx.wrap(vars(module)[inst.arg], ModuleGlobalSource(module.__name__, inst.arg)))


@handler("LOAD_FAST", "LOAD_FAST_CHECK", frame_only=True)
def load_fast(tx: Translator, inst: Instr) -> None:
    """(-- value)  https://docs.python.org/3.11/library/dis.html#opcode-LOAD_FAST"""
    _load_fast(tx, inst.arg)


def _load_fast(tx: Translator, arg: str | CellVar | FreeVar) -> None:
    # NOTE(3.13): LOAD_CLOSURE is a pseudo-instruction, compiled to LOAD_FAST of the cell's slot
    # (``bytecode`` names the slot by a string when a parameter or an inlined comprehension's
    # variable shares it; the comprehension's own value is loaded while LOAD_FAST_AND_CLEAR left
    # no cell there).
    if not isinstance(arg, str) or arg in tx.local_cells:
        _push_cell(tx, _cell_name(arg))
        return
    if arg not in tx.symbolic_locals:
        raise Unsupported("unbound_local", f"local variable {arg!r} referenced before assignment")
    tx.push(tx.symbolic_locals[arg])


@handler("LOAD_FAST_LOAD_FAST", frame_only=True)
def load_fast_load_fast(tx: Translator, inst: Instr) -> None:
    """(-- value1 value2)  3.13: ``LOAD_FAST a; LOAD_FAST b`` in one instruction, arg ``(a, b)``.
    https://docs.python.org/3.13/library/dis.html#opcode-LOAD_FAST_LOAD_FAST"""
    for name in inst.arg:
        _load_fast(tx, name)


@handler("STORE_FAST_LOAD_FAST", pops=1, frame_only=True)
def store_fast_load_fast(tx: Translator, inst: Instr) -> None:
    """(value1 -- value2)  3.13: ``STORE_FAST a; LOAD_FAST b``, arg ``(a, b)``."""
    stored, loaded = inst.arg
    _store_fast(tx, stored)
    _load_fast(tx, loaded)


@handler("STORE_FAST_STORE_FAST", pops=2, frame_only=True)
def store_fast_store_fast(tx: Translator, inst: Instr) -> None:
    """(value2 value1 --)  3.13: ``STORE_FAST a; STORE_FAST b``, arg ``(a, b)``."""
    for name in inst.arg:
        _store_fast(tx, name)


@handler("LOAD_FAST_AND_CLEAR")
def load_fast_and_clear(tx: Translator, inst: Instr) -> None:
    """(-- value_or_NULL)  3.12 inlined comprehensions save the outer binding of their variable.

    For a cell variable the slot holds the comprehension's own value, or a new cell if MAKE_CELL
    follows: closures holding the outer cell keep it, detached (with its value), until STORE_FAST
    restores it."""
    cell = tx.local_cells.pop(inst.arg, None) if inst.arg in tx.code.co_cellvars else None
    if cell is not None:
        cell.detach()
    value = tx.symbolic_locals.pop(inst.arg, NULL)
    if inst.arg not in tx.code.co_cellvars:
        tx.push(value)
        return
    tx.push(SavedCellVariable(cell, None if value is NULL else value))


@handler("STORE_FAST", pops=1, frame_only=True)
def store_fast(tx: Translator, inst: Instr) -> None:
    """(value --)  https://docs.python.org/3.11/library/dis.html#opcode-STORE_FAST"""
    _store_fast(tx, inst.arg)


def _store_fast(tx: Translator, name: str) -> None:
    value = tx.pop()
    if isinstance(value, SavedCellVariable):
        _restore_cell(tx, name, value)
    elif value is NULL:  # restoring an unbound comprehension variable (3.12)
        tx.symbolic_locals.pop(name, None)
    else:
        tx.symbolic_locals[name] = value


def _restore_cell(tx: Translator, name: str, saved: SavedCellVariable) -> None:
    """End of a 3.12 inlined comprehension: detach its cell, make the outer cell current again."""
    inner = tx.local_cells.pop(name, None)
    if inner is not None:
        inner.detach()
    outer = saved.cell
    value = outer.frame_locals.get(name) if outer is not None else saved.value
    if value is None:
        tx.symbolic_locals.pop(name, None)
    else:
        tx.symbolic_locals[name] = value
    if outer is not None:
        outer.frame_locals = tx.symbolic_locals
        tx.local_cells[name] = outer


@handler("DELETE_FAST")
def delete_fast(tx: Translator, inst: Instr) -> None:
    """(--)  https://docs.python.org/3.11/library/dis.html#opcode-DELETE_FAST"""
    tx.symbolic_locals.pop(inst.arg, None)


@handler("LOAD_GLOBAL")
def load_global(tx: Translator, inst: Instr) -> None:
    """(-- [NULL] value)  arg is (push_null, name); 3.13: (-- value [NULL])."""
    push_null, name = inst.arg
    value = tx.load_global(name)
    if push_null:
        push_callable(tx, value)
    else:
        tx.push(value)


@handler("LOAD_BUILD_CLASS")
def load_build_class(tx: Translator, inst: Instr) -> None:
    """(-- __build_class__)  the frame's builtin ``__build_class__``, which a ``class`` statement
    calls with its body's function: that call breaks (class bodies run in Python), one break for
    the statement. https://docs.python.org/3.11/library/dis.html#opcode-LOAD_BUILD_CLASS"""
    if not isinstance(tx.f_builtins, dict) or "__build_class__" not in tx.f_builtins:
        raise Unsupported("name_error", "__build_class__ not found")
    tx.push(tx.wrap_static(tx.f_builtins["__build_class__"]))


@handler("STORE_GLOBAL", pops=1)
def store_global(tx: Translator, inst: Instr) -> None:
    """(value --)  recorded as a side effect, replayed by the rewritten code: a store into the
    compiled function's module (an inlined function of that module too: ``load_global`` reads
    the pending store back wherever those globals are read)."""
    if tx.f_globals is not tx.root.f_globals:
        raise Unsupported(
            "global_store", f"store to global {inst.arg!r} of another module (an inlined call)"
        )
    tx.output.side_effects.store_global(inst.arg, tx.pop())


@handler("MAKE_CELL")
def make_cell(tx: Translator, inst: Instr) -> None:
    """(--)  the cell's value lives in the frame's symbolic locals; ``local_cells`` records that the
    slot now holds a cell (3.12+ comprehensions clear it with LOAD_FAST_AND_CLEAR, may make
    another)."""
    name = _cell_name(inst.arg)
    tx.local_cells[name] = LocalCellVariable(tx.symbolic_locals, name)


@handler("COPY_FREE_VARS", frame_only=True)
def copy_free_vars(tx: Translator, inst: Instr) -> None:
    """(--)  closure cells are bound when the translator is created."""


@handler("LOAD_CLOSURE", until=(3, 12), frame_only=True)
def load_closure(tx: Translator, inst: Instr) -> None:
    """(-- cell)  https://docs.python.org/3.11/library/dis.html#opcode-LOAD_CLOSURE"""
    _push_cell(tx, _cell_name(inst.arg))


def _push_cell(tx: Translator, name: str) -> None:
    if name in tx.closure:
        tx.push(tx.closure[name])
    else:
        if name not in tx.local_cells:
            tx.local_cells[name] = LocalCellVariable(tx.symbolic_locals, name)
        tx.push(tx.local_cells[name])


@handler("LOAD_DEREF")
def load_deref(tx: Translator, inst: Instr) -> None:
    """(-- value)  https://docs.python.org/3.11/library/dis.html#opcode-LOAD_DEREF"""
    name = _cell_name(inst.arg)
    if isinstance(inst.arg, CellVar) or name not in tx.closure:
        if name not in tx.symbolic_locals:
            raise Unsupported("unbound_local", f"free variable {name!r} used before assignment")
        tx.push(tx.symbolic_locals[name])
        return
    cell = tx.closure[name]
    if isinstance(cell, LocalCellVariable):
        if cell.name not in cell.frame_locals:
            raise Unsupported("unbound_local", f"free variable {name!r} used before assignment")
        tx.push(cell.frame_locals[cell.name])
    elif tx.parent is None and name in tx.output.side_effects.cell_stores:
        tx.push(tx.output.side_effects.cell_stores[name])
    else:
        assert isinstance(cell, ClosureCellVariable)
        tx.push(cell.contents(tx, name))


@handler("STORE_DEREF")
def store_deref(tx: Translator, inst: Instr) -> None:
    """(value --)  cells of traced frames are locals; the root frame's closure is a side effect."""
    name = _cell_name(inst.arg)
    value = tx.pop()
    cell = tx.closure.get(name) if isinstance(inst.arg, FreeVar) else None
    if cell is None:
        tx.symbolic_locals[name] = value
    elif isinstance(cell, LocalCellVariable):
        cell.frame_locals[cell.name] = value
    elif tx.parent is None:
        tx.output.side_effects.store_cell(name, value)
    elif isinstance(cell, ClosureCellVariable) and cell.reachable():
        cell.store(tx, value)  # replayed on the cell (``C[name]``, a resume argument...)
    else:
        raise Unsupported("closure_store", f"nonlocal store to {name!r} inside an inlined function")


@handler("DELETE_DEREF")
def delete_deref(tx: Translator, inst: Instr) -> None:
    """(--)  ``del x`` of a cell variable: the frame's own cell, or one of a frame being traced,
    emptied (a closure over it then finds it unbound); the closure of the compiled function and
    an unbound cell (CPython's NameError) are a break."""
    name = _cell_name(inst.arg)
    cell = tx.closure.get(name) if isinstance(inst.arg, FreeVar) else None
    if cell is None:
        owner, key = tx.symbolic_locals, name
    elif isinstance(cell, LocalCellVariable):
        owner, key = cell.frame_locals, cell.name
    else:
        owner, key = {}, name
    if key not in owner:
        raise Unsupported("closure_store", f"deleting the cell variable {name!r}")
    del owner[key]


def _cell_name(arg: CellVar | FreeVar | str) -> str:
    return arg if isinstance(arg, str) else arg.name


@handler("LOAD_ATTR", pops=1)
def load_attr(tx: Translator, inst: Instr) -> None:
    """(obj -- attr) or, 3.12 method form, (obj -- NULL|meth, attr|self); 3.13: (obj -- attr, NULL)
    (we always resolve the bound attribute, so the NULL form is used)."""
    # NOTE(3.12): the argument is (is_method, name); 3.11 uses LOAD_METHOD for the method form.
    is_method, name = inst.arg if LOAD_ATTR_TAKES_METHOD_FLAG else (False, inst.arg)
    attr = dispatch.getattr_(tx, tx.pop(), name)
    if is_method:
        push_callable(tx, attr)
    else:
        tx.push(attr)


@handler("LOAD_METHOD", until=(3, 11), pops=1)
def load_method(tx: Translator, inst: Instr) -> None:
    """(obj -- NULL, attr)  we always resolve the bound attribute, so the NULL form is used."""
    push_callable(tx, dispatch.getattr_(tx, tx.pop(), inst.arg))


@handler("STORE_ATTR", pops=2)
def store_attr(tx: Translator, inst: Instr) -> None:
    """(value obj --)  obj.name = value: setters, ``__setattr__`` run; stores are side effects."""
    obj, value = tx.pop(), tx.pop()
    if isinstance(obj, FunctionCtxVariable):  # ``ctx.scale = s`` in an autograd.Function forward
        obj.store_attr(inst.arg, value)
        return
    dispatch.store_attr(tx, obj, inst.arg, value)


@handler("DELETE_ATTR", pops=1)
def delete_attr(tx: Translator, inst: Instr) -> None:
    """(obj --)  ``del obj.name``  https://docs.python.org/3.11/library/dis.html#opcode-DELETE_ATTR"""
    delete_attribute(tx, tx.pop(), inst.arg)


@handler("LOAD_ASSERTION_ERROR")
def load_assertion_error(tx: Translator, inst: Instr) -> None:
    """(-- AssertionError)"""
    tx.push(tx.wrap_static(AssertionError))


@handler("LOAD_SUPER_ATTR")
def load_super_attr(tx: Translator, inst: Instr) -> None:
    """(super cls self -- attr) or, method form, (-- NULL attr)  3.12: ``super().name``; the
    3.13 method form is (-- attr NULL)."""
    is_method, _, name = inst.arg
    obj, cls, _super = tx.pop(), tx.pop(), tx.pop()
    attr = SuperVariable(cls.as_python_constant(), obj).var_getattr(tx, name)
    if is_method:
        push_callable(tx, attr)
    else:
        tx.push(attr)
