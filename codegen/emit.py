"""``Emitter``: a small, version-aware builder of ``bytecode`` instruction lists.

Every version difference in emission is one branch inside one method here (marked ``NOTE(3.x)``);
the callers (variable ``reconstruct`` methods, the rewritten-code builder, resume functions) never
branch on the Python version. The emitter tracks nothing about stack depth: ``bytecode`` computes
it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bytecode import CellVar, Compare, FreeVar, Instr, Label
from bytecode.instr import const_key

from .pyversion import (
    CALL_KW_ON_STACK,
    CALL_NEEDS_PRECALL,
    JUMPS_HAVE_DIRECTION,
    JUMPS_NEED_BOOL,
    LOAD_ATTR_TAKES_METHOD_FLAG,
    MAKE_FUNCTION_TAKES_FLAGS,
    NULL_ABOVE_CALLABLE,
)


class Emitter:
    """Appends instructions to ``self.instrs``; ``lineno`` (if set) is given to each new
    instruction."""

    def __init__(self, lineno: int | None = None) -> None:
        self.instrs: list[Any] = []
        self.lineno = lineno

    def add(self, name: str, arg: Any = None) -> Emitter:
        self.instrs.append(self._instr(name, arg))
        return self

    def _instr(self, name: str, arg: Any = None) -> Instr:
        kwargs = {"lineno": self.lineno} if self.lineno is not None else {}
        if arg is None and name not in _TAKES_NONE_ARG:
            return Instr(name, **kwargs)
        return Instr(name, arg, **kwargs)

    def extend(self, instrs: list[Any]) -> Emitter:
        self.instrs.extend(instrs)
        return self

    def label(self, label: Label) -> Emitter:
        self.instrs.append(label)
        return self

    # -- loads and stores ------------------------------------------------------------------------
    def load_const(self, value: Any) -> Emitter:
        return self.add("LOAD_CONST", value)

    def load_local(self, name: str) -> Emitter:
        return self.add("LOAD_FAST", name)

    def store_local(self, name: str) -> Emitter:
        return self.add("STORE_FAST", name)

    def load_deref(self, name: str, is_cellvar: bool = False) -> Emitter:
        return self.add("LOAD_DEREF", CellVar(name) if is_cellvar else FreeVar(name))

    def store_deref(self, name: str, is_cellvar: bool = False) -> Emitter:
        return self.add("STORE_DEREF", CellVar(name) if is_cellvar else FreeVar(name))

    def load_global(self, name: str, push_null: bool = False) -> Emitter:
        return self.add("LOAD_GLOBAL", (push_null, name))

    def store_global(self, name: str) -> Emitter:
        return self.add("STORE_GLOBAL", name)

    def load_attr(self, name: str) -> Emitter:
        # NOTE(3.12): LOAD_ATTR's argument is (is_method, name).
        return self.add("LOAD_ATTR", (False, name) if LOAD_ATTR_TAKES_METHOD_FLAG else name)

    def store_attr(self, name: str) -> Emitter:
        return self.add("STORE_ATTR", name)

    def push_null(self) -> Emitter:
        """Push a NULL (a stack slot of the CALL convention; use ``push_callable`` to call)."""
        return self.add("PUSH_NULL")

    # -- calls -----------------------------------------------------------------------------------
    def push_callable(self, emit: Callable[[], object]) -> Emitter:
        """Push a callable for ``call``/``call_ex``: ``emit()`` emits the code loading it, and the
        CALL convention's NULL is pushed on the right side of it."""
        # NOTE(3.13): the NULL goes above the callable ([fn, NULL, *args]); 3.11/3.12: below it.
        if not NULL_ABOVE_CALLABLE:
            self.push_null()
        emit()
        if NULL_ABOVE_CALLABLE:
            self.push_null()
        return self

    def push_method(self, emit: Callable[[], object]) -> Emitter:
        """``push_callable``, but where ``emit()`` ends by reading an attribute, the attribute is
        read as a method is for a call: ``[method, self]`` where the class defines it as a
        function (no bound method is made), else ``[NULL, attribute]``; a call of either calls
        what ``obj.name`` gives."""
        start = len(self.instrs)
        emit()
        last = self.instrs[-1] if len(self.instrs) > start else None
        if isinstance(last, Instr) and last.name == "LOAD_ATTR":
            # NOTE(3.12): LOAD_ATTR's argument is (is_method, name); 3.11 has LOAD_METHOD.
            if LOAD_ATTR_TAKES_METHOD_FLAG and not last.arg[0]:
                self.instrs[-1] = Instr("LOAD_ATTR", (True, last.arg[1]), location=last.location)
                return self
            if not LOAD_ATTR_TAKES_METHOD_FLAG:
                self.instrs[-1] = Instr("LOAD_METHOD", last.arg, location=last.location)
                return self
        # NOTE(3.13): the NULL goes above the callable; 3.11/3.12: below it.
        if NULL_ABOVE_CALLABLE:
            return self.push_null()
        self.instrs.insert(start, self._instr("PUSH_NULL"))
        return self

    def add_null_to_callable(self) -> Emitter:
        """The callable on top of the stack gets the CALL convention's NULL (``NULL_OFFSET``)."""
        self.push_null()
        # NOTE(3.13): the NULL belongs above the callable, where it already is.
        return self if NULL_ABOVE_CALLABLE else self.swap(2)

    def pop_null(self) -> Emitter:
        """Discard a NULL from the top of the stack (POP_TOP cannot): call ``tuple()`` with it as
        the CALL convention's NULL and drop the result."""
        self.load_const(tuple)
        # NOTE(3.13): CALL wants [callable, NULL]; 3.11/3.12 want [NULL, callable].
        if NULL_ABOVE_CALLABLE:
            self.swap(2)
        return self.call(0).pop_top()

    def call(self, nargs: int, kw_names: tuple[str, ...] = ()) -> Emitter:
        """Call with stack ``[NULL, fn, *args]`` (3.13: ``[fn, NULL, *args]``, see
        ``push_callable``) or ``[fn, self, *args]``; the last ``kw_names`` args are keywords."""
        # NOTE(3.13): CALL_KW takes the names tuple from the stack; KW_NAMES is gone.
        if kw_names and CALL_KW_ON_STACK:
            return self.load_const(tuple(kw_names)).add("CALL_KW", nargs)
        if kw_names:
            self.add("KW_NAMES", tuple(kw_names))
        # NOTE(3.12): PRECALL is gone.
        if CALL_NEEDS_PRECALL:
            self.add("PRECALL", nargs)
        return self.add("CALL", nargs)

    def call_function(self, nargs: int, kw_names: tuple[str, ...] = ()) -> Emitter:
        """Call with stack ``[fn, *args]``: inserts the NULL next to ``fn`` first."""
        self.add("PUSH_NULL")
        # NOTE(3.13): the NULL goes right above ``fn``; 3.11/3.12: right below it.
        self.swap_null_below(nargs if NULL_ABOVE_CALLABLE else nargs + 1)
        return self.call(nargs, kw_names)

    def swap_null_below(self, depth: int) -> Emitter:
        """Move a just-pushed NULL from the top of the stack to ``depth`` items below it."""
        for i in range(depth, 0, -1):
            self.add("SWAP", i + 1)
        return self

    def call_ex(self, has_kwargs: bool) -> Emitter:
        """``fn(*args_tuple, **kwargs_dict)`` with stack ``[NULL, fn, args(, kwargs)]`` (3.13:
        ``[fn, NULL, ...]``, see ``push_callable``)."""
        return self.add("CALL_FUNCTION_EX", int(has_kwargs))

    # -- stack shuffling and containers ----------------------------------------------------------
    def pop_top(self) -> Emitter:
        return self.add("POP_TOP")

    def swap(self, i: int) -> Emitter:
        return self.add("SWAP", i)

    def copy(self, i: int) -> Emitter:
        return self.add("COPY", i)

    def build_tuple(self, n: int) -> Emitter:
        return self.add("BUILD_TUPLE", n)

    def build_list(self, n: int) -> Emitter:
        return self.add("BUILD_LIST", n)

    def build_set(self, n: int) -> Emitter:
        return self.add("BUILD_SET", n)

    def build_map(self, n: int) -> Emitter:
        return self.add("BUILD_MAP", n)

    def build_slice(self, n: int) -> Emitter:
        return self.add("BUILD_SLICE", n)

    def unpack(self, n: int) -> Emitter:
        return self.add("UNPACK_SEQUENCE", n)

    def subscr(self) -> Emitter:
        return self.add("BINARY_SUBSCR")

    def store_subscr(self) -> Emitter:
        return self.add("STORE_SUBSCR")

    def compare(self, op: Compare) -> Emitter:
        return self.add("COMPARE_OP", op)

    def return_value(self) -> Emitter:
        return self.add("RETURN_VALUE")

    def jump(self, label: Label) -> Emitter:
        return self.add("JUMP_FORWARD", label)

    def to_bool(self) -> Emitter:
        """``bool()`` of the value on top, before a conditional jump or ``UNARY_NOT`` (3.13)."""
        # NOTE(3.13): jumps and UNARY_NOT take exact bools; older versions convert themselves.
        return self.add("TO_BOOL") if JUMPS_NEED_BOOL else self

    def pop_jump_if_false(self, label: Label) -> Emitter:
        return self.to_bool().add(POP_JUMP_IF_FALSE, label)

    def pop_jump_if_true(self, label: Label) -> Emitter:
        return self.to_bool().add(POP_JUMP_IF_TRUE, label)

    def make_function(self, flags: int = 0) -> Emitter:
        """``[defaults] [kwdefaults] [annotations] [closure] code -- function``, ``flags`` saying
        which of the four are on the stack (``MAKE_FUNCTION`` flag bits 1, 2, 4, 8)."""
        if MAKE_FUNCTION_TAKES_FLAGS:
            return self.add("MAKE_FUNCTION", flags)
        # NOTE(3.13): MAKE_FUNCTION takes the code alone; SET_FUNCTION_ATTRIBUTE attaches each part,
        # the one nearest the top (highest flag) first.
        self.add("MAKE_FUNCTION")
        for flag in (0x08, 0x04, 0x02, 0x01):
            if flags & flag:
                self.add("SET_FUNCTION_ATTRIBUTE", flag)
        return self


