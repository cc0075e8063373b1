"""Values CPython hashes by identity (``object``'s ``__hash__`` and ``__eq__``, or a C type's
that is its address) as dict keys, set items and ``in`` operands: read from the inputs (a
global, an argument, an argument's attribute) or made in the function.

The key model (``containers.hash_key``) keys such a value by the object read through its source,
kept apart from the other inputs of its type (``DISTINCT_INPUT``: a lookup that missed holds only
while no call passes one object in both places), and one made in the trace by its tracker (a set
of several such items has no known order: iterating it breaks). Results, raised errors and break
counts are compared with eager and torch.compile's.
"""

from __future__ import annotations

import functools
import io
import itertools
import threading
import weakref

import pytest
import torch
from difftest import assert_same, break_count, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

from bytegraph.explain import Recorder


def _add(a, b=0):
    return a + b


def _gen():
    yield 1


class Plain:
    def method(self):
        return 1

    @staticmethod
    def static():
        return 2

    @classmethod
    def klass(cls):
        return 3

    @property
    def prop(self):
        return 4


PLAIN = Plain()
#: kinds hashed by identity, read from the inputs; each made once (a global keeps its object)
READ = {
    "partial": functools.partial(_add, 2),
    "bound_method": PLAIN.method,
    "staticmethod": Plain.__dict__["static"],
    "classmethod": Plain.__dict__["klass"],
    "property": Plain.__dict__["prop"],
    "code": _add.__code__,
    "generator": _gen(),
    "list_iterator": iter([1, 2]),
    "map": map(abs, [1, 2]),
    "count": itertools.count(),
    "file": io.StringIO(),
    "lock": threading.Lock(),
    "torch_generator": torch.Generator(),
    "parameter": torch.nn.Parameter(torch.ones(2)),
    "module": torch.nn.Linear(2, 2),
    "plain_object": PLAIN,
    "weakref": weakref.ref(PLAIN),  # hashed and compared by its referent, here by identity
}
VALUE = None  #: the global the functions below read (set by each test)
#: kinds torch 2.11's Dynamo (py3.12) runs in Python as keys: no baseline there
_NO_BASELINE_2_11 = {
    "bound_method": "torch 2.11's Dynamo runs a bound method as a key in Python "
    "('User-defined object with overridden __hash__')",
}


def _dict_key_of_global(x):
    d = {VALUE: 1}
    return x + d[VALUE], d.get(VALUE), len(d)


def _set_item_of_global(x):
    s = {VALUE}
    return x + 1, VALUE in s, VALUE not in s


def _added_global(x):
    s = set()
    s.add(VALUE)
    s.add(VALUE)
    return x + 1, len(s), VALUE in s


def _key_of_argument(x, v):
    d = {v: 1}
    s = set()
    s.add(v)
    return x + d[v], d.get(v), v in s, len(s)


class _Holder:
    pass


def _key_of_attribute(x, h):
    d = {h.v: 1}
    return x + d[h.v], h.v in {h.v}, d.get(h.v)


_GLOBAL_FNS = [_dict_key_of_global, _set_item_of_global, _added_global]


@pytest.fixture
def value_global(request):
    """``VALUE`` set to the parameter for the test, put back after it."""
    global VALUE
    VALUE = request.param
    yield request.param
    VALUE = None


@pytest.mark.parametrize("value_global", list(READ.values()), ids=list(READ), indirect=True)
@pytest.mark.parametrize("fn", _GLOBAL_FNS, ids=lambda fn: fn.__name__)
def test_global_hashed_by_identity_is_a_key(value_global, fn):
    """``{G: 1}[G]``, ``G in {G}``, ``s.add(G)`` of a global of each kind: no break."""
    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=0)
    kind = next(k for k, v in READ.items() if v is value_global)
    assert_no_more_breaks(0, fn, torch.ones(2), baseline_missing=_NO_BASELINE_2_11.get(kind, ""))


#: kinds a deep copy keeps (the eager run of ``check_breaks`` gets copies of the arguments)
_COPIED = ["partial", "bound_method", "code", "plain_object", "module"]


@pytest.mark.parametrize("kind", _COPIED)
def test_argument_hashed_by_identity_is_a_key(kind):
    check_breaks(_key_of_argument, lambda: (torch.ones(2), READ[kind]), graphs=1, breaks=0)
    missing = _NO_BASELINE_2_11.get(kind, "")
    assert_no_more_breaks(0, _key_of_argument, torch.ones(2), READ[kind], baseline_missing=missing)


@pytest.mark.parametrize("kind", _COPIED)
def test_attribute_hashed_by_identity_is_a_key(kind):
    def make():
        holder = _Holder()
        holder.v = READ[kind]
        return torch.ones(2), holder

    check_breaks(_key_of_attribute, make, graphs=1, breaks=0)
    assert_no_more_breaks(
        0, _key_of_attribute, *make(), baseline_missing=_NO_BASELINE_2_11.get(kind, "")
    )


def _made_partial(x):
    return functools.partial(_add, 1)


