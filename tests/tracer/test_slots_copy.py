"""``copy.copy``, ``copy.deepcopy``, ``__getstate__`` and ``__reduce_ex__`` of objects whose class
has ``__slots__``, traced as CPython runs them (``object.__getstate__``: the instance dict and the
set slots, read by their names from ``copyreg._slotnames``, which caches them on the class as
``__slotnames__``); an empty slot read raises CPython's AttributeError. Compared with eager;
torch.compile runs these copies in Python (no baseline)."""

from __future__ import annotations

import copy

import pytest
import torch

import bytegraph
from tests.difftest import check
from tests.dynamo_baseline import assert_no_more_breaks

# torch.testing loads sympy on first use, which registers a reduction in ``copyreg``'s dispatch
# table, whose size the traces of ``copy.copy`` guard: loaded before, it changes no trace
torch.testing.assert_close(torch.ones(1), torch.ones(1))


class Pair:
    __slots__ = ("a", "b")

    def __init__(self, a=1, b=2):
        self.a, self.b = a, b

    def __eq__(self, other):  # by the set slots, for ``check``'s comparison of arguments
        names = ("a", "b", "c")
        return type(other) is type(self) and [getattr(self, n, None) for n in names] == [
            getattr(other, n, None) for n in names
        ]

    __hash__ = None


class Partial(Pair):
    __slots__ = ("c", "__hidden")

    def __init__(self):
        super().__init__([1, 2], 3)
        self.c = 4


class WithDict:
    __slots__ = ("a", "__dict__")

    def __init__(self):
        self.a = 1
        self.x = [5]


PAIR, PARTIAL, WITH_DICT = Pair(), Partial(), WithDict()


def copy_global(t):
    o = copy.copy(PAIR)
    o.a = 10
    return t + o.a + o.b, PAIR.a, o is PAIR, type(o) is Pair


def copy_partial(t):
    o = copy.copy(PARTIAL)
    return t + o.b + o.c, o.a is PARTIAL.a, hasattr(o, "_Partial__hidden")


def copy_with_dict(t):
    o = copy.copy(WITH_DICT)
    return t + o.a, o.x is WITH_DICT.x, vars(o)


def deepcopy_partial(t):
    o = copy.deepcopy(PARTIAL)
    return t + o.c, o.a == PARTIAL.a, o.a is PARTIAL.a, hasattr(o, "_Partial__hidden")


def state_and_reduction(t):
    reduced = WITH_DICT.__reduce_ex__(2)
    return t + 1, PARTIAL.__getstate__(), reduced[1], reduced[2]


def copy_made_in_trace(t):
    o = copy.copy(Pair(t, 3))
    return o.a * o.b, o.a is t


def empty_slot(t):
    o = copy.copy(PARTIAL)
    try:
        return o._Partial__hidden
    except AttributeError as e:
        return t + 1, str(e), e.name
    return t, None, None


CASES = [
    copy_global,
    copy_partial,
    copy_with_dict,
    deepcopy_partial,
    state_and_reduction,
    copy_made_in_trace,
    empty_slot,
]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_copy_of_slots_objects(fn):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        fn,
        torch.ones(2),
        baseline_missing="torch.compile runs copies of slots objects in Python",
    )


def test_copy_of_an_argument_shares_its_slots():
    def fn(t, o):
        o2 = copy.copy(o)
        o2.a = t + 1
        return o2.a, o2.b is o.b, o.a

    bytegraph.reset()
    check(fn, torch.ones(2), Pair([1], [2]), graphs=1, breaks=0)


def test_slot_names_are_cached_on_the_class():
    """``copyreg._slotnames`` caches the names as ``__slotnames__``, compiled as eagerly."""

    class Fresh:
        __slots__ = ("u",)

        def __init__(self):
            self.u = 2

    obj = Fresh()

    def fn(t):
        return t * copy.copy(obj).u

    bytegraph.reset()
    assert "__slotnames__" not in vars(Fresh)
    torch.testing.assert_close(bytegraph.compile(fn)(torch.ones(2)), torch.ones(2) * 2)
    assert vars(Fresh)["__slotnames__"] == ["u"]
