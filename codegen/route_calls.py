"""Code whose calls go through a router: what runs in plain Python still calls compiled callees.

torch.compile's frame hook compiles every frame Python runs, so a function that runs in plain
Python (a fallback, or the rest of a function after a break inside a ``try`` block) still calls
compiled code below it. bytegraph has no hook; ``routed(fn, route)`` returns ``fn`` with code in
which each call first passes its callable through ``route`` (``route(callable)`` returns what to
call instead: a compiled version, or the callable itself), and is otherwise the original code:
same instructions, exception table, line numbers, closure, defaults and globals.

Every call of the code is routed: ``CALL``, ``CALL_KW`` and ``CALL_FUNCTION_EX``. A method load
(the method form of ``LOAD_ATTR`` and ``LOAD_SUPER_ATTR``) pushes the class's function and
``self`` where the method is one, else the attribute and a ``NULL``. From 3.13 the callable's slot
holds the function or the attribute either way (``self`` or ``NULL`` comes above it): the
function is routed, and what the router returns for it is called with ``self`` as its first
argument, which is what calling the bound method of what it returns does; no bound method is
made, and the function, unlike a bound method, is found in the router's table. Before 3.13 the
slot holds the function or a ``NULL`` (``self`` or the attribute above it), and no instruction
but a call reads a ``NULL``; but one can be stored in a cell, and an empty cell compares equal
to an empty one only (reading neither's contents). So the call site of a method load moves the
slot into a cell of the frame's own (``_unbound_method``): a function is loaded back and routed
as from 3.13, the cell emptied; for a ``NULL`` the attribute above it is routed. That needs the
load paired with its call (``_method_calls``: both slots stay on the stack between them) and the
stack depths; where either is missing (or there is no table), the method load is spelled as the
plain load of the bound method and a ``NULL``, so the callable's slot holds the callable itself.
Before the call (and before 3.11/3.12's ``KW_NAMES``, which the next call consumes) the callable
is swapped to the top, passed to ``route``, and swapped back.
Implicit calls (operators, attribute hooks, iteration) are not routed, nor is the call of a
comprehension's or generator expression's own function on its iterator (``GET_ITER`` then a call
of no arguments, which 3.11/3.12 make with the iterator in ``self``'s slot).

Given a router with a ``table`` (``route.table``: a dict whose ``__missing__`` asks the router,
its ``as_is``, a set of the callables it holds that are called as they are, and its ``sites``, a
weak set that each call site's cache is added to), a call site first tests its callable against
the one it found in the set last (``SiteCache``: by identity, which hashes nothing) and calls it
where it is that one. Else, in code placed after the function's, it tests it against the
callable the table held with another target that it found last (a compiled version: called
without a lookup), then ``callable in table.as_is`` (remembering a callable found there), and
where it is not, looks it up, ``table.get(callable)`` (remembering what the table held), else
``table[callable]``, and calls what it finds: no Python call on the way. Before the lookup, the
callables made anew at each call, never found in the table but called as they are (a bound
method whose function is in the set, a C method bound to an object), and the modules of the
table's ``leaves`` (library classes) without children, are told by their types (``_unbound``:
what ``RouteTable.__missing__``, a Python call, would answer). A callable that cannot be hashed
(or a module whose leaf test raises) raises inside a try region of the set test's, the leaf
test's or the lookup's own, whose handler asks ``route`` and jumps back. That needs the stack
depth at the site (``_depths``); a site whose depth is not known asks ``route`` directly. Nothing
the call site itself runs raises: the try regions of the code cover it as they are.
"""

from __future__ import annotations

import dis
import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

from bytecode import Bytecode, CellVar, Compare, Instr, Label, TryBegin, TryEnd

from . import exception_table, frame_locals
from .emit import POP_JUMP_IF_FALSE, POP_JUMP_IF_TRUE
from .pyversion import (
    CALL_NEEDS_PRECALL,
    FUNCTIONS_HAVE_TYPE_PARAMS,
    JUMPS_NEED_BOOL,
    LOAD_ATTR_TAKES_METHOD_FLAG,
    NULL_ABOVE_CALLABLE,
    PY313,
)
from .transform import assemble

