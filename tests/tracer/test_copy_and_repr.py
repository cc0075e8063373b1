"""``copy.copy``/``copy.deepcopy`` by CPython's copy protocol (``object.__reduce_ex__``,
``copyreg.__newobj__``, ``_reconstruct``), ``T.__new__`` called directly, and ``repr`` of
containers holding objects: each checked against CPython (results, types, identity, the error
raised) and against torch.compile's break counts."""

from __future__ import annotations

import collections
import copy
import copyreg
import dataclasses

import pytest
import torch
from difftest import check, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts


class Plain:
    def __init__(self, a=1):
        self.a = a
        self.items = [a, "x"]

    def method(self):
        return self.a


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: int
    y: list


class WithState:
    """Its own ``__getstate__``/``__setstate__``, written in Python."""

    def __init__(self):
        self.a = 1

    def __getstate__(self):
        return {"a": self.a}

    def __setstate__(self, state):
        for key, value in state.items():
            setattr(self, key, value)


class WithReduce:
    """Its own ``__reduce__``: a copy is made by ``__init__``, which sets ``b``."""

    def __init__(self, a):
        self.a, self.b = a, 2 * a

    def __reduce__(self):
        return (WithReduce, (self.a,))


class OwnDeepcopy:
    def __deepcopy__(self, memo):
        return OwnDeepcopy()


class Slotted:
    __slots__ = ("a",)

    def __init__(self):
        self.a = 1

    def __eq__(self, other):
        return type(other) is Slotted and other.a == self.a

    __hash__ = None


def _no_more_breaks_than_dynamo(fn, *args):
    """bytegraph: one graph, no break, results and inputs as CPython's; torch.compile, where it
    traces ``fn`` at all, no break either."""
    check(fn, *args, calls=1)
    try:
        graphs, breaks = dynamo_counts(fn, *args)
    except Exception:  # noqa: BLE001 (torch.compile's internal error on this torch)
        return
    if breaks >= 0:
        assert (graphs, breaks) == (1, 0), f"torch.compile: {graphs} graphs, {breaks} breaks"


# -- copy.deepcopy through the reduction ----------------------------------------------------------
def test_deepcopy_of_objects_makes_new_objects_in_the_trace():
    def fn(x, p):
        d = copy.deepcopy({"k": p, "again": p, "list": [p, (p, 1)]})
        q = d["k"]
        return (
            x + 1,
            type(q),
            vars(q),
            q is p,
            q is d["again"],
            d["list"][0] is q,
            d["list"][1][0] is q,
            q.items is p.items,
            q.items == p.items,
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), Plain(3))


def test_deepcopy_of_a_cycle_through_an_object():
    def fn(x):
        p = Plain()
        p.me = p
        p.items.append(p)
        q = copy.deepcopy(p)
        return x + 1, q.me is q, q.items[-1] is q, q is not p, len(q.items), type(q)

    check(fn, torch.ones(2))


@pytest.mark.parametrize(
    "value",
    [Frozen(1, [2]), torch.Size([2, 3]), torch.device("cpu"), torch.device("cpu", 0)],
    ids=["frozen_dataclass", "size", "device", "device_index"],
)
def test_deepcopy_of_values_with_their_own_reduction(value):
    def fn(x, v):
        c = copy.deepcopy(v)
        return x + 1, c, type(c), c == v

    _no_more_breaks_than_dynamo(fn, torch.ones(2), value)


def test_deepcopy_of_an_object_made_in_the_trace():
    def fn(x):
        p = Plain(5)
        q = copy.deepcopy(p)
        q.a = 7
        return x + 1, p.a, q.a, type(q), q.items is p.items, q.items

    check(fn, torch.ones(2))


def test_deepcopy_of_a_frozen_dataclass_sets_its_fields_without_setattr():
    def fn(x, f):
        g = copy.deepcopy(f)
        return x + 1, g, g.y is f.y, g == f

    check(fn, torch.ones(2), Frozen(1, [2, 3]))


