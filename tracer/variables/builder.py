"""``wrap(tx, value, source)``: the only code that turns a real object into a VariableTracker, and
the only code that installs input guards.

Values with a source (arguments, globals, closure cells, attributes reached from them) are guarded:
tensors become graph inputs with ``TENSOR_MATCH``; literals get ``TYPE_MATCH`` + ``EQUALS_MATCH``;
containers get type and length guards and their items are wrapped in turn; functions, modules and
classes are guarded by identity. ``wrap_static`` (no guards) is for values from torch's own
namespaces and ``fold`` for Python values computed during the trace.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import dataclasses
import enum
import functools
import math
import operator
import re
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from ...guards import kinds
from ...guards.epoch import DICT_TYPES
from ...guards.guard import FunctionSpec
from ...guards.sources import (
    AttrSource,
    ConstSource,
    DictItemSource,
    DictKeySource,
    DictValueSource,
    FreshSource,
    ItemSource,
    Source,
    TypeSource,
)
from .. import markers
from ..context_runtime import ContextExit
from ..exc import Unsupported
from . import frames, functorch, modules, pytree, subgraphs  # noqa: F401 (their call rules)
from .base import MISSING, IdentityKey, VariableTracker, proxied, type_lookup
from .call_rules import lookup as call_rule
from .constants import (
    CONSTANT_TYPES,
    DECIDING_PARTS,
    IMMUTABLE_C_KINDS,
    IMMUTABLE_KINDS,
    IMMUTABLE_PY_KINDS,
    LAZY_CONSTANT_TYPES,
    LITERAL_TYPES,
    ConstantVariable,
    LazyConstantVariable,
    SliceVariable,
    computed,
    identity_is_value,
    reading_method,
    value_copy,
)
from .containers import (
    DequeVariable,
    DictVariable,
    LazyDictVariable,
    LazyListVariable,
    ListVariable,
    MappingProxyVariable,
    MethodKey,
    ModelOutputVariable,
    SetVariable,
    TupleVariable,
    compared_by_value,
    dict_base,
    hash_key,
    is_model_output,
    is_user_dict,
    key_vt,
    keys_modelled,
    ordered_keys,
)
from .contexts import wrap_context_exit, wrap_context_object
from .distributed import is_distributed_value
from .distributed import wrap as wrap_distributed
from .functions import (
    LRU_CACHE_WRAPPER,
    BuiltinVariable,
    ClosureCellVariable,
    MemoizedFunctionVariable,
    PartialVariable,
    UserFunctionVariable,
    cached_part,
    wrapped_alike,
)
from .iterators import wrap_input_iterator
from .live_inputs import bound_container_method, wrap_live_input
from .modules import NNModuleVariable
from .numpy_arrays import wrap_array
from .objects import (
    CFunctionVariable,
    ClassVariable,
    DequeObjectVariable,
    DictObjectVariable,
    FrozenSetObjectVariable,
    GlobalsVariable,
    LazyDictObjectVariable,
    ListObjectVariable,
    PythonModuleVariable,
    SetObjectVariable,
    UserObjectVariable,
    container_class_refused,
    container_object_base,
    dict_class_refused,
    dict_item_source,
    namedtuple_overrides,
    plain_tuple_subclass,
    read_dict_key,
    refuse_changed_namespace,
)
from .operations import OPERATOR_FNS, PURE_MODULE_FNS
from .tensors import TensorVariable, is_tensor_method
from .torch_calls import TorchMadeFunctionVariable, TorchVariable, holds_tensors

if TYPE_CHECKING:
    from ..output_graph import OutputGraph
    from ..translator import Translator
from .numpy_arrays import is_numpy_array, is_numpy_scalar

_BUILTIN_IDS = {
    id(v) for v in [*vars(builtins).values(), *OPERATOR_FNS, *PURE_MODULE_FNS] if callable(v)
}


def wrap(tx: Translator, value: Any, source: Source | None) -> VariableTracker:
    """Wrap an input-reachable ``value`` read through ``source``, guarding what the trace
    assumes."""
    if source is None:
        return wrap_static(tx, value)
    output = tx.output
    if output.side_effects.written_later_by(value):  # its tracker would show it before the call
        raise Unsupported(
            "effect",
            f"reading {source.expr}, which a call the compiled code makes after the graph changes",
            hint="read it after the compiled function",
        )
    reader = output.read_through.pop(id(value), None)
    if reader is not None and reader[0] is value:  # read so far through an iterator, unmodelled
        reader[1].model_list(tx)
    if output.side_effects.hook_removals:
        modules.check_fresh_value(tx, value)
    part = output.side_effects.cached_parts.get(id(value))
    if part is not None and part[0] is value:  # a part of an lru_cache'd object: one tracker
        return cached_part(tx, part, source)
    if id(value) in output.wrapping:  # ``d["self"] = d``: its tracker would hold itself
        raise Unsupported(
            "input", f"a {type(value).__name__} that contains itself, reached through {source.expr}"
        )
    known = output.wrapped.get(id(value))
    if (
        known is not None
        and known[0] is value
        and not _is_interned(value)
        and not isinstance(getattr(known[1].source, "root", None), ConstSource)
    ):
        vt = known[1]
        if (
            vt.source is not None
            and vt.source != source
            and not isinstance(source.root, (ConstSource, FreshSource))
            and not isinstance(vt.source.root, FreshSource)
        ):  # the same object reached twice
            output.add_guard(kinds.DUPLICATE_INPUT(source, vt.source))
        return vt
    with _wrapping(output, value):
        vt = _wrap_new(tx, value, source)
    _one_namespace(output, value, source, vt)
    if output.side_effects.cached_parts:
        wrapped_alike(tx, value)
    if not _is_interned(value) and (
        type(value) is not types.MethodType or getattr(vt, "bound_source", False)
    ):
        # one tracker per object: a bound method the trace was given is that object wherever it
        # is read (a global and a dict's key); one whose tracker stands for its function and
        # object (each read of ``obj.method`` makes a new one) is not cached
        output.wrapped[id(value)] = (value, vt)
    return vt


def _one_namespace(output: Any, value: Any, source: Source, vt: VariableTracker) -> None:
    """One real dict, two models: an object's instance dict reached as a dict of its own (a global
    ``NS = obj.__dict__``, a bound method's ``__dict__``, its function's) beside the object's
    attributes, read and stored through the object. Each tracker would not see the other's
    stores (``NS["k"] = 7; o.k`` gave the old value). Reads through both agree; so the two are
    kept as they are, and a change through either refuses (``SideEffects.shared_namespaces``: a
    break), as does meeting the second where the first was changed already. Reached through
    ``obj.__dict__``, the dict is the object's own (``InstanceDictVariable``)."""
    if type(value) is dict:
        owner = output.namespaces.get(id(value))
        if owner is not None and owner[0] is value and not _read_as_its_dict(source, owner[1]):
            _share(output, owner[1], vt, source)
        return
    descriptor = type_lookup(type(value), "__dict__")
    if not isinstance(descriptor, types.GetSetDescriptorType) or isinstance(vt, TensorVariable):
        return
    try:
        namespace = descriptor.__get__(value, type(value))  # (C: runs no code of the class)
    except Exception:  # noqa: BLE001 (no instance dict: nothing to keep apart)
        return
    if type(namespace) is not dict:
        return
    known = output.wrapped.get(id(namespace))
    if known is not None and known[0] is namespace and known[1].source is not None:
        if known[1].source != AttrSource(source, "__dict__"):
            _share(output, vt, known[1], known[1].source)
    output.namespaces[id(namespace)] = (namespace, vt)


