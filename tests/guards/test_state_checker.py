"""The dispatcher checks torch's global state in one C call (``kinds.state_checker``, torch's
``GlobalStateGuard``) and falls back to the global-state parts where that call says no. The call
is stricter than the parts (it also compares flags no trace reads: the thread count, TF32), never
looser: the same calls hit and miss as with the parts alone. Each case compiles in one state,
then calls in another and compares the entries made (and the result) with what the parts
decide."""

from __future__ import annotations

import contextlib

import pytest
import torch
from bytegraph.guards.kinds import DEFAULT_DTYPE, GRAD_MODE, state_checker
from difftest import assert_same

import bytegraph


@contextlib.contextmanager
def _threads(n):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def _tf32():
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = not before
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


@contextlib.contextmanager
def _default_dtype(dtype):
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


@contextlib.contextmanager
def _deterministic():
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)


# (the state the next call runs in, whether it reuses the entry made in the default state)
CASES = {
    "same state": (contextlib.nullcontext, True),
    "other thread count": (lambda: _threads(torch.get_num_threads() + 1), True),
    "TF32 flipped": (_tf32, True),
    "no grad": (torch.no_grad, False),
    "inference mode": (torch.inference_mode, False),
    "default dtype": (lambda: _default_dtype(torch.float64), False),
    "deterministic": (_deterministic, False),
    "autocast": (lambda: torch.autocast("cpu", dtype=torch.bfloat16), False),
}


@pytest.mark.parametrize("case", CASES)
def test_the_c_call_hits_and_misses_as_the_parts_do(case):
    state, reused = CASES[case]

    def fn(x, w):
        return torch.tanh(x @ w) * 2

    compiled = bytegraph.compile(fn)
    x, w = torch.randn(2, 3), torch.randn(3, 3)
    assert_same(compiled(x, w), fn(x, w))
    assert "___torch_state.check()" in bytegraph.guard_source(compiled)
    with state():
        expected = fn(x, w)
        assert_same(compiled(x, w), expected)
        assert_same(compiled(x, w), expected)  # and the entry made for it is hit
    assert len(bytegraph.cache_entries(compiled)) == (1 if reused else 2)
    assert_same(compiled(x, w), fn(x, w))
    assert len(bytegraph.cache_entries(compiled)) == (1 if reused else 2)


def test_variants_of_two_grad_modes_keep_the_parts():
    """One variant per grad mode: their states differ, so no C call stands for both; each is told
    apart by the parts."""

    def fn(x):
        return x * 2

    compiled = bytegraph.compile(fn)
    x = torch.randn(3, requires_grad=True)
    for _ in range(2):
        assert_same(compiled(x), fn(x))
        with torch.no_grad():
            assert_same(compiled(x), fn(x))
    assert len(bytegraph.cache_entries(compiled)) == 2
    source = bytegraph.guard_source(compiled)
    assert "___torch_state" not in source
    assert "___is_grad_enabled() is True" in source and "___is_grad_enabled() is False" in source


def test_the_variants_of_one_state_share_one_checker():
    def fn(x):
        return x * 2

    compiled = bytegraph.compile(fn, dynamic=False)
    for n in (2, 3):
        x = torch.randn(n)
        assert_same(compiled(x), fn(x))
    assert bytegraph.guard_source(compiled).count("___torch_state.check()") == 1


def test_autocast_on_is_checked_in_the_c_call_too():
    def fn(x, w):
        return x @ w

    compiled = bytegraph.compile(fn)
    x, w = torch.randn(2, 3), torch.randn(3, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert_same(compiled(x, w), fn(x, w))
        assert "___torch_state.check()" in bytegraph.guard_source(compiled)
    with torch.autocast("cpu", dtype=torch.float16):  # another dtype: the C call and parts say no
        assert_same(compiled(x, w), fn(x, w))
    assert len(bytegraph.cache_entries(compiled)) == 2


def test_no_checker_for_a_state_that_is_not_the_current_one():
    """Made only where the state now is what the guards check (a ``GlobalStateGuard`` records the
    state it is made in)."""
    now = torch.is_grad_enabled()
    assert state_checker([GRAD_MODE(None, not now)]) is None
    checker = state_checker([GRAD_MODE(None, now), DEFAULT_DTYPE(None, torch.get_default_dtype())])
    assert checker is not None and checker.check()
    with torch.set_grad_enabled(not now):
        assert not checker.check()
