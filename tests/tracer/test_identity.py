"""``is`` holds wherever CPython hands back an object it was given: builtins (``sorted``, ``min``,
``max``, ``tuple``, ``next`` with a default), iterators and their combinators (``enumerate``,
``zip``, ``map``, ``filter``, ``reversed``), ``functools``, ``itertools``, ``operator`` and
``copy``, indexing and unpacking. The objects are tuples and frozensets made outside the function
(constants of the trace, which a copy would silently replace) and a plain object, given as
arguments and read from globals; the result of each path is compared with eager's, and each
object returned is the caller's own."""

from __future__ import annotations

import collections
import copy
import functools
import itertools
import operator

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


class _Plain:
    pass


T = (1, 2)
FS = frozenset({3})
OBJ = _Plain()

#: name -> path(t, fs, o): True where the path gives back the object it was given
PATHS = {
    "sorted_key": lambda t, fs, o: sorted([t, t], key=str)[0] is t,
    "sorted": lambda t, fs, o: sorted((t, (0,)))[1] is t,
    "enumerate": lambda t, fs, o: list(enumerate([t]))[0][1] is t,
    "min": lambda t, fs, o: min([t]) is t,
    "max_args": lambda t, fs, o: max(t, (0,)) is t,
    "max_key": lambda t, fs, o: max([o, o], key=lambda a: 0) is o,
    "min_key": lambda t, fs, o: min((t,), key=len) is t,
    "min_default": lambda t, fs, o: min([], default=t) is t,
    "next": lambda t, fs, o: next(iter([t])) is t,
    "next_default": lambda t, fs, o: next(iter([]), t) is t,
    "zip": lambda t, fs, o: list(zip([t], [o], strict=True))[0][0] is t,
    "reversed": lambda t, fs, o: list(reversed([t]))[0] is t,
    "map": lambda t, fs, o: list(map(lambda a: a, [t]))[0] is t,
    "filter": lambda t, fs, o: list(filter(None, [t]))[0] is t,
    "tuple": lambda t, fs, o: tuple(t) is t,
    "frozenset": lambda t, fs, o: frozenset(fs) is fs,
    "sum_start": lambda t, fs, o: sum([], t) is t,
    "getattr_default": lambda t, fs, o: getattr(o, "missing", t) is t,
    "index": lambda t, fs, o: (t, fs)[0] is t and (t, fs)[-1] is fs,
    "slice": lambda t, fs, o: (t, fs)[:1][0] is t,
    "unpack": lambda t, fs, o: [*(t, o)][0] is t and (*(t,),)[0] is t,
    "list_pop": lambda t, fs, o: [t].pop() is t,
    "dict_value": lambda t, fs, o: {"a": t}.get("a") is t and dict(a=t)["a"] is t,
    "reduce": lambda t, fs, o: functools.reduce(lambda a, b: a, [t, o]) is t,
    "chain": lambda t, fs, o: list(itertools.chain([t], [o]))[0] is t,
    "islice": lambda t, fs, o: list(itertools.islice([t, o], 1))[0] is t,
    "accumulate": lambda t, fs, o: list(itertools.accumulate([t]))[0] is t,
    "compress": lambda t, fs, o: list(itertools.compress([t], [1]))[0] is t,
    "takewhile": lambda t, fs, o: list(itertools.takewhile(bool, [t]))[0] is t,
    "zip_longest": lambda t, fs, o: list(itertools.zip_longest([t]))[0][0] is t,
    "cycle": lambda t, fs, o: next(itertools.cycle([t])) is t,
    "repeat": lambda t, fs, o: next(itertools.repeat(t)) is t,
    "product": lambda t, fs, o: list(itertools.product([t]))[0][0] is t,
    "groupby": lambda t, fs, o: list(itertools.groupby([t]))[0][0] is t,
    "itemgetter": lambda t, fs, o: operator.itemgetter(0)((t,)) is t,
    "getitem": lambda t, fs, o: operator.getitem((t,), 0) is t,
    "copy": lambda t, fs, o: copy.copy(t) is t and copy.copy(fs) is fs,
}


@pytest.mark.parametrize("name", list(PATHS))
def test_an_object_given_back_is_the_same(name):
    path = PATHS[name]

    def from_arguments(x, t, fs, o):
        return x + 1, path(t, fs, o)

    def from_globals(x):
        return x + 1, path(T, FS, OBJ)

    assert path(T, FS, OBJ) is True  # the path really gives the object back in CPython
    check_breaks(from_arguments, lambda: (torch.ones(2), T, FS, OBJ), graphs=1, breaks=0)
    check_breaks(from_globals, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, from_globals, torch.ones(2))


def _returns_given(x, t):
    return x + 1, sorted([t, (0,)])[1], max(t, (0,)), (t,)[0], list(enumerate([t]))[0][1]


def test_returned_objects_are_the_callers():
    """What the compiled function returns is the object it was given, not an equal copy."""
    t = (5, 6)
    _, *got = check_breaks(_returns_given, lambda: (torch.ones(2), t), graphs=1, breaks=0)[0](
        torch.ones(2), t
    )
    assert all(g is t for g in got)