def _share(output: Any, obj: VariableTracker, namespace: VariableTracker, where: Source) -> None:
    effects = output.side_effects
    if effects.changed(obj) or effects.changed(namespace):
        raise Unsupported(
            "instance_dict",
            f"{where.expr} is the __dict__ of {obj.source.expr}, changed through one of them",
        )
    effects.shared_namespaces.update((id(obj), id(namespace)))


def keep_changed_inputs_apart(output: Any) -> None:
    """Inputs the trace found to be different objects, where it changed one of them (a list it
    appended to, an object whose attribute it stored), while reading the other: a later call may
    pass one object in both places (``fn(x, a, a)`` after ``fn(x, a, b)``), where the trace's
    reads through the other would miss the change (torch.compile misses it too). They are guarded
    apart (``DISTINCT_INPUT``): each changed input and every other input of its type, and, the
    other side of ``_one_namespace``, a dict and a plain object's attributes (a global rebound to
    ``obj.__dict__``). Modules are left out: the module tree fixes each one's identity. Called
    once the trace's changes are known."""
    effects = output.side_effects
    inputs = [
        (value, vt)
        for value, vt in output.wrapped.values()
        if _from_outside(vt.source) and not isinstance(vt, (TensorVariable, NNModuleVariable))
    ]
    for value, vt in inputs:
        if not effects.changed(vt):
            continue
        for other_value, other in inputs:
            if type(other_value) is not type(value) or other_value is value:
                continue
            if not (_module_storage(vt.source) and _module_storage(other.source)):
                output.assume_distinct(vt.source, other.source)
    dicts = [(value, vt) for value, vt in inputs if type(value) is dict]
    for namespace, obj in list(output.namespaces.values()) if dicts else ():
        if type(obj) is not UserObjectVariable or not _from_outside(obj.source):
            continue  # (modules, functions, classes: their namespaces are not told apart)
        if id(obj) in effects.shared_namespaces:
            continue
        obj_changed = effects.changed(obj)
        for value, vt in dicts:
            if value is not namespace and (obj_changed or effects.changed(vt)):
                # the instance dict itself, as ``namespaces`` holds it: read past a hook
                hooked = type(obj.value).__getattribute__ is not object.__getattribute__
                own = AttrSource(obj.source, "__dict__", generic=hooked)
                output.assume_distinct(vt.source, own)


#: the dicts an ``nn.Module`` keeps its members in: one module's is never another's
_MODULE_STORAGE = frozenset({"_parameters", "_buffers", "_modules"})


def _module_storage(source: Source) -> bool:
    return isinstance(source, AttrSource) and source.attr in _MODULE_STORAGE


def _from_outside(source: Source | None) -> bool:
    return source is not None and not isinstance(source.root, (ConstSource, FreshSource))


def _read_as_its_dict(source: Source, owner: VariableTracker) -> bool:
    return owner.source is not None and source == AttrSource(owner.source, "__dict__")


#: torch's process-wide singleton values (``torch.float32``, ``torch.strided``,
#: ``torch.contiguous_format``): constants guarded by identity.
_TORCH_SINGLETONS = (torch.dtype, torch.layout, torch.memory_format)


def _is_interned(value: Any) -> bool:
    return type(value) in CONSTANT_TYPES or isinstance(value, (enum.Enum, *_TORCH_SINGLETONS))


