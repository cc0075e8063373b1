"""The ``MODULE_TREE`` guard-set optimisation: one check per module tree whose cost does not grow
with the number of parameters.

``tree_guards`` (called when a trace finishes) replaces all guards that only look *inside* a module
tree (as each kind's ``absorb`` allows) by one ``MODULE_TREE`` guard on the tree's root, checked by
a ``ModuleTree``:

* fast path: the root was validated before and no module changed since (``EPOCH`` unchanged) — O(1);
* slow path: the absorbed guards, re-rooted at the given root (types instead of identities for
  modules, so every instance of the same structure passes), then the root is remembered.

What bumps ``EPOCH`` is installed by ``tracer/variables/modules.py``; hook tables are
compared here
(``_hooks_match``).
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from torch import nn

from .epoch import EPOCH, PerRootCache, WeakIdentitySet
from .guard import Absorb, Guard, WeakArg
from .kinds import ID_MATCH, MODULE_TREE, TYPE_MATCH, ConstTable
from .sources import AttrSource, ItemSource, LocalSource, Source

#: The member dicts a module's parameters, buffers and submodules live in.
MEMBER_TABLES = ("_parameters", "_buffers", "_modules")

#: Modules that a cached result (a validated tree, a parameter block) may have read: writes to them
#: move ``EPOCH`` (``tracer/variables/modules.py``). Writes to any other module cannot make a cached
#: result stale, so they leave the caches alone (a loss module that ``forward`` builds on every
#: call would otherwise move ``EPOCH``, and every call would re-run the tree checks).
OBSERVED = WeakIdentitySet()
#: The roots ``observe`` walked, while ``EPOCH`` stands still.
_WALKED = PerRootCache()


def observe(root: Any) -> None:
    """Add to ``OBSERVED`` every module a check rooted at ``root`` can read, as ``tree_root``
    reaches them: submodules, and modules held in a module's attributes or in tuples there. Called
    before the check reads anything, so that a write racing with it moves ``EPOCH``. A root walked
    at the current epoch is not walked again: a module could only have become reachable through a
    write to one already observed, which moves ``EPOCH``."""
    if _WALKED.epoch == EPOCH[0]:
        hit = _WALKED.valid.get(id(root))
        if hit is not None and hit[0]() is root:
            return
    epoch = EPOCH[0]
    for module in reachable_modules([root]):
        OBSERVED.add(module)
    _WALKED.remember(root, True, epoch)


def reachable_modules(roots: list[Any]) -> Iterator[nn.Module]:
    """Each module a check rooted at one of ``roots`` can read, once: submodules, and modules
    held in a module's attributes or in tuples there."""
    pending, seen = list(roots), set()
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, tuple):
            # the tuple's own items: a subclass's ``__iter__``/``__len__`` may be anything (e3nn's
            # ``Irreps`` raises in ``__len__``), and the walk must not fail (nor run user code)
            pending.extend(tuple.__iter__(value))
        elif isinstance(value, nn.Module):
            yield value
            members = value.__dict__
            pending.extend(members.get("_modules", {}).values())
            for attr in members.values():
                if isinstance(attr, (tuple, nn.Module)):
                    pending.append(attr)


def member_names(roots: list[Any]) -> frozenset:
    """The parameters, buffers and submodules of the modules ``reachable_modules`` finds, as
    ``(id(module), table, name)``, those that are None left out (a buffer declared None and set
    later counts as added when it is set)."""
    return frozenset(
        (id(module), table, name)
        for module in reachable_modules(roots)
        for table in MEMBER_TABLES
        if isinstance(entries := module.__dict__.get(table), dict)  # (a WatchedDict too)
        for name, value in dict.items(entries)
        if value is not None
    )


