"""``repr``/``str``/f-strings and ``hash``/``==``/``is`` of bound methods, as CPython computes them.

CPython writes a C method as ``<built-in method add of Tensor object at 0x...>`` (its object's
type and address) and a Python one as ``<bound method Cls.f of REPR>`` (its object's repr, a
module's whole tree included). A bound method hashes and compares by its object's identity and
its function (``method_hash``/``method_richcompare`` since 3.8), never by the object's own
``__eq__``/``__hash__``. Where the object has no address in the trace (a tensor, an object or
list made in it) the text and the hash are made after the graph from the very object the
compiled call gives back; the tests check that address against the returned objects, the rest of
each text and every other value against eager, and the breaks against torch.compile's.
"""

from __future__ import annotations

import functools
import re
import warnings

import torch
from difftest import break_count, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph
from bytegraph.explain import Recorder


def _masked(value):
    """``value``'s repr with every address replaced: texts of objects made in the call name
    other objects in the two runs."""
    return re.sub(r"0x[0-9a-f]+", "0x?", repr(value))


def _at(obj) -> str:
    """How CPython's ``%p`` writes ``obj``'s address in a repr."""
    return f" at {hex(id(obj))}>"


def _traced(fn, *args, breaks: int = 0, compared=lambda result: result):
    """``fn`` compiled, called twice on ``args`` (no fallback, ``breaks`` breaks over both
    calls), its last result, whose part ``compared`` must match eager's with addresses masked."""
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            result = compiled(*args)
        assert _masked(compared(result)) == _masked(compared(fn(*args)))
    assert break_count(recorder.report()) == breaks, recorder.report().break_reasons
    assert counter.frame_count == 1 + breaks
    return result


class Plain:
    def f(self):
        return 1

    @classmethod
    def c(cls):
        return 2

    @staticmethod
    def s():
        return 3


class Named:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Named({self.name!r})"

    def f(self):
        return self.name


class Keyed:
    """Equal and hashing by ``k``: its methods still compare and hash by the object's identity."""

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Keyed) and self.k == other.k

    def __hash__(self):
        return hash(self.k)

    def f(self):
        return self.k


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 3)

    def forward(self, x):
        return self.lin(x)


NET = Net()
PLAIN = Plain()
K1, K2 = Keyed(1), Keyed(1)
PARTIAL = functools.partial(max, 1)


# -- texts -----------------------------------------------------------------------------------------
def _texts_of_a_tensors_methods(t):
    return t + 1, repr(t.add), str(t.view), f"{t.add}", f"{t.view!r:>70}|", repr(t.split)


def test_texts_of_a_given_tensors_methods_are_eagers():
    """Of the tensor given to the call, the texts are eager's exactly (its address, its values
    for the Python method ``split``), made after the graph: no break (there was one each)."""
    t = torch.randn(2, 2)
    result = _traced(_texts_of_a_tensors_methods, t)
    assert result[1:] == _texts_of_a_tensors_methods(t)[1:]
    assert result[1] == f"<built-in method add of Tensor object{_at(t)}"
    assert_no_more_breaks(0, _texts_of_a_tensors_methods, t)


def _texts_of_methods_of_values_made_in_the_call(t):
    u = t * 2
    xs = [u]
    o = Plain()
    return u, xs, o, repr(u.add), repr(xs.append), str(o.f), repr(o), repr([u.view, o.f])


def test_texts_of_methods_of_values_made_in_the_call_name_the_objects_given_back():
    """A tensor the graph makes, a list and an object made in the call: each text names the
    address of the object the compiled call gives back."""
    t = torch.randn(2)
    u, xs, o, of_u, of_xs, of_o, of_object, listed = _traced(
        _texts_of_methods_of_values_made_in_the_call, t
    )
    assert of_u == f"<built-in method add of Tensor object{_at(u)}"
    assert of_xs == f"<built-in method append of list object{_at(xs)}"
    assert of_o == f"<bound method Plain.f of <{__name__}.Plain object{_at(o)}>"
    assert of_object == f"<{__name__}.Plain object{_at(o)}"
    assert listed == f"[<built-in method view of Tensor object{_at(u)}, {of_o}]"
    assert_no_more_breaks(0, _texts_of_methods_of_values_made_in_the_call, t)


def _text_of_a_method_is_its_objects_text_then(t):
    o = Named("before")
    text = repr(o.f)
    o.name = "after"
    return t + 1, text, f"{o.f}"


def test_a_python_methods_text_is_its_objects_repr_when_it_is_made():
    """``<bound method Named.f of Named('before')>``: the object's ``__repr__`` inlined where the
    text is made, not read after the graph from the object changed since."""
    t = torch.randn(2)
    check_breaks(_text_of_a_method_is_its_objects_text_then, lambda: (t,), graphs=1, breaks=0)
    result = bytegraph.compile(_text_of_a_method_is_its_objects_text_then)(t)
    assert result[1:] == (
        "<bound method Named.f of Named('before')>",
        "<bound method Named.f of Named('after')>",
    )
    assert_no_more_breaks(
        0,
        _text_of_a_method_is_its_objects_text_then,
        t,
        baseline_missing="torch.compile fails on repr() of a bound method of an object made in "
        "the call (AsPythonConstantNotImplementedError)",
    )


def _texts_of_modules_and_their_methods(x):
    return NET(x), repr(NET), str(NET.lin), repr(NET.forward), f"{NET.lin.forward}"


def _texts_of_modules(x):
    return NET(x), repr(NET), str(NET.lin)