def _wrap_new(tx: Translator, value: Any, source: Source) -> VariableTracker:
    add = tx.output.add_guard
    cls = type(value)
    if isinstance(value, torch.Tensor):
        return tx.output.add_input(value, source)
    if type(value) is ContextExit:  # a with-block's exit, entered before a graph break
        return wrap_context_exit(tx, value, source)
    if cls is types.FrameType and (frame := frames.wrap_frame(tx, value, source)) is not None:
        return frame
    if cls in frames.STAND_IN_FRAMES:
        add(kinds.TYPE_MATCH(source, cls))
        return frames.StandInFrameVariable(value, source=source)
    if cls is types.CellType:  # a frame's cell passed to a resume function (``cell_args``)
        add(kinds.TYPE_MATCH(source, cls))
        return ClosureCellVariable(value, AttrSource(source, "cell_contents"))
    if value is tx.root.f_globals:  # ``globals()`` live at a break: read name by name
        add(kinds.ID_MATCH(source, value))
        return GlobalsVariable(value)
    if value is None:
        add(kinds.NONE_MATCH(source))
        return ConstantVariable(None, source)
    if cls in (int, float) and tx.output.shapes.policy.number_is_dynamic(value, source):
        add(kinds.TYPE_MATCH(source, cls))
        return tx.output.add_symbolic_number(value, source)
    if cls in LAZY_CONSTANT_TYPES and tx.output.values_guarded_on_use:
        add(kinds.TYPE_MATCH(source, cls))
        return LazyConstantVariable(value, source, tx.output.assume_equal)
    if (
        cls in LITERAL_TYPES
        or cls is range
        or (cls in (slice, frozenset) and _literal_items(value))
    ):
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.EQUALS_MATCH(source, value))
        if cls is frozenset and len(value) > 1:  # the trace iterates it in its own order
            add(kinds.DICT_KEYS(source, tuple(value)))
        return ConstantVariable(value, source)
    if is_numpy_array(value):
        array = wrap_array(tx, value, source)
        if array is not None:
            return array
    if is_numpy_scalar(value):  # ``np.float32(2.0)``: immutable, compared by type and value
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.EQUALS_MATCH(source, value))
        return ConstantVariable(value, source)
    if cls is slice:  # bounds that are not literals (tensors, objects): each wrapped in turn
        add(kinds.TYPE_MATCH(source, cls))
        parts = [wrap(tx, getattr(value, a), AttrSource(source, a)) for a in _SLICE_ATTRS]
        return SliceVariable(*parts, source=source)
    if cls is torch.device:
        add(kinds.TYPE_MATCH(source, cls))  # so that == is torch.device's, never a user __eq__
        add(kinds.EQUALS_MATCH(source, value))
        return ConstantVariable(value, source)
    if cls in _TORCH_SINGLETONS or isinstance(value, enum.Enum) or cls is types.CodeType:
        add(kinds.ID_MATCH(source, value))  # (a code object: immutable, its identity kept)
        return ConstantVariable(value, source)
    if cls in IMMUTABLE_PY_KINDS:  # its fields can be written: guarded by value, on a copy
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.EQUALS_MATCH(source, value_copy(value)))
        return ConstantVariable(value, source)
    if cls in DECIDING_PARTS and _decided_by_parts(value):
        _guard_parts(tx, value, source)
        return ConstantVariable(value, source)
    if cls in IMMUTABLE_C_KINDS and _immutable_parts(value):
        add(kinds.ID_MATCH(source, value))  # the object fixes all it holds
        return ConstantVariable(value, source)
    if cls is list:  # its length and items are guarded when the trace reads them
        add(kinds.TYPE_MATCH(source, cls))
        return LazyListVariable(tx, value, source)
    base = container_object_base(cls)  # ``class Batch(list)``, of ``set``, of ``deque``
    if base is not None and container_class_refused(cls) is None:
        obj = _CONTAINER_OBJECT_WRAPS[base](tx, value, source)
        if obj is not None:
            return obj
    if cls is torch.Size or cls is tuple or _is_namedtuple(cls) or plain_tuple_subclass(cls):
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.LEN_MATCH(source, len(value)))
        items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
        return TupleVariable(
            items,
            source,
            is_size=cls is torch.Size,
            cls=cls if cls is not torch.Size else tuple,
            real=value,
        )
    if cls in DICT_TYPES and keys_modelled(value):
        add(kinds.TYPE_MATCH(source, dict))
        if _keyed_by_name(value):
            read_items, read_item = _read_by_key(tx, value, source)
            return LazyDictVariable(value, read_items, source, read_item)
        add(kinds.DICT_KEYS(source, tuple(value)))
        if all(_leaf_value(v) for v in value.values()) or _module_namespace(value):
            # guarded as the trace reads them
            return LazyDictVariable(value, lambda: _items_read_later(tx, value, source), source)
        return DictVariable(_dict_items(tx, value, source), source)
    if cls in _DICT_SUBCLASSES and keys_modelled(value):
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.DICT_KEYS(source, tuple(value)))
        factory = None
        if cls is collections.defaultdict:
            factory = wrap(tx, value.default_factory, AttrSource(source, "default_factory"))
        items = _dict_items(tx, value, source)
        real = value if hasattr(value, "__dict__") else None  # its attributes: ``own_attribute``
        return DictVariable(items, source, cls=cls, default_factory=factory, real=real)
    if isinstance(value, dict) and is_model_output(cls) and all(type(k) is str for k in value):
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.DICT_KEYS(source, tuple(value)))
        items = {k: wrap(tx, dict.__getitem__(value, k), DictItemSource(source, k)) for k in value}
        return ModelOutputVariable(items, source, cls=cls, real=value)
    if isinstance(value, dict) and is_user_dict(cls) and keys_modelled(value):
        obj = _wrap_dict_object(tx, value, source)
        if obj is not None:
            return obj
    if cls is types.MappingProxyType:
        proxy = _wrap_proxy(tx, value, source)
        if proxy is not None:
            return proxy
    if cls is collections.deque:
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.LEN_MATCH(source, len(value)))
        wrap(tx, value.maxlen, AttrSource(source, "maxlen"))
        items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
        return DequeVariable(items, source, maxlen=value.maxlen)
    if cls in (set, frozenset) and keys_modelled(value):
        # its items in iteration order, the order the trace iterates them in
        add(kinds.TYPE_MATCH(source, cls))
        add(kinds.DICT_KEYS(source, tuple(value)))
        keys = [_wrap_key(tx, v, source, i) for i, v in enumerate(value)]
        items, known = _ordered_items(keys, value)
        mirror = value if all(_mirrors(k) for k in keys) else None
        return SetVariable(
            items,
            source,
            frozen=cls is frozenset,
            own_table=False,
            order_known=known,
            mirror=mirror,
        )
    if is_distributed_value(value):  # process groups, reduce ops: guarded constants
        return wrap_distributed(tx, value, source)
    return _wrap_object(tx, value, source)


@contextlib.contextmanager
def _wrapping(output: OutputGraph, value: Any) -> Iterator[None]:
    """While ``value`` is being wrapped (or its items are): a value reached meanwhile that is
    ``value`` itself is refused by ``wrap``, as its tracker would hold itself."""
    output.wrapping.add(id(value))
    try:
        yield
    finally:
        output.wrapping.discard(id(value))


def _module_namespace(value: dict) -> bool:
    """A module's ``__dict__`` (the builtins dict, a global ``__builtins__``): its values are
    wrapped only when the trace reads them, as it may hold itself (an ``exec`` into it adds
    ``__builtins__``, which a dataclass made in a class of module ``builtins`` does)."""
    name = value.get("__name__")
    return type(name) is str and getattr(sys.modules.get(name), "__dict__", None) is value


def _items_read_later(tx: Translator, value: dict, source: Source) -> dict[Any, VariableTracker]:
    """The items of a dict wrapped before (``LazyDictVariable``): a value that is the dict itself
    is refused (its tracker would hold itself), as where the dict is wrapped at once."""
    with _wrapping(tx.output, value):
        return _dict_items(tx, value, source)


def _keyed_by_name(value: dict) -> bool:
    """Every key of the dict ``value`` is a str or an int (not a bool): a dict read key by key
    (``KeyedReads``), each key looked up guarded on its own, the key compared by value."""
    return all(type(k) in (str, int) for k in value)


def _read_by_key(
    tx: Translator, value: dict, source: Source
) -> tuple[Callable[[], dict[Any, VariableTracker]], Callable[[Any], VariableTracker | None]]:
    """What reads the dict ``value`` (or object of a dict subclass) key by key
    (``KeyedReads``): all of it (``items``: its keys guarded as they are now, then every value)
    and one key (``lookup``: ``objects.read_dict_key``). The keys are the call's, taken where the
    dict is wrapped: the trace changes the dict only after reading it all, and nothing else runs
    meanwhile. Each value is wrapped after the dict's own tracker: one that is the dict itself,
    or holds it while it is wrapped, is refused (its tracker would hold itself), as where the
    dict is wrapped at once."""
    keys = tuple(value)
    item_source = dict_item_source(value)

    def wrap_item(item: Any, item_at: Source) -> VariableTracker:
        with _wrapping(tx.output, value):
            return wrap(tx, item, item_at)

    def read_all() -> dict[Any, VariableTracker]:
        if len(value) != len(keys) or not all(map(operator.is_, value, keys)):
            raise Unsupported("input_changed", "an input dict changed while the call was traced")
        tx.output.add_guard(kinds.DICT_KEYS(source, keys))
        items = {}
        for i, k in enumerate(keys):
            _note_key_source(tx, k, source, i)
            items[k] = wrap_item(dict.__getitem__(value, k), item_source(source, k))
        return items

    return read_all, lambda key: read_dict_key(tx, value, source, key, wrap_item)


