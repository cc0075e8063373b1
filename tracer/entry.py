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
a compile could do instead. Where the guards are short, the entry tests them in its own code rather
than calling the guard function (``_GuardsInEntry``, made again as the cache's variants change).
The first check (torch.compile tracing the entry) is made only where
the user may call the entry; the code check only where the code is the user's (see
``make_entry``). A function left alone (``callees.py``: every call runs it in Python,
whatever the arguments) has no guards to ask: ``run_directly`` gives its entry code that, after
the checks before the guards, calls what runs it (``dispatch`` gives the first code back)::

    def fn(a, b):
        ...                                             # torch.compile tracing; code replaced
        return ___direct(a, b)
"""

from __future__ import annotations

import ctypes
import dis
import functools
import inspect
import io
import keyword
import re
import sys
import tokenize
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
    slot = code_slot(fn)
    code_check = (
        f"    if {_code_now(slot)} is not ___code:\n"
        f"        return ___state.code_replaced()({', '.join(call_args)})\n"
    )
    checks = "" if resume else code_check if callee else compiling + code_check
    head = f"def ___entry({', '.join(params)}):\n{checks}"
    rest = (
        f"    if ___v is None:\n"
        f"        ___v = ___state.on_miss({{{locals_dict}}})\n"
        f"    try:\n"
        f"        return ___v({', '.join(call_args)})\n"
        f"    except ___Rerun:\n"  # a deferred check failed (``deferred_checks``): run it in Python
        f"        return ___state.rerun()({', '.join(call_args)})\n"
    )
    source = f"{head}    ___v = ___cache.guard_fn({', '.join(names)})\n{rest}"
    namespace: dict[str, Any] = {
        "___state": state,
        "___cache": state.cache,
        "___fn": fn,
        "___code": fn.__code__,
        "___code_slot": slot,
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
    # the guards read the entry's names; one entry per cache (``state.entry``)
    if [state.cache.roots[key] for key in keys] == names and state.cache.on_rebuild is None:
        positional = tuple(names) if call_args == names else None
        state.cache.on_rebuild = _GuardsInEntry(entry, head, rest, positional)
    return entry


#: the longest guard function body that an entry takes into its own code (a small function's
#: guards, where the call of the guard function is a good part of a call's overhead; a large
#: model's guards are not compiled twice)
_GUARDS_IN_ENTRY = 4000


class _GuardsInEntry:
    """Keeps an entry's code testing its cache's guards itself, without calling the guard
    function (``FunctionCache.on_rebuild``: called whenever the cache's guard function is
    replaced)::

        def fn(a, b):
            ...                                   # the checks before the guards
            while True:
                try:
                    if ___tensors__g1.check(a, b) and ...:
                        ___v = ___variant_0__g1   # each return of the guard function
                        break
                    ___v = None
                    break
                except Exception:
                    ___v = ___slow({'a': a, 'b': b})
                    break
            if ___v is None:
            ...                                   # as the entry calling the guard function

    The guard function's closure values are the entry's globals, named apart per rebuild
    (``__g{n}``, names in the text only), so that code made before a rebuild, still running in
    another thread, reads its own values or, once they are dropped, raises inside the ``try``
    and asks ``___slow`` (which tests the variants as they are). ``G``, ``C``, ``B``, ``M``
    (the cache's for its life), ``___slow`` and ``___no_match`` (read through, always an answer
    that runs the call right) keep their names. Where the body is long or missing
    (``FunctionCache.clear``), the entry calls the guard function again. An entry running
    something directly (``run_directly``) keeps doing so: ``___dispatch`` is what ``dispatch``
    restores."""

    _SHARED = frozenset({"G", "C", "B", "M", "___slow", "___no_match"})

    def __init__(
        self, entry: types.FunctionType, head: str, rest: str, positional: tuple[str, ...] | None
    ) -> None:
        self.entry = weakref.ref(entry)
        self.head, self.rest = head, rest
        #: the entry's parameters where all are plain positional ones (None: not so), which a
        #: variant that only calls its graph with them in order passes it (``_graph_call``)
        self.positional = positional
        self.calling = entry.__code__  #: the code calling the guard function
        self.names: list[str] = []  #: the globals the entry's code reads now
        self.rebuilds = 0

    def __call__(self, cache: Any) -> None:
        entry = self.entry()
        if entry is None:
            return
        namespace = entry.__globals__
        body = cache.guard_body
        values: dict[str, Any] = {}
        code = self.calling
        if body is not None and len(body[0]) <= _GUARDS_IN_ENTRY:
            self.rebuilds += 1
            text, closure = body
            text, closure, direct = self._graphs_called_directly(cache, text, closure)
            renamed = {n: f"{n}__g{self.rebuilds}" for n in closure if n not in self._SHARED}
            values = {renamed.get(n, n): v for n, v in closure.items()}
            steps = _steps(text, tuple(renamed.items()))
            source = f"{self.head}{direct[0]}    while True:\n{steps}{direct[1]}{self.rest}"
            code = _function_code(source, entry.__code__.co_filename)
        namespace.update(values)
        if entry.__code__ is namespace["___dispatch"]:
            entry.__code__ = code
        namespace["___dispatch"] = code
        for name in self.names:
            if name not in values:
                namespace.pop(name, None)
        self.names = [n for n in values if n not in self._SHARED]

    def _graphs_called_directly(
        self, cache: Any, text: str, closure: dict[str, Any]
    ) -> tuple[str, dict[str, Any], tuple[str, str]]:
        """The guard body ``text`` and its ``closure`` where each variant that only calls its
        graph with the entry's parameters (``_graph_call``) is returned as that graph
        (``___graph_N``), and the code the entry runs before its guards and after them: where a
        graph was chosen, the entry calls it itself, sparing the variant's frame::

            ___f = None
            while True:
                ...                                   # a graph-only variant chosen:
                    ___f = ___graph_0__g1             # (the guard body's ``return``)
                    break
            if ___f is not None:
                try:
                    return ___f(a, b)[0]
                except ___Rerun:
                    return ___state.rerun()(a, b)
        """
        if self.positional is None:
            return text, closure, ("", "")
        closure = dict(closure)
        found = False
        for variant in cache.variants:
            name = f"___variant_{variant.index}"
            line = f"return {name}\n"
            if closure.get(name) is not variant.fn or line not in text:
                continue
            graph = _graph_call(variant.fn, self.positional)
            if graph is not None:
                closure[f"___graph_{variant.index}"] = graph
                text = text.replace(line, f"return ___graph_{variant.index}\n")
                found = True
        if not found:
            return text, closure, ("", "")
        args = ", ".join(self.positional)
        after = (
            "    if ___f is not None:\n"
            "        try:\n"
            f"            return ___f({args})[0]\n"
            "        except ___Rerun:\n"
            f"            return ___state.rerun()({args})\n"
        )
        return text, closure, ("    ___f = None\n", after)


#: instructions that ``_graph_call`` passes over: they set up the frame, or are parts of a call
_FRAME_SETUP = frozenset({"RESUME", "COPY_FREE_VARS", "PRECALL", "PUSH_NULL", "NOP", "CACHE"})


def _graph_call(fn: Any, params: tuple[str, ...]) -> Any:
    """The graph that ``fn`` calls where its code is only ``return graph(*params)[0]`` (a
    rewritten function whose trace ended in a return of one graph output, with nothing before or
    after the graph: no deferred check, no side effect, no break): calling the graph so is
    calling ``fn``. None for any other function."""
    if type(fn) is not types.FunctionType or not fn.__closure__:
        return None
    code = fn.__code__
    steps: list[tuple[str, Any]] = []
    for inst in dis.get_instructions(code):
        if inst.opname in _FRAME_SETUP:
            continue
        if inst.opname in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST"):  # NOTE(3.13)
            first, second = inst.opname.split("_FAST_")[0], inst.argval
            steps += [(f"{first}_FAST", second[0]), ("LOAD_FAST", second[1])]
        else:
            steps.append((inst.opname, inst.argval))
    expected = [
        ("LOAD_DEREF", None),
        *(("LOAD_FAST", p) for p in params),
        ("CALL", len(params)),
        ("STORE_FAST", None),
        ("LOAD_FAST", None),
        ("LOAD_CONST", 0),
        ("BINARY_SUBSCR", None),
        ("RETURN_VALUE", None),
    ]
    if len(steps) != len(expected):
        return None
    for (op, arg), (want, want_arg) in zip(steps, expected, strict=True):
        if op != want or (
            want_arg is not None and (type(arg) is not type(want_arg) or arg != want_arg)
        ):
            return None
    graph_name, out = steps[0][1], steps[len(params) + 2][1]
    if steps[len(params) + 3][1] != out or out in code.co_varnames[: code.co_argcount]:
        return None
    if not graph_name.startswith("__compiled_fn_") or graph_name not in code.co_freevars:
        return None
    if code.co_argcount != len(params) or code.co_varnames[: len(params)] != params:
        return None
    return fn.__closure__[code.co_freevars.index(graph_name)].cell_contents


@functools.lru_cache(maxsize=256)
def _steps(text: str, renamed: tuple[tuple[str, str], ...]) -> str:
    """The guard function's body ``text`` as the entry tests it (``_as_steps``), its names renamed
    (``renamed``: pairs of names); made once per text and names (a closure made again and again,
    a function compiled again after ``reset``)."""
    return _as_steps(_renamed(text, dict(renamed)))


def _renamed(text: str, names: dict[str, str]) -> str:
    """``text`` with each name token in ``names`` replaced (never inside a string, nor an
    attribute's name)."""
    found = _name_spans(text, names)
    if found is None:
        return _renamed_by_tokenize(text, names)
    parts, last = [], 0
    for start, end in found:
        parts += (text[last:start], names[text[start:end]])
        last = end
    parts.append(text[last:])
    return "".join(parts)


#: one token as ``tokenize`` cuts a text of the kinds ``_name_spans`` reads (its patterns, in its
#: order: a number before a string, a string before a name)
_TOKEN = re.compile(
    rf"[ \f\t]*(?:{tokenize.Number}|(?P<prefix>{tokenize.StringPrefix})(?:'[^\n']*'|\"[^\n\"]*\")"
    r"|(?P<name>\w+)|\.\.\.|\n|\S)"
)

#: what ``_name_spans`` leaves to ``tokenize``: comments, backslashes (escapes, continued lines),
#: triple-quoted strings
_UNUSUAL = re.compile(r"#|\\|'''|\"\"\"|\r")


def _name_spans(text: str, names: dict[str, str]) -> list[tuple[int, int]] | None:
    """Where ``text``'s name tokens that ``names`` holds, not after a ``.``, are: those of the
    tokens ``tokenize`` gives, found with one pattern (``tokenize`` costs most of a small entry's
    rebuild). None for a text holding what this does not follow (``_UNUSUAL``, a formatted string,
    which 3.12's ``tokenize`` cuts into parts, a string not ending on its line)."""
    if _UNUSUAL.search(text):
        return None
    found: list[tuple[int, int]] = []
    previous = ""
    for match in _TOKEN.finditer(text):
        token = match.group().lstrip(" \f\t")
        prefix = match.group("prefix")
        if prefix is not None:
            if "f" in prefix or "F" in prefix:
                return None
        elif match.group("name") is not None:
            if token in names and previous != ".":
                found.append(match.span("name"))
        elif token in ("'", '"'):
            return None
        previous = token
    return found


def _renamed_by_tokenize(text: str, names: dict[str, str]) -> str:
    lines = text.splitlines(keepends=True)
    found, previous = [], None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and token.string in names and previous != ".":
            found.append(token)
        previous = token.string
    for token in reversed(found):  # from the end: the positions before stay right
        row, start = token.start
        line = lines[row - 1]
        lines[row - 1] = line[:start] + names[token.string] + line[token.end[1] :]
    return "".join(lines)


def _as_steps(body: str) -> str:
    """A guard function's body as the body of a loop run once: each ``return X`` sets ``___v``
    and leaves the loop."""
    out = []
    for line in body.splitlines():
        stripped = line.lstrip()
        pad = "    " + line[: len(line) - len(stripped)]
        if stripped.startswith("return ___graph_"):  # a graph the entry calls itself
            out += [f"{pad}___f = {stripped[len('return ') :]}", f"{pad}break"]
        elif stripped.startswith("return "):
            out += [f"{pad}___v = {stripped[len('return ') :]}", f"{pad}break"]
        else:
            out.append("    " + line if line else line)
    return "\n".join(out) + "\n"


def run_directly(entry: types.FunctionType, target: Any) -> None:
    """From now on ``entry`` calls ``target`` after its checks, without asking guards (see the
    module). Its code is made here, for the few entries that need it."""
    namespace = entry.__globals__
    namespace["___direct"] = target
    direct: dict[str, Any] = {}
    exec(_compiled(namespace["___direct_source"], entry.__code__.co_filename), direct)
    entry.__code__ = _own_code(direct["___entry"])


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
    slot = code_slot(fn)
    source = (
        f"def ___checked({', '.join(params)}):\n"
        f"    if {_code_now(slot)} is ___code:\n"
        f"        return ___copy({args})\n"
        f"    return ___on_new_code(___fn)({args})\n"
    )
    namespace = {"___fn": fn, "___code": fn.__code__, "___code_slot": slot}
    namespace["___copy"] = copy
    namespace["___on_new_code"] = on_new_code
    return _made(source, namespace, "___checked", fn)


def _code_offset() -> int | None:
    """Where a function object holds its code (``PyFunctionObject.func_code``), in bytes from its
    start; None where that is not found for certain. Found by reading the object's words: the one
    holding the code's address in two functions of different kinds, which after ``__code__`` is
    replaced holds the new code's."""
    if sys.implementation.name != "cpython" or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None  # a build without the GIL: another thread may free a code read so

    def probe() -> None:
        pass

    def other(a: int = 1, *args: Any, b: int = 2, **kwargs: Any) -> Any:
        return (a, args, b, kwargs)

    word = ctypes.sizeof(ctypes.c_void_p)
    for offset in range(word, types.FunctionType.__basicsize__ - word + 1, word):
        found = [ctypes.c_void_p.from_address(id(f) + offset).value for f in (probe, other)]
        if found != [id(probe.__code__), id(other.__code__)]:
            continue
        code = probe.__code__
        probe.__code__ = other.__code__
        moved = ctypes.py_object.from_address(id(probe) + offset).value is other.__code__
        probe.__code__ = code
        return offset if moved else None
    return None


def _found_code_offset() -> int | None:
    try:
        return _code_offset()
    except Exception:  # noqa: BLE001 (an audit hook refusing ctypes.cdata: read fn.__code__)
        return None


#: ``PyFunctionObject.func_code``'s offset (``_code_offset``), or None
_CODE_OFFSET = _found_code_offset()


def code_slot(fn: types.FunctionType) -> Any:
    """An object whose ``value`` is ``fn.__code__`` as it is now (read from the function's own
    slot; it holds no reference to ``fn``: whoever reads it keeps ``fn`` alive), or None where
    the slot is not known."""
    if _CODE_OFFSET is None or type(fn) is not types.FunctionType:
        return None
    try:
        return ctypes.py_object.from_address(id(fn) + _CODE_OFFSET)
    except Exception:  # noqa: BLE001 (an audit hook refusing ctypes.cdata: read fn.__code__)
        return None


def _code_now(slot: Any) -> str:
    """What generated code holding ``___fn`` and ``___code_slot = slot`` compares with the code
    it was made for: the code ``___fn`` has now. Read through the slot (``code_slot``) where
    there is one, not as ``fn.__code__``: that read is an audit event, which calls each audit
    hook of the process (filelock adds one from 3.12: 200 to 500 ns each read, where the slot
    costs 20 ns)."""
    return "___fn.__code__" if slot is None else "___code_slot.value"


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
    made.__code__ = _own_code(made)
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
    its own namespace (``_own_code``)."""
    return compile(source, filename, "exec")


def _own_code(fn: types.FunctionType) -> types.CodeType:
    """A code object of ``fn``'s alone, equal to the shared one of its text (``_compiled``).
    torch.compile's frame hook, converting an entry called where its code runs in Python, keeps
    what it compiled per code object and puts the names that code reads into the entry's globals:
    an entry of another function sharing the code ran it over its own globals (``NameError``)."""
    return fn.__code__.replace()


def _function_code(source: str, filename: str) -> types.CodeType:
    """The code of the one function ``source`` defines, an object of its own (``_own_code``) made
    from the text's code compiled once (``_compiled``: the entries of a closure made again and
    again, of a function compiled again after ``reset``, take the same guards into the same
    text)."""
    module = _compiled(source, filename)
    return next(c for c in module.co_consts if isinstance(c, types.CodeType)).replace()