def _deepcopied_twice(x, v):
    c = copy.deepcopy([v, v])
    return x + 1, type(c[0]), c[0] is c[1], c[0] is v, getattr(c[0], "__dict__", None)


@pytest.mark.parametrize(
    "make",
    [OwnDeepcopy, WithState, lambda: WithReduce(1)],
    ids=["deepcopy", "setstate", "reduce"],
)
def test_deepcopy_of_objects_with_other_protocols_runs_in_python(make):
    """``__deepcopy__`` (CPython's id-keyed memo), a Python ``__setstate__`` or ``__reduce__``:
    the whole copy runs in Python at one graph break, as CPython's results."""
    fn = _deepcopied_twice
    _, _, report = check_breaks(fn, lambda: (torch.ones(2), make()), graphs=1, breaks=1)
    assert "copy.deepcopy of this value runs in Python" in str(report.break_reasons[0])


def test_deepcopy_of_a_slots_object_is_traced():
    """``__slots__``: ``object.__getstate__`` gives the set slots, copied and set on the copy."""
    check_breaks(_deepcopied_twice, lambda: (torch.ones(2), Slotted()), graphs=1, breaks=0)


Point = collections.namedtuple("Point", "x y")
POINT = Point(1, [2])


class PointHolder:
    point = Point(3, 4)


@pytest.mark.parametrize(
    "read",
    [lambda p: p, lambda p: POINT, lambda p: PointHolder.point, lambda p: Point(p.x, p.y)],
    ids=["argument", "global", "attribute", "local"],
)
def test_deepcopy_of_a_namedtuple_makes_a_new_one_in_the_trace(read):
    def fn(x, p):
        v = read(p)
        d = copy.deepcopy({"k": v, "again": v})
        c = d["k"]
        return x + 1, c, type(c), c is v, c is d["again"], c[1] is v[1]

    _no_more_breaks_than_dynamo(fn, torch.ones(2), Point(5, [6]))


def test_deepcopy_of_a_namedtuple_shares_its_items_as_cpython():
    def fn(x, items):
        p = Point(items, items)
        c = copy.deepcopy([p, items])
        return x + 1, c[0].x is c[0].y, c[0].x is c[1], c[0].x is items

    check(fn, torch.ones(2), [1])


@pytest.mark.parametrize(
    "read", [lambda p: p, lambda p: PointHolder.point], ids=["argument", "attribute"]
)
def test_copy_of_a_namedtuple_is_a_new_one(read):
    def fn(x, p):
        v = read(p)
        c = copy.copy(v)
        return x + 1, c, type(c), c is v, c[1] is v[1]

    check(fn, torch.ones(2), Point(5, 6))


NESTED_POINT = Point(Point(1, [2]), {"k": [3]})


@pytest.mark.parametrize(
    "read",
    [
        lambda p: p,
        lambda p: POINT,
        lambda p: NESTED_POINT,
        lambda p: PointHolder.point,
        lambda p: Point(p.x, [p.y]),
        lambda p: Point(p, {"k": p.y}),
    ],
    ids=["argument", "global", "nested_global", "attribute", "local", "nested_local"],
)
@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copy_of_a_namedtuple_holding_containers(read, copier):
    """A namedtuple whose items are lists and dicts (``getattr(x, "__reduce_ex__", None)`` is
    its own method, not one of a copy): a new one, its items shared or copied as CPython's."""

    def fn(x, p):
        v = read(p)
        c = copier(v)
        return x + 1, c, type(c), c[1] is v[1], c[0] is v[0]

    _no_more_breaks_than_dynamo(fn, torch.ones(2), Point(5, [6]))


def test_reduce_ex_of_a_namedtuple():
    def fn(x, p):
        reduced = p.__reduce_ex__(4)
        return x + 1, reduced[0] is copyreg.__newobj__, reduced[1:], object.__getstate__(p)

    check(fn, torch.ones(2), Point(1, 2))


