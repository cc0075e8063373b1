"""An object's instance dict reached as a dict of its own (a global ``NS = obj.__dict__``) beside
the object's attributes: one real dict, which the trace models twice (a dict tracker and the
object's attributes). Reads through both agree; a change through either is made by CPython (a
break), so that each name sees it, as in eager (``builder._one_namespace``). Each case runs the
function three times and compares the result and the object's attributes with eager's."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks

import bytegraph


class Obj:
    pass


OBJ = Obj()
NS = OBJ.__dict__


def _reset():
    NS.clear()
    OBJ.k = 1


def store_through_the_dict_read_the_attribute(x):
    NS["k"] = 7
    return x + OBJ.k


def store_through_the_attribute_read_the_dict(x):
    OBJ.k = 5
    return x + NS["k"]


def read_the_attribute_then_store_through_the_dict(x):
    a = OBJ.k
    NS["k"] = a + 2
    return x + OBJ.k + NS["k"]


def read_both(x):
    return x + OBJ.k + NS["k"] + len(NS)


def delete_through_the_dict(x):
    del NS["k"]
    return x + hasattr(OBJ, "k")


# (graphs, breaks): a change through either name breaks where the second name is met (the graph
# after it has the tensor work, if any is left)
CASES = {
    store_through_the_dict_read_the_attribute: (1, 1),
    store_through_the_attribute_read_the_dict: (1, 1),
    read_the_attribute_then_store_through_the_dict: (1, 1),
    delete_through_the_dict: (0, 1),
    read_both: (1, 0),
}


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_one_dict_two_names(fn):
    graphs, breaks = CASES[fn]
    check_breaks(
        fn,
        lambda: (torch.zeros(2),),
        graphs=graphs,
        breaks=breaks,
        calls=3,
        setup=_reset,
        observe=lambda: dict(NS),
    )


def test_a_bound_methods_dict_is_its_functions():
    """``vars(obj.method)`` is the function's ``__dict__``: read through both, no break."""

    class K:
        def method(self):
            return 1

    K.method.tag = 3
    bound = K().method

    def fn(x):
        return x + vars(bound)["tag"] + bound.__func__.tag

    check_breaks(fn, lambda: (torch.zeros(2),), graphs=1, breaks=0)
    assert_same(fn(torch.zeros(2)), torch.full((2,), 6.0))


class _Other:
    pass


def test_a_global_rebound_to_an_objects_dict_between_calls():
    """``NS`` names another object's instance dict at the first call and ``OBJ``'s at the next:
    the trace made while the two were apart must not run when they are one dict (a store through
    ``NS`` is then seen by ``OBJ.k``), and back."""
    other = _Other()
    holder = {"NS": other.__dict__}

    def fn(x):
        holder["NS"]["k"] = 7
        return x + OBJ.k

    compiled = bytegraph.compile(fn, backend="eager")
    for apart in (True, False, True, False):
        holder["NS"] = other.__dict__ if apart else OBJ.__dict__
        results = []
        for run in (fn, compiled):
            other.__dict__.clear()
            other.k = 1  # the same keys and values as OBJ.__dict__: only identity tells them apart
            _reset()
            results.append((run(torch.zeros(2)), dict(vars(OBJ)), dict(vars(other))))
        assert_same(results[1], results[0])


def global_ns_store(x):
    GLOBAL_NS["k"] = 7
    return x + OBJ.k


GLOBAL_NS = _Other().__dict__


def test_a_module_global_rebound_to_an_objects_dict_between_calls():
    global GLOBAL_NS
    apart = GLOBAL_NS
    compiled = bytegraph.compile(global_ns_store, backend="eager")
    try:
        for ns in (apart, NS, apart, NS):
            GLOBAL_NS = ns
            results = []
            for run in (global_ns_store, compiled):
                apart.clear()
                apart["k"] = 1
                _reset()
                results.append((run(torch.zeros(2)), dict(vars(OBJ)), dict(apart)))
            assert_same(results[1], results[0])
    finally:
        GLOBAL_NS = apart
