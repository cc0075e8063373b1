"""Attributes a trace set on an object it made, then read back, hold while no class of the
object's MRO defines them (a data descriptor there would win): one check per class, naming every
attribute read, and a class given one of them later makes the call trace again."""

from __future__ import annotations

import torch
from difftest import assert_same, compile_counted

import bytegraph


class Plain:
    def __init__(self):
        self.a, self.b, self.c = 1, 2, 3


class Child(Plain):
    pass


def reads(x):
    obj = Child()
    return x * obj.a + obj.b - obj.c


def _guard_source(compiled) -> str:
    return bytegraph.state_of(compiled).cache.guard_fn.__guard_source__


def test_one_check_per_class_names_every_attribute_read():
    compiled, _ = compile_counted(reads)
    x = torch.randn(3)
    assert_same(compiled(x), reads(x))
    checks = [line for line in _guard_source(compiled).splitlines() if "no_class_attr" in line]
    assert len(checks) == 1, checks
    assert all(repr(name) in checks[0] for name in ("a", "b", "c"))


def test_a_class_attribute_added_later_is_seen():
    compiled, counter = compile_counted(reads)
    x = torch.randn(3)
    assert_same(compiled(x), reads(x))
    traced = counter.frame_count
    Plain.c = property(lambda self: 10, lambda self, v: None)  # wins over the instance dict
    try:
        assert_same(compiled(x), reads(x))
        assert counter.frame_count > traced
    finally:
        del Plain.c
    assert_same(compiled(x), reads(x))
