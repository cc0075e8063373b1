"""``with torch.device(...)`` blocks in the compiled function, with random numbers drawn inside and
around them: results, flags (``is_meta``, ``device.type``) and the global random number generator's
state after every call are eager's, and the default device is left as eager leaves it.

Tensors made by factory calls in the block get the block's device (traced). A ``torch.nn`` module
made in the block is not built during the trace (bytegraph builds such modules ahead of the graph,
under the call's default device, and would draw its initial weights from the CPU generator where
eager, on "meta", draws nothing): the graph breaks at it and it is built in Python, inside the
block. torch.compile 2.13 compiles none of these functions (0 graphs: Dynamo runs frames that
enter a ``torch.device`` block eagerly), so bytegraph's counts below are all at least as good.
"""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)


def _randn_in_block(x):
    with torch.device("meta"):
        t = torch.randn(2)
    return t.is_meta, t.device.type == "meta", torch.randn(2) + x


def _random_factories_in_block(x):
    with torch.device("meta"):
        a = torch.empty(2).normal_()
        b = torch.rand(2)
        c = torch.randint(0, 5, (2,))
        d = torch.randn_like(x)
        e = torch.randn(2, device="cpu")
    return a.is_meta, b.is_meta, c.is_meta, d.is_meta, e + x, torch.rand(2)


def _nested_blocks(x):
    with torch.device("cpu"):
        with torch.device("meta"):
            t = torch.randn(2)
        u = torch.randn(2)
    return t.is_meta, u.is_meta, u + x


def _break_inside_block(x):
    with torch.device("meta"):
        t = torch.randn(2)
        print("inside")
        u = torch.randn(2)
    return t.is_meta, u.is_meta, torch.randn(2) + x


def _module_in_block(x):
    with torch.device("meta"):
        m = torch.nn.Linear(2, 2)
    return m.weight.is_meta, torch.randn(2) + x


def _user_module_in_block(x):
    with torch.device("meta"):
        m = Net()
    return m.lin.weight.is_meta, torch.rand(2) + x


def _module_outside_block(x):
    m = torch.nn.Linear(2, 2)
    with torch.device("meta"):
        t = torch.randn(2)
    return m.weight.is_meta, t.is_meta, m(x)


def _default_device_set_and_reset(x):
    torch.set_default_device("meta")
    try:
        t = torch.randn(2)
    finally:
        torch.set_default_device(None)
    return t.is_meta, torch.randn(2) + x


@pytest.mark.parametrize(
    ("fn", "graphs", "breaks"),
    [
        (_randn_in_block, 1, 0),
        (_random_factories_in_block, 1, 0),
        (_nested_blocks, 1, 0),
        (_break_inside_block, 2, 1),  # the block is entered again after the print
        (_module_in_block, 1, 1),  # the module is built in Python, in the block
        (_user_module_in_block, 1, 1),
        (_module_outside_block, 1, 0),
        (_default_device_set_and_reset, 1, 0),  # traced (it broke at each set); torch.compile too
    ],
)
def test_device_block_with_random_numbers_runs_as_eager(fn, graphs, breaks):
    check_breaks(
        fn,
        lambda: (torch.ones(2),),
        graphs=graphs,
        breaks=breaks,
        setup=lambda: torch.manual_seed(0),
        observe=lambda: (torch.get_rng_state(), str(torch.get_default_device())),
    )
