"""Objects that live as long as the process (modules and types of the interpreter's own modules,
torch's) are guarded by identity through a plain closure value; others through a weak reference,
so guards never keep them alive."""

from __future__ import annotations

import contextlib
import io
import sys
import weakref

import torch
from difftest import assert_same

import bytegraph


def reads_stdout_type(x):
    if isinstance(sys.stdout, io.TextIOBase):
        return x + 1
    return x - 1


class Holder:
    def __init__(self, scale):
        self.scale = scale


def scaled(x, holder):
    return x * holder.scale


def test_interpreter_modules_and_types_need_no_weak_reference():
    compiled = bytegraph.compile(reads_stdout_type)
    x = torch.randn(3)
    with contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO())):  # a type of ``_io``
        assert_same(compiled(x), reads_stdout_type(x))
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "G['sys'] is ___sys" in guards
    assert "type(G['sys'].stdout) is ___TextIOWrapper" in guards


def test_user_classes_are_still_held_weakly():
    compiled = bytegraph.compile(scaled)
    x, holder = torch.randn(3), Holder(2.0)
    assert_same(compiled(x, holder), scaled(x, holder))
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "type(L['holder']) is ___Holder()" in guards
    (variant,) = bytegraph.cache_entries(compiled)
    refs = [v for v in variant.guards.consts.values.values() if isinstance(v, weakref.ref)]
    assert any(ref() is Holder for ref in refs)