# -- copy.copy: CPython's own code, its reduction traced ------------------------------------------
@pytest.mark.parametrize(
    "make",
    [Plain, lambda: Frozen(1, [2]), WithState, lambda: WithReduce(4)],
    ids=["plain", "frozen_dataclass", "setstate", "reduce"],
)
def test_copy_of_objects(make):
    def fn(x, v):
        object.__setattr__(v, "b", 0)  # a frozen dataclass too
        c = copy.copy(v)
        shared = [c.__dict__[k] is v.__dict__.get(k) for k in vars(c)]
        return x + 1, type(c), vars(c), c is v, shared

    check(fn, torch.ones(2), make(), calls=1)  # a second call sees ``b``: another variant


def test_copy_of_an_object_made_in_the_trace_shares_its_attributes():
    def fn(x):
        p = Plain(2)
        q = copy.copy(p)
        q.items.append(9)
        return x + 1, p.items, q is p, type(q)

    check(fn, torch.ones(2))


# -- copy.copy of a tensor: the real copy.copy, run in Python at one break -------------------------
def _tagged():
    t = torch.arange(3.0)
    t.tag = ["a"]
    return t


TENSORS = {
    "plain": lambda: torch.arange(3.0),
    "leaf_requiring_grad": lambda: torch.arange(3.0, requires_grad=True),
    "non_leaf": lambda: torch.arange(3.0, requires_grad=True) * 2,
    "view_with_offset": lambda: torch.arange(6.0)[2:5],
    "with_attributes": _tagged,
    "parameter": lambda: torch.nn.Parameter(torch.arange(3.0)),
}
GLOBAL_TENSOR = torch.arange(3.0)


def _copied(x, t):
    y = x + 1
    c = copy.copy(t)
    return y, c


def _copied_global(x):
    y = x + 1
    c = copy.copy(GLOBAL_TENSOR)
    return y, c


def _copied_and_written(x, t):
    c = copy.copy(t)
    c.add_(x)  # the copy's storage is the original's: CPython's copy writes through to ``t``
    return c * 2


def _copy_facts(c, t):
    """What CPython's ``copy.copy`` of a tensor makes: a new leaf of the same class over the same
    storage, its ``requires_grad`` and ``__dict__`` (a shallow copy of it) as the original's."""
    return (
        type(c),
        c is t,
        c.tolist(),
        (c.requires_grad, c.is_leaf, c.grad_fn),
        (c.data_ptr() == t.data_ptr(), c.storage_offset(), c.stride()),
        (vars(c), vars(c) is vars(t), [vars(c)[k] is v for k, v in vars(t).items()]),
    )


@pytest.mark.parametrize("make", list(TENSORS.values()), ids=list(TENSORS))
def test_copy_of_a_tensor_runs_in_python_at_one_break(make):
    compiled, counter = compile_counted(_copied)
    from difftest import break_count

    from bytegraph.explain import Recorder

    recorder = Recorder()
    for _ in range(2):
        x, t, t_eager = torch.ones(3), make(), make()
        with recorder:
            y, c = compiled(x, t)
        y_eager, c_eager = _copied(x, t_eager)
        assert y.tolist() == y_eager.tolist()
        assert _copy_facts(c, t) == _copy_facts(c_eager, t_eager)
    assert (counter.frame_count, break_count(recorder.report())) == (1, 1)
    assert "copy.copy of a tensor runs in Python" in str(recorder.report().break_reasons[0])
    assert_no_more_breaks(1, _copied, torch.ones(3), make())


def test_copy_of_a_global_tensor_runs_in_python_at_one_break():
    compiled, _ = compile_counted(_copied_global)
    y, c = compiled(torch.ones(3))
    assert y.tolist() == [2.0, 2.0, 2.0]
    assert _copy_facts(c, GLOBAL_TENSOR) == _copy_facts(copy.copy(GLOBAL_TENSOR), GLOBAL_TENSOR)
    check(_copied_global, torch.ones(3), graphs=1, breaks=1)
    assert_no_more_breaks(1, _copied_global, torch.ones(3))