_TAKES_NONE_ARG = frozenset({"LOAD_CONST"})

#: Where ``add_null_to_callable`` puts the NULL: this many slots from the top, callable included.
NULL_OFFSET = 1 if NULL_ABOVE_CALLABLE else 2

# NOTE(3.12): conditional jumps lost their FORWARD/BACKWARD spelling; on 3.11 we emit the forward
# form (generated code only jumps forward).
POP_JUMP_IF_FALSE = "POP_JUMP_FORWARD_IF_FALSE" if JUMPS_HAVE_DIRECTION else "POP_JUMP_IF_FALSE"
POP_JUMP_IF_TRUE = "POP_JUMP_FORWARD_IF_TRUE" if JUMPS_HAVE_DIRECTION else "POP_JUMP_IF_TRUE"


def _reordered_in_code(value: Any) -> bool:
    """A frozenset of several items, or a tuple holding one: a code object's constructor may
    rebuild such a constant (to intern the strings in it), and the rebuilt frozenset can iterate
    in another order than the one the trace read."""
    if type(value) is frozenset:
        return len(value) > 1 or any(_reordered_in_code(v) for v in value)
    return type(value) is tuple and any(_reordered_in_code(v) for v in value)


class Codegen(Emitter):
    """An ``Emitter`` that knows where the compiled graph's outputs are, so tracked values can
    rebuild themselves: ``graph_outputs`` maps an FX node to its index in the tuple stored in
    ``output_var``."""

    def __init__(self, lineno: int | None = None, output_var: str = "__graph_out") -> None:
        super().__init__(lineno)
        self.graph_outputs: dict[Any, int] = {}
        self.output_var = output_var
        self.cells: dict[str, Any] = {}  #: extra closure cells the finished function needs
        #: the code continues in resume functions (a graph break): state of the traced frames
        #: (their cells) lives on there, so objects sharing it cannot be rebuilt apart from it
        self.resumes = False
        #: id(key) -> the local holding what ``build_once(key, ...)`` built (shared by sub-emitters)
        self.built: dict[int, tuple[Any, str]] = {}
        #: locals already holding an object created during the trace (set by the side-effect
        #: replay; an object is loaded from its local only after it was created)
        self.new_objects: set[str] = set()
        #: the tuple or frozenset constant loaded first for each value (``load_const``)
        self.consts: dict[Any, Any] = {}

    def load_const(self, value: Any) -> Emitter:
        """``LOAD_CONST value``; a tuple or frozenset equal to one loaded before but another object
        goes through a closure cell instead: the code object's constant table keeps one object
        per equal value, and the rewritten code must give back each object the trace saw."""
        if type(value) in (tuple, frozenset) and value:
            first = self.consts.setdefault(const_key(value), value)
            if first is not value or _reordered_in_code(value):
                return self.load_cell_value(f"__bg_const{len(self.cells)}", value)
        return super().load_const(value)

    def build_once(self, key: Any, build: Callable[[], Any]) -> Emitter:
        """Push the object identified by ``key``: built by ``build()`` the first time (and kept in a
        local), loaded from that local afterwards. A mutable object made in the trace and reachable
        twice (a list in two locals, a dict and its view) stays one object in the rewritten code.
        The first build must be on every path to later loads (generated code builds before it
        branches)."""
        known = self.built.get(id(key))
        if known is not None:
            return self.load_local(known[1])
        build()
        name = f"__bg_obj{len(self.built)}"
        self.built[id(key)] = (key, name)  # the key is kept: its id cannot be reused meanwhile
        self.copy(1)
        return self.store_local(name)

    def build_ahead(
        self, push: Callable[[], Any], refused: type[Exception] | tuple[type[Exception], ...] = ()
    ) -> None:
        """Build now the objects that ``push()`` (code pushing one value) builds once
        (``build_once``), for code that branches later: each branch then loads them from their
        locals. Where ``push()`` builds none, or raises one of ``refused``, its code is dropped
        (and what it noted built forgotten); else the value it pushed is popped."""
        start, before = len(self.instrs), dict(self.built)
        try:
            push()
        except refused:
            del self.instrs[start:]
            self.built.clear()
            self.built.update(before)
            return
        if len(self.built) == len(before):
            del self.instrs[start:]
        else:
            self.pop_top()

    def load_cell_value(self, name: str, value: Any) -> Emitter:
        """Load ``value`` through a new closure cell called ``name`` (``LOAD_DEREF name``)."""
        self.cells[name] = value
        return self.load_deref(name)

    def load_graph_output(self, node: Any) -> Emitter:
        self.load_local(self.output_var)
        self.load_const(self.graph_outputs[node])
        return self.subscr()