class _Methods:
    def method(self):
        return 1


#: values read from globals that CPython keeps as they are through a container
BOUND = _Methods().method
PAIR = collections.namedtuple("PAIR", "a b")(1, 2)
SIZE = torch.Size([2, 3])
MIXED = (1, "a")
FROZEN = frozenset({1, 2})

#: name -> path(v): a container ``v`` goes into and comes back out of, or is returned in
ROUND_TRIPS = {
    "returned": lambda v: v,
    "dict_display": lambda v: {v: "a", "b": v},
    "dict_call": lambda v: dict([(v, 1)]),
    "dict_of_dict": lambda v: dict({v: "a", "b": v}),
    "dict_keys": lambda v: list({v: 1}),
    "list_pop": lambda v: [v].pop(),
    "set_pop": lambda v: {v}.pop(),
    "tuple_item": lambda v: (v, 1)[0],
    "comprehension": lambda v: [a for a in (v, v)],
    "set_display": lambda v: {0, v},
    "set_call": lambda v: set([v, 0]),
    "frozenset_call": lambda v: frozenset((0, v)),
    "set_items": lambda v: sorted({v, 0}, key=repr),
    "fromkeys": lambda v: dict.fromkeys([v], v),
    "dict_items": lambda v: list({v: v}.items()),
}

#: paths torch.compile fails on at the break: its codegen loads ``frozenset`` by a name the
#: frame's code does not have ("frozenset not in co_names")
DYNAMO_FAILS = {"frozenset_call"}

GLOBALS = {
    "bound_method": "BOUND",
    "namedtuple": "PAIR",
    "size": "SIZE",
    "tuple": "MIXED",
    "frozenset": "FROZEN",
    "object": "OBJ",
}


