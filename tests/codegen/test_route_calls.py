"""``codegen/route_calls.py``: code whose every call first passes its callable through a router,
and otherwise runs as the original (results, exceptions, line numbers, closures, generators)."""

from __future__ import annotations

import asyncio
import dis
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
    table.route, table.as_is, table.sites = route, set(as_is), set()
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


def _reads(instr, attribute):
    return instr.opname.startswith("LOAD_ATTR") and instr.argval == attribute


def test_a_site_calling_what_it_found_last_jumps_over_the_jump_to_the_code_placed_apart():
    """The hot path of a call site (its callable is the one it found last, tested by identity)
    takes a short jump over the jump to the code placed after the function's: that one is past
    255 code units here, and would take an ``EXTENDED_ARG`` at every call."""
    seen, route = _with_table(as_is={helper, len})
    fn = routed(calls_in_nested_handlers, route)
    assert fn(3, abs) == calls_in_nested_handlers(3, abs)
    instrs = list(dis.get_instructions(fn))
    sites = [n for n, i in enumerate(instrs) if _reads(i, "last")]
    assert len(sites) >= 4
    far = 0
    for n in sites:
        is_op, hot, *rest = instrs[n + 1 : n + 6]
        assert is_op.opname == "IS_OP"
        assert hot.opname in ("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE"), hot.opname
        extended = rest[0].opname == "EXTENDED_ARG"
        assert rest[extended].opname == "JUMP_FORWARD"  # to the code apart
        assert hot.argval == rest[extended + 1].offset  # over it
        far += extended
    assert far, "no site's code apart is far enough to need an EXTENDED_ARG: the test is moot"


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


# Method calls through a table: on every version the call site routes the method load's
# function (before 3.13 told from the load's ``NULL`` by a cell of the frame), so a method whose
# function the table holds as it is costs no lookup, and no bound method is made or kept.


class Counter:
    """Methods of every kind, called from routed code; ``calls`` records what ran."""

    def __init__(self):
        self.calls = []
        self.callback = self.record  # a bound method held by the instance
        self.plain = helper  # a function held by the instance (no ``self``)

    def record(self, x, k=1):
        self.calls.append((x, k))
        return self

    def chained(self, x):
        return self.record(x).record(x + 1, k=2)

    @staticmethod
    def static(x):
        return x * 3

    @classmethod
    def made(cls, x):
        return cls, x


class Unhashed(Counter):
    """``self`` cannot be hashed (``__eq__`` without ``__hash__``)."""

    def __eq__(self, other):
        return self is other


class PyHashed(Counter):
    """``self`` hashes in Python: routing must not call it."""

    hashes = 0

    def __hash__(self):
        PyHashed.hashes += 1
        return 0


def calls_methods_of(obj, xs):
    """Each call form on ``obj``: method loads with positional, keyword, starred and nested
    arguments, conditional arguments, a comprehension in the arguments, C methods, a bound method
    and a function held by the instance, static and class methods, inside and outside handlers."""
    out = [obj.record(xs[0]) is obj, obj.chained(xs[1]) is obj, obj.record(x=xs[0], k=5) is obj]
    out.append(obj.record(*xs[:1], **{"k": 7}) is obj)
    out.append(obj.record(obj.static(xs[0]) if xs else 0, k=[v for v in xs][0]) is obj)
    out += [obj.static(2), obj.made(4), obj.plain(1, k=2), obj.callback(9) is obj]
    try:
        found = obj.calls.index((xs[0], 1))
        obj.calls.append(obj.record(obj.static(obj.calls.count((1, 1))), k=found) is obj)
        obj.record(None, k=len(obj.calls)).calls.index("missing")
    except ValueError as e:
        out.append(str(e))
    keys = {}.fromkeys(xs)  # a C method bound to a class
    out.append(list(keys))
    stored = obj.record
    out.append(stored(3) is obj)
    return out, list(obj.calls)


@pytest.mark.parametrize("cls", [Counter, Unhashed, PyHashed])
def test_method_calls_through_a_table_give_the_originals_results_and_effects(cls):
    as_is = {Counter.record, Counter.chained, Counter.static, helper, list.append}
    seen, route = _with_table(as_is=as_is)
    fn = routed(calls_methods_of, route)
    for xs in ([1, 2], [4, 0]):
        hashes = PyHashed.hashes
        assert fn(cls(), xs) == calls_methods_of(cls(), xs)
        assert PyHashed.hashes == hashes  # neither call hashed ``self``
    assert not any(isinstance(obj, cls) for obj in seen)  # ``self`` is never a callable
    assert all(getattr(obj, "__func__", None) not in as_is for obj in seen)  # no lookup for them


def test_a_method_load_routes_the_function_and_calls_the_answer_with_self():
    def replacement(self, x, k=1):
        return ("replaced", type(self).__name__, x, k)

    def calls_record(obj):
        return obj.record(1), obj.record(x=2, k=3), obj.callback(4) is obj

    seen, route = _with_table({Counter.record: replacement})
    fn = routed(calls_record, route)
    obj = Counter()
    assert fn(obj) == (("replaced", "Counter", 1, 1), ("replaced", "Counter", 2, 3), True)
    assert obj.calls == [(4, 1)]  # only the bound method held by the instance ran: asked
    assert Counter.record not in seen and obj.callback in seen