def _leaf_value(value: Any) -> bool:
    """A tensor or a constant: a dict's value that holds no object (so the dict cannot hold
    itself through it, nor its tracker be reached again while its items are wrapped)."""
    return isinstance(value, torch.Tensor) or type(value) in CONSTANT_TYPES


def _immutable_parts(value: Any) -> bool:
    """A pattern, or a match of a str or bytes (not of a buffer that may change)."""
    return type(value) is not re.Match or type(value.string) in (str, bytes)


def _decided_by_parts(value: Any, depth: int = 0) -> bool:
    """Whether ``_guard_parts`` tells ``value`` from every other value: a class, None, Ellipsis,
    a literal, or a tuple or a ``DECIDING_PARTS`` value made of those (a type variable, a user
    object among them: no, they are told apart by identity only)."""
    cls = type(value)
    if isinstance(value, type) or value is None or value is Ellipsis or cls in LITERAL_TYPES:
        return True
    if depth > 8 or (cls is not tuple and cls not in DECIDING_PARTS):
        return False
    parts = value if cls is tuple else [getattr(value, p) for p in DECIDING_PARTS[cls]]
    return all(_decided_by_parts(part, depth + 1) for part in parts)


def _guard_parts(tx: Translator, value: Any, source: Source) -> None:
    """Guard a value ``_decided_by_parts`` accepts by what decides it: classes by identity, a
    literal by type and value, a tuple by length and items, a ``DECIDING_PARTS`` value by its
    type and parts; never the value's own identity, which the trace reads only through
    ``operations.is_same`` (guarded there)."""
    add = tx.output.add_guard
    cls = type(value)
    if isinstance(value, type) or value is Ellipsis:
        add(kinds.ID_MATCH(source, value))
        return
    if value is None:
        add(kinds.NONE_MATCH(source))
        return
    add(kinds.TYPE_MATCH(source, cls))
    if cls is tuple:
        add(kinds.LEN_MATCH(source, len(value)))
        for i, item in enumerate(value):
            _guard_parts(tx, item, ItemSource(source, i))
    elif cls in DECIDING_PARTS:
        for part in DECIDING_PARTS[cls]:
            _guard_parts(tx, getattr(value, part), AttrSource(source, part))
    else:
        add(kinds.EQUALS_MATCH(source, value))


def _mirrors(key: Any) -> bool:
    """The real value ``key`` stands for can stand in its place in a set operation (it hashes and
    compares as the key, with no Python code run): a constant, an object hashed by identity (not
    a tensor, nor a method, whose keys compare their trackers)."""
    if not isinstance(key, IdentityKey):
        return True
    if type(key) is not IdentityKey or isinstance(key.ident, (torch.fx.Node, MethodKey)):
        return False
    return not isinstance(key.ident, tuple) or all(map(_mirrors, key.ident))


def _ordered_items(keys: list[Any], value: set | frozenset) -> tuple[set[Any], bool]:
    """The traced items of the real set ``value`` (``keys``, in its order) as a set iterating in
    that order, and whether one was found (else the trace breaks where it iterates them)."""
    found = ordered_keys(keys, sys.getsizeof(value), isinstance(value, frozenset))
    return (set(keys), False) if found is None else (found[1], True)


#: keys written as themselves in a source (``G['d'][1.5]``; a float only where it is finite)
_LITERAL_KEYS = (str, int, bool, float, bytes, type(None))


def _literal_key(key: Any) -> bool:
    return type(key) in _LITERAL_KEYS and (type(key) is not float or math.isfinite(key))


def _dict_items(tx: Translator, value: dict, source: Source) -> dict[Any, VariableTracker]:
    """The items of an input dict: literal keys with ``d[k]`` sources, other keys (and their
    values) by position."""
    items: dict[Any, VariableTracker] = {}
    for i, (k, v) in enumerate(value.items()):
        if _literal_key(k):
            _note_key_source(tx, k, source, i)
            items[k] = wrap(tx, v, ItemSource(source, k))
        else:
            items[_wrap_key(tx, k, source, i)] = wrap(tx, v, DictValueSource(source, i))
    return items


def _wrap_dict_object(tx: Translator, value: dict, source: Source) -> VariableTracker | None:
    """An object of a user subclass of ``dict``, ``OrderedDict`` or ``defaultdict``
    (``DictObjectVariable``; None where its class is not traced so): its storage, keys guarded and
    values read with the base's own lookup (``dict.__getitem__``, or by position through
    ``values()`` where the class keeps the base's: no Python method of the class runs in a
    guard), and the object, whose attributes are read from it as the trace asks
    (``DictObjectVariable.own_attribute``)."""
    cls = type(value)
    if dict_class_refused(cls, made=False) is not None:
        return None
    base = dict_base(cls)
    literal = all(map(_literal_key, value))
    if not literal and type_lookup(cls, "values") is not type_lookup(base, "values"):
        return None  # ``DictValueSource`` reads ``values()``
    tx.output.add_guard(kinds.TYPE_MATCH(source, cls))
    fields = {"source": source, "cls": cls, "cls_vt": wrap(tx, cls, TypeSource(source))}
    if (
        base is not collections.defaultdict
        and _keyed_by_name(value)
        and type_lookup(cls, "__contains__") is dict.__contains__  # the ``KEY_PRESENT`` guard's
    ):
        read_items, read_item = _read_by_key(tx, value, source)
        return LazyDictObjectVariable(value, read_items, read_item, real=value, **fields)
    tx.output.add_guard(kinds.DICT_KEYS(source, tuple(value)))
    items: dict[Any, VariableTracker] = {}
    for i, (k, v) in enumerate(dict.items(value)):
        if _literal_key(k):
            _note_key_source(tx, k, source, i)
            items[k] = wrap(tx, v, DictItemSource(source, k))
        else:
            items[_wrap_key(tx, k, source, i)] = wrap(tx, v, DictValueSource(source, i))
    factory = None
    if base is collections.defaultdict:
        factory = wrap(tx, value.default_factory, AttrSource(source, "default_factory"))
    return DictObjectVariable(items, default_factory=factory, real=value, **fields)