def _made_list_iterator(x):
    return iter([1, 2])


def _made_map(x):
    return map(abs, [1, 2])


def _made_zip(x):
    return zip([1], [2], strict=True)


def _made_enumerate(x):
    return enumerate([1, 2])


def _made_generator(x):
    return _gen()


def _made_count(x):
    return itertools.count()


def _made_plain(x):
    return Plain()


def _made_weakref(x):
    return weakref.ref(PLAIN)  # the same reference each time: one key


_MAKERS = [
    _made_partial,
    _made_list_iterator,
    _made_map,
    _made_zip,
    _made_enumerate,
    _made_generator,
    _made_count,
    _made_plain,
    _made_weakref,
]
MAKE = None  #: the maker the function below calls (set by each test)
_ITERATOR_NO_BASELINE_2_11 = (
    "torch 2.11's Dynamo runs an iterator or generator as a key in Python "
    "('Dynamo cannot determine whether the underlying object is hashable')"
)


def _key_made_in_function(x):
    v = MAKE(x)
    w = MAKE(x)
    d = {v: 1, w: 2}
    s = {v}
    s.add(v)
    return x + d[v], d[w], d.get(v), v in s, w in s, len(s), len(d)


@pytest.mark.parametrize("maker", _MAKERS, ids=lambda fn: fn.__name__[len("_made_") :])
def test_made_in_function_is_a_key(maker, monkeypatch):
    """Two objects made alike are two keys, each equal to itself only: no break."""
    monkeypatch.setitem(globals(), "MAKE", maker)
    check_breaks(_key_made_in_function, lambda: (torch.ones(2),), graphs=1, breaks=0)
    missing = (
        "" if maker in (_made_partial, _made_plain, _made_weakref) else _ITERATOR_NO_BASELINE_2_11
    )
    assert_no_more_breaks(0, _key_made_in_function, torch.ones(2), baseline_missing=missing)


def _returned_with_made_key(x):
    p = functools.partial(_add, 1)
    return x + 1, {p: "p"}, p


def test_dict_keyed_by_a_made_partial_is_rebuilt():
    """The dict the call returns holds the very partial it returns (a new one at each call)."""
    compiled, counter = compile_counted(_returned_with_made_key)
    recorder = Recorder()
    with recorder:
        results = [compiled(torch.ones(2)) for _ in range(2)]
    for y, d, p in results:
        assert list(d) == [p] and d[p] == "p" and p(2) == 3
        assert_same(y, _returned_with_made_key(torch.ones(2))[0])
    assert results[0][2] is not results[1][2]
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)
    assert_no_more_breaks(0, _returned_with_made_key, torch.ones(2))


def _iterated_made_partials(x):
    y = x + 1
    s = {functools.partial(_add, 1), functools.partial(_add, 2)}
    found = []
    for p in s:
        found.append(p(0))
    return y, sorted(found)


def test_iterating_a_set_of_made_partials_breaks():
    """Their order follows their addresses, which the trace does not know: a break at the
    ``iter()`` (and the loop over the real set iterator then runs in Python, a second one).
    torch.compile breaks none: it walks its own order, not the addresses' (no baseline kept)."""
    check_breaks(_iterated_made_partials, lambda: (torch.ones(2),), graphs=1, breaks=2)


def _lookup_of_another(x, p, q):
    return x + 1, {p: 1}.get(q, 0), q in {p}


@pytest.mark.parametrize("kind", ["partial", "plain_object"])
@pytest.mark.parametrize("first_same", [True, False], ids=["same_first", "distinct_first"])
def test_aliasing_of_two_inputs_is_guarded(kind, first_same):
    """``{p: 1}.get(q)`` for the same object then two alike (and the other way): each call's
    result is eager's (the trace that found them apart guards that they stay apart)."""
    one, other = READ[kind], functools.partial(_add, 2) if kind == "partial" else Plain()
    same, apart = (lambda: (torch.ones(2), one, one)), (lambda: (torch.ones(2), one, other))
    calls = [same, apart] if first_same else [apart, same]
    check_breaks(_lookup_of_another, None, graphs=2, breaks=0, calls=calls)


A, B = functools.partial(_add, 1), functools.partial(_add, 1)


def _globals_apart(x):
    return x + 1, {A: 1}.get(B, 0)


def test_globals_rebound_to_one_object_are_seen(monkeypatch):
    compiled, _, _ = check_breaks(_globals_apart, lambda: (torch.ones(2),), graphs=1, breaks=0)
    monkeypatch.setitem(globals(), "B", A)
    assert compiled(torch.ones(2))[1] == 1 == _globals_apart(torch.ones(2))[1]


REF = READ["weakref"]


def _global_reference_found_by_a_made_one(x):
    return x + 1, {REF: 1}[weakref.ref(PLAIN)], weakref.ref(PLAIN) in {REF}


def test_a_reference_made_in_the_function_finds_a_global_one():
    """Two references to one object are equal keys (CPython shares the reference too)."""
    fn = _global_reference_found_by_a_made_one
    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(2))