def test_copy_of_a_tensor_shares_its_storage():
    check_breaks(
        _copied_and_written, lambda: (torch.ones(3), torch.arange(3.0)), graphs=1, breaks=1
    )


# -- object.__reduce_ex__ and object.__getstate__ ------------------------------------------------
@pytest.mark.parametrize("protocol", [2, 4, 7])
def test_reduce_ex_of_a_plain_object(protocol):
    def fn(x, p):
        bound = p.__reduce_ex__(protocol)
        unbound = object.__reduce_ex__(p, protocol)
        return (
            x + 1,
            bound[0] is copyreg.__newobj__,
            bound[1],
            bound[2] is p.__dict__,
            bound[3:],
            unbound[1:3] == bound[1:3],
            object.__getstate__(p) is p.__dict__,
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), Plain())


def test_reduce_ex_of_an_object_without_attributes_has_no_state():
    class Empty:
        pass

    def fn(x, e):
        return x + 1, e.__reduce_ex__(4)[2], object.__getstate__(e)

    check(fn, torch.ones(2), Empty())


@pytest.mark.parametrize("protocol", [None, (1, "a"), "4", 2**40])
def test_reduce_ex_with_a_bad_protocol_raises_cpythons_error(protocol):
    def fn(x, p):
        try:
            p.__reduce_ex__(protocol)
        except (TypeError, OverflowError) as e:
            return x + 1, type(e), str(e)
        return x, None, None

    check(fn, torch.ones(2), Plain())


def test_reduce_ex_calls_the_classs_own_reduce():
    def fn(x, w):
        w.b = 0
        return x + 1, w.__reduce_ex__(4), vars(copy.copy(w))

    check(fn, torch.ones(2), WithReduce(3))


# -- the slot names object.__getstate__ caches on the class ---------------------------------------
def _plain_class():
    class Fresh:
        def __init__(self):
            self.a = 1

    return Fresh


def _namedtuple_class():
    return collections.namedtuple("Fresh", "a b")


SLOT_NAME_READERS = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "getstate": lambda v: v.__getstate__(),
    "reduce_ex": lambda v: v.__reduce_ex__(4)[1:3],
}


def _slot_names_run(fn, make_class, make_value):
    """A fresh class for each run (the cache is the class's): its ``__slotnames__`` after each of
    two calls, the cached list the same object across them, and what the calls gave."""
    cls = make_class()
    values = [make_value(cls) for _ in range(2)]
    results = []
    for value in values:
        results.append(_plainly(fn(torch.ones(2), value)[1], cls, value))
        cached = vars(cls).get("__slotnames__", "absent")
        results.append((cached, cached is vars(cls).get("__slotnames__")))
    return cls, results


def _plainly(result, cls, value):
    """``result`` comparable across runs: an object of ``cls`` as its items or attributes."""
    if isinstance(result, cls):
        items = tuple(result) if isinstance(result, tuple) else vars(result)
        return ("copy", result is value, items)
    if isinstance(result, tuple):
        return tuple(_plainly(item, cls, value) for item in result)
    return cls.__name__ if result is cls else result


@pytest.mark.parametrize("read", list(SLOT_NAME_READERS.values()), ids=list(SLOT_NAME_READERS))
@pytest.mark.parametrize(
    "make_class, make_value",
    [(_plain_class, lambda cls: cls()), (_namedtuple_class, lambda cls: cls(1, "s"))],
    ids=["plain", "namedtuple"],
)
def test_getstate_caches_the_classs_slot_names_as_cpython(read, make_class, make_value):
    """``object.__getstate__`` (reached by copies and reductions) caches ``cls.__slotnames__``,
    found at trace time: the class holds it after the compiled call as after CPython's, and later
    calls keep the same list."""
    from difftest import break_count

    from bytegraph.explain import Recorder

    def fn(x, v):
        return x + 1, read(v)

    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    with recorder:
        cls, got = _slot_names_run(compiled, make_class, make_value)
    _, expected = _slot_names_run(fn, make_class, make_value)
    assert got == expected
    assert got[1] == expected[1] == ([], True)
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)
    missing = ""
    if make_class is _namedtuple_class:
        missing = "torch.compile's trace of a namedtuple's reduction raises: it runs it in Python"
    assert_no_more_breaks(0, fn, torch.ones(2), make_value(make_class()), baseline_missing=missing)


