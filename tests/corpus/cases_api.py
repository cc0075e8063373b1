"""torch.compiler's API used inside compiled code: disable, allow_in_graph,
assume_constant_result, substitute_in_graph and is_compiling."""

from __future__ import annotations

import operator

import torch
from corpus.harness import Setup, case


@case("api", graphs=2, breaks=1, tc_breaks=1)
def compiler_disable_call():
    log: list[float] = []

    @torch.compiler.disable
    def record(t):
        log.append(float(t.sum()))
        return t + 1

    def fn(x):
        return record(x.sin()).cos()

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: list(log))


@case("api", graphs=2, breaks=1, tc_breaks=1)
def compiler_disable_non_recursive():
    @torch.compiler.disable(recursive=False)
    def helper(t):
        return t.exp() * 2

    def fn(x):
        return helper(x + 1) - 1

    return Setup(fn, lambda: (torch.randn(4),))


@case("api", graphs=2, breaks=1, tc_breaks=1)
def dynamo_disable_method_of_submodule():
    class Inner(torch.nn.Module):
        @torch._dynamo.disable
        def forward(self, x):
            return x * 3

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x.relu()).sum()

    model = Outer()
    return Setup(model.forward, lambda: (torch.randn(4),))


@case("api", graphs=1, breaks=0, tc_breaks=0)
def compiler_allow_in_graph():
    def fused(a, b):
        return a * b + 1

    torch.compiler.allow_in_graph(fused)

    def fn(x, y):
        return fused(x.sin(), y).sum()

    return Setup(fn, lambda: (torch.randn(4), torch.randn(4)))


@case("api", graphs=1, breaks=0, tc_breaks=0)
def assume_constant_result_scale():
    settings = {"scale": 3.0}

    @torch._dynamo.assume_constant_result
    def scale():
        return settings["scale"]

    def fn(x):
        return x * scale()

    return Setup(fn, lambda: (torch.randn(4),))


@case("api", graphs=1, breaks=0, tc_breaks=0)
def is_compiling_picks_the_traceable_path():
    def fn(x):
        if torch.compiler.is_compiling():
            return x + 1
        return x + 1.0

    return Setup(fn, lambda: (torch.randn(4),))


@case("api", graphs=1, breaks=0, tc_breaks=0)
def c_function_with_a_polyfill():
    def fn(x, items):
        return x * operator.countOf(items, 2)

    return Setup(fn, lambda: (torch.randn(4), [2, 1, 2]))
