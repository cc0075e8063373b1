"""What a callee does to objects it reaches (through its closure, its module, a hook) is replayed
exactly: each such object is read through a source, or, where none exists, the graph breaks
instead of the trace changing a copy."""

from __future__ import annotations

import sys
import types

import torch
from difftest import check_breaks, compile_counted


def make_closure_methods():
    log = []

    class Net(torch.nn.Module):
        def forward(self, x):
            log.append(x.shape[0])
            return x * 2

    class Callable:
        def __call__(self, x):
            log.append(-1)
            return x + 1

    class Base:
        def go(self, x):
            log.append(-2)
            return x

    class Derived(Base):
        def go(self, x):
            return super().go(x) * 3

    return Net(), Callable(), Derived(), log


def test_methods_mutating_their_closure_are_replayed():
    net, call, derived, log = make_closure_methods()

    def fn(x):
        return derived.go(call(net(x)))

    compiled, counter = compile_counted(fn)
    compiled(torch.ones(3))
    compiled(torch.ones(3))
    assert log == [3, -1, -2, 3, -1, -2]
    assert counter.frame_count == 1


def test_list_of_a_module_imported_in_the_function_is_mutated():
    module = types.ModuleType("reached_effects_module")
    module.LOG = []
    sys.modules[module.__name__] = module
    try:

        def fn(x):
            import reached_effects_module

            reached_effects_module.LOG.append(x.sum())
            return x + 1

        compiled, _ = compile_counted(fn)
        compiled(torch.ones(2))
        compiled(torch.ones(2))
        assert len(module.LOG) == 2
    finally:
        del sys.modules[module.__name__]


def test_list_reached_through_the_class_of_an_object_made_in_the_trace_is_changed_in_place():
    log = []

    class Keeper:
        def add(self, t):
            log.append(t)
            return t

    def fn(x):
        # ``type()`` of an object made in the trace is the class it was made from, with its
        # source: ``add``'s closure, and the list in it, are the caller's (before db333b1 the class
        # had no source and the append broke the graph rather than change a copy)
        other = type(Keeper())()
        return other.add(x) * 2

    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=1, breaks=0, setup=log.clear, observe=lambda: len(log)
    )