def test_slot_names_deleted_between_calls_are_cached_again():
    cls = _plain_class()

    def fn(x, v):
        return x + 1, copy.copy(v).a

    compiled, counter = compile_counted(fn)
    compiled(torch.ones(2), cls())
    first = cls.__slotnames__
    del cls.__slotnames__
    compiled(torch.ones(2), cls())
    assert cls.__slotnames__ == [] and cls.__slotnames__ is not first
    assert counter.frame_count == 2  # the cache the trace found is gone: a new trace


def test_slot_names_given_by_hand_are_state_as_in_cpython():
    """A class whose ``__slotnames__`` was set by hand: ``object.__getstate__`` adds those
    attributes' values as slot state (run in Python), or raises CPython's error for a value that
    is not a list."""

    def fn(x, v):
        try:
            return x + 1, v.__getstate__()
        except TypeError as e:
            return x + 1, str(e)

    for names in (["b"], ("b",)):
        cls = _plain_class()
        cls.__slotnames__ = names
        compiled, _ = compile_counted(fn)
        value = cls()
        value.b = 2
        assert compiled(torch.ones(2), value)[1:] == fn(torch.ones(2), value)[1:]


# -- T.__new__ called directly -------------------------------------------------------------------
def test_new_of_builtin_types():
    def fn(x, i, f, b, xs, d):
        return (
            x + 1,
            type(i).__new__(type(i)),
            type(f).__new__(type(f), "2.5"),
            type(b).__new__(type(b), 3),
            type(xs).__new__(type(xs), [1, 2]),
            type(d).__new__(type(d)),
            int.__new__(int, "7", 8),
            frozenset.__new__(frozenset, [1]),
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), 7, 2.5, True, [1], {"a": 1})


def test_new_of_builtin_types_raises_cpythons_errors():
    def fn(x):
        out = []
        for make in (lambda: int.__new__(int, "z"), lambda: float.__new__(float, [])):
            try:
                make()
            except (TypeError, ValueError) as e:
                out.append((type(e), str(e)))
        return x + 1, out

    check(fn, torch.ones(2))


def test_object_new_makes_a_blank_object_without_init():
    def fn(x):
        p = object.__new__(Plain)
        p.b = 2
        return x + 1, type(p), vars(p), hasattr(p, "a")

    check(fn, torch.ones(2))


def test_object_new_with_arguments_raises_where_cpython_does():
    class NoInit:
        pass

    def fn(x):
        try:
            object.__new__(NoInit, 1)
        except TypeError as e:
            return x + 1, str(e), type(object.__new__(Plain, 1, 2))
        return x, None, None

    check(fn, torch.ones(2))


# -- repr of containers holding objects ------------------------------------------------------------
def _same_as_eager_on_the_same_inputs(fn, *args, breaks=0):
    """Compiled and eager on the same objects (a default ``repr`` or ``hash`` holds the object's
    address, which a copy of the inputs would change): equal results, ``breaks`` breaks."""
    from difftest import break_count

    from bytegraph.explain import Recorder

    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    with recorder:
        actual = compiled(*args)
    expected = fn(*args)
    assert actual[1:] == expected[1:]
    assert break_count(recorder.report()) == breaks, recorder.report().break_reasons
    return compiled


