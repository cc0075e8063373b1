"""Code that torch.compile traces and bytegraph once broke on: user-class protocols (number
conversions, iterators), each compared with eager (results, errors, arguments after the call) and
its break count with torch.compile's on the same code."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from difftest import assert_same, break_count, check, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph
from bytegraph.explain import Recorder


def ones():
    return (torch.ones(3),)


# -- int() / float(): __int__, __float__, __index__ -----------------------------------------------


class Num:
    def __init__(self, v):
        self.v = v

    def __int__(self):
        return int(self.v) + 1

    def __float__(self):
        return self.v + 0.25


class Index:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v * 2


class HalfNum(Num):  # __int__ inherited, __float__ its own
    def __float__(self):
        return self.v / 2


class IndexAndInt(Index):  # __int__ wins over __index__ in int(); float() takes __index__
    def __int__(self):
        return -self.v


def conversions(n, x):
    return x * float(n), int(n), x + int(n), float(n) == int(n)


@pytest.mark.parametrize("make", [Num, Index, HalfNum, IndexAndInt])
def test_int_and_float_of_an_object_call_its_methods(make):
    for v in (3, 4):
        check(conversions, make(v), torch.ones(3), graphs=1, breaks=0)
    assert_no_more_breaks(0, conversions, make(3), torch.ones(3))


class Wrong:
    def __init__(self, value):
        self.value = value

    def __int__(self):
        return self.value

    def __float__(self):
        return self.value

    def __index__(self):
        return self.value


def converted_or_error(n, x):
    out = []
    for kind in (int, float):
        try:
            out.append(kind(n))
        except TypeError as e:
            out.append(str(e))
    return x + 1, out


@pytest.mark.parametrize("value", ["7", 2.5, 3, None], ids=repr)
def test_a_conversion_returning_another_type_raises_cpythons_error(value):
    # __int__ returning a float, a str or None, __float__ returning an int: TypeError each
    check(converted_or_error, Wrong(value), torch.ones(3), graphs=1, breaks=0)


def test_a_conversion_returning_a_tensor_raises_cpythons_error():
    check(converted_or_error, Wrong(torch.ones(())), torch.ones(3), graphs=1, breaks=0)


def test_a_conversion_returning_a_subclass_warns_at_each_call():
    # int() of an object whose __int__ returns a bool: CPython's DeprecationWarning at run time
    compiled, _ = compile_counted(converted_or_error)
    seen = []
    for fn in (converted_or_error, compiled, compiled):
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            _, out = fn(Wrong(True), torch.ones(3))
        seen.append((out, [(w.category, str(w.message)) for w in warned]))
    assert seen[0][0] == [1, "Wrong.__float__ returned non-float (type bool)"]
    assert seen[0][1] and seen[1] == seen[0] and seen[2] == seen[0]


def test_float_of_an_index_made_of_a_tensor_value():
    def fn(x):
        return x * float(Index(x.shape[0])), int(Index(len(x)))

    check(fn, torch.ones(3), graphs=1, breaks=0)
    check_breaks(fn, lambda: (torch.ones(4),), graphs=1, breaks=0)


# -- iterators written as classes: __iter__ / __next__ ---------------------------------------------


class Count:  # its own iterator
    def __init__(self, n):
        self.n = n
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i


class Done(StopIteration):
    pass


class Steps:  # an iterable giving a new iterator each time, which ends by a StopIteration subclass
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return StepIter(self.n)


class StepIter:
    def __init__(self, n):
        self.left = n

    def __next__(self):
        if not self.left:
            raise Done()
        self.left -= 1
        return self.left * 10


class Inner:  # __next__ takes from an iterator it holds: the builtin's StopIteration ends it
    def __init__(self, items):
        self.it = iter(items)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.it) + 1


def loops(c, x):
    for v in c:
        x = x + v
    return x * 2, c.i


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_loop_over_an_object_that_is_its_own_iterator(n):
    check_breaks(loops, lambda: (Count(n), torch.ones(2)), graphs=1, breaks=0)
    assert_no_more_breaks(0, loops, Count(n), torch.ones(2))


def consumers(x):
    c = Count(3)
    it = iter(c)
    first = next(it)
    rest = list(it)
    after = next(c, "end")
    made = [v for v in Steps(2)], sum(Steps(3))
    zipped = list(zip(Inner([5, 6, 7]), range(2), strict=False))
    a, b = Steps(2)
    return x + first, it is c, rest, after, made, zipped, a, b, c.i, sorted(Steps(3))


def test_builtins_and_unpacking_consume_iterators_written_as_classes():
    check_breaks(consumers, lambda: (torch.ones(2),), graphs=1, breaks=0)


def next_errors(x):
    out = []
    for make in (lambda: Count(0), lambda: StepIter(0), lambda: Inner([])):
        try:
            out.append(next(make()))
        except StopIteration as e:
            out.append(type(e).__name__)
    return x + 1, out


def test_next_lets_the_objects_own_stop_iteration_out():
    check_breaks(next_errors, lambda: (torch.ones(2),), graphs=1, breaks=0)


class Failing(Count):
    def __next__(self):
        if self.i == 2:
            raise ValueError("two")
        return super().__next__()


def failing_loop(c, x):
    try:
        for v in c:
            x = x * v
    except ValueError as e:
        return x, str(e), c.i
    return x, None, c.i


def test_another_error_of_next_is_the_loops_error():
    check_breaks(failing_loop, lambda: (Failing(5), torch.ones(2)), graphs=1, breaks=0)


def loop_with_a_break(c, x):
    for v in c:
        x = x + v
        print("at", v)
        bytegraph.graph_break()
    return x, c.i


def test_a_break_in_the_loop_resumes_on_the_same_object():
    check_breaks(loop_with_a_break, lambda: (Count(3), torch.ones(2)), graphs=2, breaks=3)


class Valued(Count):  # ends with a value: what ``yield from`` over it gives
    def __next__(self):
        if self.i >= self.n:
            raise StopIteration(self.n * 100)
        return super().__next__()


def delegating(c):
    got = yield from c
    yield got


def yield_from(c, x):
    items = list(delegating(c))
    return x + sum(items[:-1]), items, [v for v in Valued(2)]


def test_yield_from_gives_the_value_of_the_objects_stop_iteration():
    # the value is not followed by the trace: a break there, the result CPython's
    check_breaks(yield_from, lambda: (Valued(3), torch.ones(2)), graphs=1, breaks=2)


# -- writes into an object's __dict__: vars(obj)[k] = v, vars(obj).update(...) ---------------------


class Lazy:  # a non-data descriptor: a key of the instance dict hides it
    def __get__(self, obj, typ=None):
        return 10 if obj is None else obj.k * 2


class Plain:
    d = Lazy()
    shared = 5

    def __init__(self, k=1):
        self.k = k
        self.a = 1


class Guarded(Plain):
    calls = []

    def __setattr__(self, name, value):  # not run by a write into __dict__
        Guarded.calls.append(name)
        object.__setattr__(self, name, value)

    @property
    def p(self):
        return "property"


def dict_writes(o, x):
    before = o.d
    vars(o).update(b=2, c=x)
    o.__dict__["d"] = 7
    vars(o)["k"] = 3  # an existing key keeps its place
    vars(o).update({"shared": x * 2, "e": None})
    return x * o.b + o.c * o.d, before, o.d, o.shared, list(vars(o)), "d" in o.__dict__


@pytest.mark.parametrize("cls", [Plain, Guarded])
def test_writes_into_an_instance_dict_are_stores_of_the_object(cls):
    Guarded.calls.clear()
    check_breaks(dict_writes, lambda: (cls(2), torch.ones(2)), graphs=1, breaks=0)
    assert Guarded.calls == (["k", "a"] * 2 if cls is Guarded else [])  # in __init__ only
    assert_no_more_breaks(0, dict_writes, cls(2), torch.ones(2))


def made_in_the_trace(x):
    o = Plain()
    vars(o)["t"] = x + 1
    return vars(o), o.t * 2, type(o)


def test_a_write_into_the_dict_of_an_object_made_in_the_trace():
    check_breaks(made_in_the_trace, lambda: (torch.ones(2),), graphs=1, breaks=0)


def data_descriptor_name(o, x):
    vars(o)["p"] = "dict"  # the property still wins on reads
    return x + 1, o.p, vars(o)["p"]


def test_a_write_beside_a_data_descriptor_breaks_and_is_eagers():
    check_breaks(data_descriptor_name, lambda: (Guarded(), torch.ones(2)), graphs=1, breaks=1)


def test_a_property_added_to_the_class_later_is_seen():
    def fn(o, x):
        vars(o)["q"] = 1
        return x + o.q

    compiled, _ = compile_counted(fn)

    class C:
        pass

    assert compiled(C(), torch.ones(2)).tolist() == [2.0, 2.0]
    C.q = property(lambda self: 40)
    assert compiled(C(), torch.ones(2)).tolist() == fn(C(), torch.ones(2)).tolist() == [41.0] * 2


def deleted_then_written(o, x):
    del o.a
    vars(o)["a"] = 4  # now the last key
    return x + o.a, list(vars(o))


def test_a_key_written_after_its_deletion_keeps_eagers_order():
    check_breaks(deleted_then_written, lambda: (Plain(), torch.ones(2)), graphs=1, breaks=1)


class Cached:
    def __init__(self, t):
        self.t = t
        self.runs = 0

    @functools.cached_property
    def double(self):
        self.runs += 1
        return self.t * 2

    @functools.cached_property
    def quad(self):  # reads the other one
        return self.double * 2


def cached_reads(o, x):
    return x + o.quad + o.double + o.quad, o.runs, sorted(vars(o))


def test_cached_properties_store_into_the_instance_dict():
    # CPython before 3.12 takes an RLock in cached_property.__get__: a break at each first read
    breaks = 1 if hasattr(functools.cached_property(len), "lock") else 0
    make = lambda: (Cached(torch.ones(2)), torch.ones(2))  # noqa: E731
    check_breaks(cached_reads, make, graphs=1, breaks=breaks)


# -- a class's __dict__ read after the trace stored attributes to the class ---------------------


def make_classes():
    class Base:
        x = 1
        y = 2

    class Sub(Base):
        z = 3

    return Base, Sub


def own_names(cls):
    return [k for k in vars(cls) if not k.startswith("__")]


def class_stores(classes, x, name):
    base, sub = classes
    setattr(base, name, getattr(base, name, 0) + 1)
    base.b = x  # new names appended in the order stored
    base.a = 1
    base.b = x * 2  # stored twice: the last value, the first place
    sub.y = 7
    ns = base.__dict__
    return (
        x + getattr(base, name),
        ns.get(name),
        ns["b"],
        own_names(base),
        own_names(sub),
        "a" in ns,
        vars(sub)["y"],
        len(ns),
    )


def test_a_class_namespace_read_after_stores_shows_them():
    # (torch.compile raises inside Dynamo on this function: the sweep's getattr_class_level
    # compares the counts)
    compiled, _ = compile_counted(class_stores)
    recorder = Recorder()
    for name in ("x", "y", "new", "x"):
        eager_classes, classes = make_classes(), make_classes()
        expected = class_stores(eager_classes, torch.ones(2), name)
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            actual = compiled(classes, torch.ones(2), name)
        assert_same(actual, expected)
        for real, eager in zip(classes, eager_classes, strict=True):
            assert own_names(real) == own_names(eager)
            values = [[getattr(c, k) for k in own_names(c)] for c in (real, eager)]
            assert_same(*values)
    assert break_count(recorder.report()) == 0


def store_after_read(cls, x):
    ns = cls.__dict__
    cls.x = 10  # the proxy shows it too: the trace breaks here
    return x + ns["x"], own_names(cls)


def test_a_store_after_the_namespace_was_read_breaks_and_is_eagers():
    compiled, _ = compile_counted(store_after_read)
    expected = store_after_read(make_classes()[0], torch.ones(2))
    assert_same(compiled(make_classes()[0], torch.ones(2)), expected)


def renamed(cls, x):
    cls.__name__ = "Renamed"  # type's descriptor: not a key of the namespace
    cls.__doc__ = "doc"
    return x + 1, "__name__" in cls.__dict__, cls.__dict__.get("__doc__"), cls.__name__


def test_a_store_through_a_metaclass_descriptor_is_eagers():
    compiled, _ = compile_counted(renamed)
    expected = renamed(make_classes()[0], torch.ones(2))
    cls = make_classes()[0]
    assert_same(compiled(cls, torch.ones(2)), expected)
    assert cls.__name__ == "Renamed" and "__name__" not in vars(cls)


# -- sorted/min/max over objects comparing in Python -----------------------------------------------

compared = []


class Lt:
    def __init__(self, v):
        self.v = v

    def __lt__(self, o):
        compared.append((self.v, getattr(o, "v", o)))
        return self.v < (o.v if isinstance(o, Lt) else o)

    def __gt__(self, o):
        compared.append(("gt", self.v))
        return self.v > (o.v if isinstance(o, Lt) else o)


class GtOnly:  # a < b is b.__gt__(a), reflected
    def __init__(self, v):
        self.v = v

    def __gt__(self, o):
        compared.append(("gt", self.v, o.v))
        return [1] if self.v > o.v else []  # any value: its truth decides


class LtSub(Lt):
    pass


def orderings(a, x):
    compared.clear()
    items = [Lt(3), a, LtSub(1), Lt(5), Lt(2)]
    ordered = [o.v for o in sorted(items)] + [o.v for o in sorted(items, reverse=True)]
    g = [o.v for o in sorted([GtOnly(2), GtOnly(a.v), GtOnly(1)])]
    mixed = [getattr(o, "v", o) for o in sorted([Lt(2), 1, Lt(0)], key=lambda o: o)]
    return x + 1, ordered, g, min(items).v, max(items).v, mixed, list(compared)


def mixed_sort(a, x):
    try:
        return x, sorted([1, Lt(2), "s"])
    except TypeError as e:
        return x + 1, str(e)


def test_sorted_min_max_compare_objects_as_cpython_does():
    for v in (0, 4):
        check_breaks(orderings, lambda v=v: (Lt(v), torch.ones(2)), graphs=1, breaks=0, calls=1)
    assert_no_more_breaks(0, orderings, Lt(4), torch.ones(2))
    check_breaks(mixed_sort, lambda: (Lt(0), torch.ones(2)), graphs=1, breaks=0)


class ByTensor:
    def __init__(self, t):
        self.t = t

    def __lt__(self, o):
        return bool(self.t.sum() < o.t.sum())


def tensor_order(x):
    return sorted([ByTensor(x), ByTensor(x * 2), ByTensor(-x)])[0].t


def test_a_comparison_of_tensor_values_breaks_and_is_eagers():
    check_breaks(tensor_order, lambda: (torch.ones(2),), graphs=1, breaks=1)