def _wrap_list_object(tx: Translator, value: list, source: Source) -> VariableTracker:
    """An object of a user subclass of ``list`` (``ListObjectVariable``): its type, length and
    items guarded (read by list's own ``__len__`` and ``__getitem__``, which the class keeps),
    and the object, whose attributes are read from it as the trace asks."""
    cls = type(value)
    tx.output.add_guard(kinds.TYPE_MATCH(source, cls))
    tx.output.add_guard(kinds.LEN_MATCH(source, len(value)))
    items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
    cls_vt = wrap(tx, cls, TypeSource(source))
    return ListObjectVariable(items, source, cls=cls, cls_vt=cls_vt, real=value)


def _wrap_set_object(tx: Translator, value: Any, source: Source) -> VariableTracker | None:
    """An object of a user subclass of ``set`` or ``frozenset`` (``SetObjectVariable``,
    ``FrozenSetObjectVariable``; None where its keys are not modelled): its type and keys
    guarded, as a set's, in its order (read by its base's own ``__iter__``, which the class
    keeps), and the object. The object itself stands for its table in set operations
    (``mirror``) where the class keeps all of its base's methods (those operations call them on
    it)."""
    if not keys_modelled(value):
        return None
    cls = type(value)
    base = frozenset if isinstance(value, frozenset) else set
    tx.output.add_guard(kinds.TYPE_MATCH(source, cls))
    tx.output.add_guard(kinds.DICT_KEYS(source, tuple(value)))
    keys = [_wrap_key(tx, v, source, i) for i, v in enumerate(value)]
    items, known = _ordered_items(keys, value)
    methods = all(type_lookup(cls, n) is m for n, m in vars(base).items() if n[0] != "_")
    tracker = FrozenSetObjectVariable if base is frozenset else SetObjectVariable
    return tracker(
        items,
        source,
        frozen=base is frozenset,
        own_table=False,
        order_known=known,
        mirror=value if methods and all(_mirrors(k) for k in keys) else None,
        cls=cls,
        cls_vt=wrap(tx, cls, TypeSource(source)),
        real=value,
    )


def _wrap_deque_object(tx: Translator, value: Any, source: Source) -> VariableTracker:
    """An object of a user subclass of ``collections.deque`` (``DequeObjectVariable``): its
    type, length, ``maxlen`` and items guarded (read by deque's own ``__len__``,
    ``__getitem__`` and ``maxlen``, which the class keeps), and the object."""
    cls = type(value)
    tx.output.add_guard(kinds.TYPE_MATCH(source, cls))
    tx.output.add_guard(kinds.LEN_MATCH(source, len(value)))
    wrap(tx, value.maxlen, AttrSource(source, "maxlen"))
    items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
    cls_vt = wrap(tx, cls, TypeSource(source))
    return DequeObjectVariable(
        items, source, maxlen=value.maxlen, cls=cls, cls_vt=cls_vt, real=value
    )


#: how an object of a user subclass of each base in ``objects.CONTAINER_OBJECTS`` is wrapped
_CONTAINER_OBJECT_WRAPS = {
    list: _wrap_list_object,
    set: _wrap_set_object,
    frozenset: _wrap_set_object,
    collections.deque: _wrap_deque_object,
}


def _wrap_proxy(
    tx: Translator, value: types.MappingProxyType, source: Source
) -> VariableTracker | None:
    """A ``types.MappingProxyType`` over a dict (``MappingProxyVariable``; None for any other):
    read through, as the dict, its keys and values guarded through the proxy. The mapping it
    shows is guarded first, by identity (``PROXY_MATCH``: another proxy may be over a mapping
    whose reads run Python code, which a guard must not run), not the proxy's own identity: a
    proxy made anew at each call over the same dict (``view.mapping``, the result of a call at
    a graph break) serves every call. It is read only where the proxy is kept (a global, an
    attribute, an item), not made anew at each read of an owner's ``__dict__`` (a builtin
    type's). Over a
    class's namespace (a proxy kept from ``cls.__dict__``) it is read as ``cls.__dict__`` is: not
    after a store to the class in the trace, and the class takes none after it
    (``refuse_changed_namespace``)."""
    mapping = proxied(value)
    if type(mapping) is not dict or not keys_modelled(mapping):
        return None
    if isinstance(source, AttrSource) and source.attr == "__dict__":
        return None
    refuse_changed_namespace(tx, mapping)
    tx.output.add_guard(kinds.TYPE_MATCH(source, types.MappingProxyType))
    tx.output.add_guard(kinds.PROXY_MATCH(source, mapping))
    tx.output.add_guard(kinds.DICT_KEYS(source, tuple(mapping)))
    return MappingProxyVariable(DictVariable(_dict_items(tx, mapping, source), source), source)


def _note_key_source(tx: Translator, key: Any, source: Source, index: int) -> None:
    """The ``index``-th key of the input dict or set ``source``, kept as itself: where ``is``
    reads it (``operations.is_same``), its identity is guarded through its key source."""
    tx.output.key_sources.setdefault(id(key), (key, DictKeySource(source, index)))


def _wrap_key(tx: Translator, key: Any, source: Source, index: int) -> Any:
    """The ``index``-th key of the input dict or set ``source`` as a traced key (``hash_key``). A
    constant stands for itself; a tuple is the same object as one the trace reads elsewhere
    (``k is t``); other keys (a frozenset holding objects too, so that an input object found
    among its items is guarded as that item) get trackers read through ``DictKeySource``,
    whose type (and the identity of the objects it compares by identity) the container's
    ``DICT_KEYS`` guard already implies."""
    key_source = DictKeySource(source, index)
    if isinstance(key, tuple) and compared_by_value(key):
        return hash_key(_tuple_key(tx, key, key_source))
    if (
        compared_by_value(key)
        or type(key) is torch.device
        or (_is_interned(key) and type(key) is not frozenset)
    ):
        _note_key_source(tx, key, source, index)
        return key  # the object itself, rebuilt as that object
    vt = wrap(tx, key, key_source)
    if vt.source == key_source:
        tx.output.guards.discard(kinds.ID_MATCH(key_source, key))
        tx.output.guards.discard(kinds.TYPE_MATCH(key_source, type(key)))
    return hash_key(vt)


def _tuple_key(tx: Translator, key: tuple, key_source: Source) -> VariableTracker:
    """A tuple of constants keying an input dict: a constant, which ``DICT_KEYS`` guards by
    value; where the trace also reads the same tuple through another source, both are one
    tracker, the identity guarded (``DUPLICATE_INPUT``). The key iterated is the tuple itself
    (``key_vt``): its source is noted, so ``is`` on it guards the relation it finds
    (``operations._identity_source``)."""
    tx.output.key_sources.setdefault(id(key), (key, key_source))
    known = tx.output.wrapped.get(id(key))
    if known is not None and known[0] is key:
        vt = known[1]
        if vt.source is not None and not isinstance(vt.source.root, (ConstSource, FreshSource)):
            alias = kinds.DUPLICATE_INPUT(key_source, vt.source)
            tx.output.add_guard(alias)
        return vt
    vt = ConstantVariable(key, key_source)
    tx.output.wrapped[id(key)] = (key, vt)
    return vt