def _dynamo_traces(fn, *args):
    """torch.compile, where it traces ``fn`` at all, takes no break on it."""
    try:
        graphs, breaks = dynamo_counts(fn, *args)
    except Exception:  # noqa: BLE001 (torch.compile's internal error on this torch)
        return
    if breaks >= 0:
        assert (graphs, breaks) == (1, 0), f"torch.compile: {graphs} graphs, {breaks} breaks"


class Named:
    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"Named({self.key})"

    def __eq__(self, other):
        return type(other) is Named and other.key == self.key

    def __hash__(self):
        return hash(self.key)


def test_repr_of_containers_holding_objects():
    def fn(x, p, n, f, d, s):
        return (
            x + 1,
            repr([n, "b", p, p.method, 2.5]),
            str((n,)),
            repr((n, p)),
            repr(d),
            str(d),
            repr(f),
            str(f),
            repr(s),
            repr([[n], {"k": (p,)}]),
        )

    p, n = Plain(), Named(1)
    args = (torch.ones(2), p, n, frozenset({0, p}), {p: "a", "b": n}, {0, p})
    _same_as_eager_on_the_same_inputs(fn, *args)
    _dynamo_traces(fn, *args)


def test_repr_of_containers_made_in_the_trace():
    def fn(x, p):
        made = Named(2)
        s = {0, made}
        s.add(3)
        f = frozenset([made, 0])
        return x + 1, repr([made, p]), repr(s), repr(f), repr({made: [made]}), str(set(s) - s)

    _same_as_eager_on_the_same_inputs(fn, torch.ones(2), Plain())


def test_repr_of_a_container_holding_itself():
    def fn(x, n):
        xs = [n]
        xs.append(xs)
        d = {"n": n}
        d["d"] = d
        d["xs"] = xs
        return x + 1, repr(xs), repr(d), str((xs,))

    check(fn, torch.ones(2), Named(3))


def test_repr_of_an_item_raising_raises_cpythons_error():
    class Bad:
        def __repr__(self):
            return 5

    def fn(x, b):
        try:
            return repr([1, b])
        except TypeError as e:
            return x + 1, str(e)

    check(fn, torch.ones(2), Bad())


def test_repr_of_objects_with_default_repr_follows_the_object():
    def fn(x, xs):
        return x + 1, repr(xs), str(frozenset(xs[:1]))

    compiled = _same_as_eager_on_the_same_inputs(fn, torch.ones(2), [Plain(), 1])
    a, b = Plain(), Plain()
    assert compiled(torch.ones(2), [a, 1])[1] == repr([a, 1])
    assert compiled(torch.ones(2), [b, 1])[1:] == (repr([b, 1]), str(frozenset([b])))


# -- hash of frozensets of objects -----------------------------------------------------------------
def test_hash_of_a_frozenset_of_objects():
    def fn(x, f, g):
        return x + 1, hash(f), hash(f) == hash(g), hash(frozenset()) == hash(f)

    p = Plain()
    args = (torch.ones(2), frozenset({0, p}), frozenset({p, 0}))
    _same_as_eager_on_the_same_inputs(fn, *args)  # (torch 2.11's Dynamo breaks on it, 2.13's not)


def test_hash_of_a_frozenset_follows_its_objects():
    def fn(x, f):
        return x + 1, hash(f)

    compiled = _same_as_eager_on_the_same_inputs(fn, torch.ones(2), frozenset({0, Plain()}))
    other = frozenset({0, Plain(), Plain.__init__})
    assert compiled(torch.ones(2), other)[1] == hash(other)


# -- the class hooks every class inherits ----------------------------------------------------------
def test_subclasshook_and_init_subclass_of_objects_and_classes():
    def fn(x, p, cls):
        return (
            x + 1,
            p.__subclasshook__(int),
            p.__init_subclass__(),
            cls.__subclasshook__(str),
            cls.__init_subclass__(),
            int.__subclasshook__(int),
            dict.__init_subclass__(),
            issubclass(cls, object),
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), Plain(), Plain)


