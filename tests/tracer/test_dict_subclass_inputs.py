"""Objects of user subclasses of ``dict``, ``OrderedDict`` and ``defaultdict`` from outside the call
(arguments, globals, objects live across a graph break): reads, ``d[k] = v``, ``del d[k]``,
``update``, ``pop``, ``setdefault``, iteration, ``len``, ``in`` on the dict's storage, the changes
replayed after the graph and seen by later reads; a class's Python ``__getitem__``/``__setitem__``
runs where CPython calls it (``d[k]``, ``OrderedDict.update``), not where CPython's C code bypasses
it (``dict.update``, ``dict.setdefault``, ``dict(d)``, ``{**d}``). Each function returns the object
itself, so that its items and identity are compared with eager's, and its attributes (``vars``)
with the argument's after the call. Counts beside torch.compile's."""

from __future__ import annotations

import collections
import copy

import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


class Plain(dict):
    pass


class RawCopy:
    """Deep-copied item by item with the base's own ``__setitem__`` (CPython's ``deepcopy`` of a
    dict subclass stores through the class's: the eager run's copy would differ)."""

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        base = next(k for k in type(self).__mro__ if k in (dict, collections.OrderedDict))
        for key, value in dict.items(self):
            base.__setitem__(new, key, copy.deepcopy(value, memo))
        vars(new).update(copy.deepcopy(vars(self), memo))
        return new


class Logged(RawCopy, dict):
    """Item methods in Python: what they are given is logged (``LOG``) and changed."""

    def __setitem__(self, key, value):
        LOG.append(("set", key))
        super().__setitem__(key, value * 10)

    def __getitem__(self, key):
        LOG.append(("get", key))
        return super().__getitem__(key) + 1


class LoggedOrdered(RawCopy, collections.OrderedDict):
    def __setitem__(self, key, value):
        LOG.append(("set", key))
        super().__setitem__(key, value * 10)


class Groups(collections.defaultdict):
    def total(self):
        return sum(len(v) for v in self.values())


class Config(dict):
    scale = 3

    def __init__(self, note, **items):
        super().__init__(**items)
        self.note = note

    def scaled(self, key):
        return self[key] * self.scale


class OwnKeysOnly(dict):
    """``keys`` and ``__getitem__`` in Python, ``__iter__`` dict's: ``{**d}`` and ``dict(d)`` read
    the storage (CPython's ``dict_merge``), not these."""

    def keys(self):
        LOG.append("keys")
        return ["zz"]

    def __getitem__(self, key):
        LOG.append(("get", key))
        return 0


LOG: list = []
G_PLAIN = Plain(a=1)
G_LOGGED = Logged(a=1)


def _setup():
    LOG.clear()
    G_PLAIN.clear()
    dict.update(G_PLAIN, a=1)
    dict.clear(G_LOGGED)
    dict.update(G_LOGGED, a=1)


def _observe():
    return list(LOG), list(dict.items(G_PLAIN)), list(dict.items(G_LOGGED))


def _check(fn, make_args, breaks=0):
    check_breaks(fn, make_args, graphs=breaks + 1, breaks=breaks, setup=_setup, observe=_observe)
    _setup()
    assert_no_more_breaks(breaks, fn, *make_args())
    _setup()


def _global_plain(x):
    G_PLAIN["b"] = 2
    G_PLAIN.update(c=3)
    del G_PLAIN["a"]
    seen = (len(G_PLAIN), "b" in G_PLAIN, "a" in G_PLAIN, list(G_PLAIN), G_PLAIN.get("c"))
    return x + len(G_PLAIN), seen, G_PLAIN.pop("c"), G_PLAIN.setdefault("d", 4), G_PLAIN


def test_global_plain_subclass_changed():
    _check(_global_plain, lambda: (torch.randn(3),))


def _argument_plain(x, d):
    d["t"] = x.sum().item() > 100  # a value computed from tensor data stays Python
    total = sum(v for k, v in d.items() if k != "t")
    return x * total, sorted(d), [k for k in d], d.popitem(), d