def _wrap_object(tx: Translator, value: Any, source: Source) -> VariableTracker:
    add = tx.output.add_guard
    context = wrap_context_object(tx, value, source)  # torch.no_grad() objects, decorators' clone
    if context is not None:
        return context
    iterator = wrap_input_iterator(tx, value, source)  # a list iterator, map, zip...
    if iterator is not None:
        return iterator
    live = wrap_live_input(tx, value, source)  # a dict view, a finfo
    if live is not None:
        return live
    if isinstance(value, types.MethodType):
        # Each read of a method makes a new bound object, which later calls never see again: guard
        # what it is bound from (``src.__self__``, and ``src.__func__`` by identity) instead.
        owner_vt = wrap(tx, value.__self__, AttrSource(source, "__self__"))
        func = value.__func__
        identity = kinds.ID_MATCH(AttrSource(source, "__func__"), func)
        method = bound_container_method(tx, value, owner_vt, source)  # ``t.split`` of a tensor
        if method is not None:
            add(identity)
            return method
    else:
        identity = kinds.ID_MATCH(source, value)
    if _is_torch_value(value):
        if _made_over_tensors(value):  # the function ``torch.func.vjp`` gives
            _guard_function(tx, value, source)
            return TorchMadeFunctionVariable(value, source)
        add(identity)
        return TorchVariable(value, source)
    if _is_typing_form(value):
        add(identity)
        return ConstantVariable(value, source)
    if id(value) in _BUILTIN_IDS and isinstance(value, (types.BuiltinFunctionType, type)):
        add(identity)
        return BuiltinVariable(value, source)
    if isinstance(value, types.FunctionType):
        _guard_function(tx, value, source)
        return UserFunctionVariable(value, source)
    if type(value) is functools.partial:
        add(kinds.TYPE_MATCH(source, functools.partial))
        return PartialVariable(
            wrap(tx, value.func, AttrSource(source, "func")),
            wrap(tx, value.args, AttrSource(source, "args")).items,
            wrap(tx, value.keywords, AttrSource(source, "keywords")).items,
            source,
        )
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
        self_vt = wrap(tx, value.__self__, AttrSource(source, "__self__"))
        wrap(tx, value.__func__, AttrSource(source, "__func__"))  # its identity and code
        return UserFunctionVariable(value.__func__, source, self_vt=self_vt, bound_source=True)
    if isinstance(value, types.ModuleType):
        add(identity)
        return PythonModuleVariable(value, source)
    if isinstance(value, torch.nn.Module):
        add(identity)
        return NNModuleVariable(value, source)
    if isinstance(value, type):
        add(identity)
        return ClassVariable(value, source)
    if isinstance(value, types.BuiltinMethodType) and _bound_to_object(value):
        # A C method bound to an object or a type (``gen.manual_seed``, ``dict.fromkeys``): a new
        # bound method at each read, so guard what it is bound to and its name. A type is guarded
        # by identity; an object (maybe new each call) through its own tracker. Calling it breaks
        # unless a polyfill takes it.
        add(kinds.TYPE_MATCH(source, type(value)))
        owner, owner_source = value.__self__, AttrSource(source, "__self__")
        owner_vt = None
        if isinstance(owner, type):
            add(kinds.ID_MATCH(owner_source, owner))
        else:
            owner_vt = wrap(tx, owner, owner_source)
        name_source = AttrSource(source, "__name__")
        add(kinds.TYPE_MATCH(name_source, str))
        add(kinds.EQUALS_MATCH(name_source, value.__name__))
        if owner_vt is not None:  # ``l.append`` of a tracked list: the trace's own method
            method = bound_container_method(tx, value, owner_vt, source)
            if method is not None:
                return method
        if isinstance(owner_vt, ConstantVariable):  # ``keyword.iskeyword``: a constant's method
            return ConstantVariable(value, source)
        return CFunctionVariable(value, source)
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        add(identity)
        return CFunctionVariable(value, source)  # breaks when called
    if isinstance(value, LRU_CACHE_WRAPPER):
        add(identity)
        return MemoizedFunctionVariable(value, source)
    add(kinds.TYPE_MATCH(source, type(value)))  # key: never the class
    return UserObjectVariable(value, source)


def _guard_function(tx: Translator, fn: types.FunctionType, source: Source) -> None:
    """A Python function read from the inputs is guarded by what decides what a call of it does,
    not by its identity: its code (by identity: it can be swapped, ``f.__code__ = ...``), globals,
    which defaults it lacks and that it has no attributes (``FUNCTION_MATCH``); its defaults and
    closure cells are inputs of their own, guarded where a call binds or reads them
    (``functions._defaults_vt``, ``functions._cell_source``). So a function made anew at each call
    (a lambda given to a helper, a closure, one a graph break's code makes again: ``REBUILT``) is
    as good as the one traced. Where the trace reads its identity (``is``, ``id``, ``hash``, a
    key, an attribute beyond those: ``operations.pin_identity``), that is guarded too. A function
    with attributes, or meaning more than its parts (``_distinct``), is guarded by identity, and
    so is a constant of the trace (exec'd globals, defaults), which stays as it was traced."""
    if isinstance(source.root, ConstSource):
        tx.output.add_guard(kinds.ID_MATCH(source, fn))
        return
    if fn.__dict__ or _distinct(fn):
        tx.output.add_guard(kinds.ID_MATCH(source, fn))
    else:
        spec = FunctionSpec(
            weakref.ref(fn),
            fn.__globals__,
            no_defaults=fn.__defaults__ is None,
            no_kwdefaults=fn.__kwdefaults__ is None,
            distinct=_distinct,
        )
        tx.output.add_guard(kinds.FUNCTION_MATCH(source, spec))
    tx.output.add_guard(kinds.ID_MATCH(AttrSource(source, "__code__"), fn.__code__))


def _distinct(fn: types.FunctionType) -> bool:
    """Whether what a call of ``fn`` means depends on the object itself: a user's mark
    (``markers``: allowed in the graph, constant result, substituted, a graph break) or a call
    rule of the tracer, each found by identity."""
    return (
        markers.is_graph_break(fn)
        or markers.is_allowed(fn)
        or markers.has_constant_result(fn)
        or markers.substitute_for(fn) is not None
        or call_rule(fn) is not None
    )


def _bound_to_object(method: types.BuiltinMethodType) -> bool:
    """A C method bound to an instance or a type (not a module's function)."""
    owner = method.__self__
    return owner is not None and not isinstance(owner, types.ModuleType)