#: The instructions that call, with the callable's depth below the top of the stack as a function
#: of the instruction's argument (the number of arguments, or ``CALL_FUNCTION_EX``'s flags).
#: NOTE(3.13): ``[callable, NULL, *args]`` puts the callable one deeper, ``CALL_KW`` its names
#: tuple on top; 3.11/3.12 ``[NULL, callable, *args]``; 3.11 calls with ``PRECALL`` then ``CALL``.
_CALLABLE_DEPTH: dict[str, Callable[[int], int]] = (
    {
        "CALL": lambda n: n + 2,
        "CALL_KW": lambda n: n + 3,
        "CALL_FUNCTION_EX": lambda flags: 3 + (flags & 1),
    }
    if NULL_ABOVE_CALLABLE
    else {
        "PRECALL" if CALL_NEEDS_PRECALL else "CALL": lambda n: n + 1,
        "CALL_FUNCTION_EX": lambda flags: 2 + (flags & 1),
    }
)


def routed(fn: types.FunctionType, route: Callable[[Any], Any]) -> types.FunctionType:
    """``fn`` with every call's callable passed through ``route`` first (see the module); ``fn``
    itself when its code makes no call. Where ``route.table`` is set (a dict whose
    ``__missing__`` answers as ``route`` does), each call site looks its callable up there first.
    The rewritten code is made once per code and router."""
    table = getattr(route, "table", None)
    made = _ROUTED.get(fn.__code__)
    if made is None or made[0] is not route or made[1] is not table:
        made = _ROUTED[fn.__code__] = (route, table, _routed_code(fn.__code__, route, table))
    code = made[2]
    if code is None:
        return fn
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    for name in _KEPT:
        setattr(new, name, getattr(fn, name))
    new.__dict__.update(fn.__dict__)
    return new


#: code -> (the router, its table, the code with its calls routed through them, or None if it
#: calls nothing); the last router asked for each code (most code is routed through one).
_ROUTED: weakref.WeakKeyDictionary[types.CodeType, tuple[Any, Any, types.CodeType | None]] = (
    weakref.WeakKeyDictionary()
)


def _routed_code(
    original: types.CodeType, route: Callable[[Any], Any], table: dict[Any, Any] | None
) -> types.CodeType | None:
    if not any(instr.opname in _CALLABLE_DEPTH for instr in dis.get_instructions(original)):
        return None
    bc = Bytecode.from_code(original)
    items = list(bc)
    depths_known = exception_table.set_try_depths(items, original)
    depths = _depths(items, original.co_flags) if table is not None and depths_known else {}
    paired = _method_calls(items, depths) if not NULL_ABOVE_CALLABLE else {}
    kept = set(paired.values())  #: the method loads left as they are
    out: list[Any] = []
    handlers: list[Any] = []
    for n, item in enumerate(items):
        if not isinstance(item, Instr):
            out.append(item)
            continue
        depth = _CALLABLE_DEPTH.get(item.name)
        if depth is not None and not (item.arg == 0 and out and _is_instr(out[-1], "GET_ITER")):
            at = len(out) - 1 if out and _is_instr(out[-1], "KW_NAMES") else len(out)
            if n in paired:
                site, handler = _unbound_method(depth(item.arg) + 1, depths[n], table, route, item)
                handlers += handler
            elif n in depths:
                site, handler = _looked_up(depth(item.arg), depths[n], table, route, item)
                handlers += handler
            else:
                site = _route(depth(item.arg), route, item)
            out[at:at] = site
        out += [item] if n in kept else _plain_load(item)
    if paired:
        bc.cellvars.append(_CELL)
        start = next(n for n, item in enumerate(out) if not _is_prologue(item))
        out.insert(start, Instr("MAKE_CELL", CellVar(_CELL)))
    bc.clear()
    bc.extend(out + handlers)
    # The handlers' depths are the code's own: what is inserted leaves the stack as it was.
    code = assemble(bc, compute_exception_depths=not depths_known)
    if any(entry.depth >= exception_table.UNREACHED for entry in exception_table.entries(code)):
        raise ValueError(f"cannot place the try-block handlers of {original.co_qualname}")
    # the user's frame the copy runs: a resume function's, else the original's from its start
    user = frame_locals.registered(original)
    frame_locals.register(code, user or frame_locals.UserFrame.of(original, resumed=False))
    return code