def _leaves(value, depth=0):
    """The objects a result holds, containers walked in their order (dict keys and values)."""
    yield value
    if depth > 3:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(k, depth + 1)
            yield from _leaves(v, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value:
            yield from _leaves(item, depth + 1)


def _same_objects(compiled, eager, obj):
    """Where eager's result holds ``obj`` itself, the compiled result holds it too."""
    assert [x is obj for x in _leaves(compiled)] == [x is obj for x in _leaves(eager)]


@pytest.mark.parametrize("kind", list(GLOBALS))
@pytest.mark.parametrize("path", list(ROUND_TRIPS))
def test_a_global_through_a_container_is_itself(kind, path):
    """A value read from a global keeps its identity through a container, returned from the
    graph or rebuilt at a graph break (where it lives in a local)."""
    name, trip = GLOBALS[kind], ROUND_TRIPS[path]
    obj = globals()[name]
    scope = {"trip": trip, name: obj}
    exec(f"def fn(x):\n    return x + 1, trip({name})", scope)
    lines = ["def at_break(x):", "y = x + 1", f"r = trip({name})", "print('b')", "return y * 2, r"]
    exec("\n    ".join(lines), scope)
    for fn, breaks in ((scope["fn"], 0), (scope["at_break"], 1)):
        compiled = check_breaks(fn, lambda: (torch.ones(2),), graphs=1 + breaks, breaks=breaks)[0]
        _same_objects(compiled(torch.ones(2))[1], fn(torch.ones(2))[1], obj)
    if path not in DYNAMO_FAILS:
        assert_no_more_breaks(1, scope["at_break"], torch.ones(2))


G_D = {}


def _reset_methods_dict():
    G_D.clear()
    G_D.update({BOUND: "a", "b": BOUND})


def _pops_a_global_dict(x):
    return x + 1, G_D.popitem(), G_D.copy()


def test_a_bound_method_popped_from_a_global_dict_is_itself():
    """The popped value is loaded before the ``popitem`` is replayed on the real dict."""
    compiled = check_breaks(
        _pops_a_global_dict,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=0,
        setup=_reset_methods_dict,
        observe=lambda: dict(G_D),
    )[0]
    _reset_methods_dict()
    _, (key, value), rest = compiled(torch.ones(2))
    assert (key, value) == ("b", BOUND) and value is BOUND
    assert list(rest) == [BOUND] and next(iter(rest)) is BOUND and G_D == {BOUND: "a"}


def _frozenset_iterators(x, fs):
    started = iter(fs)
    first = next(started)
    return x + 1, first, iter(fs), started, iter(FS), iter(frozenset((0, None)))


def test_an_iterator_over_a_frozenset_is_a_set_iterator():
    """``iter(frozenset)`` is CPython's ``set_iterator`` over that frozenset, at its position."""
    fs = frozenset({1, 2, 9})
    compiled, counter = compile_counted(_frozenset_iterators)
    got, want = compiled(torch.ones(2), fs), _frozenset_iterators(torch.ones(2), fs)
    assert counter.frame_count == 1 and got[1] == want[1]
    for g, w in zip(got[2:], want[2:], strict=True):
        assert type(g) is type(w) is type(iter(set()))
        assert list(g) == list(w)


def _frozenset_loop_with_break(x):
    y = x + 1
    out = []
    for item in FS_LOOP:
        print(item)  # a break inside the loop: the iterator is rebuilt where it stands
        out.append(item)
    return y * 2, out


FS_LOOP = frozenset({3, 5, 11})


def test_a_frozenset_iterator_live_at_a_break():
    check_breaks(_frozenset_loop_with_break, lambda: (torch.ones(2),), graphs=2, breaks=3)
    assert_no_more_breaks(
        3,
        _frozenset_loop_with_break,
        torch.ones(2),
        baseline_missing="torch.compile fails on the frozenset's iterator ('Failed to trace "
        "builtin operator') and runs the call in Python",
    )


G_S = set()
G_FS = frozenset({0, OBJ, _Plain})


def _reset_global_set():
    G_S.clear()
    G_S.add(OBJ)


def _objects_out_of_global_sets(x):
    return x + 1, G_S.pop(), list(G_FS), next(iter(G_FS)), set(G_FS)


def test_objects_out_of_a_global_set_are_themselves():
    """What comes out of an input set is the object (never the tracer's key for it)."""
    compiled = check_breaks(
        _objects_out_of_global_sets,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=0,
        setup=_reset_global_set,
        observe=lambda: set(G_S),
    )[0]
    _reset_global_set()
    got = compiled(torch.ones(2))
    _reset_global_set()
    want = _objects_out_of_global_sets(torch.ones(2))
    for obj in (OBJ, _Plain):
        _same_objects(got[1:], want[1:], obj)
    assert got[1] is OBJ


def _one_tuple_twice_at_a_break(x):
    y = x + 1
    t = (OBJ, "b")
    pair = [t, t]
    print("break")  # t and pair are rebuilt here: t once, both items of pair that object
    return y * 2, pair[0] is pair[1] is t


def _a_tuple_and_its_method(x):
    y = x + 1
    t = (OBJ, "b")
    r = t.__getnewargs__()  # computed in the trace: the tuple's own item comes back
    return y * 2, r[0] is t


def test_a_tuple_made_in_the_trace_is_one_object_after_a_break():
    compiled = check_breaks(
        _one_tuple_twice_at_a_break, lambda: (torch.ones(2),), graphs=2, breaks=1
    )
    assert compiled[0](torch.ones(2))[1] is True
    assert_no_more_breaks(1, _one_tuple_twice_at_a_break, torch.ones(2))


def test_a_tuple_and_a_method_bound_to_it_are_one_object():
    """``t.__getnewargs__()`` traces (torch.compile breaks once, at the call)."""
    compiled = check_breaks(_a_tuple_and_its_method, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert compiled[0](torch.ones(2))[1] is True
    assert_no_more_breaks(0, _a_tuple_and_its_method, torch.ones(2))


def _equal_but_distinct(x):
    fs = frozenset({0, 7})
    t = (1, "a")
    return x + 1, fs, fs.union([7]), fs - {1}, t, tuple([1, "a"]), t[:]


def test_equal_constants_made_apart_stay_apart():
    """An equal tuple or frozenset made apart (``fs.union(...)``, ``tuple(list)``) is another
    object, as in CPython, though the code object keeps one constant per value; ``t[:]`` is
    ``t``."""
    compiled = check_breaks(_equal_but_distinct, lambda: (torch.ones(2),), graphs=1, breaks=0)[0]
    got, want = compiled(torch.ones(2))[1:], _equal_but_distinct(torch.ones(2))[1:]
    same = [[a is b for b in got] for a in got]
    assert same == [[a is b for b in want] for a in want]


G_L = []


def _refills_a_global_list(x):
    fs = frozenset({0, 7})
    G_L.clear()
    G_L.extend([fs.union([7]), fs])
    return x + 1, fs


def test_equal_constants_replayed_into_a_container_stay_apart():
    """The same holds for the items replayed into a container changed in place."""
    compiled = check_breaks(
        _refills_a_global_list, lambda: (torch.ones(2),), graphs=1, breaks=0, observe=lambda: G_L[:]
    )[0]
    fs = compiled(torch.ones(2))[1]
    assert G_L[0] == fs and G_L[0] is not fs and G_L[1] is fs


class _Inherits:
    pass


class _Overrides:
    def __init__(self):
        pass


def _inherited_slots(x, other):
    return (
        x + 1,
        _Inherits.__init__ is object.__init__,
        _Overrides.__init__ is object.__init__,
        _Inherits.__repr__ is object.__repr__,
        object.__eq__ is _Inherits.__eq__,
        other.__init__ is object.__init__,
        _Inherits.__init__ is None,
    )


def test_an_inherited_slot_wrapper_is_objects_own():
    """A class that inherits ``object.__init__`` hands back that slot wrapper itself, so ``is``
    with ``object.__init__`` holds; the attribute of an input object is guarded, so another
    class's comes back False."""
    compiled, _ = compile_counted(_inherited_slots)
    for other in (_Inherits(), _Overrides(), _Inherits()):
        x = torch.ones(2)
        assert_same(compiled(x, other), _inherited_slots(x, other))