@pytest.mark.parametrize("value", [7, 2.5, True, "s", b"b"])
def test_class_hooks_read_from_constants(value):
    def fn(x, v):
        return x + 1, v.__subclasshook__(int), v.__init_subclass__()

    _no_more_breaks_than_dynamo(fn, torch.ones(2), value)


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.__init_subclass__(1),
        lambda c: c.__init_subclass__(k=1),
        lambda c: c.__subclasshook__(int, k=1),
        lambda c: c.__subclasshook__(),
        lambda c: c.__subclasshook__(int, str),
        lambda c: int.__init_subclass__(1, 2),
    ],
)
def test_class_hooks_with_bad_arguments_raise_cpythons_error(call):
    def fn(x, p):
        try:
            call(p)
        except TypeError as e:
            return x + 1, str(e)
        return x + 1, None  # a Python whose __subclasshook__ takes any arguments

    check(fn, torch.ones(2), Plain())


def test_bound_class_hook_escapes_as_the_real_method():
    def fn(x, p):
        return x + 1, p.__subclasshook__, type(p).__init_subclass__

    compiled, _ = compile_counted(fn)
    p = Plain()
    assert compiled(torch.ones(2), p)[1:] == fn(torch.ones(2), p)[1:]


class Forwarding:
    """A ``__getattr__`` answering ``__deepcopy__``, which CPython's ``copy`` then calls."""

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        if name.startswith("__") and name != "__deepcopy__":
            raise AttributeError(name)
        return lambda *args: ("forwarded", name)


def test_deepcopy_looks_up_the_protocol_on_the_object():
    def fn(x, v, w):
        w.__deepcopy__ = lambda memo: "own"
        return x + 1, copy.deepcopy(v), copy.deepcopy([w])

    # inputs not copied (a copy of a Forwarding is a tuple): compiled and eager on the same ones
    _same_as_eager_on_the_same_inputs(fn, torch.ones(2), Forwarding(), Plain(), breaks=2)


def test_deepcopy_of_an_input_object_follows_the_object_and_leaves_it_alone():
    def fn(x, p):
        q = copy.deepcopy(p)
        q.items.append(3)
        q.a = q.a + 1
        return x + 1, q, vars(q), p.items, p.a

    compiled, _ = compile_counted(fn)
    for p in (Plain(1), Plain(2), Plain(2.5)):
        p.extra = [p.a]
        expected = fn(torch.ones(2), p)
        actual = compiled(torch.ones(2), p)
        assert type(actual[1]) is Plain and actual[1] is not p
        assert actual[2:] == expected[2:]
        assert vars(p) == {"a": p.a, "items": [p.a, "x"], "extra": [p.a]}


# -- copy.copy of builtin containers: their own unbound copy method ------------------------------
def test_copy_of_containers_and_their_unbound_methods():
    def fn(x, xs, d, s):
        c = copy.copy(xs)
        c.append(9)
        e = copy.copy(d)
        e["new"] = 1
        list.append(xs, 4)
        dict.update(d, k=2)
        return (
            x + 1,
            c,
            c is xs,
            c[0] is xs[0],
            e,
            copy.copy(s),
            copy.copy(s) is s,
            list.copy(xs),
            set.union(s, {7}),
            dict.get(d, "k"),
            xs,
            d,
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [[1], 2], {"a": 1}, {1, 2})


# -- a bound method's and a set's reductions -------------------------------------------------------
def _copied_method(x, obj):
    c = copy.copy(obj.method)
    reduced = obj.method.__reduce_ex__(3)
    return x * c(), c == obj.method, c.__self__ is obj, reduced[0] is getattr, reduced[1][1]


def test_copy_of_a_bound_method_is_the_method_read_again():
    """``method.__reduce__`` is ``(getattr, (obj, name))``: the copy is ``getattr(obj, name)``."""
    check_breaks(_copied_method, lambda: (torch.ones(2), Plain(4)), graphs=1, breaks=0)
    assert_no_more_breaks(0, _copy_of_method, torch.ones(2), Plain(4))


