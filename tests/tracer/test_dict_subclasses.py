"""User ``dict`` subclasses: the ``AttrDict``/``EasyDict`` config pattern (attribute reads and
writes mapped to items), dict subclasses with methods made with keyword arguments, and
``defaultdict.fromkeys``/``OrderedDict.fromkeys``. Counts beside torch.compile's (``dynamo_counts``;
torch.compile fails on some of these: -1 breaks, and runs the call in Python).
"""

from __future__ import annotations

import collections
import copy

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

import bytegraph


class AttrDict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class InputAttrDict(dict):
    """``AttrDict`` that ``copy.deepcopy`` can copy (the harness copies the eager run's inputs;
    CPython's deepcopy of a plain ``AttrDict`` fails looking up ``__deepcopy__`` as an item)."""

    __getattr__ = dict.__getitem__

    def __deepcopy__(self, memo):
        return InputAttrDict(copy.deepcopy(dict(self), memo))


class EasyDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class Scores(dict):
    factor = 2

    def total(self):
        return sum(self.values()) * self.factor

    @property
    def best(self):
        return max(self, key=self.get)


def check(fn, make_args, graphs=1, baseline_missing=""):
    """No break, the same results, arguments and printed output as eager, and no more breaks than
    torch.compile (``baseline_missing``: why torch.compile compiles no graph, where it does not)."""
    check_breaks(fn, make_args, graphs=graphs, breaks=0)
    assert_no_more_breaks(0, fn, *make_args(), baseline_missing=baseline_missing)


def _attrdict_made_here(x):
    cfg = AttrDict(scale=2, bias=1)
    cfg.extra = 3
    return x * cfg.scale + cfg.bias + cfg.extra, cfg, cfg.get("none"), type(cfg).__name__


def test_attrdict_made_in_the_function():
    check(
        _attrdict_made_here,
        lambda: (torch.randn(3),),
        baseline_missing="torch.compile runs the call in Python: a __getattr__ that is not a "
        "function",
    )


def _easydict_made_here(x):
    e = EasyDict({"w": 4}, z=1)
    e.z = 5
    return x + e.w + e.z + len(e), e, "w" in e


def test_easydict_made_in_the_function():
    check(_easydict_made_here, lambda: (torch.randn(3),))


def _missing_key(x):
    cfg = AttrDict(a=1)
    return x + cfg.b  # dict.__getitem__: KeyError, as in CPython


def test_attrdict_missing_attribute_raises_keyerror():
    check_breaks(_missing_key, lambda: (torch.randn(3),), graphs=0, breaks=1)


def _dict_with_methods(x):
    s = Scores(a=1, b=3)
    s["c"] = 2
    return x * s.total(), s.best, s, isinstance(s, dict), s.__class__.__name__


def test_dict_subclass_with_methods_made_with_keywords():
    check(
        _dict_with_methods,
        lambda: (torch.randn(3),),
        baseline_missing="torch.compile runs the call in Python: a dict subclass made with "
        "keywords",
    )


def _reads_config(x, cfg):
    return x * cfg.scale + cfg.bias


@pytest.mark.parametrize("cls", [InputAttrDict, EasyDict])
def test_config_passed_in_is_read_by_attribute(cls):
    calls = [
        lambda: (torch.randn(3), cls(scale=2, bias=1)),
        lambda: (torch.randn(3), cls(scale=3, bias=0.5)),
    ]
    # the second call has other values: the guards on the keys read see it (two graphs)
    check_breaks(_reads_config, calls[0], graphs=2, breaks=0, calls=calls)
    missing = "torch.compile runs the call in Python: a __getattr__ that is not a function"
    assert_no_more_breaks(
        0, _reads_config, *calls[0](), baseline_missing=missing if cls is InputAttrDict else ""
    )


def _fromkeys(x):
    d = collections.defaultdict.fromkeys(["a", "b"], 1)
    o = collections.OrderedDict.fromkeys("ba", 2)
    return x + d["a"] + o["b"], d, o, d.default_factory, list(o)


def test_fromkeys_of_collections_dicts():
    check(
        _fromkeys,
        lambda: (torch.randn(3),),
        baseline_missing="torch.compile runs the call in Python: it cannot rebuild the dicts",
    )


def _getattr_default_on_easydict(x):
    e = EasyDict(w=1)
    y = x + 1
    return y + getattr(e, "nope", 3) + e.w


def test_getattr_default_through_a_python_getattr():
    # ``__getattr__`` raises AttributeError inside its ``except KeyError``: ``getattr``'s default
    # catches it, in the trace (the callee's handler is left as CPython leaves it). It was one break
    # at the call (and before that, the whole call ran in Python). torch.compile: one graph too.
    check_breaks(_getattr_default_on_easydict, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _getattr_default_on_easydict, torch.randn(3))


# -- dict objects: any user subclass of dict or OrderedDict made in the trace ----------------------
# Its items are the dict's storage, its attributes the object's own; its Python methods
# (``__init__`` calling ``super().__init__``, ``__getitem__``, ``__getattr__``, ``__setitem__``) are
# inlined, the C methods it inherits act on the storage; it is rebuilt as an object of its class
# with the same items in order and the same attributes.


