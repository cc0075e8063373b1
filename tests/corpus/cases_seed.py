"""The cases issue 11 reported, one per row of its table: the first to be fixed."""

from __future__ import annotations

import dataclasses
import typing

import torch
from corpus.harness import Setup, case


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_cpu_bf16_matmul():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x.T
        return y

    return Setup(fn, lambda: (torch.randn(4, 4),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def inference_mode_block():
    def fn(x):
        with torch.inference_mode():
            y = x * 2
        return y.sum()

    return Setup(fn, lambda: (torch.randn(4, 4),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def no_grad_decorator():
    @torch.no_grad()
    def inner(x):
        return x * 2

    def fn(x):
        return inner(x) + 1

    return Setup(fn, lambda: (torch.randn(4, requires_grad=True),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_decorator():
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def inner(x):
        return x @ x

    def fn(x):
        return inner(x) + 1

    return Setup(fn, lambda: (torch.randn(4, 4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def dataclass_made_in_function():
    @dataclasses.dataclass
    class Point:
        x: torch.Tensor
        scale: float = 2.0

    def fn(x):
        p = Point(x)
        return p.x * p.scale

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def loss_module_made_in_forward():
    def fn(logits, labels):
        loss_fct = torch.nn.CrossEntropyLoss()
        return loss_fct(logits, labels)

    return Setup(fn, lambda: (torch.randn(4, 5), torch.tensor([0, 1, 4, 2])))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def property_setter_runs():
    class Box:
        def __init__(self):
            self._t = torch.zeros(3)

        @property
        def t(self):
            return self._t

        @t.setter
        def t(self, value):
            self._t = value.clamp(min=0)

    box = Box()

    def fn(x):
        box.t = x
        return box.t + 1

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: box)


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def forward_hook_appends_to_closure_list():
    seen = []
    lin = torch.nn.Linear(3, 3)
    lin.register_forward_hook(lambda mod, inp, out: seen.append(out.sum()))

    def fn(x):
        return lin(x) * 2

    return Setup(fn, lambda: (torch.randn(2, 3),), observe=lambda: list(seen))


@case("errors", graphs=1, breaks=0, tc_breaks=0)
def autograd_function_apply():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    def fn(x):
        return Double.apply(x) + 1

    return Setup(fn, lambda: (torch.randn(4, requires_grad=True),))


@case("errors", graphs=1, breaks=0, tc_breaks=0)
def jit_annotate():
    def fn(x):
        return torch.jit.annotate(typing.Any, x + 1)

    return Setup(fn, lambda: (torch.randn(4),))


@case(
    "errors",
    graphs=0,
    breaks=1,
    tc_breaks=0,
    why="sparse tensors run in Python: fake tensors lose their data (nnz), so values folded from "
    "them were wrong; torch.compile produces no graph here either",
)
def sparse_nnz():
    def fn(x):
        return x._nnz() + 1

    return Setup(fn, lambda: (torch.eye(3).to_sparse(),))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_keys_view_sees_insertions():
    def fn(x):
        d = {"a": 1}
        keys = d.keys()
        d["b"] = 2
        return x + len(keys), list(keys)

    return Setup(fn, lambda: (torch.randn(2),))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_iterator_position():
    def fn(x):
        it = iter(range(5))
        next(it)
        total = x
        for i in it:
            total = total + i
        return total

    return Setup(fn, lambda: (torch.randn(2),))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_extend_with_mutating_map():
    def fn(x):
        out = [1, 2]

        def f(v):
            out.append(v * 10)
            return v

        out.extend(map(f, [3, 4]))
        return x + sum(out), out

    return Setup(fn, lambda: (torch.randn(2),))
