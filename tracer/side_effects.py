"""Side effects recorded during a trace and replayed by the rewritten code.

Mutations of objects that existed before the call (reached through a source) are kept here:
attribute stores on user objects, classes and modules, global stores, closure-cell stores, and
in-place changes to input lists/dicts/sets. Objects created during the trace (``track_new``: user
classes, dataclasses, namedtuples with attributes) keep their attributes here too; ``torch.nn``
modules made in the trace are built by the ``prologue``. Reads during the trace see earlier
pending writes (``load_attr``/``load_global``). ``plan(live)`` decides which new objects escape (are
reachable from what the rewritten code rebuilds); ``codegen`` creates those first (each into its own
local), then applies the final state in program order of first write.
"""

from __future__ import annotations

import collections
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from bytecode import CellVar, FreeVar

from ..guards.guard import default_device_as_set
from ..guards.sources import AttrSource, Source
from .exc import PythonError, Unsupported
from .variables.base import MISSING, VariableTracker, type_lookup, walk

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..codegen.emit import Codegen


@dataclass(eq=False)
class _Deleted(VariableTracker):
    """What ``attr_stores`` holds for an attribute of an existing object that the trace deleted:
    the replay runs ``del obj.name`` there."""

    def __repr__(self) -> str:
        return "<deleted>"


_DELETED = _Deleted()


