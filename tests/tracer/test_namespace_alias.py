"""An object's instance dict reached as a dict of its own (a global ``NS = obj.__dict__``) beside
the object's attributes: one real dict, which the trace models twice (a dict tracker and the
object's attributes). Reads through both agree; a change through either is made by CPython (a
break), so that each name sees it, as in eager (``builder._one_namespace``). Each case runs the
function three times and compares the result and the object's attributes with eager's."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks


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
