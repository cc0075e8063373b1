"""``del obj.name`` where the class's ``name`` is a data descriptor runs its deleter in the trace:
a property's ``fdel``, a Python ``__delete__``; on a property without a deleter CPython raises
its ``AttributeError`` at a break. On an object made in the call and on one given to it (the
deletion replayed). Compared with eager and with torch.compile's break count."""

from __future__ import annotations

import torch

from tests.difftest import check, check_breaks
from tests.dynamo_baseline import assert_no_more_breaks


class WithProp:
    def __init__(self, t):
        self._t = t

    @property
    def val(self):
        return self._v

    @val.setter
    def val(self, v):
        self._v = v + 1

    @val.deleter
    def val(self):
        del self._v


class Logged:
    def __get__(self, obj, owner=None):
        return 1

    def __set__(self, obj, v):
        obj.__dict__["d"] = v

    def __delete__(self, obj):
        obj.log.append("deleted")


class UsesLogged:
    d = Logged()

    def __init__(self):
        self.log = []


class NoDeleter:
    @property
    def p(self):
        return 1


def property_deleter(x):
    w = WithProp(x)
    w.val = x
    v = w.val
    del w.val
    return v * 2, hasattr(w, "_v")


def python_delete(x):
    u = UsesLogged()
    del u.d
    return u.log, x + 1


def no_deleter(x):
    n = NoDeleter()
    try:
        del n.p
    except AttributeError:
        return x - 1
    return x


def deleter_of_an_input(w, x):
    del w.val
    return x * 2


def _input():
    w = WithProp(1)
    w.val = 2
    return w, torch.randn(3)


def test_property_deleter_is_traced():
    check(property_deleter, torch.randn(3))
    assert_no_more_breaks(0, property_deleter, torch.randn(3))


def test_python_delete_is_traced():
    check(python_delete, torch.randn(3))


def test_property_without_deleter_raises():
    check_breaks(no_deleter, lambda: (torch.randn(3),), graphs=0, breaks=1)


def test_deleter_on_an_input_is_replayed():
    check_breaks(deleter_of_an_input, _input, graphs=1, breaks=0)