class SideEffects:
    def __init__(self) -> None:
        #: (object VT, attribute) -> new value, in order of first write
        self.attr_stores: dict[tuple[int, str], tuple[VariableTracker, str, VariableTracker]] = {}
        self.global_stores: dict[str, VariableTracker] = {}
        self.cell_stores: dict[str, VariableTracker] = {}
        self.mutated: dict[int, VariableTracker] = {}  #: input containers changed in place
        #: (container, its items before a change): undone, newest first, by ``restore``
        self.undo: list[tuple[VariableTracker, Any]] = []
        self._saved: set[int] = set()  #: containers saved in ``undo`` since the last snapshot
        #: objects created during the trace, by id of their tracker, in creation order; each has a
        #: ``create(cg)`` method pushing a blank instance and a ``name``, the local it lives in
        self.new_objects: dict[int, VariableTracker] = {}
        #: ``(local, fn, args, kwargs)``: calls the rewritten code makes before the graph runs
        #: (``torch.nn`` modules built, ``modules._build_torch_module``; draws from a
        #: ``torch.Generator``, ``generator_draws``), in creation order
        self.prologue: list[tuple[str, Any, tuple, dict]] = []
        #: prologue locals whose call may be left out when the rewritten code never reads them ->
        #: the assumption ``(label, getter, value)`` that doing so rests on (``emit_prologue``)
        self.unread_prologue: dict[str, tuple[tuple, Any, Any]] = {}
        self.counter = 0  #: numbers the locals of new objects (never reused within a trace)
        #: existing objects whose class overrides ``__setattr__``: their stores (recorded from the
        #: inlined override) are replayed with ``object.__setattr__``, not ``STORE_ATTR``
        self.raw_objects: set[int] = set()
        #: ``(id(object), name)`` of the stores written into an object's ``__dict__`` itself
        #: (``vars(module)[name] = value``), which its class's ``__setattr__`` would file elsewhere:
        #: replayed with ``object.__setattr__``
        self.dict_stores: frozenset[tuple[int, str]] = frozenset()
        #: ``(class, name)`` of class attributes assigned during the trace
        self.changed_class_attrs: set[tuple[type, str]] = set()
        #: ids of the mappings the trace read through a proxy (``cls.__dict__``, a class's
        #: namespace: ``base.class_namespace``), which no store to the class may then change
        #: (``objects._namespace``, ``builder._wrap_proxy``)
        self.namespaces: set[int] = set()
        #: ids of the member tables of modules (``_buffers``...) the trace read as a whole, which
        #: no store filed there by ``nn.Module.__setattr__`` may then change (``modules.py``)
        self.member_tables: set[int] = set()
        #: default dtype, device and inference mode when the call started: what the prologue sees
        self.entry_state = (
            torch.get_default_dtype(),
            str(default_device_as_set()),
            torch.is_inference_mode_enabled(),
        )
        #: id(object) -> its ``obj.__dict__`` as the trace read it (``vars(obj)``): kept up to date
        #: by ``store_attr`` and deletions (CPython's is live); changed through itself, it breaks
        self.instance_dicts: dict[int, VariableTracker] = {}
        self._escaping: list[VariableTracker] = []  #: set by ``plan``
        #: ``(handle, ids of the hook tables it changes)``: real ``RemovableHandle`` trackers whose
        #: ``remove()`` the replay calls, in program order (those tables are stale in the trace)
        self.hook_removals: list[tuple[VariableTracker, frozenset[int]]] = []
        #: copies of the stores for ``snapshot``, dropped by every store (see ``_stored``)
        self._stores: tuple | None = None
        #: id(object) -> (the object, the tracker its attributes are filed under): see ``owner``
        self.owners: dict[int, tuple[Any, VariableTracker]] = {}
        #: calls of real ``lru_cache`` wrappers whose bodies the trace ran in their place
        #: (``functions.MemoizedFunctionVariable``): ``(wrapper, args, kwargs, local)``, in call
        #: order; the replay makes each call again, so that the cache ends as eager leaves it and
        #: each result is the object eager's call returned, kept in ``local``
        self.memo_calls: list[tuple[Any, tuple, dict, str]] = []
        #: id(tracker) -> (tracker, where the real object lives): what such a call returned and
        #: everything made in its body that it holds; the trace must not change it (it is the
        #: cached object), and if it escapes it is that object, reached from ``local``
        self.frozen: dict[int, tuple[VariableTracker, Any]] = {}
        #: ``(wrapper, key, result tracker)`` of those calls whose body the trace ran
        self.memo_results: list[tuple[Any, Any, VariableTracker]] = []
        #: id(real object) -> (the object, its tracker, the call's guard): each part of those
        #: results that is no constant, so that reached through another name it is the same
        #: tracker (``builder.wrap``, ``functions.cached_part``); None for an instance dict
        self.cached_parts: dict[int, tuple[Any, VariableTracker | None, Any]] = {}
        #: ids of trackers that model one real instance dict twice, an object's attributes and
        #: that dict reached as a dict of its own (``builder._one_namespace``): read through
        #: both, changed through neither (each would not see the other's stores)
        self.shared_namespaces: set[int] = set()
        #: ``(fn, argument trackers)``: calls of bytegraph's own functions that the replay makes
        #: last, in program order (the registration hook that moves ``EPOCH`` for a member a
        #: traced ``register_buffer`` filed: ``modules.py``)
        self.calls: list[tuple[Any, list[VariableTracker]]] = []
        #: id(object) -> (the object, the position in ``calls`` of a call that changes it, that
        #: call's function): objects of the program's a call made after the graph writes (a
        #: warnings log, a logging handler's buffer); see ``call_after``
        self.written_later: dict[int, tuple[Any, int, Any]] = {}

    def __bool__(self) -> bool:
        return bool(
            self.attr_stores
            or self.global_stores
            or self.cell_stores
            or self.mutated
            or self.hook_removals
            or self.calls
        )

    def snapshot(self) -> tuple:
        """The stores and the undo log's length, to ``restore`` (taken before every instruction:
        the copies are kept until the next store)."""
        if self._saved:
            self._saved = set()
        if self._stores is None:
            self._stores = (
                dict(self.attr_stores),
                dict(self.global_stores),
                dict(self.cell_stores),
                dict(self.mutated),
                dict(self.new_objects),
                list(self.prologue),
                list(self.hook_removals),
                list(self.memo_calls),
                dict(self.frozen),
                list(self.memo_results),
                list(self.calls),
                self.dict_stores,
                dict(self.cached_parts),
            )
        return (*self._stores, len(self.undo))

    def restore(self, snapshot: tuple) -> None:
        *stores, undo_len = snapshot
        (
            self.attr_stores,
            self.global_stores,
            self.cell_stores,
            self.mutated,
            self.new_objects,
        ) = (dict(s) for s in stores[:5])
        self.prologue = list(stores[5])
        self.hook_removals = list(stores[6])
        self.memo_calls = list(stores[7])
        self.frozen = dict(stores[8])
        self.memo_results = list(stores[9])
        self.calls = list(stores[10])
        self.dict_stores = stores[11]
        self.cached_parts = dict(stores[12])
        self._stores = tuple(stores)  # equal to the restored stores (and never changed)
        for container, items in reversed(self.undo[undo_len:]):
            if hasattr(container, "restore_state"):  # an iterator, a lazy list
                container.restore_state(items)
            else:
                _set_items(container.items, items)
        del self.undo[undo_len:]
        self._saved = set()

    def changed_since(self, snapshot: tuple) -> bool:
        """Was a store or a mutation of an input container recorded after ``snapshot`` (stores
        on objects made in the trace aside), or a module built for the prologue? (A container
        changed before it too is found by its items saved since, ``_save``.)"""
        *stores, undo_len = snapshot
        if any(c.source is not None for c, _ in self.undo[undo_len:]):
            return True
        attrs = {k: v for k, v in self.attr_stores.items() if not self.is_new(v[0])}
        then_attrs = {k: v for k, v in stores[0].items() if not self.is_new(v[0])}
        current = (attrs, self.global_stores, self.cell_stores, self.mutated)
        counted = ((self.prologue, 5), (self.hook_removals, 6), (self.calls, 10))
        if any(len(log) != len(stores[i]) for log, i in counted):
            return True
        return any(
            now.keys() != then.keys() or any(now[k] is not then[k] for k in now)
            for now, then in zip(current, (then_attrs, *stores[1:4]), strict=True)
        )

    def commit(self) -> None:
        """No checkpoint taken so far will be restored: drop the saved items."""
        self.undo.clear()

    def before_mutation(self, container: VariableTracker) -> None:
        """``container`` (a list, dict or set tracker) is about to change in place: keep its items
        so that rolling back a partly run instruction (a call that broke inside the callee) also
        undoes what the callee did to it."""
        self.check_unfrozen(container)
        if any(d is container for d in self.instance_dicts.values()):
            raise Unsupported(
                "instance_dict",
                "writing to an object's __dict__ (vars(obj)) in the compiled function",
                hint="set the attribute with setattr()",
            )
        self._save(container)

    def _save(self, container: VariableTracker) -> None:
        if id(container) not in self._saved:
            self._saved.add(id(container))
            saved = (
                container.save_state()  # an iterator's position, a lazy list's log
                if hasattr(container, "save_state")
                else _copy_items(container.items)
            )
            self.undo.append((container, saved))

    def store_attr(
        self,
        obj: VariableTracker,
        name: str,
        value: VariableTracker,
        raw: bool = False,
        into_dict: bool = False,
    ) -> None:
        """``obj.name = value`` as a plain store (descriptors and ``__setattr__`` overrides were
        run by the caller, ``objects.store_attribute``); ``raw``: replay it with
        ``object.__setattr__`` (the class overrides ``__setattr__``); ``into_dict``: this store
        only was a write into ``obj.__dict__`` (replayed so, with ``object.__setattr__``)."""
        self.check_unfrozen(obj)
        self._stores = None
        self.attr_stores[(id(obj), name)] = (obj, name, value)
        self._mark_dict_store(obj, name, into_dict)
        instance_dict = self.instance_dicts.get(id(obj))
        if instance_dict is not None:
            self._save(instance_dict)
            instance_dict.items[name] = value
        if raw:
            self.raw_objects.add(id(obj))

    def _mark_dict_store(self, obj: VariableTracker, name: str, into_dict: bool) -> None:
        key = (id(obj), name)
        if into_dict != (key in self.dict_stores):
            self.dict_stores = self.dict_stores ^ {key}

    def is_dict_store(self, obj: VariableTracker, name: str) -> bool:
        """Is the trace's pending store to ``obj.name`` a write into ``obj.__dict__`` itself?"""
        return (id(obj), name) in self.dict_stores

    def stored_attributes(self) -> list[tuple[Source, VariableTracker]]:
        """Each attribute the trace stores into an object it was given, as the place a read of
        it comes from (``AttrSource`` of the object's source), with the value it leaves there."""
        return [
            (AttrSource(obj.source, name), value)
            for obj, name, value in self.attr_stores.values()
            if obj.source is not None and value is not _DELETED
        ]

    def store_class_attr(self, cls_vt: VariableTracker, name: str, value: VariableTracker) -> None:
        """``cls.name = value`` on an existing class (replayed with ``STORE_ATTR``)."""
        self.store_attr(cls_vt, name, value)
        self.changed_class_attrs.add((cls_vt.as_python_constant(), name))

    def class_attr_changed(self, cls: type, name: str) -> bool:
        """Was ``name`` assigned during the trace on ``cls`` or a class of its MRO?"""
        if not self.changed_class_attrs:  # (most traces assign none: no walk of the MRO)
            return False
        return any((klass, name) in self.changed_class_attrs for klass in cls.__mro__)

    def instance_dict(self, obj: VariableTracker, make: Any) -> VariableTracker:
        """``obj.__dict__``: ``make(attributes stored so far)`` the first time (the object's own
        attributes, those stores applied), less the attributes deleted so far; a dict tracker that
        later stores and deletions update (read-only for the trace; see ``before_mutation``)."""
        known = self.instance_dicts.get(id(obj))
        if known is None:
            mine = [(n, v) for o, n, v in self.attr_stores.values() if o is obj]
            known = make({n: v for n, v in mine if v is not _DELETED})
            for name in [n for n, v in mine if v is _DELETED]:
                known.items.pop(name, None)
            self.instance_dicts[id(obj)] = known
        return known

    def delete_attr(
        self,
        obj: VariableTracker,
        name: str,
        replay: bool,
        raw: bool = False,
        into_dict: bool = False,
    ) -> None:
        """``del obj.name`` on an existing object, as the generic ``__delattr__`` does it (the
        attribute is there: the caller checked). ``replay``: the object had it before the call,
        so the rewritten code deletes it; otherwise only the trace's pending store goes. ``raw``:
        replay it with ``object.__delattr__`` (the class overrides ``__delattr__``);
        ``into_dict``: a deletion from ``obj.__dict__`` itself (replayed so)."""
        self.check_unfrozen(obj)
        self._stores = None
        if raw:
            self.raw_objects.add(id(obj))
        self._mark_dict_store(obj, name, into_dict and replay)
        if replay:
            self.attr_stores[(id(obj), name)] = (obj, name, _DELETED)
        else:
            self.attr_stores.pop((id(obj), name), None)
        instance_dict = self.instance_dicts.get(id(obj))
        if instance_dict is not None:
            self._save(instance_dict)
            instance_dict.items.pop(name, None)

    def is_deleted(self, obj: VariableTracker, name: str) -> bool:
        """Did the trace delete ``obj.name``, which the object had before the call?"""
        entry = self.attr_stores.get((id(obj), name))
        return entry is not None and entry[2] is _DELETED

    def delete_new_attr(self, obj: VariableTracker, name: str) -> bool:
        """``del obj.name`` on an object made in the trace: its pending store goes (False when
        there is none: CPython's AttributeError). The object is made without it."""
        self.check_unfrozen(obj)
        if (id(obj), name) not in self.attr_stores:
            return False
        self._stores = None
        del self.attr_stores[(id(obj), name)]
        instance_dict = self.instance_dicts.get(id(obj))
        if instance_dict is not None:
            self._save(instance_dict)
            del instance_dict.items[name]
        return True

    def owner(self, vt: VariableTracker, real: Any) -> VariableTracker:
        """The tracker under which the log files the attributes of ``real``, an existing object
        that several trackers may stand for (an enum member, interned; a module or a function
        wrapped without a source): the first one seen, so that each attribute has one entry in
        program order whichever tracker wrote or reads it."""
        known = self.owners.setdefault(id(real), (real, vt))
        return known[1] if known[0] is real else vt

    def own_attr(self, vt: VariableTracker, real: Any, name: str) -> VariableTracker | None:
        """``real.name`` (``real`` an existing object tracked by ``vt``) as the trace left it in
        the object's own ``__dict__``: what it stored there, None where it stored nothing; where it
        deleted it, CPython's AttributeError if the class lacks ``name`` (else the read would find
        the class's, which is not modelled here: a break)."""
        if id(real) not in self.owners:
            return None
        owner = self.owner(vt, real)
        if not self.is_deleted(owner, name):
            return self.load_attr(owner, name)
        cls = owner.python_type()
        if type_lookup(cls, name) is not MISSING:
            raise Unsupported("getattr", f"{cls.__name__}.{name} was deleted in the trace")
        raise PythonError(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))

    def namespace_store(self, namespace: dict, name: str) -> VariableTracker | None:
        """What the trace stored as attribute ``name`` of the module whose namespace is
        ``namespace`` (the globals of a function inlined from it read it), None where nothing."""
        for real, vt in self.owners.values():
            if isinstance(real, types.ModuleType) and vars(real) is namespace:
                if self.is_deleted(vt, name):  # a global then: a builtin of its name, or none
                    raise Unsupported("global", f"{name!r} was deleted from {real.__name__}")
                return self.load_attr(vt, name)
        return None

    def forget_store(self, obj: VariableTracker, name: str, previous: tuple | None) -> None:
        """Undo a ``store_attr`` of ``obj.name`` (``previous``: the entry it replaced, or None);
        ``obj`` has no instance dict tracker."""
        self._stores = None
        if previous is None:
            del self.attr_stores[(id(obj), name)]
        else:
            self.attr_stores[(id(obj), name)] = previous

    def load_attr(self, obj: VariableTracker, name: str) -> VariableTracker | None:
        """What the trace stored into ``obj.name`` (None: nothing, or it deleted it)."""
        entry = self.attr_stores.get((id(obj), name))
        return entry[2] if entry and entry[2] is not _DELETED else None

    def check_unfrozen(self, obj: VariableTracker) -> None:
        if id(obj) in self.frozen:
            raise Unsupported(
                "memoized_call",
                "changing an object an lru_cache'd call returned (eager changes the cached object)",
            )
        if id(obj) in self.shared_namespaces:
            raise Unsupported(
                "instance_dict",
                "changing an object's attributes also reached as its __dict__ held elsewhere",
                hint="change them through one name only: the object's attributes",
            )

    def changed(self, vt: VariableTracker) -> bool:
        """Has the trace changed ``vt`` (an input container's items, or an object's
        attributes)?"""
        return id(vt) in self.mutated or any(o is vt for o, _, _ in self.attr_stores.values())

    def memo_call(
        self, wrapper: Any, args: tuple, kwargs: dict, key: Any, result: VariableTracker
    ) -> str:
        """Record a call of a real cached function whose body the trace ran (``result``: what
        it gave, for ``key``); returns the local the replay keeps its result in."""
        self._stores = None
        name = self.new_name("__bg_memo")
        self.memo_calls.append((wrapper, args, kwargs, name))
        self.memo_results.append((wrapper, key, result))
        return name

    def freeze(self, vt: VariableTracker, place: Any) -> None:
        """``vt`` is (part of) a cached call's result, the real object at ``place`` (a source)."""
        self._stores = None
        self.frozen[id(vt)] = (vt, place)

    def add_cached_part(self, part: Any, vt: VariableTracker | None, guard: Any) -> None:
        """``part``, a real object of a cached call's result (its ``guard``), is ``vt``."""
        self._stores = None
        self.cached_parts[id(part)] = (part, vt, guard)

    def new_name(self, prefix: str = "__bg_new") -> str:
        """A fresh local name of the rewritten code for an object made during the trace."""
        self.counter += 1
        return f"{prefix}{self.counter}"

    def track_new(self, obj: VariableTracker) -> None:
        """``obj`` was created during the trace: its attributes live in ``attr_stores``, and it is
        rebuilt by ``codegen`` only if it escapes."""
        self._stores = None
        self.new_objects[id(obj)] = obj

    def is_new(self, obj: VariableTracker) -> bool:
        return id(obj) in self.new_objects

    def plan(self, live: list[VariableTracker]) -> list[VariableTracker]:
        """Decide which new objects escape, that is, are reachable from ``live`` (what the rewritten
        code rebuilds: the return value, or the frames at a graph break) or from the replayed
        effects, directly or through the attributes of escaping objects. Returns every value the
        replay will rebuild (the graph must output the tensors among them)."""
        values = self._existing_values()
        found: set[int] = set()
        pending = [*live, *values]
        while pending:
            reached = {id(vt) for vt in walk(pending) if self.is_new(vt) and id(vt) not in found}
            found |= reached
            pending = [v for obj, _, v in self.attr_stores.values() if id(obj) in reached]
        self._escaping = [vt for key, vt in self.new_objects.items() if key in found]
        escaping = {id(vt) for vt in self._escaping}
        return values + [v for obj, _, v in self.attr_stores.values() if id(obj) in escaping]

    def _existing_values(self) -> list[VariableTracker]:
        """Values the replay writes into objects that existed before the call."""
        stores = self.attr_stores.values()
        values = [v for obj, _, v in stores if not self.is_new(obj) and v is not _DELETED]
        values += list(self.global_stores.values()) + list(self.cell_stores.values())
        values += [arg for _, args in self.calls for arg in args]
        for _, args, kwargs, _ in self.memo_calls:  # a symbolic number a replayed call takes
            values += [a for a in [*args, *kwargs.values()] if isinstance(a, VariableTracker)]
        return values + list(self.mutated.values())

    def targets(self) -> list[VariableTracker]:
        """What the replay writes into or calls that existed before the call (reached through
        sources): objects whose attributes it stores, containers it refills, handles it removes."""
        objects = [obj for obj, _, _ in self.attr_stores.values() if not self.is_new(obj)]
        return objects + list(self.mutated.values()) + [h for h, _ in self.hook_removals]

    def mark_mutated(self, container: VariableTracker) -> None:
        if container.source is not None:
            self._stores = None
            self.mutated[id(container)] = container

    def store_global(self, name: str, value: VariableTracker) -> None:
        if self.global_stores.get(name) is _DELETED:  # eager moves the name to the dict's end
            raise Unsupported("global_store", f"global {name!r} stored after the trace deleted it")
        self._stores = None
        self.global_stores[name] = value

    def delete_global(self, name: str, existed: bool) -> None:
        """``del G[name]``: replayed as ``DELETE_GLOBAL`` where the name ``existed`` before the
        call (guarded by the caller), else only the trace's own store of it is forgotten."""
        self._stores = None
        self.global_stores.pop(name, None)
        if existed:
            self.global_stores[name] = _DELETED

    def global_deleted(self, name: str) -> bool:
        return self.global_stores.get(name) is _DELETED

    def store_cell(self, name: str, value: VariableTracker) -> None:
        self._stores = None
        self.cell_stores[name] = value

    def remove_hook(self, handle: VariableTracker, tables: list[Any]) -> None:
        """``handle.remove()``, called by the replay; ``tables`` are the hook dicts it changes."""
        self._stores = None
        self.hook_removals.append((handle, frozenset(id(t) for t in tables)))

    def call_after(self, fn: Any, args: list[VariableTracker], writes: Iterable[Any] = ()) -> None:
        """``fn(*args)``, called by the replay after every store (``fn`` is bytegraph's own, a
        constant of the rewritten code). ``writes``: the objects of the program's it changes
        (``OutputGraph.call_after`` checks the trace has not read them); a read of one later in
        the trace breaks there (``written_later_by``), the call made first, as eager made it."""
        self._stores = None
        for obj in writes:
            self.written_later[id(obj)] = (obj, len(self.calls), fn)
        self.calls.append((fn, args))

    def written_later_by(self, value: Any) -> bool:
        """Does a call kept for after the graph (``call_after``, not undone) change ``value``?"""
        entry = self.written_later.get(id(value))
        if entry is None or entry[0] is not value:
            return False
        obj, at, fn = entry
        return at < len(self.calls) and self.calls[at][0] is fn

    @property
    def stale_hook_tables(self) -> frozenset[int]:
        """Ids of the hook tables a removal the replay will make changes."""
        return frozenset().union(*(ids for _, ids in self.hook_removals))

    def add_prologue(
        self, entry: tuple[str, Any, tuple, dict], unread: tuple[tuple, Any, Any] | None = None
    ) -> None:
        """A call the rewritten code makes before the graph runs: a ``torch.nn`` module built,
        a draw from a ``torch.Generator`` (``generator_draws``). ``unread``: the call has no
        effect eager would show as long as the assumption ``(label, getter, value)`` holds
        (``getter()`` returns ``value``), so it is left out when nothing reads its local."""
        self._stores = None
        self.prologue.append(entry)
        if unread is not None:
            self.unread_prologue[entry[0]] = unread

    def emit_prologue(self, cg: Codegen) -> list[tuple[tuple, Any, Any]]:
        """Put before all the code ``cg`` holds (emitted last: that code tells which locals are
        read) ``local = fn(*args, **kwargs)`` for each prologue entry, in the order the trace made
        them; an argument that is a ``Source`` is read from it (a generator, an earlier entry's
        local), any other is a constant. An entry that may go unread (``add_prologue``) and whose
        local no instruction reads (the graph's inputs, the replay, the result, the resume calls
        at a break, a later entry kept) is left out. Returns the assumptions that leaving them
        out rests on, for the caller to guard."""
        read = names_in(cg.instrs)
        kept: list[list[Any]] = []
        assumptions: dict[tuple, tuple[tuple, Any, Any]] = {}
        for name, fn, args, kwargs in reversed(self.prologue):
            if name in self.unread_prologue and name not in read:
                assumption = self.unread_prologue[name]
                assumptions[assumption[0]] = assumption
                continue
            sub = sub_codegen(cg)
            sub.load_const(fn)
            for value in [*args, *kwargs.values()]:
                if isinstance(value, Source):
                    value.reconstruct(sub)
                else:
                    sub.load_const(value)
            sub.call_function(len(args) + len(kwargs), tuple(kwargs))
            sub.store_local(name)
            read |= names_in(sub.instrs)
            kept.append(sub.instrs)
        cg.instrs[:0] = [instr for instrs in reversed(kept) for instr in instrs]
        return list(assumptions.values())

    def emit_memo_calls(self, cg: Codegen) -> None:
        """The cached calls whose bodies the trace ran, for real, in call order (eager's cache
        fills as in eager), each result kept in its local: first after the graph, before anything
        reads a value found through one (``convert._preload_stale``)."""
        for wrapper, args, kwargs, local in self.memo_calls:
            cg.load_const(wrapper)
            for value in [*args, *kwargs.values()]:
                if isinstance(value, VariableTracker):  # a symbolic number, or what holds one
                    value.reconstruct(cg)
                else:
                    cg.load_const(value)
            cg.call_function(len(args) + len(kwargs), tuple(kwargs))
            cg.store_local(local)

    def codegen(self, cg: Codegen) -> None:
        """Emit the replay (after ``emit_memo_calls``): new objects that escape (see ``plan``),
        container contents, attributes, globals, cells."""
        escaping = {id(vt) for vt in self._escaping}
        for obj in self._escaping:
            if id(obj) in self.frozen:  # the cached object (its attributes are set already)
                self.frozen[id(obj)][1].reconstruct(cg)
            else:
                obj.create(cg)
            cg.store_local(obj.name)
            cg.new_objects.add(obj.name)
        # the new objects' attributes first: a container refilled with one as a key hashes it,
        # and its ``__hash__`` may read them
        stores = list(self.attr_stores.values())
        for obj, name, value in stores:
            if id(obj) in escaping and id(obj) not in self.frozen:
                self._replay_attr(cg, obj, name, value, escaping)
        for obj in self._escaping:  # contents set once every new object exists (a dict object)
            if hasattr(obj, "fill"):
                obj.fill(cg)
        for container in self.mutated.values():
            _replay_container(cg, container)
        for obj, name, value in stores:
            if id(obj) not in escaping:
                self._replay_attr(cg, obj, name, value, escaping)
        for name, value in self.global_stores.items():
            if value is _DELETED:
                cg.add("DELETE_GLOBAL", name)
                continue
            value.reconstruct(cg)
            cg.store_global(name)
        for name, value in self.cell_stores.items():
            value.reconstruct(cg)
            cg.store_deref(name)
        for handle, _ in self.hook_removals:
            handle.reconstruct(cg)
            cg.load_attr("remove")
            cg.call_function(0)
            cg.pop_top()
        for fn, args in self.calls:
            cg.load_const(fn)
            for arg in args:
                arg.reconstruct(cg)
            cg.call_function(len(args))
            cg.pop_top()

    def _replay_attr(
        self, cg: Codegen, obj: VariableTracker, name: str, value: Any, escaping: set[int]
    ) -> None:
        """Replay one attribute store (or deletion) the trace recorded."""
        if value is _DELETED and (id(obj) in self.raw_objects or self.is_dict_store(obj, name)):
            # an override ran in the trace already, or a deletion from ``obj.__dict__``
            plain = self.is_dict_store(obj, name)
            cg.load_const(
                object.__delattr__ if plain else getattr(obj, "base_delattr", object.__delattr__)
            )
            obj.reconstruct(cg)
            cg.load_const(name)
            cg.call_function(2)
            cg.pop_top()
            return
        if value is _DELETED:  # the generic ``__delattr__``
            obj.reconstruct(cg)
            cg.add("DELETE_ATTR", name)
            return
        raw = (
            getattr(obj, "raw_replay", True)
            if id(obj) in escaping
            else id(obj) in self.raw_objects or self.is_dict_store(obj, name)
        )
        if raw:
            # ``object.__setattr__`` (for a module's override, ``nn.Module.__setattr__``): the
            # store the trace recorded, with no ``__setattr__`` override or descriptor running
            # again; a write into ``obj.__dict__`` with ``object.__setattr__`` whatever ``obj`` is
            plain = self.is_dict_store(obj, name)
            cg.load_const(
                object.__setattr__ if plain else getattr(obj, "base_setattr", object.__setattr__)
            )
            obj.reconstruct(cg)
            cg.load_const(name)
            value.reconstruct(cg)
            cg.call_function(3)
            cg.pop_top()
        elif id(obj) in escaping or not self.is_new(obj):
            value.reconstruct(cg)
            obj.reconstruct(cg)
            cg.store_attr(name)