def _is_typing_form(value: Any) -> bool:
    """``typing.List``, ``typing.Optional[int]``...: immutable type hints, constants of the trace
    (``typing.List[torch.Tensor]`` folds), the builtin classes' generic aliases
    (``types.GenericAlias``: ``list[torch.Tensor]``, as ``torch.jit.isinstance`` takes them) and
    ``X | Y`` unions of classes (``types.UnionType``: ``isinstance(x, list | tuple)``)."""
    if isinstance(value, (types.UnionType, types.GenericAlias)):
        return True
    return type(value).__module__ == "typing" and not isinstance(value, type)


#: Dict subclasses of ``collections`` traced as dicts (``DictVariable.cls``).
_DICT_SUBCLASSES = (collections.OrderedDict, collections.defaultdict, collections.Counter)
_SLICE_ATTRS = ("start", "stop", "step")


def _literal_items(value: slice | frozenset) -> bool:
    """Whether ``==`` on ``value`` only compares exact builtin literals (never calls user
    ``__eq__``)."""
    items = (value.start, value.stop, value.step) if type(value) is slice else value
    return all(type(v) in LITERAL_TYPES or v is None for v in items)


def _is_namedtuple(cls: type) -> bool:
    """A namedtuple class, or a subclass of one, whose objects the tuple trackers model."""
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and not namedtuple_overrides(cls)


#: torch modules whose Python functions are inlined like user code (not run as one graph op):
#: torch.optim's step functions update Python state (``state[p]["step"]``, lists of tensors) that
#: a graph op on fake tensors would not see (``variables/optimizers.py``). ``torch.fx``'s
#: GraphModule calls itself through its class's ``_WrappedCall``, Python code calling
#: ``nn.Module.__call__`` (a module held by a module: as if called directly).
INLINED_TORCH_MODULES = ("torch.optim.", "torch.distributions.", "torch.fx.graph_module.")


def _is_torch_value(value: Any) -> bool:
    """Objects from torch's own namespaces (ops, functional, modules, classes): traced, not
    inlined."""
    if isinstance(value, types.ModuleType):
        # the modules whose code is inlined are read like a user's (their globals sourced)
        inlined = f"{value.__name__}.".startswith(INLINED_TORCH_MODULES)
        return not inlined and (value.__name__ == "torch" or value.__name__.startswith("torch."))
    if isinstance(value, torch.nn.Module):
        return False
    module = getattr(value, "__module__", None) or ""
    function = value.__func__ if isinstance(value, types.MethodType) else value
    if f"{module}.".startswith(INLINED_TORCH_MODULES) and (
        isinstance(function, types.FunctionType) or not isinstance(value, type)
    ):  # their functions, and instances of their classes (a distribution's ``Transform``)
        return False
    if (
        module.startswith(HOOK_OBJECT_MODULES)
        and not isinstance(value, type)
        and _python_call(value)
    ):
        return False
    if isinstance(value, type):
        return module == "torch" or (
            module.startswith("torch.")
            and not f"{module}.".startswith(INLINED_TORCH_MODULES)
            and not issubclass(value, torch.nn.Module)
        )
    if callable(value):
        return (
            module == "torch"
            or module.startswith(("torch.", "torch._C"))
            or isinstance(value, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))
            or is_tensor_method(value)
        )
    return False


#: Modules whose classes make the hooks torch registers on a user's module (``spectral_norm``'s
#: ``SpectralNorm``, ``weight_norm``'s ``WeightNorm``, ``prune``'s pruning methods): an instance is
#: an object like a user's, its ``__call__`` inlined, never one op of the graph.
HOOK_OBJECT_MODULES = (
    "torch.nn.utils.spectral_norm",
    "torch.nn.utils.weight_norm",
    "torch.nn.utils.prune",
)


def _python_call(value: Any) -> bool:
    """Is ``value`` an instance whose class's ``__call__`` is written in Python?"""
    call = next((vars(k)["__call__"] for k in type(value).__mro__ if "__call__" in vars(k)), None)
    return isinstance(call, types.FunctionType)


def _made_over_tensors(value: Any) -> bool:
    """Is ``value`` a function of torch's holding tensors of its own (made at run time: the one
    ``torch.func.vjp`` gives), which no graph node may call on the trace's fake tensors?"""
    return isinstance(value, types.FunctionType) and holds_tensors(value)


def wrap_builtin(
    tx: Translator, value: Any, globals_source: Source | None, name: str
) -> VariableTracker:
    """A builtin the trace found because no global shadows it: guarded by that absence (``'len'
    not in G``), since a global bound later would win. Unnamed globals (``None``) are constants of
    the trace."""
    if globals_source is not None:
        tx.output.assume_key_absent(globals_source, name)
    return wrap_static(tx, value)


#: id -> the builtin (``_BUILTIN_IDS``) that ``wrap_static`` found to be a ``BuiltinVariable``:
#: every branch before that one asks only what the value is, so a builtin met again (``len`` in
#: each inlined call) is answered at once
_STATIC_BUILTINS: dict[int, Any] = {}


def wrap_static(tx: Translator, value: Any) -> VariableTracker:
    """Wrap a value without guards: from torch's namespaces, or made during the trace."""
    if _STATIC_BUILTINS.get(id(value), MISSING) is value:
        return BuiltinVariable(value)
    if is_numpy_scalar(value):
        return ConstantVariable(value)
    if type(value) in CONSTANT_TYPES or isinstance(
        value, (*_TORCH_SINGLETONS, *IMMUTABLE_KINDS, torch.device, enum.Enum, types.CodeType)
    ):
        return ConstantVariable(value)
    if _constant_method(value):  # ``getattr(7, "__repr__")``: folded when called
        return ConstantVariable(value)
    if type(value) in (tuple, list, dict) or isinstance(value, torch.Size):
        return fold(tx, value)  # (not a subclass's object: ``fold`` gives those back here)
    if _is_namedtuple(type(value)):
        return fold(tx, value)
    if is_distributed_value(value):  # e.g. ``dist.group.WORLD``: guarded by the world state
        return wrap_distributed(tx, value, None)
    context = wrap_context_object(tx, value, None)
    if context is not None:
        return context
    if _is_torch_value(value):
        if _made_over_tensors(value):
            return TorchMadeFunctionVariable(value)
        return TorchVariable(value)
    if _is_typing_form(value):
        return ConstantVariable(value)
    if id(value) in _BUILTIN_IDS:
        _STATIC_BUILTINS[id(value)] = value
        return BuiltinVariable(value)
    if isinstance(value, types.FunctionType):
        return UserFunctionVariable(value)
    if (
        isinstance(value, types.MethodType)
        and isinstance(value.__self__, (type, enum.Enum))
        and isinstance(value.__func__, types.FunctionType)
    ):
        # a classmethod read from a class made in the trace (``P._make`` of a ``namedtuple()``),
        # a method of an enum member (a constant)
        return UserFunctionVariable(value.__func__, self_vt=wrap_static(tx, value.__self__))
    if isinstance(value, LRU_CACHE_WRAPPER):
        return MemoizedFunctionVariable(value)
    if isinstance(value, types.ModuleType):
        return PythonModuleVariable(value)
    if isinstance(value, torch.nn.Module):
        return NNModuleVariable(value)
    if isinstance(value, type):
        return ClassVariable(value)
    if isinstance(value, torch.Tensor):
        raise Unsupported(
            "constant_tensor", "a tensor reached without a source (e.g. a torch attribute)"
        )
    return UserObjectVariable(value)