class ModuleTree(PerRootCache):
    """The check behind one ``MODULE_TREE`` guard.

    Invariant: a root in ``valid`` gave its value (passed or failed ``slow``) at epoch ``epoch``
    and nothing that ``slow`` reads can have changed while ``EPOCH[0] == epoch``. Failures are
    kept too: a module with a variant per mode (eval, train, no grad) is checked against the
    trees of the variants it does not match on every call. Roots are held weakly."""

    __slots__ = ("slow", "source")

    def __init__(self, slow: Callable[[Any], bool], source: str) -> None:
        super().__init__()
        self.slow = slow  #: the absorbed guards, re-rooted at the argument
        self.source = source  #: the text of the absorbed guards, for reports

    def check(self, root: Any) -> bool:
        if self.epoch == EPOCH[0]:
            hit = self.valid.get(id(root))
            if hit is not None and hit[0]() is root:
                return hit[1]
        return self._recheck(root)

    def _recheck(self, root: Any) -> bool:
        observe(root)
        epoch = EPOCH[0]
        try:
            ok = bool(self.slow(root))
        except Exception:
            return False
        self.remember(root, ok, epoch)
        return ok

    def __repr__(self) -> str:
        return f"<ModuleTree: {self.source.count(chr(10)) + 1} checks>"


_ROOT = LocalSource("___R")


def tree_guards(guards: Iterable[Guard]) -> list[Guard]:
    """Replace the guards that only look inside module trees by one ``MODULE_TREE`` guard per
    tree."""
    guards = sorted(set(guards), key=Guard.sort_key)
    modules = traced_modules(guards)
    types_of = {g.source: g.arg() for g in guards if g.kind is TYPE_MATCH and g.source is not None}
    roots = {s for s in modules if _module_parent(s, modules) is None}
    absorbed: dict[Source, list[Guard]] = {r: [] for r in roots}
    kept: list[Guard] = []
    memo: dict[Source, Source | None] = {}
    for guard in guards:
        source = guard.source
        root = tree_root(source, modules, types_of, memo) if source is not None else None
        if root is None or not _absorbable(guard, root, modules, types_of, memo):
            kept.append(guard)
        else:
            absorbed[root].append(guard)
    for root, inside in absorbed.items():
        kept.append(MODULE_TREE(root, _make_tree(root, inside, modules)))
    return sorted(kept, key=Guard.sort_key)


def traced_modules(guards: Iterable[Guard]) -> dict[Source, nn.Module]:
    """The modules the trace guarded by identity, by source."""
    return {
        g.source: g.arg()
        for g in guards
        if g.kind is ID_MATCH and g.source is not None and isinstance(g.arg(), nn.Module)
    }


def _module_parent(source: Source, modules: dict[Source, Any]) -> Source | None:
    """The module whose attribute, parameter, buffer or child ``source`` is, if any."""
    if isinstance(source, AttrSource) and source.base in modules:
        return source.base
    if (
        isinstance(source, ItemSource)
        and isinstance(source.base, AttrSource)
        and source.base.attr in MEMBER_TABLES
        and source.base.base in modules
    ):
        return source.base.base
    return None


def tree_root(
    source: Source,
    modules: dict[Source, Any],
    types_of: dict[Source, Any],
    memo: dict[Source, Source | None] | None = None,
) -> Source | None:
    """The root module of the tree ``source`` belongs to: reached from it through module members
    and items of tuples only (values nothing can change without bumping ``EPOCH``). The climb may
    end above the root, at a tuple no module holds (``args`` of a ``forward(*args, **kwargs)``
    wrapper, as transformers' decorators make): the root is then the highest module passed.
    ``memo`` (source -> its root) lets the sources of one set of guards share their climbs: a
    model's guards read thousands of sources through the same few hundred modules."""
    path, top = [], None
    while True:
        if memo is not None and source in memo:
            top = memo[source]
            break
        path.append(source)
        parent = _tree_parent(source, modules, types_of)
        if parent is None:
            break
        source = parent
    for source in reversed(path):  # from the highest down: each one's root is its parent's
        if top is None and source in modules:
            top = source
        if memo is not None:
            memo[source] = top
    return top


