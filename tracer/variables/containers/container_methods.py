"""Methods of lists, dicts, sets and tuples, applied to the tracked items.

A container created during the trace is simply changed; one that came from an input is also marked
mutated, so the rewritten code writes its final contents back into the real object.
"""

from __future__ import annotations

import collections
import inspect
import operator
from typing import TYPE_CHECKING

from ...exc import PythonError, Unsupported
from ..base import IdentityKey, VariableTracker
from ..constants.constant import ConstantVariable
from ..iterators.iterator_trackers import GeneratorVariable
from ..tensors.tensor import TensorVariable
from . import dict_views
from .builtin_containers import (
    DictVariable,
    ListVariable,
    SetRecipe,
    SetVariable,
    TupleVariable,
    computed_set,
    hash_key,
    key_vt,
    lookup_key,
    recipe_part,
)
from .collection_types import DEQUE_METHODS, DICT_SUBCLASS_METHODS, DequeVariable
from .dict_views import DictViewVariable
from .lazy_list import LazyListVariable

if TYPE_CHECKING:
    from ...translator import Translator

NONE, LAST, FALSE = ConstantVariable(None), ConstantVariable(-1), ConstantVariable(False)


def call_method(
    tx: Translator,
    obj: VariableTracker,
    name: str,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    table = {
        GeneratorVariable: _GENERATOR,
        ListVariable: _LIST,
        DequeVariable: _DEQUE,
        DictVariable: _DICT,
        SetVariable: _SET,
        TupleVariable: _TUPLE,
        DictViewVariable: _VIEW,
    }
    methods = table.get(type(obj)) or next(
        (m for kind, m in table.items() if isinstance(obj, kind)), {}
    )
    if isinstance(obj, DictVariable) and obj.cls is not dict:
        methods = {**methods, **_DICT_SUBCLASS.get(obj.cls, {})}
    if isinstance(obj, SetVariable) and obj.frozen:
        methods = _FROZENSET
    if isinstance(obj, LazyListVariable) and not obj.read and name in ("append", "extend"):
        tx.output.side_effects.before_mutation(obj)
        for item in args if name == "append" else _extend_items(tx, args[0]):
            obj.append_unread(item)
        tx.output.side_effects.mark_mutated(obj)
        return NONE
    if name not in methods:
        raise Unsupported("call_method", f"{obj.python_type().__name__}.{name}")
    mutates, impl = methods[name]
    try:
        inspect.signature(impl).bind(tx, obj, *args, **kwargs)
    except TypeError as e:
        kind = obj.python_type().__name__
        raise Unsupported("python_error", f"TypeError: {kind}.{name}(): {e}") from None
    if mutates:
        tx.output.side_effects.before_mutation(obj)
    result = impl(tx, obj, *args, **kwargs)
    if mutates:
        tx.output.side_effects.mark_mutated(obj)
    return result


_key = hash_key


def c_name(cls: type) -> str:
    """The name CPython's messages give ``cls`` (its ``tp_name``): a static type outside
    ``builtins`` is named with its module (``torch.dtype``), any other by its ``__name__``."""
    heap = bool(cls.__flags__ & (1 << 9))  # Py_TPFLAGS_HEAPTYPE
    if heap or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


def not_iterable(vt: VariableTracker) -> Exception | None:
    """CPython's TypeError for ``iter(vt)`` where ``vt``'s type defines neither ``__iter__`` nor
    ``__getitem__`` (looked up on the type, as ``iter`` does), or None where it may iterate."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return None
    if isinstance(vt, TensorVariable) or any(
        "__iter__" in vars(base) or "__getitem__" in vars(base) for base in cls.__mro__
    ):
        return None
    return TypeError(f"'{c_name(cls)}' object is not iterable")


def _key_error(key) -> Exception:
    """CPython's KeyError for a missing ``key``: the key itself, its tracker where it has one
    (the exception is rebuilt with it); for a tensor key or a tuple holding objects, CPython
    raises it (its message would be the object's repr)."""
    if isinstance(key, IdentityKey) and not key.vt.is_python_constant():
        if not hasattr(key.vt, "value") or isinstance(key.ident, tuple):
            return Unsupported("python_error", "KeyError on an object key")
    return PythonError(KeyError(key))


def _int(vt: VariableTracker):
    """An index or count argument: a Python constant, or ``index_stand_in``'s stand-in."""
    if vt.is_python_constant():
        return vt.as_python_constant()
    stand_in = index_stand_in(vt)
    if stand_in is None:
        raise Unsupported("index", f"{vt} as an index (only constants are traced)")
    return stand_in


def index_stand_in(vt: VariableTracker) -> object | None:
    """For a value whose type has no ``__index__`` (an object, a function), an instance of an
    empty class of the same C name: a list or tuple operation run on it and on a stand-in
    sequence (``_shadow``) raises CPython's TypeError. None for other values (a tensor)."""
    try:
        cls = vt.python_type()
    except Unsupported:
        return None
    if isinstance(vt, TensorVariable) or any("__index__" in vars(base) for base in cls.__mro__):
        return None
    return type(c_name(cls), (), {})()


def _shadow(obj: ListVariable, action) -> None:
    """Run ``action`` on a stand-in of ``obj`` first (same type and length, items ``None``): an
    index or slice CPython rejects raises CPython's exact error here, before anything changes."""
    n = len(obj.items)
    shadow = obj.python_type()([None] * n, obj.maxlen) if hasattr(obj, "maxlen") else [None] * n
    try:
        action(shadow)
    except (IndexError, ValueError, TypeError) as e:
        raise PythonError(e) from None


# -- list ------------------------------------------------------------------------------------------
def _list_setitem(tx, obj, key, value):
    index = _int(key)
    if isinstance(index, slice):
        if not_iterable(value) is not None:  # CPython's message (it differs across versions)
            _shadow(obj, lambda real: real.__setitem__(index, _NotIterable()))
        values = dispatch.iterate(tx, value)
        _shadow(obj, lambda real: real.__setitem__(index, [None] * len(values)))
        obj.items[index] = values
    else:
        _shadow(obj, lambda real: real.__setitem__(index, None))
        obj.items[index] = value
    return NONE


def _list_delitem(tx, obj, key):
    index = _int(key)
    _shadow(obj, lambda real: real.__delitem__(index))
    del obj.items[index]
    return NONE


def _list_pop(tx, obj, index=LAST):
    at = _int(index)
    _shadow(obj, lambda real: real.pop(at))
    return obj.items.pop(at)


class _NotIterable:
    """What a slice is assigned in place of a value that is not iterable."""


def _list_insert(tx, obj, index, value):
    at = _int(index)
    _shadow(obj, lambda real: real.insert(at, None))
    obj.items.insert(at, value)
    return NONE


def _list_imul(tx, obj, count):
    n = _int(count)
    if not isinstance(n, int):  # CPython's TypeError (the stand-in list is not grown)
        _shadow(obj, lambda real: real.__imul__(n))
    obj.items *= n
    return obj


def _list_remove(tx, obj, value):
    del obj.items[_find(tx, obj, value, "list.remove(x): x not in list")]
    return NONE


def _list_sort(tx, obj, *, key=NONE, reverse=FALSE):
    items = list(obj.items)
    order = dispatch.sort_order(tx, items, key, reverse, "list.sort")
    obj.items[:] = [items[i] for i in order]
    return NONE


def _extend_items(tx, iterable):
    """What ``list.extend`` appends: a list or tuple copied first (``xs.extend(xs)`` doubles),
    any other iterable's items one at a time as they are taken (a ``map`` whose function reads or
    appends to the list sees it grow, as in CPython)."""
    if isinstance(iterable, (ListVariable, TupleVariable)):
        return list(iterable.items)
    return dispatch.each_item(tx, iterable)


def _list_extend(tx, obj, iterable):
    for item in _extend_items(tx, iterable):
        obj.items.append(item)
    return NONE


def _list_init(tx, obj, iterable=None):
    """``xs.__init__(iterable)`` on an existing list: emptied, then extended (``xs.__init__(xs)``
    leaves it empty, as in CPython)."""
    obj.items.clear()
    return NONE if iterable is None else _list_extend(tx, obj, iterable)


def _equal(tx, item: VariableTracker, value: VariableTracker) -> bool:
    """``item is value or item == value``, as list searches compare (tensors: data-dependent)."""
    if item is value:
        return True
    if item.is_python_constant() and value.is_python_constant():
        known = item.as_python_constant()  # identity first: ``[nan].count(nan)``
        return known is value.as_python_constant() or bool(known == value.as_python_constant())
    if isinstance(item, TensorVariable) or isinstance(value, TensorVariable):
        raise Unsupported("data_dependent", f"comparing {item} with {value} needs their values")
    return dispatch.truth(tx, dispatch.call_operator(tx, operator.eq, [item, value]))


def _find(tx, obj, value, message=None):
    for i, item in enumerate(obj.items):
        if _equal(tx, item, value):
            return i
    kind = obj.python_type().__name__ if obj.python_type() in (list, tuple) else "sequence"
    if message is None and value.is_python_constant():
        message = f"{value.as_python_constant()!r} is not in {kind}"
        if kind == "tuple":
            message = "tuple.index(x): x not in tuple"
    if message is None:
        raise Unsupported("python_error", "ValueError: x not in sequence")
    raise PythonError(ValueError(message))


def _count(tx, obj, value):
    return ConstantVariable(sum(1 for item in obj.items if _equal(tx, item, value)))


_LIST = {
    "append": (True, lambda tx, obj, v: (obj.items.append(v), NONE)[1]),
    "extend": (True, _list_extend),
    "insert": (True, _list_insert),
    "pop": (True, _list_pop),
    "remove": (True, _list_remove),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "reverse": (True, lambda tx, obj: (obj.items.reverse(), NONE)[1]),
    "sort": (True, _list_sort),
    "__setitem__": (True, _list_setitem),
    "__delitem__": (True, _list_delitem),
    "copy": (False, lambda tx, obj: ListVariable(list(obj.items))),
    "__init__": (True, _list_init),
    "__imul__": (True, _list_imul),
    "index": (False, lambda tx, obj, v: ConstantVariable(_find(tx, obj, v))),
    "count": (False, _count),
}


def _namedtuple_replace(tx, obj, **changes):
    fields = list(obj.cls._fields)
    if set(changes) - set(fields):
        raise Unsupported("python_error", f"{obj.cls.__name__}._replace() got unexpected fields")
    items = [changes.get(f, item) for f, item in zip(fields, obj.items, strict=True)]
    return TupleVariable(items, cls=obj.cls)


_DEQUE = {**{k: v for k, v in _LIST.items() if k not in ("sort", "__init__")}, **DEQUE_METHODS}


def _getnewargs(tx, obj):
    """``t.__getnewargs__()``: ``(tuple(t),)``, the tuple itself where it is an exact tuple."""
    exact = obj.python_type() is tuple
    return TupleVariable([obj if exact else TupleVariable(list(obj.items))])


_TUPLE = {
    "__init__": (False, lambda tx, obj, *args, **kwargs: NONE),  # ``object.__init__``
    "__getnewargs__": (False, _getnewargs),
    "index": (False, lambda tx, obj, v: ConstantVariable(_find(tx, obj, v))),
    "count": (False, _count),
    "_replace": (False, _namedtuple_replace),
    "_asdict": (
        False,
        lambda tx, obj: DictVariable(dict(zip(obj.cls._fields, obj.items, strict=True))),
    ),
}


# -- dict ------------------------------------------------------------------------------------------
def _dict_pop(tx, obj, key, default=None):
    k = _key(key)
    if k in obj.items:
        return obj.items.pop(k)
    if default is None:
        raise _key_error(k)
    return default


def _dict_popitem(tx, obj):
    if not obj.items:
        raise PythonError(KeyError("popitem(): dictionary is empty"))
    key, value = obj.items.popitem()
    return TupleVariable([key_vt(key), value])


def _dict_update(tx, obj, *others, **kwargs):
    """``d.update(mapping_or_pairs, **kwargs)``: pairs are taken one by one and stored as they
    come, like CPython (a ``map`` making them sees the pairs stored before)."""
    if len(others) > 1:
        raise Unsupported("python_error", "TypeError: update expected at most 1 argument")
    for other in others:
        if isinstance(other, DictVariable):
            obj.items.update(other.items)
            continue
        for pair in dispatch.each_item(tx, other):
            items = dispatch.iterate(tx, pair)
            if len(items) != 2:
                raise Unsupported("python_error", "ValueError: dictionary update sequence element")
            obj.items[_key(items[0])] = items[1]
    obj.items.update(kwargs)
    return NONE


def _dict_init(tx, obj, *others, **kwargs):
    """``d.__init__(mapping_or_pairs, **kwargs)`` on an existing dict: ``d.update(...)``."""
    if obj.cls not in (dict, collections.OrderedDict):
        raise Unsupported("call_method", f"{obj.cls.__name__}.__init__")
    return _dict_update(tx, obj, *others, **kwargs)


def dict_or(tx: Translator, op, lhs: DictVariable, rhs: VariableTracker) -> VariableTracker | None:
    """``d | other`` (a new dict of ``d``'s type) and ``d |= other`` (``d.update(other)``); None
    where ``other`` is no dict (``dict.__or__`` gives NotImplemented: the other operand decides)."""
    if op is operator.ior:
        call_method(tx, lhs, "update", [rhs], {})
        return lhs
    if not isinstance(rhs, DictVariable):
        return None
    merged = _dict_copy(tx, lhs)
    merged.items.update(rhs.items)
    return merged


def _dict_setdefault(tx, obj, key, default=NONE):
    return obj.items.setdefault(_key(key), default)


def _dict_delitem(tx, obj, key):
    k = _key(key)
    if k not in obj.items:
        raise _key_error(k)
    del obj.items[k]
    return NONE


def _dict_getitem(tx, obj, key):
    k = _key(key)
    if k in obj.items:
        return obj.items[k]
    factory = obj.default_factory
    if factory is None or (factory.is_python_constant() and factory.as_python_constant() is None):
        raise _key_error(k)
    value = dispatch.call(tx, factory, [], {})  # ``defaultdict.__missing__``
    tx.output.side_effects.before_mutation(obj)
    obj.items[k] = value
    tx.output.side_effects.mark_mutated(obj)
    return value


def _dict_copy(tx, obj):
    return DictVariable(dict(obj.items), cls=obj.cls, default_factory=obj.default_factory)


def _dict_fromkeys(tx, obj, iterable, value=NONE):
    """``d.fromkeys(keys, value)`` called on a dict: a new dict of its class (a ``defaultdict``
    without a factory), the keys in the iterable's order."""
    if obj.cls not in (dict, collections.OrderedDict, collections.defaultdict):
        raise Unsupported("call_method", f"{obj.cls.__name__}.fromkeys")
    items = {}
    for key in dispatch.each_item(tx, iterable):
        items[_key(key)] = value
    factory = NONE if obj.cls is collections.defaultdict else None
    return DictVariable(items, cls=obj.cls, default_factory=factory)


_DICT = {
    "__setitem__": (True, lambda tx, obj, k, v: (obj.items.__setitem__(_key(k), v), NONE)[1]),
    "__delitem__": (True, _dict_delitem),
    "__getitem__": (False, _dict_getitem),
    "pop": (True, _dict_pop),
    "popitem": (True, _dict_popitem),
    "update": (True, _dict_update),
    "__init__": (True, _dict_init),
    "setdefault": (True, _dict_setdefault),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "get": (False, lambda tx, obj, k, d=NONE: obj.items.get(_key(k), d)),
    "keys": (False, lambda tx, obj: DictViewVariable(obj, "keys")),
    "values": (False, lambda tx, obj: DictViewVariable(obj, "values")),
    "items": (False, lambda tx, obj: DictViewVariable(obj, "items")),
    "copy": (False, _dict_copy),
    "fromkeys": (False, _dict_fromkeys),
    "__contains__": (False, lambda tx, obj, k: ConstantVariable(_key(k) in obj.items)),
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.items))),
}