def test_texts_of_modules_and_their_methods_are_eagers():
    """``Module.__repr__`` is inlined (the children's ``extra_repr`` read through the guarded
    module tree), and a module's bound method names it: no break (one each before)."""
    x = torch.randn(2)
    check_breaks(_texts_of_modules_and_their_methods, lambda: (x,), graphs=1, breaks=0)
    assert_no_more_breaks(0, _texts_of_modules, x)
    assert_no_more_breaks(
        0,
        _texts_of_modules_and_their_methods,
        x,
        baseline_missing="torch.compile fails on repr() of a module's bound method "
        "(AsPythonConstantNotImplementedError)",
    )


def _texts_of_methods_of_global_objects(x):
    return x + 1, repr(PLAIN.f), repr(K1.f), str(Plain.c), repr(PLAIN.s), repr(NET.lin.forward)


def test_texts_of_methods_of_objects_from_outside_are_eagers():
    check_breaks(_texts_of_methods_of_global_objects, lambda: (torch.ones(2),), graphs=1, breaks=0)


# -- hashes and equality ---------------------------------------------------------------------------
def _methods_of_objects_equal_by_value(x):
    return x + 1, [
        hash(K1.f) == hash(K2.f),
        hash(K1.f) == hash(K1.f),
        K1.f == K2.f,
        K1.f != K2.f,
        K1.f == K1.f,
        K1 == K2,
        {K1.f: 1}.get(K2.f),
        {K1.f: 1}[K1.f],
        K1.f in [K2.f],
        hash(K1.f),
    ]


def test_methods_hash_and_compare_by_their_objects_identity():
    """``hash(K1.f)`` mixes K1's address with the function's, whatever ``Keyed.__hash__`` says:
    computed on the real objects (their identity guarded), equal to eager's; no break (two)."""
    check_breaks(_methods_of_objects_equal_by_value, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _methods_of_objects_equal_by_value, torch.ones(2))


def _hash_of_a_global_objects_method(x):
    return x + 1, hash(K1.f)


def test_another_object_under_the_global_name_gives_its_hash():
    global K1
    compiled = bytegraph.compile(_hash_of_a_global_objects_method)
    saved = K1
    try:
        for obj in (K1, Keyed(1), Keyed(2)):
            K1 = obj
            assert compiled(torch.ones(2))[1] == hash(obj.f)
    finally:
        K1 = saved


def _hashes_of_values_made_in_the_call(x):
    o, k, p = Plain(), Keyed(3), functools.partial(max, 1)
    return *_hashes_compared(x, o, k, p), hash(o.f), hash(k.f), hash(o), hash(p)


def _hashes_compared(x, o, k, p):
    same = [hash(o.f) == hash(o.f), hash(k.f) == hash(k.f), hash(o) == hash(o)]
    same += [hash(p) == hash(p), {k.f: 1}[k.f], k.f == k.f, k.f is k.f]
    return x + 1, o, k, p, same


def _hashes_compared_in_the_call(x):
    return _hashes_compared(x, Plain(), Keyed(3), functools.partial(max, 1))[::4]


def test_hashes_of_values_made_in_the_call_are_made_after_the_graph():
    """An object's method, an object and a partial made in the call hash by an address the trace
    does not have: equal to themselves in the trace, and given back the hash of the very
    objects the compiled call returns."""
    _, o, k, p, same, of_o, of_k, of_object, of_partial = _traced(
        _hashes_of_values_made_in_the_call, torch.ones(2), compared=lambda result: result[:5]
    )
    assert same == [True, True, True, True, 1, True, False]
    assert (of_o, of_k, of_object, of_partial) == (hash(o.f), hash(k.f), hash(o), hash(p))
    # torch.compile cannot give a hash back (``Reconstruction of FakeIdVariable``): compared
    # without them
    assert_no_more_breaks(0, _hashes_compared_in_the_call, torch.ones(2))


def _hashes_of_partials_and_class_level_functions(x):
    return _partials_and_class_level_functions_compared(x) + (hash(PARTIAL),)


def _partials_and_class_level_functions_compared(x):
    return x + 1, [
        hash(PARTIAL) == hash(PARTIAL),
        hash(Plain.c) == hash(PLAIN.c),
        Plain.c == PLAIN.c,
        Plain.c is Plain.c,
        hash(Plain.s) == hash(PLAIN.s),
        Plain.s is PLAIN.s,
        Plain.s == PLAIN.s,
    ]


def test_hashes_of_partials_and_of_class_and_static_methods_are_eagers():
    """A global partial hashes by its identity (``object.__hash__``); a classmethod read through
    the class or an object binds the class (a new, equal method each read); a staticmethod is
    the function itself."""
    check_breaks(
        _hashes_of_partials_and_class_level_functions,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=0,
    )
    # torch.compile cannot give a hash back (``Reconstruction of FakeIdVariable``): compared
    # without it
    assert_no_more_breaks(0, _partials_and_class_level_functions_compared, torch.ones(2))


def _hashes_of_two_new_objects_methods(x):
    a, b = Plain(), Plain()
    return x + 1, hash(a.f) == hash(b.f)


def test_hashes_of_two_new_objects_methods_are_compared_in_python():
    """Distinct objects made in the call: an object freed between two hashes may give its
    address to the next, so only Python knows (one break; the values are eager's)."""
    check_breaks(_hashes_of_two_new_objects_methods, lambda: (torch.ones(2),), graphs=1, breaks=1)
