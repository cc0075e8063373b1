"""Issue 20, kind 5: a function that a graph break sends to plain Python is called through its own
compiled version (``tracer/callees.py``), so the code below the break still compiles. Before: the
whole callee ran as plain Python (diffusers' ``UNet2DConditionModel`` compiled 0 graphs: its
forward is wrapped by a decorator that calls it inside ``try``/``finally``)."""

import functools

import torch
from difftest import check_breaks
from dynamo_baseline import dynamo_counts

import bytegraph


def scale_lora(forward_fn):
    """The shape of diffusers' ``apply_lora_scale``: the wrapped forward runs inside try/finally."""

    @functools.wraps(forward_fn)
    def wrapper(self, *args, **kwargs):
        self.scaled = True
        try:
            result = forward_fn(self, *args, **kwargs)
        finally:
            self.scaled = False
        return result

    return wrapper


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scaled = False

    @scale_lora
    def forward(self, x):
        h = torch.relu(self.lin(x))
        print("deep inside")  # a break the wrapper's try block keeps from resuming here
        return self.lin(h).sigmoid() + self.scaled


def _helper(x):
    y = x.cos()
    print("in helper")
    return y.sin()


def _callee_in_try(x):
    z = x + 1
    try:
        out = _helper(z)
    except ValueError:
        out = z
    return out * 3


def test_a_wrapped_forward_compiles_below_the_break():
    torch.manual_seed(0)
    block = Block()

    def make():
        return (torch.randn(2, 4),)

    def run(x):
        return block(x)

    # graphs: the linear + relu before the print, the second linear + sigmoid after it, both in
    # forward's own compiled version; the wrapper's own code has none. One break, the print.
    check_breaks(run, make, graphs=2, breaks=1, calls=3, observe=lambda: block.scaled)
    assert dynamo_counts(run, *make()) == (2, 1)


def test_a_callee_in_a_try_block_compiles_on_its_own():
    check_breaks(_callee_in_try, lambda: (torch.randn(3),), graphs=3, breaks=1, calls=3)
    assert dynamo_counts(_callee_in_try, torch.randn(3)) == (2, 1)


def test_the_callee_keeps_its_own_cache_and_reports():
    compiled = bytegraph.compile(_callee_in_try, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(compiled(torch.ones(3)), _callee_in_try(torch.ones(3)))
    stats = bytegraph.stats()
    assert stats.get("break:print") == 1  # the helper's break, once, from its own compile