#: What a routed function keeps of the original besides code, globals, name, defaults, closure.
_KEPT = (
    "__kwdefaults__",
    "__qualname__",
    "__module__",
    "__doc__",
    "__annotations__",
    *(("__type_params__",) if FUNCTIONS_HAVE_TYPE_PARAMS else ()),
)


def _is_instr(item: Any, name: str) -> bool:
    return isinstance(item, Instr) and item.name == name


def _route(depth: int, route: Callable[[Any], Any], at: Instr) -> list[Instr]:
    """``callable = route(callable)`` for the callable ``depth`` items down the stack."""
    swap = [Instr("SWAP", depth, location=at.location)] if depth > 1 else []
    return [*swap, *_call_route(route, at), *swap]


def _call_route(route: Callable[[Any], Any], at: Instr) -> list[Instr]:
    """``[callable] -> [route(callable)]`` (``route`` any function of one argument)."""

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    if NULL_ABOVE_CALLABLE:  # [callable] -> [route, NULL, callable]
        call = [op("LOAD_CONST", route), op("SWAP", 2), op("PUSH_NULL"), op("SWAP", 2)]
    else:  # [callable] -> [NULL, route, callable]
        call = [op("LOAD_CONST", route), op("PUSH_NULL"), op("SWAP", 3)]
    call += [op("PRECALL", 1)] if CALL_NEEDS_PRECALL else []
    return [*call, op("CALL", 1)]


def _looked_up(
    depth: int, stack: int, table: Any, route: Callable[[Any], Any], at: Instr
) -> tuple[list[Any], list[Any]]:
    """For the callable ``depth`` items down a stack ``stack`` deep: nothing where it is the
    callable the site found in ``table.as_is`` last (``SiteCache``), else, placed apart (returned
    for the end of the code), the test of what the site found in the table last, the set test
    (the callable remembered where it is in the set) and ``callable = table[callable]`` where it
    is not (remembered where the table holds it), with the handler of the try regions of both,
    which asks ``route`` instead (an unhashable callable). Returns the site and what is placed
    apart. Nothing at the site raises: the enclosing try region covers it as it is."""

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    handler, lookup, back, slow = Label(), Label(), Label(), Label()
    cache = _site_cache(table)
    site = [*_is_last(depth, cache, at), *_unless_last(slow, back, at)]
    apart = _in_as_is(depth, stack, table, cache, at, (slow, handler, lookup, back))
    labels = (lookup, handler, back)
    return site, apart + _lookup(depth, stack, table, route, cache, at, labels)


class SiteCache:
    """What a call site found in its table last: ``last``, the callable it found in ``as_is``,
    which the site tests by identity before anything else; ``found``, ``(callable, target)``
    for the last callable the table held with another target (a compiled version, a routed
    copy), tested by identity before the set. The table forgets both when it drops the
    callable (a site that read the table just before may remember it again, and call it, or
    call what it found, as it was decided until then: a call left uncompiled, or made through
    a compiled version decided on before, never a wrong one)."""

    __slots__ = ("last", "found", "__weakref__")

    def __init__(self) -> None:
        self.last: Any = None
        self.found: tuple[Any, Any] = _NOTHING_FOUND

    def forget(self, obj: Any) -> None:
        """Forget ``obj`` if it is what this site found."""
        if self.last is obj:
            self.last = None
        if self.found[0] is obj:
            self.found = _NOTHING_FOUND

    def clear(self) -> None:
        self.last = None
        self.found = _NOTHING_FOUND


#: ``SiteCache.found`` before a site found anything: no callable is its first item.
_NOTHING_FOUND = (object(), None)


def _site_cache(table: Any) -> SiteCache:
    """A new call site's cache, registered in ``table.sites`` (a weak set)."""
    cache = SiteCache()
    table.sites.add(cache)
    return cache


def _is_last(depth: int, cache: SiteCache, at: Instr) -> list[Instr]:
    """``[callable, *args] -> [callable, *args, callable is cache.last]``."""
    test = [("COPY", depth), ("LOAD_CONST", cache), ("LOAD_ATTR", _attr("last")), ("IS_OP", 0)]
    return [Instr(*op, location=at.location) for op in test]


