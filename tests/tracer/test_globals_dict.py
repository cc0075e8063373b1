"""``globals()`` of the compiled function's module, traced as its globals are read: ``name in
globals()`` (guarded on the key's presence), ``globals()[name]`` (the global, or CPython's
KeyError), ``globals()[name] = v`` (a store, replayed); live at a graph break it is ``globals()``
again. Compared with eager and with torch.compile's break count."""

from __future__ import annotations

import pytest
import torch

import bytegraph
from tests.difftest import check
from tests.dynamo_baseline import assert_no_more_breaks

PRESENT = 3


def contains(t):
    return t + ("PRESENT" in globals()), "absent_name" in globals(), "len" in globals()


def item(t):
    return t * globals()["PRESENT"]


def store(t):
    globals()["STORED"] = 5
    return t + globals()["STORED"], "STORED" in globals()


def key_error(t):
    try:
        globals()["absent_name"]
    except KeyError as e:
        return t + 1, e.args
    return t, None


def live_at_break(t):
    g = globals()
    y = t + 1
    print("break")
    return y + ("PRESENT" in g), g["PRESENT"]


@pytest.mark.parametrize(
    "fn, breaks",
    [(contains, 0), (item, 0), (store, 0), (live_at_break, 1)],
    ids=lambda value: getattr(value, "__name__", str(value)),  # no address: xdist compares ids
)
def test_globals(fn, breaks):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=breaks + 1, breaks=breaks)
    assert_no_more_breaks(breaks, fn, torch.ones(2))


def test_globals_key_error():
    bytegraph.reset()
    check(key_error, torch.ones(2), graphs=1, breaks=0)  # torch.compile runs it in Python


def late(t):
    return t + ("LATE" in globals())


def test_a_name_defined_later_is_seen():
    """The absence of a name is guarded: defining it makes ``in`` true on the next call."""
    bytegraph.reset()
    compiled = bytegraph.compile(late)
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))
    globals()["LATE"] = 1
    try:
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 1)
    finally:
        del globals()["LATE"]
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))


def present(t):
    return t + ("DELETED_LATER" in globals())


def test_a_name_deleted_later_is_seen():
    """The presence of a name is guarded: deleting it makes ``in`` false on the next call."""
    bytegraph.reset()
    globals()["DELETED_LATER"] = 1
    compiled = bytegraph.compile(present)
    try:
        torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2) + 1)
    finally:
        del globals()["DELETED_LATER"]
    torch.testing.assert_close(compiled(torch.ones(2)), torch.ones(2))
