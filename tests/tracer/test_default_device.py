"""Issue 24: ``torch.set_default_device`` inside a compiled function, traced as global state (as
the default dtype is): factory calls after it get the device, and the rewritten code makes the same
calls after the graph, so torch's default device after the call is eager's (a device set at exit
stays set, ``None`` removes it). Before, each call broke ("has effects outside the graph"), twice
for a set-and-restore; torch.compile: one graph, no break. The device outside is guarded: a call
under another default device does not reuse a graph traced under the first."""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext


@pytest.fixture(autouse=True)
def _no_default_device():
    torch.set_default_device(None)
    yield
    torch.set_default_device(None)


def _observe():
    """Compared after each run: the device modes on the stack and the one ``set_default_device``
    keeps (``get_default_device()`` would make a tensor there, which fails for a missing device)."""
    modes = [m for m in _get_current_function_mode_stack() if isinstance(m, DeviceContext)]
    kept = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    return (
        [str(m.device) for m in modes],
        kept and str(kept.device),
        len(modes) == len(_get_current_function_mode_stack()),
    )


def check(fn, *args, graphs=1, breaks=0, outside=None):
    """Eager's results and default device after each call, called with ``outside`` as the default
    device set before the call."""
    check_breaks(
        fn,
        lambda: args,
        graphs=graphs,
        breaks=breaks,
        setup=lambda: torch.set_default_device(outside),
        observe=_observe,
    )


def _set_and_restore(x):
    torch.set_default_device("cpu")
    y = torch.ones(3) + x
    torch.set_default_device(None)
    return y


def test_set_and_restore_in_one_graph():
    check(_set_and_restore, torch.randn(3))
    assert dynamo_counts(_set_and_restore, torch.randn(3)) == (1, 0)


def _set_at_exit(x):
    torch.set_default_device("meta")
    return torch.ones(2), torch.zeros(2, device="cpu") + x, torch.get_default_device(), x + 1


def test_the_device_set_at_exit_stays_set():
    check(_set_at_exit, torch.randn(2))
    torch.set_default_device(None)
    assert_no_more_breaks(0, _set_at_exit, torch.randn(2))


def _factories_before_and_after(x):
    before = torch.ones(2)
    torch.set_default_device("cpu")
    mid = torch.zeros(2) + x
    torch.set_default_device(None)
    return before, mid, torch.arange(2), torch.get_default_device()


@pytest.mark.parametrize("outside", [None, "cpu", "meta"])
def test_under_a_default_device_set_outside(outside):
    # ``None`` removes the device set outside too: the factories after it make CPU tensors
    check(_factories_before_and_after, torch.randn(2), outside=outside)


def test_a_call_under_another_outside_device_is_not_served_by_the_first_graph():
    compiled, counter = compile_counted(_factories_before_and_after)
    x = torch.ones(2)
    for outside in (None, "meta", None, "meta"):
        torch.set_default_device(outside)
        expected = _factories_before_and_after(x)
        expected_after = _observe()
        torch.set_default_device(outside)
        got = compiled(x)
        assert _observe() == expected_after
        assert [t.device for t in got[:3]] == [t.device for t in expected[:3]]
        assert got[3] == expected[3]
    assert counter.frame_count == 2  # one graph per outside device


def _set_then_break(x):
    y = x * 2
    torch.set_default_device("meta")
    print("break")
    return torch.ones(2), y + 1, torch.get_default_device()


def test_a_device_set_before_a_break_is_in_force_after_it():
    check(_set_then_break, torch.randn(2), graphs=2, breaks=1)


def _device_block_after_set(x):
    torch.set_default_device("cpu")
    with torch.device("meta"):
        a = torch.ones(2)
    b = torch.ones(2) + x
    torch.set_default_device(None)
    return a, b


def test_a_device_block_inside_a_set_device():
    check(_device_block_after_set, torch.randn(2))
    assert_no_more_breaks(
        0,
        _device_block_after_set,
        torch.randn(2),
        baseline_missing="torch.compile runs the call in Python: unsupported context manager",
    )


def _set_inside_device_block(x):
    with torch.device("meta"):
        torch.set_default_device("cpu")
        a = torch.ones(2)
        torch.set_default_device(None)
        b = torch.ones(2)
    return a, b, torch.ones(2), x + 1


def test_a_set_inside_a_device_block_runs_in_python():
    # Eager's bookkeeping of the two kinds of device modes mixed (``set_default_device`` replaces
    # the block's mode, ``None`` puts it back, the block's exit removes it: a on the CPU, b on
    # meta) is left to Python: a break at the first set, and the resume function, which starts
    # inside the block under a device the block did not set, runs in Python (a warning). Before,
    # that resume function was traced with the block's device: a on meta, a wrong result.
    # (torch.compile: 1 graph, 0 breaks.)
    compiled, counter = compile_counted(_set_inside_device_block)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            expected, expected_after = _set_inside_device_block(torch.ones(2)), _observe()
            got = compiled(torch.ones(2))
            assert _observe() == expected_after
            assert_same(got, expected)
    assert any("device changed directly inside a with block" in str(w.message) for w in caught)
    assert counter.frame_count == 0


def _no_tensor_on_the_default_device(x):
    return x * 2 + 1


def test_a_default_device_this_machine_lacks_does_not_crash_the_guards():
    # the guards read the default device as set ("xpu", no index): torch.get_default_device()
    # makes a tensor there to find its index, which raises "Torch not compiled with XPU enabled"
    # where eager, making no tensor there, runs
    assert not torch.xpu.is_available()
    x = torch.ones(3)
    compiled, counter = compile_counted(_no_tensor_on_the_default_device)
    torch.set_default_device("xpu")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):
                torch.testing.assert_close(compiled(x), _no_tensor_on_the_default_device(x))
    finally:
        torch.set_default_device(None)
    torch.testing.assert_close(compiled(x), _no_tensor_on_the_default_device(x))
    assert counter.frame_count == 2  # the default device is guarded: one graph per device