def _copy_of_method(x, obj):
    return x * copy.copy(obj.method)()


def _set_reductions(x, obj):
    cls, (items,), state = frozenset({obj}).__reduce_ex__(4)
    out = [
        {x.dim(), "k"}.__reduce__(),
        (cls, items[0] is obj, state),
        frozenset({3, 1}).__reduce__(),
    ]
    for protocol in (1.5, obj, 2**40):
        try:
            out.append({1}.__reduce_ex__(protocol))
        except (TypeError, OverflowError) as e:
            out.append((type(e).__name__, str(e)))
    return x + 1, out


def test_reduce_of_sets_gives_their_items_in_order_and_checks_the_protocol():
    check_breaks(_set_reductions, lambda: (torch.ones(2), Plain()), graphs=1, breaks=0)
    assert_no_more_breaks(0, _set_reduced, torch.ones(2))


def _set_reduced(x):
    return x + 1, {x.dim(), "k"}.__reduce_ex__(2)


# -- str.format of objects -------------------------------------------------------------------------
class Shown:
    """A ``__repr__`` in Python that records its calls: traced, in CPython's order."""

    def __init__(self, a):
        self.a = a
        self.table = {"k": [5, 6]}
        self.shown = []

    def __repr__(self):
        self.shown.append(self.a)
        return f"Shown({self.a})"


def _formatted(x, obj, plain):
    out = [
        "{}|{!r}|{!s}|{!a}".format(obj, obj, obj, obj),  # noqa: UP032 (str.format itself)
        "{0.a:>4}|{0.table[k][1]}|{p!r:.8}".format(obj, p=plain),  # noqa: UP032 (str.format itself)
        "{:}".format(plain) == repr(plain),  # noqa: UP032 (str.format itself)
    ]
    for template in ("{:d}", "{0.missing}", "{.table[z]}"):
        try:
            out.append(template.format(plain if template == "{:d}" else obj))
        except (TypeError, AttributeError, KeyError) as e:
            out.append((type(e).__name__, str(e)))
    return x + 1, out, obj.shown


#: one object across calls: its repr, computed from its address, is guarded by its identity
_SHOWN_PLAIN = Plain()


def test_str_format_of_objects_is_computed_in_cpythons_order():
    make = lambda: (torch.ones(2), Shown(3), _SHOWN_PLAIN)  # noqa: E731
    check_breaks(_formatted, make, graphs=1, breaks=0)


def _formatted_plainly(x, obj):
    same = "{}-{!r}".format(obj, obj) == "{0}-{0}".format(repr(obj))  # noqa: UP032
    return x + 1, same


def test_str_format_of_an_object_breaks_no_more_than_torch_compile():
    assert_no_more_breaks(0, _formatted_plainly, torch.ones(2), Plain())


def _formatted_tensor(x):
    return "{:.2}".format(x + 1)  # noqa: UP032 (str.format itself)


def test_str_format_of_a_tensor_is_made_after_the_graph():
    check(_formatted_tensor, torch.tensor(1.5), graphs=1, breaks=0)
    check(_formatted_tensor, torch.tensor(-0.25), graphs=1, breaks=0)


_Pair = collections.namedtuple("_Pair", "a b")


def _namedtuple_class_methods(x, p):
    made = (p._make([3, x]), _Pair._make([1, 2]), p._replace(a=5), copy.copy(p))
    replaced = copy.replace(p, b=x) if hasattr(copy, "replace") else None  # Python 3.13
    return x + 1, made, replaced


def test_a_namedtuples_class_methods_read_from_an_instance():
    # ``p._make`` is the class's classmethod (``copy.replace`` calls ``__replace__``, which
    # calls ``self._make``)
    check_breaks(
        _namedtuple_class_methods, lambda: (torch.ones(2), _Pair(1, 2)), graphs=1, breaks=0
    )
