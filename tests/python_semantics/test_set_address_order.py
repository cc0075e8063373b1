"""Reads of a set's order where its items hash by address (plain objects, functions, bound
methods, modules, tensors), the objects made in the compiled function.

CPython lays such a set out by the items' addresses, which differ from call to call: the order a
compiled call gives must be the one CPython gives for *that call's* objects. The trace cannot
know it (``containers.SetVariable.ordered``): every order-dependent read (a loop, ``list(s)``,
unpacking, ``s.pop()``, ``str(s)``, a tie in ``min``/``sorted``...) breaks, and the set is built
and read in Python. Objects read from the inputs keep their addresses: their identity is
guarded instead, and the read is traced (not tensors: the trace keys them by graph node).

Each test calls the compiled function several times, keeping every result alive and allocating
objects in between, so each call's objects lie elsewhere; it returns the objects it made, and the
read is compared with CPython's read of a set built from those objects in the same way. It also
checks that the orders really varied over the calls (a test that cannot fail is none).
torch.compile breaks none of these and gives the trace's (insertion) order on every call, a
wrong result: no baseline to compare break counts with.
"""

from __future__ import annotations

import functools
import itertools
import types

import pytest
import torch
from difftest import assert_same, break_count, compile_counted

from bytegraph.explain import Recorder

CALLS = 8  #: calls of each compiled function, more (up to MAX_CALLS) until two orders were read
MAX_CALLS = 40


class Obj:
    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"Obj({self.k})"

    def m(self):
        return self.k


class MySet(set):
    pass


def _add(a, b=0):
    return a + b


def _first(o):
    return o


def _zero(o):
    return 0


def _args(*items):
    return items


def _for_loop(s):
    out = []
    for o in s:
        out.append(o)
    return out


def _unpack(s):
    a, b = s
    return a, b


def _unpack_star(s):
    a, *rest = s
    return a, rest


def _pop(s):
    first = s.pop()
    return first, len(s)


def _updated(s):
    t = set()
    t.update(s)
    return list(t)


def _unioned_with_itself(s):
    s |= s
    return list(s)


def _intersected_with_itself(s):
    s.intersection_update(s)
    return tuple(s)


def _dict_comprehension(s):
    return list({o: 0 for o in s})


#: order-dependent reads of a set
READS = {
    "for_loop": _for_loop,
    "comprehension": lambda s: [o for o in s],
    "generator": lambda s: tuple(o for o in s),
    "list": list,
    "tuple": tuple,
    "star": lambda s: [*s],
    "call_star": lambda s: _args(*s),
    "unpack": _unpack,
    "unpack_star": _unpack_star,
    "pop": _pop,
    "next_iter": lambda s: next(iter(s)),
    "dunder_iter": lambda s: next(s.__iter__()),
    "str": str,
    "repr": repr,
    "format": lambda s: f"{s}",
    "min_tie": lambda s: min(s, key=_zero),
    "max_tie": lambda s: max(s, key=_zero),
    "sorted_tie": lambda s: sorted(s, key=_zero),
    "union": lambda s: list(s | set()),
    "intersection": lambda s: list(s & s.copy()),
    "intersection_self": lambda s: list(s & s),
    "union_self": lambda s: tuple(s | s),
    "union_method_self": lambda s: [*s.union(s, s)],
    "intersection_method_self": lambda s: sorted(s.intersection(s), key=_zero),
    "union_self_twice": lambda s: list((s | s) & (s | s)),
    "in_place_union_self": _unioned_with_itself,
    "in_place_intersection_self": _intersected_with_itself,
    "frozenset_union_self": lambda s: (lambda f: list(f | f))(frozenset(s)),
    "difference": lambda s: list(s - {0}),
    "symmetric_difference": lambda s: list(s ^ {0}),
    "copy": lambda s: list(s.copy()),
    "set_of": lambda s: list(set(s)),
    "frozenset_of": lambda s: list(frozenset(s)),
    "updated": _updated,
    "dict_fromkeys": lambda s: list(dict.fromkeys(s)),
    "dict_comprehension": _dict_comprehension,
    "enumerate": lambda s: list(enumerate(s)),
    "zip": lambda s: list(zip(s, range(10), strict=False)),
    "map": lambda s: list(map(_first, s)),
    "filter": lambda s: list(filter(None, s)),
    "chain": lambda s: list(itertools.chain(s)),
    "join": lambda s: ",".join(repr(o) for o in s),
    "tensor": lambda s: torch.tensor([o.k for o in s]),
}
#: reads of two items exactly
_TWO_ONLY = {"unpack"}
#: reads a frozenset has no method for
_MUTATING = {"pop"}


def _objects():
    return [Obj(0), Obj(1), Obj(2), Obj(3)]


def _literal(objs):
    return {objs[0], objs[1], objs[2], objs[3]}


def _added(objs):
    s = set()
    for o in objs:
        s.add(o)
    return s