def _replay_container(cg: Codegen, container: VariableTracker) -> None:
    """``src[:] = [items]`` for lists; ``new = {...}; src.clear(); src.update(new)`` for dicts and
    sets."""
    if hasattr(container, "replay_log") and container.replay_log(cg):
        return  # a lazy list only appended to: ``src.extend([...])``
    if hasattr(container, "replay_items"):
        container.replay_items(cg)  # a dict subclass's object: through its base's methods
        return
    source = container.source
    kind = container.python_type()
    if kind is list:
        cg.extend(_items_list(cg, container))
        source.reconstruct(cg)
        cg.load_const(slice(None))
        cg.store_subscr()
        return
    # The new contents may read the old ones (``src['a']``): build them before clearing.
    plain = type(container).__new__(type(container))
    plain.__dict__.update(container.__dict__, source=None)
    plain.reconstruct(cg)
    cg.store_local("__bg_contents")
    source.reconstruct(cg)
    cg.load_attr("clear")
    cg.call_function(0)
    cg.pop_top()
    source.reconstruct(cg)
    cg.load_attr("extend" if issubclass(kind, collections.deque) else "update")
    cg.load_local("__bg_contents")
    cg.call_function(1)
    cg.pop_top()


def sub_codegen(cg: Codegen) -> Codegen:
    """An emitter of code to splice into ``cg``'s: what ``cg`` keeps across its code is shared."""
    sub = type(cg)(cg.lineno, cg.output_var)
    sub.graph_outputs = cg.graph_outputs
    sub.built, sub.cells = cg.built, cg.cells  # objects built once and cells: shared
    sub.new_objects = cg.new_objects
    sub.consts = cg.consts  # one object per equal constant across the spliced code
    return sub


def names_in(instrs: list[Any]) -> set[str]:
    """Every name the instructions ``instrs`` mention (a local, a cell, an attribute, a string
    constant): a superset of the locals they read."""
    names: set[str] = set()
    for instr in instrs:
        arg = getattr(instr, "arg", None)
        for part in arg if isinstance(arg, tuple) else (arg,):
            if isinstance(part, str):
                names.add(part)
            elif isinstance(part, (CellVar, FreeVar)):
                names.add(part.name)
    return names


def _items_list(cg: Codegen, container: VariableTracker) -> list:
    sub = sub_codegen(cg)
    for item in container.items:
        item.reconstruct(sub)
    sub.build_list(len(container.items))
    return sub.instrs


def _copy_items(items: Any) -> Any:
    return type(items)(items)  # list, dict or set of trackers


def _set_items(items: Any, saved: Any) -> None:
    """Put ``saved`` back into ``items`` in place (iterators may share the same list)."""
    if isinstance(items, list):
        items[:] = saved
    else:
        items.clear()
        items.update(saved)