def _move_to_end(tx, obj, key, last=None):
    k = _key(key)
    if k not in obj.items:
        raise _key_error(k)
    at_end = True if last is None else dispatch.truth(tx, last)
    value = obj.items.pop(k)
    if at_end:
        obj.items[k] = value
    else:
        rest = dict(obj.items)
        obj.items.clear()
        obj.items[k] = value
        obj.items.update(rest)
    return NONE


def _ordered_popitem(tx, obj, last=None):
    if last is None or dispatch.truth(tx, last):
        return _dict_popitem(tx, obj)
    if not obj.items:
        raise Unsupported("python_error", "KeyError: 'dictionary is empty'")
    key = next(iter(obj.items))
    return TupleVariable([key_vt(key), obj.items.pop(key)])


#: Methods a dict subclass adds or changes.
_DICT_SUBCLASS = {
    collections.OrderedDict: {
        "move_to_end": (True, _move_to_end),
        "popitem": (True, _ordered_popitem),
    },
    **DICT_SUBCLASS_METHODS,
}


# -- dict views ------------------------------------------------------------------------------------
def _view_isdisjoint(tx, obj, other):
    return ConstantVariable(
        not any(dict_views.contains(tx, obj, item) for item in dispatch.iterate(tx, other))
    )


_VIEW = {
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.dict_vt.items))),
    "__contains__": (False, lambda tx, obj, v: ConstantVariable(dict_views.contains(tx, obj, v))),
    "isdisjoint": (False, _view_isdisjoint),
}