def _updated_from_a_generator(objs):
    s = {objs[0]}
    s.update(o for o in objs[1:])
    return s


#: ways to make a set of the objects (a list of them)
BUILDS = {
    "literal": _literal,
    "set_call": set,
    "two": lambda objs: {objs[0], objs[1]},
    "with_constants": lambda objs: {1023, objs[0], -1, objs[1], 30, objs[2]},
    "frozenset": frozenset,
    "added": _added,
    "comprehension": lambda objs: {o for o in objs},
    "tuples": lambda objs: {(o, 1) for o in objs},
    "frozensets": lambda objs: {frozenset([o]) for o in objs},
    "bound_methods": lambda objs: {o.m for o in objs},
    "subclass": MySet,
    "generator": lambda objs: set(o for o in objs),
    "map": lambda objs: set(map(_first, objs)),
    "iterator_union": lambda objs: {objs[0]}.union(iter(objs[1:])),
    "generator_update": _updated_from_a_generator,
    "keys_view_union": lambda objs: set() | dict.fromkeys(objs).keys(),
    "keys_view_method": lambda objs: {objs[0]}.symmetric_difference(dict.fromkeys(objs).keys()),
}

#: ways to make the objects in the compiled function
MAKERS = {
    "objects": _objects,
    "lambdas": lambda: [lambda: 0, lambda: 1, lambda: 2, lambda: 3],
    "partials": lambda: [functools.partial(_add, i) for i in range(4)],
    "modules": lambda: [torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.ReLU(), torch.nn.Tanh()],
}

MAKE, BUILD, READ = _objects, _literal, list  #: what ``_made_and_read`` calls (set per test)


def _made_and_read(x):
    objs = MAKE()
    return x + 1, objs, READ(BUILD(objs))


def _named(value, objs):
    """``value`` with each of ``objs`` replaced by its position (a bound method by its object's):
    comparable across calls, and equal where the order is."""
    if isinstance(value, (list, tuple)):
        return type(value)(_named(v, objs) for v in value)
    if isinstance(value, (set, frozenset)):
        return ("set", [_named(v, objs) for v in value])
    if isinstance(value, types.MethodType):
        return ("method", _named(value.__self__, objs))
    for i, o in enumerate(objs):
        if value is o:
            return ("object", i)
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    return value


def _junk(i):
    """Objects that stay alive, so the next call's objects lie elsewhere."""
    return [Obj(-1) for _ in range(3 * i + 1)], [lambda: i for _ in range(i % 3)]


def _check_order(fn, make_expected, varies=True):
    """Call the compiled ``fn`` ``CALLS`` times or more, until two calls read two orders
    (where they may ``vary``); each read equals CPython's on that call's objects
    (``make_expected(objs)``). Returns what the calls reported (breaks...)."""
    compiled, _ = compile_counted(fn)
    kept, seen = [], set()
    recorder = Recorder()
    for i in range(MAX_CALLS):
        if i >= CALLS and (len(seen) > 1 or not varies):
            break
        kept.append(_junk(i))
        x = torch.randn(2)
        with recorder:
            y, objs, read = compiled(x)
        kept.append((objs, read))
        assert_same(y, x + 1)
        expected = _named(make_expected(objs), objs)
        assert _named(read, objs) == expected, f"call {i}: {read} for {objs}"
        seen.add(repr(expected))
    assert not varies or len(seen) > 1, "every call read one order: the test could not fail"
    return recorder.report()


#: reads that break on another rule than the set's order
_OTHER_BREAK = {"dunder_iter": "call_method"}
#: what runs in Python as a whole (a fallback, which is no wrong result) and why
_IN_PYTHON = {
    **dict.fromkeys(
        ["partials/for_loop", "partials/next_iter"],
        "the loop's resume function is given the set of partials, which the key model cannot "
        "key (an input set of partials runs in Python)",
    ),
}


def _assert_broke(report, name=""):
    """The read broke (on the set's order, or ``_OTHER_BREAK``'s rule); ran in Python as a whole
    exactly where ``_IN_PYTHON`` says."""
    reasons = report.break_reasons
    assert _OTHER_BREAK.get(name, "set_order") in {r.kind for r in reasons}, reasons
    assert any(r.fell_back for r in reasons) == (name in _IN_PYTHON), reasons


def _use(monkeypatch, make=_objects, build=_literal, read=list):
    monkeypatch.setitem(globals(), "MAKE", make)
    monkeypatch.setitem(globals(), "BUILD", build)
    monkeypatch.setitem(globals(), "READ", read)


@pytest.mark.parametrize("name", [r for r in READS if r not in _TWO_ONLY])
def test_read_of_made_objects(name, monkeypatch):
    read = READS[name]
    _use(monkeypatch, read=read)
    report = _check_order(_made_and_read, lambda objs: read(_literal(objs)))
    _assert_broke(report, name)