def test_a_method_replaced_on_its_class_or_given_new_code_runs_the_new_one(monkeypatch):
    seen, route = _with_table(as_is={Child.scale, Base.scale})

    def calls_scale(obj, x):
        return obj.scale(x)

    fn = routed(calls_scale, route)
    assert fn(Child(), 3) == 7
    monkeypatch.setattr(Child, "scale", lambda self, x: x * 100)
    assert fn(Child(), 3) == 300  # not in the set: asked
    monkeypatch.setattr(Child, "scale", Base.scale)
    assert fn(Child(), 3) == 6
    monkeypatch.setattr(Base.scale, "__code__", (lambda self, x: x - 1).__code__)
    assert fn(Child(), 3) == 2  # the function in the set runs its new code


class Temporary:
    def value(self, x):
        return x + 1


def test_a_temporary_objects_method_called_from_routed_code_does_not_stay_alive():
    import weakref

    def calls_on_a_temporary(x):
        obj = Temporary()
        ref = weakref.ref(obj)
        stored = obj.value
        y = obj.value(x) + stored(x) + Temporary().value(x)
        del obj, stored
        return y, ref

    def route(obj):  # keeps nothing (``_recording`` would keep the bound method)
        return obj

    for as_is in ((), (Temporary.value,)):
        route.table = table = _Table()
        table.route, table.as_is, table.sites = route, set(as_is), set()
        fn = routed(calls_on_a_temporary, route)
        for _ in range(2):
            y, ref = fn(1)
            assert y == 6 and ref() is None  # no cycle: freed without a collection


def test_the_frames_cell_is_not_among_its_locals():
    seen, route = _with_table(as_is={Counter.record})

    def reads_locals(obj):
        obj.record(1)
        names = sorted(locals())
        obj.record(names)
        return names

    fn = routed(reads_locals, route)
    assert fn(Counter()) == reads_locals(Counter()) == ["obj"]


def test_stored_bound_methods_called_as_they_are_need_no_lookup():
    seen, route = _with_table(as_is={Counter.record})

    def calls_stored(obj, values):
        record, append = obj.record, values.append  # a bound method, a C method bound to a list
        for v in range(3):
            record(v)
            append(v)
        return values, obj.calls

    fn = routed(calls_stored, route)
    assert fn(Counter(), []) == calls_stored(Counter(), [])
    assert not any(getattr(obj, "__self__", None) is not None for obj in seen)


def scaled_values(obj, n):
    for v in range(n):
        yield obj.scale(v), super(Child, obj).scale(v)


def test_super_and_generators_route_method_loads_through_the_table():
    seen, route = _with_table(as_is={Base.scale})
    method = routed(Child.scale, route)  # ``super().scale``: the method form of the super load
    assert method(Child(), 5) == Child().scale(5) and Base.scale not in seen
    gen = routed(scaled_values, route)
    assert list(gen(Child(), 3)) == list(scaled_values(Child(), 3))
    assert Child.scale in seen and Base.scale not in seen  # asked for the one not in the set


async def _value(x):
    return x


async def awaits_in_method_arguments(obj, xs):
    out = []
    for x in xs:
        try:
            out.append(obj.record(await _value(x), k=await _value(x + 1)) is obj)
            if x == 2:
                obj.record(await _value(x)).calls.index("missing")
        except ValueError as e:
            out.append(str(e))
    return out, obj.calls


def yields_in_method_arguments(obj, xs):
    for x in xs:
        try:
            obj.record((yield x), k=x)
        except KeyError:
            obj.record("thrown")
    return obj.calls


def _driven(gen):
    it = gen(Counter(), [1, 2, 3])
    out = [next(it), it.send("a"), it.throw(KeyError())]
    with pytest.raises(StopIteration) as stopped:
        it.send("c")
    return [*out, stopped.value.value]


def test_method_calls_with_awaits_and_yields_in_their_arguments():
    seen, route = _with_table(as_is={Counter.record})
    coroutine = routed(awaits_in_method_arguments, route)
    expected = asyncio.run(awaits_in_method_arguments(Counter(), [1, 2, 3]))
    assert asyncio.run(coroutine(Counter(), [1, 2, 3])) == expected
    generator = routed(yields_in_method_arguments, route)
    assert _driven(generator) == _driven(yields_in_method_arguments)
    assert Counter.record not in seen


def _closing_over(k):
    def inner(obj, x):
        made = lambda: obj.record(x, k=k)  # noqa: E731 (``obj`` and ``x`` become cells)
        obj.record(made() is obj)
        return obj.calls, k

    return inner


class Captures(Base):
    def scale(self, x):
        same = lambda: self  # noqa: E731 (``self`` becomes a cell)
        return super().scale(x) + (same() is self) + self.plain(x)

    def plain(self, x):
        return x


def test_method_calls_in_code_with_cells_and_free_variables():
    seen, route = _with_table(as_is={Counter.record, Base.scale})
    inner = _closing_over(3)
    assert routed(inner, route)(Counter(), 1) == inner(Counter(), 1)
    assert routed(Captures.scale, route)(Captures(), 4) == Captures().scale(4) == 13
    assert Counter.record not in seen and Base.scale not in seen
