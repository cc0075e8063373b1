"""``collections.namedtuple(...)`` called inside the compiled function, and what the class it
makes offers (``_make``, ``_replace``, ``_fields``, ``_asdict``, defaults): one graph, as
torch.compile compiles it. The class is made once, when the call is traced (as torch.compile makes
it), so the tests compare what the class does, not its identity (eager makes a new one per call).
"""

from __future__ import annotations

import collections

import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_counts


def check(fn, *args):
    """One graph, no break, the same results and arguments as eager, twice."""
    check_breaks(fn, lambda: args, graphs=1, breaks=0)
    assert dynamo_counts(fn, *args) == (1, 0)  # torch.compile: one graph as well


def _make_and_replace(x):
    P = collections.namedtuple("P", ["a", "b"])
    p = P._make([x, 2])
    q = p._replace(b=3)
    return q.a * q.b, P._fields, tuple(q), type(q).__name__


def test_namedtuple_class_made_in_the_function():
    check(_make_and_replace, torch.randn(3))


def _from_string_with_defaults(x):
    Cfg = collections.namedtuple("Cfg", "scale bias, extra", defaults=(1, 0))
    c = Cfg(x)
    d = Cfg(x, bias=2)
    return c.scale * c.extra + d.bias, c._asdict()["bias"], Cfg._field_defaults, repr(Cfg(1))


def test_field_string_defaults_asdict_and_repr():
    check(_from_string_with_defaults, torch.randn(3))


def _renamed(x):
    R = collections.namedtuple("R", ["ok", "def", "ok", "_x"], rename=True)
    return x + 1, R._fields


def test_rename_replaces_keywords_duplicates_and_underscores():
    check(_renamed, torch.randn(3))


def _module_of_the_class(x):
    P = collections.namedtuple("P", "a")
    Q = collections.namedtuple("Q", "a", module="elsewhere")
    return x + 1, P.__module__, Q.__module__, P.__qualname__


def test_class_module_is_the_callers():
    # CPython names the caller's module (here this test module), not the tracer's
    check(_module_of_the_class, torch.randn(3))


def _invalid_field_name(x):
    collections.namedtuple("P", ["a", "a"])
    return x + 1


def test_invalid_fields_raise_like_cpython():
    # CPython's ValueError, raised where CPython raises it (bytegraph counts it as its one break)
    check_breaks(_invalid_field_name, lambda: (torch.randn(3),), graphs=0, breaks=1)