@pytest.mark.parametrize("build", list(BUILDS))
@pytest.mark.parametrize("read", ["for_loop", "list", "next_iter", "pop", "unpack", "str"])
def test_read_of_built_set(build, read, monkeypatch):
    make_set, read_fn = BUILDS[build], READS[read]
    if read in _TWO_ONLY and build != "two":
        pytest.skip("unpacking reads two items, a set of two only")
    if read in _MUTATING and build == "frozenset":
        pytest.skip("a frozenset has no pop")
    _use(monkeypatch, build=make_set, read=read_fn)
    _assert_broke(_check_order(_made_and_read, lambda objs: read_fn(make_set(objs))))


@pytest.mark.parametrize("maker", list(MAKERS))
@pytest.mark.parametrize("read", ["for_loop", "list", "next_iter"])
def test_read_of_made_kinds(maker, read, monkeypatch):
    """Functions and partials made in the function, modules it builds (a fresh one per call):
    the same rule."""
    read_fn = READS[read]
    _use(monkeypatch, make=MAKERS[maker], build=set, read=read_fn)
    _assert_broke(_check_order(_made_and_read, lambda objs: read_fn(set(objs))), f"{maker}/{read}")


def _loop_in_function(x):
    a, b, c, d = Obj(1), Obj(2), Obj(3), Obj(4)
    out = []
    for o in {a, b, c, d}:
        out.append(o.k)
    return x + 1, [a, b, c, d], out


def _comprehension_in_function(x):
    a, b, c, d = Obj(1), Obj(2), Obj(3), Obj(4)
    s = {a, b, c, d}
    return x + 1, [a, b, c, d], [o.k for o in s]


@pytest.mark.parametrize("fn", [_loop_in_function, _comprehension_in_function])
def test_loop_in_the_compiled_function(fn):
    """The loop of the compiled function itself (not of an inlined call) over the set."""
    _assert_broke(
        _check_order(fn, lambda objs: [o.k for o in {objs[0], objs[1], objs[2], objs[3]}])
    )


GIVEN = [Obj(i) for i in range(4)]


def _given_objects_read(x, objs):
    return x + 1, objs, list({objs[0], objs[1], objs[2], objs[3]})


def test_given_objects_are_guarded_not_broken():
    """Objects from the inputs: their identity is guarded and the order traced (no break); other
    objects in a later call compile another variant, in their order."""
    compiled, counter = compile_counted(_given_objects_read)
    recorder = Recorder()
    others = [Obj(i) for i in range(4)]
    for objs in (GIVEN, GIVEN, others, GIVEN):
        with recorder:
            _, got, read = compiled(torch.ones(2), objs)
        expected = list({objs[0], objs[1], objs[2], objs[3]})
        assert _named(read, objs) == _named(expected, objs)
    assert break_count(recorder.report()) == 0
    assert counter.frame_count == 2


CLASS_A, CLASS_B = type("A", (), {}), type("B", (), {})


def _classes_read(x):
    return x + 1, [CLASS_A, CLASS_B, Obj], list({type(Obj(0)), CLASS_A, CLASS_B})


def test_classes_of_the_program_are_no_break():
    """Classes reached through guarded globals (``type(obj)`` of an object made in the function
    too): the same objects on every call, their order traced."""
    report = _check_order(_classes_read, lambda objs: list({objs[2], objs[0], objs[1]}), False)
    assert report.break_reasons == []


def _dict_of_made_objects(x):
    objs = _objects()
    d = {o: o.k for o in objs}
    return x + 1, objs, list(d)


def test_dict_keyed_by_made_objects_keeps_insertion_order():
    """A dict iterates in insertion order whatever the keys' addresses: traced, no break."""
    report = _check_order(_dict_of_made_objects, list, varies=False)
    assert report.break_reasons == []


def _tensors_made(x):
    made = [x + 1, x + 2, x * 3, x - 4]
    return x + 1, made, list({made[0], made[1], made[2], made[3]})


def test_tensors_made_in_the_graph():
    """Tensors hash by address too: those the graph computes break as objects do."""
    report = _check_order(_tensors_made, lambda objs: list({objs[0], objs[1], objs[2], objs[3]}))
    _assert_broke(report)


def _tensors_given(x, a, b, c):
    return x + 1, list({a, b, c, x})


def test_given_tensors_break():
    """Input tensors too: the trace keys a tensor by its graph node, so its set is not laid
    out as the real one, whose order is read in Python after a break."""
    compiled, _ = compile_counted(_tensors_given)
    recorder = Recorder()
    given = [torch.ones(2) for _ in range(4)]
    for tensors in (given, given, [torch.ones(2) for _ in range(4)], given):
        with recorder:
            _, read = compiled(*tensors)
        assert _named(read, tensors) == _named(_tensors_given(*tensors)[1], tensors)
    _assert_broke(recorder.report())
