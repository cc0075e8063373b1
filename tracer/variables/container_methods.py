"""Methods of lists, dicts, sets and tuples, applied to the tracked items.

A container created during the trace is simply changed; one that came from an input is also marked
mutated, so the rewritten code writes its final contents back into the real object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, ListVariable, SetVariable, TupleVariable
from .lazy_list import LazyListVariable

if TYPE_CHECKING:
    from ..translator import Translator

NONE, LAST, FALSE = ConstantVariable(None), ConstantVariable(-1), ConstantVariable(False)


def call_method(
    tx: Translator,
    obj: VariableTracker,
    name: str,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    if kwargs and name not in ("sort", "_replace"):
        kind = obj.python_type().__name__
        raise Unsupported("call_method", f"{kind}.{name} with keyword arguments")
    table = {ListVariable: _LIST, DictVariable: _DICT, SetVariable: _SET, TupleVariable: _TUPLE}
    methods = table.get(type(obj)) or next(
        (m for kind, m in table.items() if isinstance(obj, kind)), {}
    )
    if isinstance(obj, LazyListVariable) and not obj.read and name in ("append", "extend"):
        tx.output.side_effects.before_mutation(obj)
        obj.append_unread(args if name == "append" else tx.dispatch.iterate(tx, args[0]))
        tx.output.side_effects.mark_mutated(obj)
        return NONE
    if name not in methods:
        raise Unsupported("call_method", f"{obj.python_type().__name__}.{name}")
    mutates, impl = methods[name]
    if mutates:
        tx.output.side_effects.before_mutation(obj)
    result = impl(tx, obj, *args, **kwargs)
    if mutates:
        tx.output.side_effects.mark_mutated(obj)
    return result


def _key(vt: VariableTracker):
    if not vt.is_python_constant():
        raise Unsupported("dict_key", f"{vt} as a key (only constants are traced)")
    return vt.as_python_constant()


def _index(tx: Translator, obj: ListVariable, vt: VariableTracker):
    index = _key(vt)
    if isinstance(index, int) and not -len(obj.items) <= index < len(obj.items):
        raise Unsupported("python_error", "IndexError: list index out of range")
    return index


# -- list ------------------------------------------------------------------------------------------
def _list_setitem(tx, obj, key, value):
    index = _index(tx, obj, key)
    if isinstance(index, slice):
        obj.items[index] = tx.dispatch.iterate(tx, value)
    else:
        obj.items[index] = value
    return NONE


def _list_delitem(tx, obj, key):
    del obj.items[_index(tx, obj, key)]
    return NONE


def _list_pop(tx, obj, index=LAST):
    if not obj.items:
        raise Unsupported("python_error", "IndexError: pop from empty list")
    return obj.items.pop(_index(tx, obj, index))


def _list_remove(tx, obj, value):
    for i, item in enumerate(obj.items):
        if item is value or (
            item.is_python_constant()
            and value.is_python_constant()
            and item.as_python_constant() == value.as_python_constant()
        ):
            del obj.items[i]
            return NONE
    raise Unsupported("python_error", "ValueError: list.remove(x): x not in list")


def _list_sort(tx, obj, key=None, reverse=FALSE):
    if key is not None or not all(i.is_python_constant() for i in obj.items):
        raise Unsupported("call_method", "list.sort of non-constants or with a key function")
    obj.items.sort(key=lambda v: v.as_python_constant(), reverse=reverse.as_python_constant())
    return NONE


def _find(tx, obj, value):
    for i, item in enumerate(obj.items):
        if item is value or (
            item.is_python_constant()
            and value.is_python_constant()
            and item.as_python_constant() == value.as_python_constant()
        ):
            return i
    raise Unsupported("python_error", "ValueError: x not in sequence")


def _count(tx, obj, value):
    return ConstantVariable(
        sum(
            1
            for i in obj.items
            if i is value
            or (
                i.is_python_constant()
                and value.is_python_constant()
                and i.as_python_constant() == value.as_python_constant()
            )
        )
    )


_LIST = {
    "append": (True, lambda tx, obj, v: (obj.items.append(v), NONE)[1]),
    "extend": (True, lambda tx, obj, v: (obj.items.extend(tx.dispatch.iterate(tx, v)), NONE)[1]),
    "insert": (True, lambda tx, obj, i, v: (obj.items.insert(_key(i), v), NONE)[1]),
    "pop": (True, _list_pop),
    "remove": (True, _list_remove),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "reverse": (True, lambda tx, obj: (obj.items.reverse(), NONE)[1]),
    "sort": (True, _list_sort),
    "__setitem__": (True, _list_setitem),
    "__delitem__": (True, _list_delitem),
    "copy": (False, lambda tx, obj: ListVariable(list(obj.items))),
    "index": (False, lambda tx, obj, v: ConstantVariable(_find(tx, obj, v))),
    "count": (False, _count),
}


def _namedtuple_replace(tx, obj, **changes):
    fields = list(obj.cls._fields)
    if set(changes) - set(fields):
        raise Unsupported("python_error", f"{obj.cls.__name__}._replace() got unexpected fields")
    items = [changes.get(f, item) for f, item in zip(fields, obj.items, strict=True)]
    return TupleVariable(items, cls=obj.cls)


_TUPLE = {
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
        raise Unsupported("python_error", f"KeyError: {k!r}")
    return default


def _dict_update(tx, obj, other):
    if not isinstance(other, DictVariable):
        raise Unsupported("call_method", f"dict.update with {other}")
    obj.items.update(other.items)
    return NONE


def _dict_setdefault(tx, obj, key, default=NONE):
    return obj.items.setdefault(_key(key), default)


def _dict_delitem(tx, obj, key):
    k = _key(key)
    if k not in obj.items:
        raise Unsupported("python_error", f"KeyError: {k!r}")
    del obj.items[k]
    return NONE


_DICT = {
    "__setitem__": (True, lambda tx, obj, k, v: (obj.items.__setitem__(_key(k), v), NONE)[1]),
    "__delitem__": (True, _dict_delitem),
    "pop": (True, _dict_pop),
    "update": (True, _dict_update),
    "setdefault": (True, _dict_setdefault),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "get": (False, lambda tx, obj, k, d=NONE: obj.items.get(_key(k), d)),
    "keys": (False, lambda tx, obj: ListVariable([ConstantVariable(k) for k in obj.items])),
    "values": (False, lambda tx, obj: ListVariable(list(obj.items.values()))),
    "items": (
        False,
        lambda tx, obj: ListVariable(
            [TupleVariable([ConstantVariable(k), v]) for k, v in obj.items.items()]
        ),
    ),
    "copy": (False, lambda tx, obj: DictVariable(dict(obj.items), cls=obj.cls)),
    "__contains__": (False, lambda tx, obj, k: ConstantVariable(_key(k) in obj.items)),
}


# -- set -------------------------------------------------------------------------------------------
_SET = {
    "add": (True, lambda tx, obj, v: (obj.items.add(_key(v)), NONE)[1]),
    "discard": (True, lambda tx, obj, v: (obj.items.discard(_key(v)), NONE)[1]),
    "update": (
        True,
        lambda tx, obj, v: (obj.items.update(_key(i) for i in tx.dispatch.iterate(tx, v)), NONE)[1],
    ),
    "clear": (True, lambda tx, obj: (obj.items.clear(), NONE)[1]),
    "copy": (False, lambda tx, obj: SetVariable(set(obj.items))),
}
