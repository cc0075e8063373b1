"""The replay of side effects after the graph writes into the objects the trace saw, whatever the
replay changed before (``convert._preload_stale``): a store into ``o`` where ``o = lst[0]`` and
``lst`` is changed too. Before, the replay read a store's target through its source (``lst[0]``)
after refilling ``lst``: an ``IndexError`` where it was emptied. The other shapes (another object
put first, a container below a changed one, a stored value read before the change) check the same
rule."""

from __future__ import annotations

import types

import pytest
import torch
from difftest import check_breaks


class Box:
    def __init__(self, tag):
        self.tag = tag


OBJECTS: list = []
NESTED: list = []


def _setup():
    OBJECTS[:] = [Box("first"), Box("second")]
    NESTED[:] = [[1], [2]]


def _observe():
    return [vars(o) for o in OBJECTS], [list(x) for x in NESTED]


def _store_after_clear(x):
    o = OBJECTS[0]
    OBJECTS.clear()
    o.val = 5
    return x + 1


def _store_after_insert(x):
    o = OBJECTS[0]
    OBJECTS.insert(0, Box("new"))
    o.val = 5  # into "first", not the new object at index 0
    return x + 1


def _container_after_outer_change(x):
    inner = NESTED[0]
    NESTED.insert(0, [])
    inner.append(3)
    return x + 1


def _stored_value_read_before_change(x):
    o = OBJECTS[1]
    OBJECTS.pop()
    OBJECTS[0].other = o  # the object read before the pop
    return x * 2


@pytest.mark.parametrize(
    "fn",
    [
        _store_after_clear,
        _store_after_insert,
        _container_after_outer_change,
        _stored_value_read_before_change,
    ],
)
def test_replay_writes_into_the_objects_the_trace_saw(fn):
    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=1, breaks=0, calls=3, setup=_setup, observe=_observe
    )


# A value read through a location the call writes afterwards is the value read, not what the
# location holds after the replay: each kind of location, with the write in the graph's replay
# (no break) and after a break (in a resume function, whose cells are arguments).


class Holder:
    pass


HOLDER = Holder()
TABLE: dict = {}
ROW: list = []
GLOBAL_T = None


def _setup_locations():
    global GLOBAL_T
    HOLDER.t = torch.zeros(2)
    Holder.shared = torch.zeros(2)
    TABLE["k"] = torch.zeros(2)
    ROW[:] = [torch.zeros(2)]
    GLOBAL_T = torch.zeros(2)


def _observe_locations():
    return HOLDER.t, Holder.shared, TABLE["k"], ROW[0], GLOBAL_T


def _make_cell_of_frame(brk):
    def f(x):
        c = x * 0
        inner = lambda t: t + c  # noqa: E731 (c is a cell of f's frame, shared with inner)
        brk()
        a = c
        c = x
        return a, inner(x)

    return f, _no_break


def _make_free_variable(brk):
    c = torch.zeros(2)

    def f(x):
        nonlocal c
        x = x * 2
        brk()
        a = c
        c = x + 1
        return a, c

    def reset():
        nonlocal c
        c = torch.zeros(2)

    return f, reset


def _make_closure_of_function(brk):
    c = torch.zeros(2)
    g = lambda: c  # noqa: E731

    def f(x):
        cell = g.__closure__[0]
        x = x * 2
        a = cell.cell_contents
        brk()
        cell.cell_contents = x + 1
        return a, g()

    def reset():
        nonlocal c
        c = torch.zeros(2)

    return f, reset


def _make_attribute(brk):
    def f(x):
        a, b = HOLDER.t, Holder.shared
        x = x * 2
        brk()
        HOLDER.t = x + 1
        Holder.shared = x + 2
        return a, b

    return f, _no_break


def _make_items(brk):
    def f(x):
        global GLOBAL_T
        a, b, g = TABLE["k"], ROW[0], GLOBAL_T
        x = x * 2
        brk()
        TABLE["k"] = x + 1
        ROW[0] = x + 2
        GLOBAL_T = x + 3
        return a, b, g

    return f, _no_break


def _no_break():
    pass


@pytest.mark.parametrize(
    "make",
    [
        _make_cell_of_frame,
        _make_free_variable,
        _make_closure_of_function,
        _make_attribute,
        _make_items,
    ],
)
@pytest.mark.parametrize("brk", [_no_break, torch._dynamo.graph_break], ids=["graph", "break"])
def test_a_value_read_before_its_location_is_written_is_the_value_read(make, brk):
    fn, reset = make(brk)
    broken = brk is not _no_break

    def setup():
        _setup_locations()
        reset()

    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=1 + broken,
        breaks=int(broken),
        calls=3,
        setup=setup,
        observe=_observe_locations,
    )


# The same attribute is found through many paths: a read through one and a store through another
# are the same location (found wrong: each returned the stored value).

MODULE = types.ModuleType("replay_order_module")


def _setup_aliases():
    HOLDER.t = torch.zeros(2)
    Holder.shared = torch.zeros(2)
    MODULE.t = torch.zeros(2)


def _observe_aliases():
    return HOLDER.t, Holder.shared, MODULE.t


def _dict_item_then_attribute(x):
    a = HOLDER.__dict__["t"]
    HOLDER.t = x + 1
    return a


def _vars_item_then_setattr(x):
    a = vars(HOLDER)["t"]
    setattr(HOLDER, "t", x + 1)  # noqa: B010 (the call, not the statement, is the case)
    return a


def _module_dict_then_attribute(x):
    a = MODULE.__dict__["t"]
    MODULE.t = x + 1
    return a


def _class_attribute_on_instance_then_class(x):
    a = HOLDER.shared
    Holder.shared = x + 1
    return a


def _class_attribute_on_instance_then_type(x):
    a = HOLDER.shared
    type(HOLDER).shared = x + 1
    return a


@pytest.mark.parametrize(
    "fn",
    [
        _dict_item_then_attribute,
        _vars_item_then_setattr,
        _module_dict_then_attribute,
        _class_attribute_on_instance_then_class,
        _class_attribute_on_instance_then_type,
    ],
)
def test_a_value_read_through_one_path_is_not_what_another_path_stores(fn):
    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=1,
        breaks=0,
        calls=3,
        setup=_setup_aliases,
        observe=_observe_aliases,
    )
