"""Zero-argument ``super()`` after a graph break: the resume function keeps ``self`` as its first
argument (``super()`` reads the frame's first argument implicitly); a break at a call of a method
found through ``super()`` rebuilds the ``super`` object for it."""

from __future__ import annotations

import random
import warnings

import torch
from difftest import assert_same, compile_counted

import bytegraph


class Base(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Child(Base):
    def forward(self, x):
        y = x + 1
        print("between graphs")
        return super().forward(y) + 1


def test_super_after_break_binds_self(capsys):
    model = Child()
    compiled, counter = compile_counted(model.forward)
    x = torch.randn(3)
    assert_same(compiled(x), Base.forward(model, x + 1) + 1)
    assert_same(compiled(x), Base.forward(model, x + 1) + 1)
    assert counter.frame_count == 2
    assert capsys.readouterr().out == "between graphs\n" * 2


class _Seeded(random.Random):
    """``random.Random``'s own ``seed`` is this shape: Python code calling its C base's method
    through ``super()``, which the trace does not run (a break there)."""

    def seed(self, a=None, version=2):
        super().seed(a, version)
        self.seeded = a


def test_a_break_at_a_method_found_through_super_in_a_callee():
    """The break is in the callee, at ``super().seed(...)``: the rewritten code runs that call
    itself, so it makes ``super(cls, self)`` again; nothing falls back to Python."""

    def fn(x, rng, a):
        rng.seed(a)
        return x * 2 + rng.random()

    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.randn(3)
    for a in (3, 3, 7):
        expected_rng, actual_rng = _Seeded(), _Seeded()
        expected = fn(x, expected_rng, a)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback warns: turn it into a failure
            actual = compiled(x, actual_rng, a)
        assert_same(actual, expected)
        assert actual_rng.seeded == expected_rng.seeded == a
        assert actual_rng.getstate() == expected_rng.getstate()  # the same numbers drawn
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]


def test_module_random_seeded_in_the_function_draws_what_eager_draws():
    def fn(x):
        random.seed(5)
        return x + random.random()

    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.randn(3)
    expected, state = fn(x), random.getstate()
    random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = compiled(x)
    assert_same(actual, expected)
    assert random.getstate() == state