def wrap_fixed(tx: Translator, value: Any, label: str) -> VariableTracker:
    """A value something immutable holds for good (an attribute of a builtin type or function,
    ``bytearray.fromhex``): what ``wrap_static`` makes of it, where that is an object the trace
    does not model, with a source that rebuilds it by ``LOAD_CONST`` (it is the same object on
    every call), so that it can be live at a graph break."""
    wrapped = wrap_static(tx, value)
    if isinstance(wrapped, UserObjectVariable) and wrapped.source is None:
        return dataclasses.replace(wrapped, source=ConstSource(value, label))
    return wrapped


def _constant_method(value: Any) -> bool:
    """A C method bound to an immutable constant (``(7).__repr__``, ``"a".split``; a builtin
    function's ``__self__`` is its module, or None: not one), a class or static method of a
    constant's type (``int.from_bytes``, ``str.maketrans``: they build new values from their
    arguments alone), or a method that only reads a fixed value (``device.__repr__``, an enum
    member's ``__str__``)."""
    if reading_method(value):
        return True
    if isinstance(value, types.MethodWrapperType):
        return type(value.__self__) in CONSTANT_TYPES
    if not isinstance(value, types.BuiltinMethodType):
        return False
    owner = value.__self__
    if owner is None:
        return value in _CONSTANT_TYPES_STATIC
    if type(owner) in IMMUTABLE_KINDS:  # ``pattern.match``: computed when called
        return True
    return type(owner) in CONSTANT_TYPES or any(owner is t for t in CONSTANT_TYPES)


#: Static methods of the constants' types (``str.maketrans``, ``bytes.maketrans``): C functions
#: bound to nothing, enumerated from the types.
_CONSTANT_TYPES_STATIC = frozenset(
    method
    for cls in CONSTANT_TYPES
    for method in (getattr(cls, name) for name in dir(cls))
    if isinstance(method, types.BuiltinFunctionType) and method.__self__ is None
)


#: Containers whose trackers are mutable copies: one made from an object nobody can name in the
#: rewritten code would silently lose what the trace does to it.
_MUTABLE_CONTAINERS = (list, dict, set, bytearray, collections.deque)


def wrap_unsourced(tx: Translator, value: Any, what: str) -> VariableTracker:
    """A value that existed before the call but was reached without a source (an attribute of an
    object the trace cannot name, a cell of a function reached that way): a constant of the trace
    (``wrap_static``), except mutable containers, which break the graph (``what`` names it)."""
    if isinstance(value, _MUTABLE_CONTAINERS):
        raise Unsupported(
            "unsourced",
            f"{what} is a {type(value).__name__} reached without a source: a change to it "
            "could not be replayed",
        )
    return wrap_static(tx, value)


def fold(
    tx: Translator, value: Any, given: dict[int, VariableTracker] | None = None
) -> VariableTracker:
    """A Python value computed during the trace (constant folding) as a VariableTracker; an
    object of ``given`` (by id: what a call was given, see ``fold_call``) is its tracker."""
    if given and id(value) in given:
        return given[id(value)]
    if isinstance(value, torch.Size):
        return TupleVariable([fold(tx, v, given) for v in value], is_size=True, real=value)
    if type(value) is tuple or _is_namedtuple(type(value)):
        return TupleVariable([fold(tx, v, given) for v in value], cls=type(value), real=value)
    if type(value) is list:
        return ListVariable([fold(tx, v, given) for v in value])
    if type(value) is dict:
        return DictVariable({_fold_key(tx, k, given): fold(tx, v, given) for k, v in value.items()})
    if type(value) is set or (
        type(value) is frozenset and given and any(id(k) in given for k in value)
    ):
        items, known = _ordered_items([_fold_key(tx, k, given) for k in value], value)
        frozen = type(value) is frozenset
        return SetVariable(items, frozen=frozen, own_table=False, order_known=known)
    return wrap_static(tx, value)


def _fold_key(tx: Translator, key: Any, given: dict[int, VariableTracker] | None) -> Any:
    """A folded dict's key or set's item: the tracker of an object the call was given stays
    beside it (``hash_key``), so the key is rebuilt as that object."""
    return hash_key(given[id(key)]) if given and id(key) in given else key


def fold_call(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``fn(*args, **kwargs)`` run at trace time on constant trackers, its result folded. Where
    the result holds an object the call was given (``sorted([t, t])[0]``, ``max(a, b)``,
    ``tuple(t)``), it is that argument's tracker, so that ``is`` holds as in CPython and the
    object is rebuilt from where it came from, not as a copy."""
    given: dict[int, VariableTracker] = {}
    pargs = [_given_constant(a, given) for a in args]
    pkwargs = {k: _given_constant(v, given) for k, v in kwargs.items()}
    return fold(tx, computed(fn, pargs, pkwargs), given)


def _given_constant(vt: VariableTracker, given: dict[int, VariableTracker]) -> Any:
    """``vt.as_python_constant()``, recording the tracker of it and of each item of a tuple or
    list in ``given`` by the id of the object made for it."""
    value = vt.as_python_constant()
    _record_given(vt, value, given)
    return value


def _record_given(vt: VariableTracker, value: Any, given: dict[int, VariableTracker]) -> None:
    if identity_is_value(value):
        return
    given.setdefault(id(value), vt)
    items = getattr(vt, "items", None)
    if isinstance(vt, (TupleVariable, ListVariable)) and len(items) == len(value):
        for item_vt, item in zip(items, value, strict=True):
            _record_given(item_vt, item, given)
    elif isinstance(vt, (DictVariable, SetVariable)) and isinstance(value, (dict, set, frozenset)):
        keys = {key: key for key in items}  # each traced key by the real key it stands for
        for real in value:
            if real in keys:
                _record_given(key_vt(keys[real]), real, given)
                if isinstance(value, dict):
                    _record_given(items[keys[real]], value[real], given)
