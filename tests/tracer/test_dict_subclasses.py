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
