"""``type(obj)`` of an object made in the compiled function is the class it was made from, as
the trace holds it: ``type(self).n += 1`` in an ``__init__`` (an instance counter) is a store to
that class, replayed after the graph, no break. A store of an attribute that a class with
``__slots__`` and no ``__dict__`` lacks raises CPython's own ``AttributeError`` (its text, and
``name``/``obj`` where this Python sets them) in the trace, where a handler catches it. Each
case is compared with eager over several calls, the class attributes too; breaks with
torch.compile's."""

from __future__ import annotations

import torch
from difftest import break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

from bytegraph.explain import Recorder


class Counted:
    made = 0

    def __init__(self):
        type(self).made += 1


class CountedChild(Counted):
    pass


class CountedModule(nn.Module):
    made = 0

    def __init__(self):
        super().__init__()
        type(self).made += 1

    def forward(self, x):
        return x * 2


def _counted(x):
    a, b = Counted(), CountedChild()
    return x + 1, type(a).made, type(b).made, type(b) is CountedChild


def _counted_module(x):
    return CountedModule()(x), CountedModule.made


def _counters():
    return (
        vars(Counted).get("made"),
        vars(CountedChild).get("made"),
        vars(CountedModule).get("made"),
    )


def _reset():
    Counted.made = CountedModule.made = 0
    if "made" in vars(CountedChild):
        del CountedChild.made


def _compare(fn, calls=3):
    """``fn`` eager, then compiled, each ``calls`` times from the same class counters: the same
    results and counters after each call; returns the compiled calls' graphs and breaks."""
    _reset()
    expected = []
    for _ in range(calls):
        expected.append((fn(torch.ones(3)), _counters()))
    _reset()
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for want in expected:
        with recorder:
            got = compiled(torch.ones(3))
        torch.testing.assert_close(got[0], want[0][0])
        assert (got[1:], _counters()) == (want[0][1:], want[1])
    _reset()
    return counter.frame_count, break_count(recorder.report())


def test_a_counter_of_the_class_of_an_object_made_in_the_call():
    graphs, breaks = _compare(_counted)
    # one graph: the counters are numbers the call advances, read as symbols from the start
    assert (graphs, breaks) == (1, 0)
    assert_no_more_breaks(0, _counted, torch.ones(3))


def test_a_counter_of_the_class_of_a_module_made_in_the_call():
    graphs, breaks = _compare(_counted_module)
    assert (graphs, breaks) == (1, 0)
    assert_no_more_breaks(0, _counted_module, torch.ones(3))


class Slotted:
    __slots__ = ("a",)

    def __init__(self):
        self.a = 1


def _undeclared_slot(x):
    s = Slotted()
    try:
        s.b = 2
    except AttributeError as e:
        return x + s.a, e.args, e.name, e.obj is s, hasattr(s, "b")
    return x, None


def test_an_undeclared_slot_raises_cpythons_attributeerror_in_the_trace():
    compiled, counter = compile_counted(_undeclared_slot)
    recorder = Recorder()
    for _ in range(2):
        with recorder:
            got = compiled(torch.ones(3))
        want = _undeclared_slot(torch.ones(3))
        torch.testing.assert_close(got[0], want[0])
        assert got[1:] == want[1:]
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)
    assert_no_more_breaks(
        0,
        _undeclared_slot,
        torch.ones(3),
        baseline_missing="torch 2.11's Dynamo runs the store's handler in Python",
    )