def _unless_last(slow: Label, back: Label, at: Instr) -> list[Any]:
    """After ``_is_last``: on at ``back`` where the callable is the one found last, else to
    ``slow``, placed apart. The test jumps over the jump to ``slow``: a jump past 255 code units
    takes an ``EXTENDED_ARG``, which the call site would otherwise run at every call."""
    jumps = [(POP_JUMP_IF_TRUE, back), ("JUMP_FORWARD", slow)]
    return [*(Instr(*op, location=at.location) for op in jumps), back]


def _in_as_is(
    depth: int,
    stack: int,
    table: Any,
    cache: SiteCache,
    at: Instr,
    labels: tuple[Label, Label, Label, Label],
) -> list[Any]:
    """From ``slow``: where the callable ``depth`` items down a stack ``stack`` deep is the one
    ``cache.found`` holds, it is replaced by what was found for it; where it is in
    ``table.as_is``, it is remembered in ``cache``; either way the code goes on at ``back``;
    else at ``lookup``. The set test is in a try region whose handler is ``handler``."""
    slow, handler, lookup, back = labels

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    # [callable, *args] -> [callable, *args, target, last]: ``found`` read once
    not_found = Label()
    found = [op("LOAD_CONST", cache), op("LOAD_ATTR", _attr("found")), op("UNPACK_SEQUENCE", 2)]
    found += [op("COPY", depth + 2), op("IS_OP", 0), op(POP_JUMP_IF_FALSE, not_found)]
    found += [op("SWAP", depth + 1), op("POP_TOP"), op("JUMP_BACKWARD", back)]
    region = TryBegin(handler, False, stack_depth=stack)
    test = [op("COPY", depth), op("LOAD_CONST", table), op("LOAD_ATTR", _attr("as_is"))]
    test += [op("CONTAINS_OP", 0)]
    remember = [op("COPY", depth), op("LOAD_CONST", cache), op("STORE_ATTR", "last")]
    out = [slow, *found, not_found, op("POP_TOP"), region, *test, TryEnd(region)]
    out += [op(POP_JUMP_IF_FALSE, lookup), *remember]
    return [*out, op("JUMP_BACKWARD", back)]


def _lookup(
    depth: int,
    stack: int,
    table: Any,
    route: Callable[[Any], Any],
    cache: SiteCache,
    at: Instr,
    labels: tuple[Label, Label, Label],
) -> list[Any]:
    """Placed apart, from ``lookup``: ``callable = table[callable]`` (the callable ``depth``
    items down a stack ``stack`` deep, ``_from_table``) but where ``_unbound`` finds it called
    as it is, then back to ``back``; and ``handler``, the handler of the try regions of the set
    test and the lookup, which asks ``route`` instead (an unhashable callable)."""
    lookup, handler, back = labels

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    general = Label()
    apart = [lookup, *_unbound(depth, stack, table, (back, general, handler), at)]
    apart += [general, *_from_table(depth, stack, table, cache, at, handler, back)]
    # [callable, *args, exception] -> [callable, *args, route(callable)], then on as if found
    replace = [op("SWAP", depth + 1), op("POP_TOP"), op("JUMP_BACKWARD", back)]
    apart += [handler, op("POP_TOP"), op("COPY", depth), *_call_route(route, at), *replace]
    return apart


def _from_table(
    depth: int, stack: int, table: Any, cache: SiteCache, at: Instr, handler: Label, back: Label
) -> list[Any]:
    """``callable = table[callable]`` (the callable ``depth`` items down a stack ``stack``
    deep), then on at ``back``; a callable the table holds itself (not one its ``__missing__``
    answers: made anew at each call, or decided now) is remembered with what it found
    (``cache.found``), one tuple stored at once. A table's values are callables, never None.
    Both reads are in try regions whose handler is ``handler``."""

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    missing = Label()
    # [callable, *args] -> [callable, *args, table.get(callable)]
    held = TryBegin(handler, False, stack_depth=stack)
    out = [held, op("COPY", depth), *_call_route(table.get, at), TryEnd(held)]
    out += [op("COPY", 1), op("LOAD_CONST", None), op("IS_OP", 0), op(POP_JUMP_IF_TRUE, missing)]
    remember = [op("COPY", depth + 1), op("COPY", 2), op("BUILD_TUPLE", 2)]
    out += [*remember, op("LOAD_CONST", cache), op("STORE_ATTR", "found")]
    replace = [op("SWAP", depth + 1), op("POP_TOP"), op("JUMP_BACKWARD", back)]
    out += replace
    # not held: [callable, *args] -> [callable, *args, table[callable]] (``__missing__``)
    answered = TryBegin(handler, False, stack_depth=stack)
    out += [missing, op("POP_TOP"), answered, op("LOAD_CONST", table), op("COPY", depth + 1)]
    return [*out, op("BINARY_SUBSCR"), TryEnd(answered), *replace]


