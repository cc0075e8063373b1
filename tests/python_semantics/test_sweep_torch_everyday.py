"""Everyday training and inference code, compiled and compared with eager call by call: values and
metadata of every tensor, ``.grad``, Python results, the state the call leaves (module buffers,
optimizer state, torch's global settings).

Each case is code a real program has (a backend flag read in a branch, an optimizer step, a
buffer counted up in ``forward``), called several times with the state changed between calls, so
that a guard the trace forgot shows as a stale variant.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from difftest import check_breaks

import bytegraph


@contextlib.contextmanager
def restored(setter, value):
    """``setter(value)`` on the way out: a test leaves torch's settings as it found them."""
    try:
        yield
    finally:
        setter(value)


# -- torch's settings read as module attributes ----------------------------------------------------


def _set_cudnn(value):
    torch.backends.cudnn.enabled = value


def _set_mkldnn(value):
    torch.backends.mkldnn.enabled = value


def _set_strategy(value):
    torch.backends.opt_einsum.strategy = value


SETTINGS = {
    # a property of the module's class (``ContextProp``), reading the C flag
    "cudnn.enabled": (
        lambda: torch.backends.cudnn.enabled,
        _set_cudnn,
        [True, False, True, False],
    ),
    "mkldnn.enabled": (
        lambda: torch.backends.mkldnn.enabled,
        _set_mkldnn,
        [False, True, False],
    ),
    "opt_einsum.strategy": (
        lambda: torch.backends.opt_einsum.strategy,
        _set_strategy,
        ["auto", "greedy", "auto"],
    ),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_torch_setting_read_in_a_branch_is_guarded(name):
    read, write, values = SETTINGS[name]
    before = read()

    def fn(x):
        if read() in (True, "auto"):
            return x + 1, read()
        return x - 1, read()

    compiled = bytegraph.compile(fn, backend="eager")
    with restored(write, before):
        for value in values:
            write(value)
            got, want = compiled(torch.zeros(2)), fn(torch.zeros(2))
            assert got[1] == want[1]
            torch.testing.assert_close(got[0], want[0])


def test_a_torch_setting_written_in_the_function():
    """The store breaks (torch.compile replays it after its graph): what runs after it, in a
    graph or in Python, runs under the new setting, as in eager."""
    before = torch.backends.cudnn.enabled

    def fn(x):
        torch.backends.cudnn.enabled = False
        return x + 1, torch.backends.cudnn.enabled

    def observe():
        return torch.backends.cudnn.enabled

    with restored(_set_cudnn, before):
        check_breaks(
            fn,
            lambda: (torch.ones(2),),
            graphs=1,
            breaks=1,
            setup=lambda: _set_cudnn(True),
            observe=observe,
        )
