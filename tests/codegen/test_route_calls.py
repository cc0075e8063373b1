"""``codegen/route_calls.py``: code whose every call first passes its callable through a router,
and otherwise runs as the original (results, exceptions, line numbers, closures, generators)."""

from __future__ import annotations

import functools
import traceback
import types

import pytest
from bytegraph.codegen.pyversion import NULL_ABOVE_CALLABLE
from bytegraph.codegen.route_calls import routed


class Base:
    def scale(self, x):
        return x * 2


class Child(Base):
    def scale(self, x):
        return super().scale(x) + 1

    @staticmethod
    def twice(x):
        return 2 * x


def helper(x, k=1):
    return x + k


def with_every_call_form(x, *args, **kwargs):
    obj = Child()
    a = obj.scale(x)  # method
    b = helper(x, k=3)  # keywords
    c = helper(*args, **kwargs)  # *args, **kwargs
    d = helper(*args)
    e = Child.twice(x) + obj.twice(x)  # static method, through the class and the instance
    f = sum(helper(v) for v in range(x))  # a generator expression's own call
    g = [helper(v) for v in range(x)]  # a comprehension
    h = (lambda y: helper(y, k=y))(x)  # a lambda
    i = functools.partial(helper, k=5)(x)
    return a, b, c, d, e, f, g, h, i


def _recording():
    seen = []

    def route(obj):
        seen.append(obj)
        return obj

    return seen, route


def test_every_call_form_gives_the_original_results_and_routes_its_callable():
    seen, route = _recording()
    fn = routed(with_every_call_form, route)
    assert fn(3, 4, k=2) == with_every_call_form(3, 4, k=2)
    names = {getattr(obj, "__qualname__", None) for obj in seen}
    assert {"Child.scale", "helper", "Child.twice", "Child", "sum", "range"} <= names
    if NULL_ABOVE_CALLABLE:  # a method load's function: its instance is the call's first argument
        assert Child.scale in seen
    else:  # methods arrive bound, with their instance, never as a function and ``self`` apart
        assert any(getattr(obj, "__self__", None).__class__ is Child for obj in seen)
    assert all(not isinstance(obj, range) for obj in seen)  # an iterator is not a callable


def test_what_the_router_gives_for_a_method_is_called_with_its_instance():
    def replacement(self, x):
        return (type(self).__name__, x * 100)

    def route(obj):
        if obj is Child.scale:
            return replacement
        if getattr(obj, "__func__", None) is Child.scale:
            return types.MethodType(replacement, obj.__self__)
        return obj

    def calls_methods(obj, x):
        return obj.scale(x), obj.scale(x=x), obj.twice(x), Child.scale(obj, x)

    fn = routed(calls_methods, route)
    expected = (("Child", 300), ("Child", 300), 6, ("Child", 300))
    assert calls_methods(Child(), 3) == (7, 7, 6, 7) and fn(Child(), 3) == expected


def test_the_router_decides_what_is_called():
    def doubled(x):
        return x * 2

    def caller(x):
        return doubled(x) + 1

    fn = routed(caller, lambda obj: (lambda x: x * 10) if obj is doubled else obj)
    assert caller(1) == 3 and fn(1) == 11


def super_call(obj, x):
    return Child.scale(obj, x)


def test_zero_argument_super_and_closures_keep_working():
    seen, route = _recording()
    method = routed(Child.scale, route)
    assert method(Child(), 5) == Child().scale(5)
    # the method ``super()`` finds: its function from 3.13, bound to the instance before
    assert any(getattr(obj, "__func__", obj) is Base.scale for obj in seen)

    def outer(n):
        def add(y):
            return y + n

        return routed(add, route)

    assert outer(4)(1) == 5


def _raises(x):
    if x > 1:
        raise ValueError(f"too big: {x}")
    return x


def with_handlers(x):
    try:
        y = _raises(x)
    except ValueError as e:
        y = str(e)
    finally:
        x = -x
    return y, x