def _unbound(
    depth: int, stack: int, table: Any, labels: tuple[Label, Label, Label], at: Instr
) -> list[Any]:
    """Jumps to ``back`` (the callable called as it is) where the callable ``depth`` items down
    a stack ``stack`` deep is made anew at each call (or is an object the table never holds)
    and so never found in ``table``, but is called as it is all the same
    (``RouteTable.__missing__`` would answer so): a bound method whose function is in
    ``table.as_is``, a C method bound to an object (not a module), a library leaf module
    (``_library_leaf``, where the table has ``leaves``); else goes on to ``general``. No Python
    call, no object made; only the leaf test may raise (reading what ``__missing__`` reads),
    inside a try region whose handler is ``handler``."""
    back, general, handler = labels
    leaves = getattr(table, "leaves", None)

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    drop, not_method = Label(), Label()
    kind = [op("COPY", depth), *_call_route(type, at)]  # [..] -> [.., type(callable)]
    out = [*kind, op("COPY", 1), op("LOAD_CONST", types.MethodType), op("IS_OP", 0)]
    out += [op(POP_JUMP_IF_FALSE, not_method), op("POP_TOP")]
    # [..] -> [.., fn]: a function's hash is its identity (the set test runs no user code)
    out += [op("COPY", depth), op("LOAD_ATTR", _attr("__func__")), op("COPY", 1)]
    out += [*_call_route(type, at), op("LOAD_CONST", types.FunctionType), op("IS_OP", 0)]
    out += [op(POP_JUMP_IF_FALSE, drop), op("LOAD_CONST", table), op("LOAD_ATTR", _attr("as_is"))]
    out += [op("CONTAINS_OP", 0), op(POP_JUMP_IF_FALSE, general), op("JUMP_BACKWARD", back)]
    # [.., type(callable)]: a C method bound to an object, not to a module (nor to nothing)
    if leaves is None:
        out += [not_method, op("LOAD_CONST", types.BuiltinMethodType), op("IS_OP", 0)]
        out += [op(POP_JUMP_IF_FALSE, general)]
    else:
        c_method = Label()
        out += [not_method, op("COPY", 1), op("LOAD_CONST", types.BuiltinMethodType)]
        out += [op("IS_OP", 0), op(POP_JUMP_IF_TRUE, c_method)]
        out += _library_leaf(depth, stack, leaves, (back, general, handler), at)
        out += [c_method, op("POP_TOP")]
    out += [op("COPY", depth), op("LOAD_ATTR", _attr("__self__"))]
    out += [op("COPY", 1), op("LOAD_CONST", None), op("IS_OP", 0), op(POP_JUMP_IF_TRUE, drop)]
    out += [*_call_route(type, at), op("LOAD_CONST", types.ModuleType), op("IS_OP", 0)]
    out += [op(POP_JUMP_IF_TRUE, general), op("JUMP_BACKWARD", back)]
    return [*out, drop, op("POP_TOP")]


