"""Snapshots of the generated guard code: the dispatcher (``guard_source``) and one entry's guards.

The dispatcher takes the function's arguments as parameters, tests the conditions shared by every
entry once, then branches on what differs, the newest entry first (an entry tried later moves to
the front when it matches: ``___promote``). The tensors it takes are checked in one C call first
(``kinds.tensor_checker``), and the global state in another (``kinds.state_checker``), their
parts only where that call says no.
"""

from __future__ import annotations

import torch
from difftest import assert_same

import bytegraph

GLOBAL_STATE = """\
___get_default_dtype() is ___torch_float32
___len_torch_function_stack() == 0
___get_deterministic_algorithms() is False
___is_any_autocast_enabled() is False
___is_grad_enabled() is True"""


def test_entry_guards_snapshot():
    def fn(x, n):
        return torch.relu(x) * n

    compiled = bytegraph.compile(fn)
    x = torch.randn(2, 3)
    assert_same(compiled(x, 2), fn(x, 2))
    assert (
        bytegraph.cache_entries(compiled)[0].guards.source
        == """\
type(L['n']) is ___int
G['torch'] is ___torch
L['n'] == 2
type(L['x']) is ___Tensor
L['x'].dtype is ___torch_float32
L['x'].is_cpu
L['x'].requires_grad is False
L['x'].is_neg() is False
L['x'].shape == (2, 3)
L['x'].is_contiguous()
"""
        + GLOBAL_STATE
    )


def test_dispatcher_shares_common_guards_snapshot():
    def fn(x, mode):
        return torch.relu(x) if mode == "relu" else torch.tanh(x)

    compiled = bytegraph.compile(fn)
    x = torch.randn(2, 3)
    for mode in ("relu", "tanh"):
        assert_same(compiled(x, mode), fn(x, mode))
    assert (
        bytegraph.guard_source(compiled)
        == """\
def __guard_fn_2(x, mode):
    try:
        if (type(mode) is ___str
                and G['torch'] is ___torch
                and (___tensors.check(x) or (type(x) is ___Tensor and x.dtype is ___torch_float32 \
and x.is_cpu and x.requires_grad is False and x.is_neg() is False and x.shape == (2, 3) \
and x.is_contiguous()))
                and (___torch_state.check() or (___get_default_dtype() is ___torch_float32 \
and ___get_deterministic_algorithms() is False and ___is_any_autocast_enabled() is False \
and ___is_grad_enabled() is True))
                and ___len_torch_function_stack() == 0):
            if mode == 'tanh':
                return ___variant_1
            if mode == 'relu':
                return ___variant_0
    except Exception:
        return ___slow({'x': x, 'mode': mode})
    return None"""
    )


def test_strides_checked_exactly_when_contiguity_is_not_enough():
    def fn(x, y):
        return x + y

    compiled = bytegraph.compile(fn)
    args = (torch.randn(4), torch.randn(4, 1).expand(4, 4))
    assert_same(compiled(*args), fn(*args))
    guards = bytegraph.cache_entries(compiled)[0].guards.source.splitlines()
    assert "L['y'].stride() == (1, 0)" in guards
    assert "L['x'].is_contiguous()" in guards


def test_arguments_named_like_dispatcher_internals_are_renamed():
    def fn(G, type, L_G):  # noqa: A002  (shadowing on purpose)
        return G + type + L_G

    compiled = bytegraph.compile(fn)
    args = (torch.ones(2), torch.ones(2), torch.ones(2))
    assert_same(compiled(*args), fn(*args))
    header = bytegraph.guard_source(compiled).splitlines()[0]
    assert header == "def __guard_fn_1(L_L_G, L_type, L_G):"
    assert_same(compiled(*args), fn(*args))
    assert len(bytegraph.cache_entries(compiled)) == 1