# -- generators ------------------------------------------------------------------------------------
def _generator_next(tx, obj, value=NONE):
    """``next(g)`` and ``g.send(None)`` (the value sent is what ``yield`` gives: only None is)."""
    if not (value.is_python_constant() and value.as_python_constant() is None):
        raise Unsupported("generator", "a value sent into a generator (`.send(x)`)")
    item = obj.next_item(tx)
    if item is None:
        if obj.result is not None and not obj.result.is_python_constant():
            raise Unsupported("generator", "a generator returning a traced value stopped")
        result = obj.result.as_python_constant() if obj.result is not None else None
        raise PythonError(StopIteration(result) if result is not None else StopIteration())
    return item


_GENERATOR = {
    "send": (False, _generator_next),
    "__next__": (False, _generator_next),
}


# -- set -------------------------------------------------------------------------------------------
def _set_method(name: str, mutates: bool):
    """A set method run by CPython on the real set of constants (iterable arguments are read
    into sets of constants first), so results, order and errors are CPython's."""

    def impl(tx, obj, *args):
        real = [
            _key(a)
            if name == "add"
            else lookup_key(a)
            if name in ("discard", "remove")
            else real_iterable(tx, a)
            for a in args
        ]
        before = set(obj.items) if mutates else None
        real, entry = obj.log_call(name, real) if mutates else (real, None)
        try:  # changed in place, the set needs no known order
            result = getattr(obj.items if mutates else dict_views.real_set(obj), name)(*real)
        except KeyError:  # ``remove``: the argument itself (a set searched as a frozenset)
            key = real[0]
            raise _key_error(IdentityKey(args[0], getattr(key, "ident", key))) from None
        except TypeError as e:
            raise PythonError(e) from None
        if before is not None:
            obj.logged(entry)
            obj.added_to(before)
            keyed = name in ("add", "discard", "remove")
            obj.changed(name, [("key", k) for k in real] if keyed else list(map(recipe_part, args)))
        if isinstance(result, (set, frozenset)):
            recipe = SetRecipe.call(getattr(obj.python_type(), name), [obj, *args])
            return computed_set(result, [obj, *args], recipe)
        return ConstantVariable(result)

    return mutates, impl