class OutputDict(collections.OrderedDict):
    """A ``ModelOutput``-like container: items by key or by position, fields as attributes."""

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return tuple(self.values())[k]

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None

    def to_tuple(self):
        return tuple(self.values())


class Named(dict):
    def __init__(self, name, **kw):
        super().__init__(**kw)
        self.name = name

    def scaled(self, key):
        return self[key] * len(self.name)


class Doubling(collections.OrderedDict):
    """Reads give twice the stored value: ``dict(d)`` and ``{**d}`` read through them."""

    def __getitem__(self, k):
        return super().__getitem__(k) * 2


class Upper(collections.OrderedDict):
    """``OrderedDict.__init__`` and ``update`` store through the subclass's ``__setitem__``."""

    def __setitem__(self, k, v):
        super().__setitem__(k.upper(), v)


def _output_dict(x):
    out = OutputDict(last=x * 2, hidden=x + 1)
    return out.last, out["hidden"], out[0], out.to_tuple()[1], len(out), list(out.keys())


def test_ordereddict_subclass_with_python_item_methods():
    check(_output_dict, lambda: (torch.randn(3),))


def _named(x):
    c = Named("abc", a=x, b=2)
    c["z"] = x + 1
    return c.scaled("a"), c, c.name, type(c) is Named, isinstance(c, dict), list(c.items())


def _attributes(result):
    """The instance attributes of the dict objects in ``result``, with their classes."""
    return [(type(v), vars(v)) for v in result if isinstance(v, dict) and type(v) is not dict]


def test_custom_init_calling_super_init_and_setting_an_attribute():
    check(_named, lambda: (torch.randn(3),))
    x = torch.randn(3)
    got = bytegraph.compile(_named, backend="eager")(x)
    assert _attributes(got) == _attributes(_named(x)) == [(Named, {"name": "abc"})]


def _returned_and_mutated(x):
    c = Named("n", a=1, b=x)
    c["c"] = x * 3
    del c["a"]
    c.update({"d": 4}, e=5)
    c.setdefault("b", 0)
    c.pop("d")
    c.extra = x.sum()
    return c


def test_returned_after_mutations_in_the_function():
    check(_returned_and_mutated, lambda: (torch.randn(3),))
    x = torch.randn(3)
    got = bytegraph.compile(_returned_and_mutated, backend="eager")(x)
    assert type(got) is Named and list(got) == ["b", "c", "e"]
    assert set(vars(got)) == {"name", "extra"} and torch.equal(got.extra, x.sum())


def _same_object(x):
    c = Named("n", a=x * 2)
    alias = c
    alias["b"] = 1
    return c, alias, c is alias


def test_identity_is_kept():
    check(_same_object, lambda: (torch.randn(3),))
    got = bytegraph.compile(_same_object, backend="eager")(torch.randn(3))
    assert got[0] is got[1] and list(got[0]) == ["a", "b"]


def _missing_field(x):
    out = OutputDict(a=x)
    try:
        return out.nope
    except AttributeError as e:
        return x + 1, str(e)


def test_getattr_raising_attributeerror_is_caught():
    check(_missing_field, lambda: (torch.randn(3),))


def _missing_field_raised(x):
    return OutputDict(a=x + 1).nope


def test_getattr_raising_attributeerror_propagates():
    check_breaks(_missing_field_raised, lambda: (torch.randn(3),), graphs=1, breaks=1)


def _missing_attribute(x):
    return Named("n", a=x + 1).nope


def test_missing_attribute_without_getattr_raises_attributeerror():
    check_breaks(_missing_attribute, lambda: (torch.randn(3),), graphs=1, breaks=1)


def _merged_through_getitem(x):
    d = Doubling(a=x, b=2)
    return dict(d), {**d}, d["b"], list(d.values()), dict.__getitem__(d, "b")


def test_ordereddict_subclass_is_merged_through_its_getitem():
    check(
        _merged_through_getitem,
        lambda: (torch.randn(3),),
        baseline_missing="torch.compile runs the call in Python on 3.12 and 3.13 (no reason "
        "given): dict() and ** of an OrderedDict subclass reading through its __getitem__",
    )


def _stored_through_setitem(x):
    u = Upper({"a": x + 1}, b=2)
    u.update(c=3)
    u["d"] = 4
    return u, list(u)


def test_ordereddict_subclass_init_and_update_store_through_setitem():
    check(_stored_through_setitem, lambda: (torch.randn(3),))


def _copy_and_union(x):
    c = Named("n", a=x * 2)
    return c.copy(), c | {"b": 1}, type(c.copy()).__name__


def test_copy_and_union_of_a_dict_subclass_are_plain_dicts():
    check(_copy_and_union, lambda: (torch.randn(3),))


def _live_at_a_break(x):
    c = Named("n", a=x * 2)
    c.extra = 1
    c["b"] = 3
    print("break")  # ``c`` is rebuilt here: its items in order and its attributes
    return c, vars(c), x + 1


def test_live_at_a_graph_break():
    check_breaks(_live_at_a_break, lambda: (torch.randn(3),), graphs=2, breaks=1)
    assert_no_more_breaks(1, _live_at_a_break, torch.randn(3))