def test_argument_plain_subclass_read_and_changed():
    _check(_argument_plain, lambda: (torch.randn(3), Plain(a=1, b=2)))


def _python_item_methods(x, d):
    d["x"] = 2  # runs Logged.__setitem__
    d.update(y=3)  # dict.update: no __setitem__
    d.setdefault("z", 4)  # neither
    read = d["x"], d.get("y"), d["z"]  # __getitem__, then dict's get, then __getitem__
    return x + read[0], read, dict(d), {**d}, list(dict.items(d)), d


def test_python_item_methods_run_where_cpython_calls_them():
    _check(_python_item_methods, lambda: (torch.randn(3), Logged(a=1)))


def _global_python_item_methods(x):
    G_LOGGED["b"] = 5
    return x + G_LOGGED["b"], G_LOGGED


def test_global_with_python_item_methods():
    _check(_global_python_item_methods, lambda: (torch.randn(3),))


def _ordered(x, d):
    d["x"] = 2
    d.update(y=3)  # OrderedDict.update stores through the subclass's __setitem__
    d.move_to_end("a")
    del d["x"]
    return x + len(d), list(d.items()), d


def test_ordereddict_subclass_argument():
    _check(_ordered, lambda: (torch.randn(3), LoggedOrdered(a=1, b=2)))


def _groups(x, d):
    d["a"].append(1)  # a missing key: the default factory's list, stored
    d["b"].append(2)
    return x + d.total(), dict(d), d


def test_defaultdict_subclass_argument():
    _check(_groups, lambda: (torch.randn(3), Groups(list, b=[0])))


def _attributes(x, c):
    c["k"] = c.note
    c.extra = 7
    return x * c.scaled("a") + c.extra, c.note, hasattr(c, "missing"), dict(vars(c)), c


def _attribute_deleted(x, c):
    del c.note
    return x + 1, hasattr(c, "note"), c.get("a"), c


def test_attributes_of_a_subclass_object():
    _check(_attributes, lambda: (torch.randn(3), Config("n", a=2)))


def _text(x, c):
    made = Plain(b=x.shape[0])
    return x + 1, repr(c), str(c), repr([c, made]), str(made), f"{c}", f"{made!r:>30}"


def test_repr_of_a_subclass_object_is_dicts():
    _check(_text, lambda: (torch.randn(3), Config("n", a=2)))


def test_attribute_of_a_subclass_object_deleted():
    _check(_attribute_deleted, lambda: (torch.randn(3), Config("n", a=2)))


class Holder:
    def __init__(self, cfg):
        self.cfg = cfg


def _attribute_object(x, holder):
    holder.cfg["k"] = 3  # Logged.__setitem__, on an object read as an attribute
    return x * holder.cfg["k"], list(dict.items(holder.cfg)), holder.cfg


def test_subclass_object_read_as_an_attribute():
    _check(_attribute_object, lambda: (torch.randn(3), Holder(Logged(a=1))))


def _across_a_break(x, d):
    d["before"] = 1
    y = x * d["a"]
    print("break")
    d["after"] = d["before"] + 1
    return y + len(d), d


def test_object_live_across_a_break():
    _check(_across_a_break, lambda: (torch.randn(3), Logged(a=1)), breaks=1)


def _storage_merge(x, d):
    return x + 1, {**d}, dict(d), list(d), d


def test_merge_reads_the_storage_of_a_subclass_with_dicts_iter():
    _check(_storage_merge, lambda: (torch.randn(3), OwnKeysOnly(w=2)))


def _reads(x, d):
    return x + d["a"], list(d)


def test_keys_changed_between_calls_are_seen():
    compiled, _ = compile_counted(_reads)
    x, d = torch.randn(3), Plain(a=1)
    compiled(x, d)
    d["b"] = 5
    d["a"] = 2
    result, expected = compiled(x, d), _reads(x, d)
    torch.testing.assert_close(result[0], expected[0])
    assert result[1] == expected[1] == ["a", "b"]