def _library_leaf(
    depth: int,
    stack: int,
    leaves: dict[type, Any],
    labels: tuple[Label, Label, Label],
    at: Instr,
) -> list[Any]:
    """``[.., type(callable)] -> [..]``, on at ``back`` where the callable ``depth`` items down
    (under its type) is a module of a library class without children, called as it is
    (``RouteTable.__missing__`` would answer so: its class, whose metaclass is ``type``, in
    ``leaves``, a dict of such classes to the ``forward`` they had when found so, with that
    ``forward`` still, and its ``_modules`` empty now), else to ``general``. Decided at each
    call, as ``__missing__`` decides, without its call: only a class whose metaclass is ``type``
    is looked up (it hashes by identity; another's ``__hash__`` could be Python). The reads are
    ``__missing__``'s, in a try region whose handler is ``handler``."""
    back, general, handler = labels

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    drop, other, to_bool = Label(), Label(), [op("TO_BOOL")] if JUMPS_NEED_BOOL else []
    # [.., T]: T's metaclass is ``type``
    out = [op("COPY", 1), *_call_route(type, at), op("LOAD_CONST", type), op("IS_OP", 0)]
    out += [op(POP_JUMP_IF_FALSE, other)]
    region = TryBegin(handler, False, stack_depth=stack)
    # [.., T] -> [.., T, leaves.get(T)]
    out += [region, op("COPY", 1), *_call_route(leaves.get, at)]
    out += [op("COPY", 1), op("LOAD_CONST", None), op("IS_OP", 0), op(POP_JUMP_IF_TRUE, drop)]
    # [.., T, forward] -> [..]: the class's ``forward`` is the one found, and no child
    out += [op("SWAP", 2), op("LOAD_ATTR", _attr("forward")), op("IS_OP", 0)]
    out += [op(POP_JUMP_IF_FALSE, general), op("COPY", depth)]
    out += [op("LOAD_ATTR", _attr("_modules")), *to_bool, TryEnd(region)]
    out += [op(POP_JUMP_IF_TRUE, general), op("JUMP_BACKWARD", back)]
    return [*out, drop, op("POP_TOP"), other, op("POP_TOP"), op("JUMP_FORWARD", general)]


def _unbound_method(
    depth: int, stack: int, table: Any, route: Callable[[Any], Any], at: Instr
) -> tuple[list[Any], list[Any]]:
    """The site of a call of what a method load left as it is (before 3.13): the slot ``depth``
    items down holds the class's function (``self`` above it) or a ``NULL`` (the callable above
    it). It is moved into a cell of the frame (``_CELL``), which only tells the two apart: a
    function is routed as from 3.13 (what the table gives is called with ``self`` first), and
    the cell emptied; for a ``NULL``, the callable above it is routed as ``_looked_up`` does
    (placed apart). Returns what ``_looked_up`` returns."""

    def op(name: str, *arg: Any) -> Instr:
        return Instr(name, *arg, location=at.location)

    cell = CellVar(_CELL)
    handler, lookup, back, done, null, slow = (Label() for _ in range(6))
    # [fn or NULL, *rest] -> [*rest] with the cell holding it -> [*rest, fn] (or to ``null``)
    site = [op("SWAP", depth), op("STORE_DEREF", cell), op("LOAD_CLOSURE", cell)]
    site += [op("LOAD_CONST", _EMPTY), op("LOAD_ATTR", _attr("cell"))]
    site += [op("COMPARE_OP", Compare.EQ), op(POP_JUMP_IF_TRUE, null)]
    site += [op("LOAD_DEREF", cell), op("DELETE_DEREF", cell)]
    cache = _site_cache(table)
    site += [*_is_last(1, cache, at), *_unless_last(slow, back, at), op("SWAP", depth), done]
    apart = _in_as_is(1, stack, table, cache, at, (slow, handler, lookup, back))
    # [*rest, fn] -> [*rest, table[fn]]
    apart += [lookup, *_from_table(1, stack, table, cache, at, handler, back)]
    apart += [handler, op("POP_TOP"), *_call_route(route, at), op("JUMP_BACKWARD", back)]
    # [*rest] -> [NULL, callable, *args], the callable routed as ``_looked_up`` does
    other, other_slow = _looked_up(depth - 1, stack, table, route, at)
    apart += [null, op("PUSH_NULL"), op("SWAP", depth), *other, op("JUMP_BACKWARD", done)]
    return site, apart + other_slow


#: The frame's cell that ``_unbound_method`` tells a function from a ``NULL`` with (an empty
#: cell compares equal to an empty cell only, and a cell compares no further where one is empty).
_CELL = ".unbound"


class _Empty:
    """Holds an empty cell: a code object hashes its constants, and a cell has no hash."""

    __slots__ = ("cell",)

    def __init__(self) -> None:
        self.cell = types.CellType()


_EMPTY = _Empty()


def _is_prologue(item: Any) -> bool:
    return isinstance(item, Instr) and item.name in ("MAKE_CELL", "COPY_FREE_VARS")