def _tree_parent(
    source: Source, modules: dict[Source, Any], types_of: dict[Source, Any]
) -> Source | None:
    """What ``tree_root`` climbs to from ``source``: its module, member dict or tuple."""
    parent = _module_parent(source, modules)
    if (
        parent is None
        and isinstance(source, AttrSource)
        and source.attr in MEMBER_TABLES
        and source.base in modules
    ):
        return source.base  # the member dict itself
    if parent is None and isinstance(source, ItemSource) and _is_tuple(types_of.get(source.base)):
        return source.base
    return parent


def _is_tuple(arg: Any) -> bool:
    cls = arg() if isinstance(arg, WeakArg) else arg
    return isinstance(cls, type) and issubclass(cls, tuple)


def _absorbable(
    guard: Guard,
    root: Source,
    modules: dict[Source, Any],
    types_of: dict[Source, Any],
    memo: dict[Source, Source | None],
) -> bool:
    absorb, src = guard.kind.absorb, guard.source
    if absorb is Absorb.ALWAYS:
        return True
    if absorb is Absorb.VALUE:
        return types_of.get(src) is not set  # the content of a set can change in place
    if absorb is Absorb.PARAMETER:
        return issubclass(guard.arg.type, nn.Parameter)  # buffers: plain tensors, checked per call
    if absorb is Absorb.MEMBERS:
        return _is_tuple(types_of.get(src)) or (
            isinstance(src, AttrSource) and src.attr in MEMBER_TABLES and src.base in modules
        )
    if absorb is Absorb.ALIAS:
        other = guard.arg
        return isinstance(other, Source) and tree_root(other, modules, types_of, memo) == root
    return False


def rebase(source: Source, root: Source, memo: dict[Source, Source] | None = None) -> Source:
    """``source`` read from ``___R`` instead of ``root``. ``memo`` (source -> rebased) lets the
    sources of one tree share their rebased prefixes (each made, hashed and rendered once)."""
    if memo is None:
        memo = {}
    hit = memo.get(source)
    if hit is not None:
        return hit
    if source == root:
        hit = _ROOT
    elif isinstance(source, AttrSource):
        hit = AttrSource(rebase(source.base, root, memo), source.attr)
    elif isinstance(source, ItemSource):
        hit = ItemSource(rebase(source.base, root, memo), source.index, source.is_dict_key)
    else:
        raise ValueError(f"{source.expr} is not under {root.expr}")
    memo[source] = hit
    return hit


def _make_tree(root: Source, inside: list[Guard], modules: dict[Source, Any]) -> ModuleTree:
    """Compile the absorbed guards into the slow check: module identities become type, instance-dict
    and hook checks (so an equal-structured instance passes); everything else is checked as
    traced.

    The check is one ``and`` of the guards' parts in ``Guard`` order, in which a module's type
    check comes before every guard inside it (deeper sources sort later): that check binds the
    module to a local, ``type((___m3 := R._modules['blocks'])) is ___ModuleList``, and the parts
    after it read from the local. A tree of a thousand modules had each part read its module's
    whole chain again: twice the text to compile, and each read repeated at every check."""
    consts = ConstTable()
    memo: dict[Source, Source] = {}
    rebased: dict[Guard, nn.Module] = {}  #: the guards as read from ``___R``, a module's by it
    for guard in inside:
        src = rebase(guard.source, root, memo)
        if guard.kind is ID_MATCH and guard.source in modules:
            rebased[TYPE_MATCH(src, type(modules[guard.source]))] = modules[guard.source]
            continue
        arg = rebase(guard.arg, root, memo) if isinstance(guard.arg, Source) else guard.arg
        rebased.setdefault(Guard(src, guard.kind, arg, guard.key), None)
    names = {"___R": "R"}  #: the locals the parts read: ``R`` and the bound modules
    bound: dict[Source, Source] = {_ROOT: _ROOT}  #: a module's source -> its local
    local_memo: dict[Source, Source] = {}
    parts: list[str] = []
    extra: list[str] = []
    seen: set[str] = set()
    for guard in sorted(rebased, key=Guard.sort_key):
        module = rebased[guard]
        src = _from_locals(guard.source, bound, local_memo)
        expr = src.render(names)
        if module is not None and src is not _ROOT:
            name = f"___m{len(names) - 1}"
            expr = f"({name} := {expr})"
            names[name] = name
            src = bound[guard.source] = LocalSource(name)
        if module is not None:
            here = src.render(names)
            keys = consts.name(tuple(module.__dict__), "keys")
            hooks, refs = consts.name(_hooks_match, "hooks"), consts.name(_hook_refs(module), "h")
            extra += [f"tuple({here}.__dict__) == {keys}", f"{hooks}({here}, {refs})"]
        arg = guard.arg
        if isinstance(arg, Source):
            arg = _from_locals(arg, bound, local_memo).render(names)
        for code in guard.kind.render(expr, arg, consts):
            if code not in seen:
                seen.add(code)
                parts.append(code)
    parts += extra
    text = "\n".join(parts)
    body = " and\n            ".join(parts) or "True"
    ns: dict[str, Any] = dict(consts.values)
    exec(
        compile(f"def ___tree_check(R):\n    return ({body})\n", "<bytegraph module tree>", "exec"),
        ns,
    )
    fn = ns["___tree_check"]
    fn.__guard_source__ = text
    return ModuleTree(fn, text)


