"""``Translator``: symbolic execution of one code object over VariableTrackers.

It owns the value stack, the symbolic locals and the instruction pointer, and ``step()`` dispatches each
instruction to its handler in ``opcodes/``; it knows no opcode semantics itself. ``InliningTranslator``
runs a called user function inside the same ``OutputGraph`` and hands back its return value.
"""

from __future__ import annotations

import types
from typing import Any

from bytecode import Bytecode, Instr, Label

from ..guards.sources import ClosureSource, ConstSource, GlobalSource, Source
from . import opcodes
from .exc import ReturnValue, Unsupported, UserLocation
from .output_graph import OutputGraph
from .variables import builder, dispatch
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.containers import DictVariable, TupleVariable
from .variables.functions import ClosureCellVariable

#: Inlining deeper than this is treated as unsupported recursion.
MAX_INLINE_DEPTH = 32


class Translator:
    dispatch = dispatch

    def __init__(self, code: types.CodeType, f_globals: dict[str, Any], output: OutputGraph,
                 symbolic_locals: dict[str, VariableTracker], closure: dict[str, VariableTracker],
                 parent: Translator | None = None) -> None:
        self.code = code
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", __builtins__)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.output = output
        self.symbolic_locals = symbolic_locals
        self.closure = closure
        self.parent = parent
        self.stack: list[VariableTracker] = []
        self.instructions, self.labels = _linearize(code)
        self.ip = 0
        self.current: Instr | None = None
        self.kw_names: tuple[str, ...] = ()
        self.depth = parent.depth + 1 if parent is not None else 0

    # -- stack -------------------------------------------------------------------------------------
    def push(self, vt: VariableTracker) -> None:
        assert isinstance(vt, VariableTracker), vt
        self.stack.append(vt)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def peek(self, depth: int = 1) -> VariableTracker:
        return self.stack[-depth]

    def jump(self, label: Label) -> None:
        self.ip = self.labels[label]

    # -- running -----------------------------------------------------------------------------------
    def run(self) -> VariableTracker:
        previous, self.output.current_tx = self.output.current_tx, self
        try:
            while True:
                self.step()
        except ReturnValue as ret:
            return ret.value
        except Unsupported as e:
            loc = self.location()
            if loc is not None:
                e.user_stack.insert(0, loc)
            raise
        finally:
            self.output.current_tx = previous

    def step(self) -> None:
        if self.ip >= len(self.instructions):
            raise Unsupported("fell_off", "reached the end of the code without a return")
        inst = self.instructions[self.ip]
        self.ip += 1
        self.current = inst
        fn = opcodes.HANDLERS.get(inst.name)
        if fn is None:
            reason = opcodes.UNSUPPORTED.get(inst.name, "not implemented")
            raise Unsupported("opcode", f"no handler for {inst.name} ({reason})")
        fn(self, inst)

    def location(self) -> UserLocation | None:
        inst = self.current
        lineno = inst.lineno if inst is not None else None
        if lineno is None:
            lineno = self.code.co_firstlineno
        return UserLocation(self.code.co_filename, lineno, self.code.co_name)

    # -- wrapping values ---------------------------------------------------------------------------
    def wrap(self, value: Any, source: Source | None) -> VariableTracker:
        return builder.wrap(self, value, source)

    def wrap_static(self, value: Any) -> VariableTracker:
        return builder.wrap_static(self, value)

    def fold(self, value: Any) -> VariableTracker:
        return builder.fold(self, value)

    def load_global(self, name: str) -> VariableTracker:
        pending = self.output.side_effects.global_stores.get(name) if self.parent is None else None
        if pending is not None:
            return pending
        if name in self.f_globals:
            source = _global_source(self, name)
            return self.wrap(self.f_globals[name], source)
        if name in self.f_builtins:
            return self.wrap_static(self.f_builtins[name])
        raise Unsupported("name_error", f"name {name!r} is not defined")

    # -- calls -------------------------------------------------------------------------------------
    def inline_call(self, code: types.CodeType, f_globals: dict[str, Any], args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker], defaults: tuple[dict, dict],
                    closure: dict[str, VariableTracker], fn: Any) -> VariableTracker:
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("recursion", f"inlining {code.co_name} is nested too deeply")
        if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator, coroutine, async generator
            raise Unsupported("generator", f"{code.co_name} is a generator or coroutine",
                              hint="generators are not traced; call it outside the compiled function")
        local_vars = bind_args(self, code, args, kwargs, defaults)
        tx = Translator(code, f_globals, self.output, local_vars, closure, parent=self)
        return tx.run()


def _global_source(tx: Translator, name: str) -> Source:
    """Globals of the root frame are ``G[...]``; globals of inlined functions from other modules are
    pinned by the function's identity guard, so they are read as constants of that trace."""
    root = tx
    while root.parent is not None:
        root = root.parent
    if tx.f_globals is root.f_globals:
        return GlobalSource(name)
    return ConstSource(tx.f_globals[name], f"{tx.f_globals.get('__name__', '?')}.{name}")


def bind_args(tx: Translator, code: types.CodeType, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker], defaults: tuple[dict, dict]) -> dict[str, VariableTracker]:
    """Bind call arguments to ``code``'s parameters, as CPython does (TypeError cases are Unsupported)."""
    nargs, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    bound: dict[str, VariableTracker] = {}
    pos_defaults, kw_defaults = defaults
    for name, value in zip(names[:nargs], args):
        bound[name] = value
    extra = list(args[nargs:])
    kwargs = dict(kwargs)
    for name in names[code.co_posonlyargcount:nargs + nkw]:
        if name in kwargs:
            if name in bound:
                raise Unsupported("bad_call", f"{code.co_name}() got multiple values for {name!r}")
            bound[name] = kwargs.pop(name)
    for name in names[:nargs + nkw]:
        if name not in bound:
            default = pos_defaults.get(name, kw_defaults.get(name, _MISSING))
            if default is _MISSING:
                raise Unsupported("bad_call", f"{code.co_name}() missing argument {name!r}")
            bound[name] = default if isinstance(default, VariableTracker) else _wrap_default(tx, default)
    index = nargs + nkw
    if code.co_flags & 0x04:  # *args
        bound[names[index]] = TupleVariable(extra)
        index += 1
    elif extra:
        raise Unsupported("bad_call", f"{code.co_name}() got too many positional arguments")
    if code.co_flags & 0x08:  # **kwargs
        bound[names[index]] = DictVariable(kwargs)
    elif kwargs:
        raise Unsupported("bad_call", f"{code.co_name}() got unexpected keyword {next(iter(kwargs))!r}")
    return bound


def _wrap_default(tx: Translator, value: Any) -> VariableTracker:
    if isinstance(value, (int, float, bool, str, type(None))):
        return ConstantVariable(value)
    return tx.wrap(value, ConstSource(value, "default"))


_MISSING = object()


def root_closure(fn: types.FunctionType) -> dict[str, VariableTracker]:
    return {name: ClosureCellVariable(cell, ClosureSource(name))
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())}


def _linearize(code: types.CodeType) -> tuple[list[Instr], dict[Label, int]]:
    """Instructions without pseudo-instructions, plus each label's index."""
    instructions: list[Instr] = []
    labels: dict[Label, int] = {}
    for item in Bytecode.from_code(code):
        if isinstance(item, Label):
            labels[item] = len(instructions)
        elif isinstance(item, Instr):
            instructions.append(item)
    return instructions, labels