def real_iterable(tx, vt):
    """What a set method is given: the real set or immutable constant, a dict of the keys, or a
    real iterator over the items that takes each from the traced iterable when CPython asks for
    it (CPython's methods take fast paths for sets and dicts that change orders; on other
    iterables some add item by item, some stop early, some read all first: a ``map`` whose
    function reads or changes the set sees what it sees in CPython)."""
    if isinstance(vt, SetVariable):
        return dict_views.real_set(vt)
    if isinstance(vt, DictVariable):
        return dict.fromkeys(vt.items)
    if isinstance(vt, TupleVariable):
        return tuple(map(_key, vt.items))  # its items' trackers kept (an object read from a global)
    if vt.is_python_constant() and isinstance(
        vt.as_python_constant(), (str, range, tuple, frozenset)
    ):
        return vt.as_python_constant()
    return map(_key, dispatch.each_item(tx, vt))


def _set_init(tx, obj, *args):
    """``s.__init__(iterable)`` on an existing set: emptied, then updated (``s.__init__(s)``
    leaves it empty)."""
    if len(args) > 1:
        raise PythonError(TypeError(f"set expected at most 1 argument, got {len(args)}"))
    _SET["clear"][1](tx, obj)
    return _SET["update"][1](tx, obj, *args) if args else NONE