def _method_calls(items: list[Any], depths: dict[int, int]) -> dict[int, int]:
    """Before 3.13: call (index in ``items``) -> the method load whose slots it calls, where
    every instruction between them keeps both slots on the stack and jumps only to instructions
    between them or to the call (the loads paired are left as they are, and their calls are
    ``_unbound_method`` sites)."""
    labels = {id(item): n for n, item in enumerate(items) if isinstance(item, Label)}
    #: the function's slot -> (its load, the furthest instruction jumped to since)
    pending: dict[int, tuple[int, int]] = {}
    paired: dict[int, int] = {}
    previous = None
    for n, item in enumerate(items):
        if not isinstance(item, Instr) or n not in depths:
            continue
        depth = depths[n]
        if item.name in ("PRECALL", "CALL") and item.name in _CALLABLE_DEPTH:
            load, furthest = pending.pop(depth - item.arg - 2, (None, n))
            on_iterator = item.arg == 0 and _is_instr(previous, "GET_ITER")  # not routed
            if load is not None and furthest <= n and not on_iterator:
                paired[n] = load
        previous = item
        # the slots of each load pending stay on the stack (a call consumes them: paired above)
        pending = {slot: at for slot, at in pending.items() if depth >= slot + 2}
        if item.has_jump():
            to = labels[id(item.arg)]
            pending = {slot: (load, max(far, to)) for slot, (load, far) in pending.items()}
            pending = {slot: at for slot, at in pending.items() if at[0] < to}
        if _is_method_load(item):  # [.., obj] -> [.., fn or NULL, self or callable]
            pending[depth + item.stack_effect(jump=False) - 2] = (n, n)
    return paired


def _is_method_load(instr: Instr) -> bool:
    if instr.name == "LOAD_METHOD":  # NOTE(3.12): 3.11's method load
        return True
    method_form = instr.name in ("LOAD_ATTR", "LOAD_SUPER_ATTR") and LOAD_ATTR_TAKES_METHOD_FLAG
    return method_form and instr.arg[0]


def _attr(name: str) -> Any:
    """``LOAD_ATTR``'s argument for the plain load of attribute ``name``."""
    return (False, name) if LOAD_ATTR_TAKES_METHOD_FLAG else name


def _depths(items: list[Any], flags: int) -> dict[int, int]:
    """The stack depth before each instruction of ``items`` (by index) that the code's flow
    reaches: from the start, along jumps, and into each handler whose ``TryBegin`` knows its
    depth."""
    labels = {id(item): n for n, item in enumerate(items) if isinstance(item, Label)}
    suspends = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
    # NOTE(3.13): RETURN_GENERATOR pushes the sent value itself; before, ``bytecode`` counts it
    # on the stack at the start
    start = 1 if not PY313 and flags & suspends else 0
    depths: dict[int, int] = {}
    work = [(0, start)]
    while work:
        n, depth = work.pop()
        while n < len(items) and n not in depths:
            item = items[n]
            depths[n] = depth
            if isinstance(item, TryBegin) and isinstance(item.stack_depth, int):
                entered = item.stack_depth + 1 + int(item.push_lasti)
                work.append((labels[id(item.target)], entered))
            elif isinstance(item, Instr):
                if item.has_jump():
                    work.append((labels[id(item.arg)], depth + item.stack_effect(jump=True)))
                if item.is_final():
                    break
                depth += item.stack_effect(jump=False)
            n += 1
    return {n: d for n, d in depths.items() if isinstance(items[n], Instr)}


def _plain_load(instr: Instr) -> list[Instr]:
    """Before 3.13, a method load spelled as ``NULL`` and the load of the bound method; any
    other instruction (and any from 3.13, where the callable's slot holds the function or the
    attribute) as it is."""
    loc = instr.location
    if NULL_ABOVE_CALLABLE:
        return [instr]
    if instr.name == "LOAD_METHOD":  # NOTE(3.12): 3.11's method load
        plain = Instr("LOAD_ATTR", instr.arg, location=loc)
    elif instr.name == "LOAD_ATTR" and LOAD_ATTR_TAKES_METHOD_FLAG and instr.arg[0]:
        plain = Instr("LOAD_ATTR", (False, instr.arg[1]), location=loc)
    elif instr.name == "LOAD_SUPER_ATTR" and instr.arg[0]:
        plain = Instr("LOAD_SUPER_ATTR", (False, *instr.arg[1:]), location=loc)
    else:
        return [instr]
    return [plain, Instr("PUSH_NULL", location=loc), Instr("SWAP", 2, location=loc)]
