"""Guards → Python source → function (via ``exec``), with the source kept on
``fn.__guard_source__``.

``GuardSet`` renders one variant's guards as an ordered list of boolean code parts (deduplicated, in
``Guard`` order) plus the closure table they need. ``first_failure`` evaluates the parts one by one
to say which guard rejects some inputs: the per-call answer to "why did this entry not run".
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass
from typing import Any

from .guard import Guard
from .kinds import (
    TENSOR_MATCH,
    ConstTable,
    checked_as_state,
    checked_in_c,
    state_checker,
    tensor_checker,
)
from .sources import DispatcherRoots, LocalSource, ModuleGlobals, Source


@dataclass
class GuardPart:
    #: one boolean Python expression over ``L``, ``G``, ``C``, ``B``, ``M`` and closure names
    code: str
    guard: Guard  #: the guard it came from (for reports)
    fast: str = ""  #: the same check as the dispatcher writes it, arguments read from locals


class GuardSet:
    """The rendered guards of one cache entry.

    Invariants: ``parts`` are deduplicated and in ``Guard`` order; ``refs`` are the weak references
    the parts read (when one dies, this entry can never match again)."""

    def __init__(
        self,
        guards: list[Guard],
        consts: ConstTable | None = None,
        roots: dict[str, str] | None = None,
    ) -> None:
        self.guards = sorted(set(guards), key=Guard.sort_key)  # the order of ``Guard.__lt__``
        self.consts = consts if consts is not None else ConstTable()
        self.reads_L = False  #: a fast part still reads ``L`` (a source without ``render``)
        self.parts: list[GuardPart] = []
        self.refs = self.consts.collect()
        seen: set[str] = set()
        fast_roots = DispatcherRoots(roots, self.consts) if roots is not None else None
        self.module_globals = ModuleGlobals(fast_roots.bound if fast_roots is not None else None)
        for guard in self.guards:
            shown = self._render(guard, {})
            # a guard reading no source (global state) renders alike for the dispatcher
            reads = guard.source is not None or isinstance(guard.arg, Source)
            fast = self._render(guard, fast_roots) if fast_roots is not None and reads else shown
            for code, fast_code in zip(shown, fast, strict=True):
                if code not in seen:
                    seen.add(code)
                    self.parts.append(GuardPart(code, guard, fast_code))
        self.fusions = self._fusions(fast_roots)
        self.consts.used = None
        self.ref_ids = {id(ref) for ref in self.refs}

    def _fusions(self, roots: dict[str, str] | None) -> list[tuple[str, list[GuardPart]]]:
        """The parts the dispatcher may test in one C call each, with the condition standing for
        them: the ``TENSOR_MATCH`` parts of the tensors the function takes as arguments become
        ``checker.check(a, b) or (their parts)`` (``kinds.tensor_checker``: one C call where the
        tensors are as traced), and the global-state parts ``checker.check() or (their parts)``
        (``kinds.state_checker``: where the state now is theirs). Each is tested where the first
        of its parts was (reading an argument or the state runs nothing)."""
        if roots is None:
            return []
        fusions = []
        tensors = [
            part
            for part in self.parts
            if part.guard.kind is TENSOR_MATCH
            and isinstance(part.guard.source, LocalSource)
            and part.guard.source.name in roots
            and checked_in_c(part.guard.arg)
        ]
        if tensors:
            guards = list(dict.fromkeys(part.guard for part in tensors))
            checker = self.consts.name(tensor_checker(tuple(g.arg for g in guards)), "tensors")
            args = ", ".join(guard.source.render(roots) for guard in guards)
            fusions.append((f"{checker}.check({args})", tensors))
        state = [part for part in self.parts if checked_as_state(part.guard)]
        checker = state_checker(list(dict.fromkeys(p.guard for p in state))) if state else None
        if checker is not None:
            fusions.append((f"{self.consts.name(checker, 'torch_state')}.check()", state))
        return [
            (f"{call} or ({' and '.join(p.fast for p in parts)})", parts) for call, parts in fusions
        ]

    def dispatch(self, fused: set[str]) -> list[str]:
        """The parts as the dispatcher tests them, where the fusions whose conditions are in
        ``fused`` (``_fusions``; those every variant of the function shares) stand for theirs."""
        first, rest = {}, set()
        for condition, parts in self.fusions:
            if condition in fused:
                first[id(parts[0])] = condition
                rest.update(id(part) for part in parts[1:])
        return [first.get(id(part), part.fast) for part in self.parts if id(part) not in rest]

    def _render(self, guard: Guard, roots: dict[str, str]) -> list[str]:
        expr = self._expr(guard.source, roots) if guard.source is not None else ""
        arg = self._expr(guard.arg, roots) if isinstance(guard.arg, Source) else guard.arg
        return guard.kind.render(expr, arg, self.consts)

    def _expr(self, source: Source, roots: dict[str, str]) -> str:
        if type(roots) is dict and not roots:
            return source.expr  # ``render({})``, computed once per source (the sort key read it)
        try:
            return source.render(roots)
        except NotImplementedError:  # a Source subclass that only defines ``expr``
            self.reads_L = self.reads_L or bool(roots)
            return source.expr

    @property
    def source(self) -> str:
        """The guards as readable Python, one condition per line."""
        return "\n".join(part.code for part in self.parts)

    def first_failure(self, scope: dict[str, Any]) -> GuardPart | None:
        """The first part that is false (or raises) for these inputs, or None when all pass. Each
        part is compiled only when reached (``_part_code``): asked on a miss, the answer is often
        an early part of a long list."""
        namespace = {**self.consts.values, **scope, "M": self.module_globals}
        for part in self.parts:
            try:
                if not eval(_part_code(part.code), namespace):
                    return part
            except Exception:  # a guard that cannot even be evaluated fails
                return part
        return None


@functools.lru_cache(maxsize=4096)
def _part_code(code: str) -> types.CodeType:
    """One guard part compiled as an expression over the names ``first_failure`` gives it; the
    same text makes the same code (the variants of one function share most of their parts)."""
    return compile(code, "<bytegraph guard check>", "eval")


def exec_function(source: str, name: str, closure: dict[str, Any], filename: str) -> Any:
    """Compile ``source`` (defining ``name``) so that it sees ``closure`` values as closure
    variables."""
    params = ", ".join(closure)
    wrapper = f"def ___make({params}):\n" + _indent(source) + f"\n    return {name}\n"
    ns: dict[str, Any] = {}
    shared = len(wrapper) <= _SHARED_TEXT
    exec(_shared_code(wrapper, filename) if shared else compile(wrapper, filename, "exec"), ns)
    fn = ns["___make"](**closure)
    fn.__guard_source__ = source
    return fn


#: the longest wrapper text whose code ``_shared_code`` keeps (a small function's guards; a large
#: model's are compiled each time rather than kept)
_SHARED_TEXT = 16_000


@functools.lru_cache(maxsize=256)
def _shared_code(wrapper: str, filename: str) -> types.CodeType:
    """``wrapper`` compiled. The same text makes the same code, holding only what the text says
    (the objects it reads are the closure's values), so functions whose guards read alike (a
    closure made again, a function compiled again after ``reset``) share it: compiling is most of
    the cost of making a small guard function."""
    return compile(wrapper, filename, "exec")


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())
