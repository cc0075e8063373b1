"""The variant cache of one compiled function and its single generated dispatcher.

``FunctionCache.variants`` lists the cache entries (``Variant``: guards + the rewritten function).
After each change one guard function is generated over all of them, taking the function's arguments
as its own parameters: conditions every variant has are tested first and once, then a trie shares
common prefixes, and it returns the entry to run or None. Variants are tried in ``order``: the
newest first (the state a call leaves is the likeliest next; a match does not move an entry: calls
alternating between two, modules sharing a ``forward``, would generate the function at each call).
``why(L)`` answers, without running anything,
which entry these inputs select and the first failing guard of every other. Entries guarding an
object that died are dropped from a weakref callback.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import keyword
import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .build import GuardPart, GuardSet, exec_function
from .kinds import ConstTable
from .sources import ModuleGlobals


@dataclass(eq=False)
class Variant:
    """One cache entry: when ``guards`` hold, ``fn`` (same signature as the user's function)
    runs."""

    guards: GuardSet
    fn: Callable[..., Any]
    index: int = 0  #: position in the cache, for reports
    graphs: list[Any] = field(default_factory=list)  #: the FX GraphModules this entry calls
    reason: str = ""  #: why it was compiled ("first call" or the guard that failed)
    dead: bool = False  #: an object it guards by identity died: it can never match again
    #: the call changes a module tree its guards check (``CompiledCode.follow`` looks again)
    changes_its_guards: bool = False

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", "?")
        return f"<Variant {self.index} of {name}: {len(self.guards.parts)} guards>"


@dataclass
class Why:
    """The answer of ``FunctionCache.why``: the entry selected and why each entry tried before it
    was rejected."""

    selected: Variant | None
    #: each entry tried before the one selected (all, where none is) with its first failing guard,
    #: oldest entry first
    failures: list[tuple[Variant, GuardPart]]

    def __str__(self) -> str:
        lines = [
            f"selected: entry {self.selected.index}"
            if self.selected
            else "selected: none (would compile)"
        ]
        for variant, part in self.failures:
            lines.append(f"entry {variant.index} rejected by: {part.code}")
        return "\n".join(lines)


class FunctionCache:
    """Variants of one function plus the guard function choosing among them.

    ``guard_fn(*args)`` takes the function's arguments positionally (in ``arg_names`` order) and
    returns the entry to run, or ``on_no_match`` (None until the recompile limit: compile).
    ``select(L)`` is the same from a name -> value dict. Invariants: no entry in ``variants`` guards
    an object that has died (a weakref callback marks such an entry ``dead`` and it is dropped at
    once); ``order`` holds the same entries as ``variants``, in the order the guard function and
    ``why`` try them, and the first whose guards pass is the one selected (each variant's guards
    are complete on their own, so any order selects an entry right for the inputs)."""

    def __init__(
        self,
        name: str,
        f_globals: dict[str, Any],
        cells: dict[str, Any],
        arg_names: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.scope = {"G": f_globals, "C": cells, "B": builtins.__dict__, "M": ModuleGlobals()}
        self.arg_names = tuple(arg_names)
        self.roots = _local_names(self.arg_names)
        self.consts = self._new_consts()
        self.variants: list[Variant] = []  #: oldest first (``Variant.index``)
        self.order: list[Variant] = []  #: the order they are tried in: newest first
        self.lock = threading.RLock()
        self.counter = 0
        self.on_no_match: Callable[..., Any] | None = None  #: returned when no entry matches
        self.guard_fn: Callable[..., Any] = _always_miss
        #: the guard function's body and the closure values it reads (None: ``_always_miss``),
        #: for code that tests the guards itself (``tracer/entry.py``)
        self.guard_body: tuple[str, dict[str, Any]] | None = None
        #: called (with this cache) whenever ``guard_fn`` is replaced
        self.on_rebuild: Callable[[FunctionCache], None] | None = None
        self._busy = False  #: inside add/drop: a death seen now is handled when it finishes
        self._dirty = False

    def new_guard_set(self, guards: list) -> GuardSet:
        return GuardSet(guards, self.consts, self.roots)

    def select(self, L: dict[str, Any]) -> Any:
        """What the dispatcher returns for the arguments ``L`` (name -> value)."""
        return self.guard_fn(*[L[name] for name in self.arg_names])

    def add(self, variant: Variant) -> None:
        with self.lock:
            if any(ref() is None for ref in variant.guards.refs):
                variant.dead = True  # a guarded object died during the trace: it can never match
            self._update(self.variants + [variant], [variant, *self.order])

    def set_no_match(self, fn: Callable[..., Any] | None) -> None:
        """Make the dispatcher return ``fn`` instead of None when no entry matches (the recompile
        limit: run the original function without asking the driver)."""
        with self.lock:
            self.on_no_match = fn
            self._update(self.variants)

    def drop_dead(self) -> None:
        """Forget entries whose identity-guarded objects died (called from weakref callbacks)."""
        with self.lock:
            if any(v.dead for v in self.variants):
                self._update(self.variants)

    def clear(self) -> None:
        with self.lock:
            self.variants = []
            self.order = []
            self.consts = self._new_consts()
            self.on_no_match = None
            self.counter = 0
            self.guard_fn = _always_miss
            self.guard_body = None
            if self.on_rebuild is not None:
                self.on_rebuild(self)

    def why(self, L: dict[str, Any]) -> Why:
        failures = []
        selected = None
        for variant in self.order:
            part = variant.guards.first_failure({"L": L, **self.scope})
            if part is None:
                selected = variant
                break
            failures.append((variant, part))
        return Why(selected, sorted(failures, key=lambda failure: failure[0].index))

    def _new_consts(self) -> ConstTable:
        return ConstTable(on_death=_death_callback(weakref.ref(self)))

    def _object_died(
        self, ref: weakref.ref, _finalizing: Callable[[], bool] = sys.is_finalizing
    ) -> None:
        # NOTE: bound as a default: at interpreter exit module globals are cleared before the
        # last objects die, and rebuilding the dispatcher then would fail (nothing to do anyway).
        if _finalizing():
            return
        with self.lock:
            hit = [v for v in self.variants if id(ref) in v.guards.ref_ids]
            for variant in hit:
                variant.dead = True
            if hit and self._busy:
                self._dirty = True
            elif hit:
                self.drop_dead()

    def _update(self, variants: list[Variant], order: list[Variant] | None = None) -> None:
        """Install ``variants`` (less the dead ones), tried in ``order`` (default: as now), and
        regenerate the dispatcher."""
        self._busy = True
        try:
            self.variants = [v for v in variants if not v.dead]
            for i, variant in enumerate(self.variants):
                variant.index = i
            live = {id(v) for v in self.variants}
            self.order = [v for v in (self.order if order is None else order) if id(v) in live]
            self._rebuild()
        finally:
            self._busy = False
        if self._dirty:  # an object died while we were rebuilding
            self._dirty = False
            self._update(self.variants)

    def _rebuild(self) -> None:
        self.counter += 1
        name = f"__guard_{self.name}_{self.counter}"
        params = ", ".join(self.roots[n] for n in self.arg_names)
        as_dict = "{" + ", ".join(f"{n!r}: {self.roots[n]}" for n in self.arg_names) + "}"
        roots = [self.roots[n] for n in self.arg_names]
        taken = {*roots, *self.scope, *self.consts.values}  # names the conditions may read
        tried = _shared_first(_conditions(self.order))
        returns = [(conds, f"___variant_{self.order[i].index}") for conds, i in tried]
        body = _trie(_values_once(_read_once(returns, roots, taken), taken), 2)
        miss = "None" if self.on_no_match is None else "___no_match"
        lines = [f"def {name}({params}):"]
        if any(v.guards.reads_L for v in self.variants):
            lines.append(f"    L = {as_dict}")
        lines += [
            "    try:",
            body,
            "    except Exception:",
            f"        return ___slow({as_dict})",
            f"    return {miss}",
        ]
        closure = {
            **self.scope,
            **self.consts.values,
            "___slow": self._slow_select,
            "___no_match": self.on_no_match,
        }
        closure.update({f"___variant_{i}": v.fn for i, v in enumerate(self.variants)})
        self.guard_fn = exec_function("\n".join(lines), name, closure, f"<bytegraph {name}>")
        self.guard_body = ("\n".join(lines[1:]), closure)
        if self.on_rebuild is not None:
            self.on_rebuild(self)

    def _slow_select(self, L: dict[str, Any]) -> Any:
        """A guard raised (e.g. a global was deleted): evaluate entry by entry, errors meaning
        "no"."""
        selected = self.why(L).selected
        return selected.fn if selected is not None else self.on_no_match

    @property
    def guard_source(self) -> str:
        return getattr(self.guard_fn, "__guard_source__", "")


#: Names the generated dispatcher uses itself: an argument with one of these names is renamed.
_RESERVED = {"G", "C", "B", "L", "type", "len", "tuple", "Exception", "None", "True", "False"}


def _local_names(arg_names: tuple[str, ...]) -> dict[str, str]:
    """Argument name -> the dispatcher's parameter name (the same unless it would clash)."""
    taken = set(arg_names) | _RESERVED
    roots: dict[str, str] = {}
    for name in arg_names:
        local = name
        if (
            local in _RESERVED
            or local.startswith("___")
            or not local.isidentifier()  # pytest's ``@py_assert1`` locals reach resume functions
            or keyword.iskeyword(local)
        ):
            local = "L_" + "".join(c if c.isalnum() or c == "_" else "_" for c in name)
            while local in taken:
                local = f"L_{local}"
            taken.add(local)
        roots[name] = local
    return roots


def _death_callback(cache_ref: weakref.ref) -> Callable[[weakref.ref], None]:
    """The ConstTable's death hook, holding the cache weakly (the cache owns the table)."""

    def on_death(ref: weakref.ref) -> None:
        cache = cache_ref()
        if cache is not None:
            cache._object_died(ref)

    return on_death


def _always_miss(*args: Any) -> None:
    return None


def _conditions(variants: list[Variant]) -> list[list[str]]:
    """Each variant's conditions, in order. Where every variant checks some parts the same way
    (one C call of the same checker, ``GuardSet.fusions``: its tensor arguments, or the global
    state; variants told apart by other values), that call stands for their parts; where they
    differ between variants (a shape each, grad mode on and off), the parts are kept, so that the
    trie tests what they share once and each variant only what tells it apart."""
    fusions = [{condition for condition, _ in v.guards.fusions} for v in variants]
    shared = set.intersection(*fusions) if fusions else set()
    return [variant.guards.dispatch(shared) for variant in variants]


def _shared_first(conditions: list[list[str]]) -> list[tuple[list[str], int]]:
    """Move the conditions every variant has to the front (in their order), so the trie tests them
    once."""
    common = set(conditions[0]).intersection(*conditions[1:]) if conditions else set()
    shared = [c for c in conditions[0] if c in common] if conditions else []
    return [
        (shared + [c for c in conds if c not in common], i) for i, conds in enumerate(conditions)
    ]


def _read_once(
    items: list[tuple[list[str], int]], roots: list[str], taken: set[str] = frozenset()
) -> list[tuple[list[str], int]]:
    """The conditions with each chain of reads (``self._modules['a']._modules['b'].x``,
    ``G['cls'].__dict__['f']``) that several of them start with read once: its first reading
    in the conditions every variant tests first (evaluated first, in order, whatever the
    variant) binds it, ``(___read_0 := ...)``, and the conditions after it read the local. A
    model's guards check hundreds of attributes of objects deep in its module tree, each
    reading the whole chain again. The first reading is bound only in a condition evaluated
    whole (no ``and``/``or``/``if`` or chained comparison that could skip it); a condition that
    has no such reading keeps its text. Guard text is rendered source chains (the roots are
    the dispatcher's parameters, ``G`` and bound module globals) and string constants, skipped
    as such. The locals' names are none of ``taken``."""
    if not items:
        return items
    shared = len(_common_prefix([conds for conds, _ in items]))
    chains = _Chains(roots)
    counts: dict[str, int] = {}
    for n, (conds, _) in enumerate(items):
        for cond in conds if n == 0 else conds[shared:]:  # the shared ones are tested once
            for _, prefixes in chains(cond):
                for prefix in prefixes:
                    counts[prefix] = counts.get(prefix, 0) + 1
    bound: dict[str, str] = {}
    fresh = (name for n in itertools.count() if (name := f"___read_{n}") not in taken)
    first = [_bind(c, chains(c), counts, bound, fresh) for c in items[0][0][:shared]]
    return [
        (first + [_bind(c, chains(c), counts, bound, None) for c in conds[shared:]], index)
        for conds, index in items
    ]


def _bind(
    cond: str,
    chains: tuple[tuple[tuple[int, int], tuple[str, ...]], ...],
    counts: dict[str, int],
    bound: dict[str, str],
    fresh: Iterator[str] | None,
) -> str:
    """``cond`` with its ``chains`` (``_Chains``) replaced by what ``bound`` holds (text ->
    local name) and, given ``fresh`` names and where ``cond`` is evaluated whole, each prefix
    read again by another condition (not only as part of the next longer prefix) bound to a
    new local."""
    if not chains:
        return cond
    may_bind = fresh is not None and _evaluated_whole(cond)
    out, at = [], 0
    for (start, end), prefixes in chains:
        held = next((p for p in reversed(prefixes) if p in bound), "")
        text, done = bound.get(held, ""), len(held)
        for n, prefix in enumerate(prefixes):
            longer = prefixes[n + 1] if n + 1 < len(prefixes) else None
            # bound where read again, but not only as the start of the next longer one
            if (
                len(prefix) > done
                and may_bind
                and counts[prefix] > (counts[longer] if longer else 1)
            ):
                name = bound[prefix] = next(fresh)
                text, done = f"({name} := {text}{prefix[done:]})", len(prefix)
        out += [cond[at:start], text + cond[start + done : end]]
        at = end
    return "".join(out) + cond[at:]


def _values_once(
    items: list[tuple[list[str], int]], taken: set[str] = frozenset()
) -> list[tuple[list[str], int]]:
    """The conditions with each list of a dict's values (``[*___read_0.values()]``: the values
    of a dict keyed by classes or functions, read by position, ``DictValueSource``) that several
    of them index made once: bound where ``_read_once`` binds (the first condition evaluated
    whole, among those every variant tests first), read from the local after it. A registry of a
    hundred entries had each of its hundred value guards list all its values again."""
    if not items:
        return items
    shared = len(_common_prefix([conds for conds, _ in items]))
    counts: dict[str, int] = {}
    for n, (conds, _) in enumerate(items):
        for cond in conds if n == 0 else conds[shared:]:
            for found in _VALUES.findall(cond):
                counts[found] = counts.get(found, 0) + 1
    if not any(count > 1 for count in counts.values()):
        return items
    bound: dict[str, str] = {}
    fresh = (name for n in itertools.count() if (name := f"___values_{n}") not in taken)

    def reuse(cond: str) -> str:
        return _VALUES.sub(lambda m: bound.get(m.group(0), m.group(0)), cond)

    first = []
    for cond in items[0][0][:shared]:
        cond = reuse(cond)
        unbound = [t for t in _VALUES.findall(cond) if counts[t] > 1]
        if unbound and _evaluated_whole(cond):
            text = unbound[0]
            name = bound[text] = next(fresh)
            head, tail = cond.split(text, 1)
            cond = f"{head}({name} := {text}){tail.replace(text, name)}"
        first.append(cond)
    return [(first + [reuse(c) for c in conds[shared:]], index) for conds, index in items]


#: A dict's values listed by a ``DictValueSource`` read through a local of ``_read_once``.
_VALUES = re.compile(r"\[\*___read_\d+\.values\(\)\]")


#: A string constant in guard text (``repr`` of a str: no triple quotes).
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
#: What may skip part of a condition's evaluation.
_SKIPS = re.compile(r"\b(?:and|or|if|lambda|for)\b")
#: Comparison operators: two in a condition may chain (``0 <= a < n`` skips ``n`` when false).
_COMPARES = re.compile(r"==|!=|<=|>=|<|>|\bis\b|\bin\b|\bnot\b")
#: One step of a chain of reads: an attribute, a str key, an int index.
_STEP = r"(?:\.[A-Za-z_]\w*|\['(?:[^'\\]|\\.)*'\]|\[-?\d+\])"
_STEP_RE = re.compile(_STEP)


@functools.lru_cache(maxsize=16384)
def _evaluated_whole(cond: str) -> bool:
    """Whether nothing in ``cond`` (outside string constants) may skip part of its evaluation:
    no ``and``/``or``/``if``/``lambda``/``for``, no two comparisons that could chain. Remembered
    per text: the dispatchers of one process test many conditions alike (a library's globals,
    the variants of one function, its resume functions)."""
    bare = _STRING.sub("''", cond) if "'" in cond or '"' in cond else cond
    return not _SKIPS.search(bare) and len(_COMPARES.findall(bare)) < 2


class _Chains:
    """``chains(cond)``: the chains of reads in ``cond`` outside string constants, each its span
    and its prefixes of one step or more, shortest first (the whole chain last, unless a call
    follows it: that read is a method, read anew by each call); remembered per text and roots,
    for the process (``_chains_in``)."""

    def __init__(self, roots: list[str]) -> None:
        self._roots = tuple(roots)

    def __call__(self, cond: str) -> tuple[tuple[tuple[int, int], tuple[str, ...]], ...]:
        return _chains_in(self._roots, cond)


@functools.lru_cache(maxsize=64)
def _chain_pattern(roots: tuple[str, ...]) -> re.Pattern:
    names = "|".join(re.escape(r) for r in (*roots, "G")) + r"|___globals_\w+"
    return re.compile(rf"(?<![\w.'\"\]])(?P<root>{names})(?:{_STEP})+")


@functools.lru_cache(maxsize=16384)
def _chains_in(
    roots: tuple[str, ...], cond: str
) -> tuple[tuple[tuple[int, int], tuple[str, ...]], ...]:
    """What ``_Chains(roots)(cond)`` answers."""
    quoted = "'" in cond or '"' in cond
    strings = [m.span() for m in _STRING.finditer(cond)] if quoted else []
    found = []
    for match in _chain_pattern(roots).finditer(cond):
        start, end = match.span()
        if strings and any(a <= start < b for a, b in strings):
            continue
        steps = [m.end() for m in _STEP_RE.finditer(cond, match.end("root"), end)]
        if cond[end : end + 1] == "(":
            steps.pop()
        if steps:
            found.append(((start, steps[-1]), tuple(cond[start:n] for n in steps)))
    return tuple(found)


def _common_prefix(lists: list[list[str]]) -> list[str]:
    prefix = lists[0]
    for other in lists[1:]:
        n = 0
        while n < min(len(prefix), len(other)) and prefix[n] == other[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def _trie(items: list[tuple[list[str], str]], depth: int) -> str:
    """Nested ``if``s over the variants' condition lists, each with what it returns, sharing common
    prefixes, in the order given."""
    pad = "    " * depth
    lines: list[str] = []
    i = 0
    while i < len(items):
        conds, returned = items[i]
        if not conds:
            lines.append(f"{pad}return {returned}")
            i += 1
            continue
        head = conds[0]
        group = [items[i]]
        while i + len(group) < len(items) and items[i + len(group)][0][:1] == [head]:
            group.append(items[i + len(group)])
        if len(group) == 1:
            lines.append(_if(conds, pad))
            lines.append(f"{pad}    return {returned}")
        else:
            prefix = _common_prefix([c for c, _ in group])
            lines.append(_if(prefix, pad))
            lines.append(_trie([(c[len(prefix) :], j) for c, j in group], depth + 1))
        i += len(group)
    return "\n".join(lines) if lines else f"{pad}pass"


def _if(conds: list[str], pad: str) -> str:
    """``if a and b:`` on one line when short, else one condition per line. A condition that
    binds looser than ``and`` (``a > 0 or b > 0``, a shape guard) is parenthesised: joined bare,
    ``x and a > 0 or b > 0 and y`` would pass whenever ``b > 0 and y`` does, whatever ``x`` says
    (a resume function would run the variant of another loop length)."""
    conds = [f"({c})" if _looser_than_and(c) else c for c in conds]
    line = f"{pad}if {' and '.join(conds)}:"
    if len(line) <= 100:
        return line
    return (
        f"{pad}if ({conds[0]}\n"
        + "".join(f"{pad}        and {c}\n" for c in conds[1:-1])
        + f"{pad}        and {conds[-1]}):"
    )


def _looser_than_and(cond: str) -> bool:
    """Whether ``cond`` may have an operator of lower precedence than ``and`` at its top level
    (``or``, a conditional expression, a lambda); a false positive only adds parentheses."""
    return any(word in cond for word in (" or ", " if ", "lambda"))