def test_exception_handling_and_line_numbers_are_the_originals():
    seen, route = _recording()
    fn = routed(with_handlers, route)
    assert fn(0) == with_handlers(0) and fn(5) == with_handlers(5)

    def raising(x):
        return _raises(x)

    plain = routed(raising, route)
    with pytest.raises(ValueError) as caught:
        plain(7)
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert [(f.name, f.lineno) for f in frames[1:]] == [
        ("raising", raising.__code__.co_firstlineno + 1),
        ("_raises", _raises.__code__.co_firstlineno + 2),
    ]


def counting(n):
    for i in range(n):
        yield helper(i)


def test_generators_stay_generators():
    seen, route = _recording()
    gen = routed(counting, route)
    assert list(gen(3)) == list(counting(3)) and helper in seen


def test_defaults_keywords_and_attributes_are_kept():
    def fn(a, b=2, *, c=3):
        return helper(a + b + c)

    fn.marker = "kept"
    fn.__module__ = "somewhere.else"
    new = routed(fn, lambda obj: obj)
    assert new(1) == fn(1) and new(1, c=0) == fn(1, c=0)
    assert new.__qualname__ == fn.__qualname__ and new.marker == "kept"
    assert new.__module__ == "somewhere.else" and new.__kwdefaults__ == {"c": 3}


class _Table(dict):
    """A router's table as ``callees.RouteTable`` is one: a miss asks the router; ``as_is``
    holds the callables called as they are."""

    __hash__ = object.__hash__
    __eq__ = object.__eq__

    def __missing__(self, obj):
        return self.route(obj)


def _with_table(replace=None, as_is=()):
    seen, route = _recording()
    route.table = table = _Table(replace or {})
    table.route, table.as_is = route, set(as_is)
    return seen, route


class Unhashable:
    """A callable that cannot be a dict key (``__eq__`` without ``__hash__``)."""

    def __eq__(self, other):
        return self is other

    def __call__(self, x):
        return x + 100


def calls_in_nested_handlers(x, fn):
    out = []
    try:
        for v in range(x):
            try:
                out.append(fn(v) + helper(v, k=2))
                if v == 1:
                    raise KeyError(v)
            except KeyError as e:
                out.append(helper(*e.args))
    finally:
        out.append(len(out))
    return out


def test_a_table_answers_call_sites_and_a_miss_asks_the_router():
    seen, route = _with_table({helper: lambda x, k=1: x * 1000})
    fn = routed(calls_in_nested_handlers, route)
    assert fn(3, abs) == [0 + 0, 1 + 1000, 1000, 2 + 2000, 4]
    assert helper not in seen  # found in the table: the router is not called
    assert abs in seen and len in seen  # not in it: asked, at each call


def test_a_callable_in_the_tables_as_is_set_is_called_without_a_lookup():
    # the table would answer otherwise for ``helper``: the set is tested first
    seen, route = _with_table({helper: lambda x, k=1: x * 1000, len: len}, as_is={helper})
    fn = routed(calls_in_nested_handlers, route)
    assert fn(3, abs) == calls_in_nested_handlers(3, abs)
    assert helper not in seen and len not in seen and abs in seen


def test_an_unhashable_callable_is_routed_and_handlers_still_see_the_calls_exceptions():
    seen, route = _with_table()
    fn = routed(calls_in_nested_handlers, route)
    unhashable = Unhashable()
    assert fn(3, unhashable) == calls_in_nested_handlers(3, unhashable)
    assert any(obj is unhashable for obj in seen)
    assert fn(5, Unhashable()) == calls_in_nested_handlers(5, Unhashable())


def test_generators_with_a_table_stay_generators():
    seen, route = _with_table()
    gen = routed(counting, route)
    assert list(gen(3)) == list(counting(3)) and helper in seen


def test_a_called_functions_exception_reaches_the_callers_handler():
    seen, route = _with_table({_raises: _raises})
    fn = routed(with_handlers, route)
    assert fn(5) == with_handlers(5) == ("too big: 5", -5)
    chained = routed(calls_in_nested_handlers, route)
    assert chained(3, abs) == calls_in_nested_handlers(3, abs)