def _set_copy(tx, obj):
    return computed_set(set(real_iterable(tx, obj)), [obj], SetRecipe.call(set, [obj]))


def _set_clear(tx, obj):
    obj.logged(obj.log_call("clear", [])[1])
    obj.items.clear()
    obj.changed("clear", [])
    return NONE


def _set_pop(tx, obj):
    if not obj.items:
        raise PythonError(KeyError("pop from an empty set"))
    key = obj.ordered().pop()
    obj.logged(obj.log_call("discard", [key])[1])  # the item the trace took out
    obj.changed("pop", [])
    return key_vt(key)  # the item's own tracker (a class, an object...)


_SET = {
    **{
        name: _set_method(name, mutates=True)
        for name in (
            "add",
            "discard",
            "remove",
            "update",
            "intersection_update",
            "difference_update",
            "symmetric_difference_update",
        )
    },
    **{
        name: _set_method(name, mutates=False)
        for name in (
            "union",
            "intersection",
            "difference",
            "symmetric_difference",
            "issubset",
            "issuperset",
            "isdisjoint",
        )
    },
    "pop": (True, _set_pop),
    "__init__": (True, _set_init),
    "clear": (True, _set_clear),
    # a frozenset's copy is itself
    "copy": (False, lambda tx, obj: obj if obj.frozen else _set_copy(tx, obj)),
    "__len__": (False, lambda tx, obj: ConstantVariable(len(obj.items))),
    "__contains__": (False, lambda tx, obj, v: ConstantVariable(lookup_key(v) in obj.items)),
}


#: A frozenset has the set's methods that do not change it (the others are no attributes of it)
#: and ``object.__init__``, which does nothing.
_FROZENSET = {**_SET, "__init__": (False, lambda tx, obj, *args, **kwargs: NONE)}


# Bound last: the dispatcher imports this module (a cycle), and needs what it defines above.
from .. import dispatch  # noqa: E402
