"""bytegraph next to torch.compile in one process: torch.compile of something bytegraph compiled
traces the user's own code (bytegraph.compile(module) compiles the module in place, so a later
torch.compile(module) reaches bytegraph's entry function)."""

from __future__ import annotations

import warnings

import torch
import torch._dynamo

import bytegraph


def scale_shift(x, w):
    return torch.relu(x * w) + 1


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x)).sum(-1)


def test_torch_compile_of_a_compiled_function_traces_the_function():
    x, w = torch.randn(3, 4), torch.randn(4)
    ours = bytegraph.compile(scale_shift, backend="eager")
    torch._dynamo.reset()
    explained = torch._dynamo.explain(ours)(x, w)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch._dynamo.reset()
    both = torch.compile(ours, backend="eager", fullgraph=True)
    torch.testing.assert_close(both(x, w), scale_shift(x, w))
    torch._dynamo.reset()


def test_torch_compile_of_a_module_bytegraph_compiled_in_place():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 4)
    expected = Block.forward(block, x)
    assert bytegraph.compile(block, backend="eager") is block
    torch.testing.assert_close(block(x), expected)
    torch._dynamo.reset()
    theirs = torch.compile(block, backend="eager", fullgraph=True)
    torch.testing.assert_close(theirs(x), expected)
    out = theirs(x)
    out.backward(torch.ones_like(out))
    assert block.lin.weight.grad is not None
    torch._dynamo.reset()


def test_torch_export_of_a_module_calling_a_compiled_function_traces_the_function():
    # non-strict export traces in Python with torch.compiler.is_compiling() true: the entry runs
    # the function itself, so export records its ops and bytegraph compiles nothing
    from difftest import compile_counted

    ours, counter = compile_counted(scale_shift)

    class Caller(torch.nn.Module):
        def forward(self, x, w):
            return ours(x, w) * 2

    x, w = torch.randn(3, 4), torch.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a trace of export's tensors would warn (and fall back)
        exported = torch.export.export(Caller(), (x, w), strict=False)
    targets = {n.target for n in exported.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.relu.default in targets
    torch.testing.assert_close(exported.module()(x, w), scale_shift(x, w) * 2)
    assert counter.frame_count == 0