def _from_locals(source: Source, bound: dict[Source, Source], memo: dict[Source, Source]) -> Source:
    """``source`` read from the local of the nearest module above it that ``bound`` holds.
    ``memo`` keeps the answers: a source is only asked for after every module above it was
    bound (the modules' checks come first)."""
    hit = bound.get(source) or memo.get(source)
    if hit is not None:
        return hit
    if isinstance(source, AttrSource):
        hit = AttrSource(_from_locals(source.base, bound, memo), source.attr)
    elif isinstance(source, ItemSource):
        base = _from_locals(source.base, bound, memo)
        hit = ItemSource(base, source.index, source.is_dict_key)
    else:
        hit = source
    memo[source] = hit
    return hit


_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")
ALL_HOOK_DICTS = (*_HOOK_DICTS, "_backward_hooks", "_backward_pre_hooks")
#: ``torch.nn.modules.module``'s process-wide hook tables, which every module call runs.
GLOBAL_HOOK_DICTS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
)


#: The table of a hook table's ids whose hooks take the call's keyword arguments as well.
WITH_KWARGS = {
    "_forward_pre_hooks": "_forward_pre_hooks_with_kwargs",
    "_forward_hooks": "_forward_hooks_with_kwargs",
}


def _hook_refs(module: nn.Module) -> tuple:
    """Weak references to the forward hooks the trace inlined (in order), each with whether it
    takes the keyword arguments (``with_kwargs=True``: called with other arguments)."""
    refs: list[Any] = []
    for name in _HOOK_DICTS:
        with_kwargs = vars(module).get(WITH_KWARGS[name], {})
        for key, hook in vars(module).get(name, {}).items():
            try:
                ref = (
                    weakref.WeakMethod(hook)
                    if isinstance(hook, types.MethodType)
                    else weakref.ref(hook)
                )
            except TypeError:
                ref = lambda hook=hook: hook  # noqa: E731
            refs.append((ref, key in with_kwargs))
        refs.append(None)
    return tuple(refs)


def _hooks_match(module: nn.Module, refs: tuple) -> bool:
    hooks: list[Any] = []
    for name in _HOOK_DICTS:
        with_kwargs = vars(module).get(WITH_KWARGS[name], {})
        hooks += [(h, k in with_kwargs) for k, h in vars(module).get(name, {}).items()] + [None]
    if len(hooks) != len(refs) or module._backward_hooks or module._backward_pre_hooks:
        return False
    return all(
        h is r if h is None or r is None else h[1] == r[1] and _same_hook(h[0], r[0]())
        for h, r in zip(hooks, refs, strict=True)
    )


def _same_hook(hook: Any, expected: Any) -> bool:
    if isinstance(
        hook, types.MethodType
    ):  # a new bound-method object each time: same self and function
        return (
            type(expected) is types.MethodType
            and hook.__self__ is expected.__self__
            and hook.__func__ is expected.__func__
        )
    return hook is expected
