"""``tracer/fakes/elementwise_meta.py`` decides the output of an elementwise operator without its
meta kernel only where that output is the fake mode's own: every listed operator, on seeded random
inputs of many shapes, dtypes and layouts (contiguous, permuted, sliced, broadcast, odd strides on
size-1 dimensions, empty, 0-d), either gets no answer or the mode's shape, strides and dtype; and
each operator is decided on some of them."""

from __future__ import annotations

import collections
import random

import pytest
import torch
from bytegraph.tracer.effects import ProbedFakeTensorMode
from bytegraph.tracer.fakes import elementwise_meta
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool]


def _tensor(rng: random.Random, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    kind, n = rng.random(), len(shape)
    if kind < 0.55 or n == 0:
        return torch.empty(shape, dtype=dtype)
    if kind < 0.7:
        order = list(range(n))
        rng.shuffle(order)
        base = torch.empty([shape[d] for d in order], dtype=dtype)
        return base.permute(*[order.index(d) for d in range(n)])
    if kind < 0.8:
        base = torch.empty([2 * s for s in shape], dtype=dtype)
        return base[tuple(slice(0, s) for s in shape)]
    if kind < 0.9:
        return torch.empty([1 if rng.random() < 0.5 else s for s in shape], dtype=dtype).expand(
            *shape
        )
    strides = list(torch.empty(shape).stride())
    for d, s in enumerate(shape):
        if s == 1:
            strides[d] = rng.choice([1, 2, 7, 100])
    return torch.empty_strided(shape, strides, dtype=dtype)


def _arguments(rng: random.Random, op) -> list:
    shape = [rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(rng.choice([0, 1, 2, 3, 4, 4, 5]))]
    dtype = rng.choice(DTYPES[:4]) if rng.random() < 0.9 else rng.choice(DTYPES)
    if op in elementwise_meta._INTEGER_OPS and rng.random() < 0.25:
        dtype = rng.choice([torch.int64, torch.int32])
    args: list = [_tensor(rng, shape, dtype)]
    for is_tensor in elementwise_meta._SIGNATURES[op][1:]:
        if is_tensor and rng.random() < 0.8:
            other = list(shape)
            if rng.random() < 0.2:
                other = [1 if rng.random() < 0.5 else s for s in other][
                    rng.randint(0, len(other)) :
                ]
            other_dtype = dtype if rng.random() < 0.9 else rng.choice(DTYPES)
            args.append(_tensor(rng, other, other_dtype))
        else:
            args.append(rng.choice([2, 0.5, 3, True, 1, -1.5]))
    return args


@pytest.mark.parametrize("op", list(elementwise_meta.ELEMENTWISE), ids=str)
def test_decides_only_what_the_fake_mode_gives(op):
    rng = random.Random(str(op))
    mode = FakeTensorMode()
    decided = 0
    for _ in range(400):
        args = [
            mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in _arguments(rng, op)
        ]
        kwargs = {}
        if op in (torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor) and rng.random() < 0.3:
            kwargs["alpha"] = rng.choice([1, 2, 0.5])
        got = elementwise_meta.output(op, tuple(args), kwargs)
        if got is None:
            continue
        decided += 1
        with mode:
            want = op(*args, **kwargs)
        where = [
            (tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor) else a
            for a in args
        ]
        assert got == (tuple(want.shape), want.stride(), want.dtype), (where, kwargs)
    assert decided >= 20


def test_broadcasting_and_other_layouts_are_decided_as_the_mode_does():
    mode = FakeTensorMode()
    f = mode.from_tensor
    mul, add = torch.ops.aten.mul.Tensor, torch.ops.aten.add.Tensor
    cases = [
        (mul, (f(torch.empty(2, 3)), f(torch.empty(3)))),  # a bias
        (mul, (f(torch.empty(3, 2).t()), f(torch.empty(2, 3)))),  # transposed first
        (add, (f(torch.empty(4, 1, 3)), f(torch.empty(5, 1)))),  # both broadcast
        (mul, (f(torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)), 2.0)),
        (torch.ops.aten.neg.default, (f(torch.empty(4, 8)[:, :4]),)),  # a slice
    ]
    for op, args in cases:
        with mode:
            want = op(*args)
        assert elementwise_meta.output(op, args, {}) == (
            tuple(want.shape),
            want.stride(),
            want.dtype,
        )


def test_mixed_dtypes_and_odd_arguments_are_left_to_the_kernel():
    mode = FakeTensorMode()
    f = mode.from_tensor
    mul = torch.ops.aten.mul.Tensor
    cases = [
        (f(torch.empty(2, 3)), f(torch.empty(2, 3, dtype=torch.float64))),  # mixed dtypes
        (f(torch.empty(2, 3, dtype=torch.int64)), 2.5),  # integers promoted by a float
        (f(torch.empty(2, 3)), 1j),  # a complex number
        (f(torch.empty(2, 3)), f(torch.empty(4, 3))),  # shapes that do not broadcast
        (f(torch.empty(2, 3)), f(torch.tensor(2.0))),  # a 0-d tensor beside another
        (f(torch.empty(3, 2, dtype=torch.bfloat16).t()), 2.0),  # low precision, transposed
    ]
    for args in cases:
        assert elementwise_meta.output(mul, args, {}) is None
    assert (
        elementwise_meta.output(torch.ops.aten.pow.Tensor_Scalar, (f(torch.empty(2)), 1), {})
        is None
    )
    assert elementwise_meta.output(mul, (f(torch.empty(2)), 2.0), {"out": None}) is None


def test_a_traced_layer_takes_it_and_matches_the_mode(monkeypatch):
    # Through the fake mode of a trace: decided ops give the metadata the mode gives without it.
    calls = collections.Counter()
    original = elementwise_meta.output

    def counting(op, args, kwargs):
        result = original(op, args, kwargs)
        calls[result is not None] += 1
        return result

    def run(fast: bool):
        monkeypatch.setattr(elementwise_meta, "output", counting if fast else lambda *a: None)
        mode = ProbedFakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
        x = mode.from_tensor(torch.randn(2, 8, 16))
        w = mode.from_tensor(torch.randn(16))
        with mode:
            var = x.pow(2).mean(-1, keepdim=True)
            y = x * torch.rsqrt(var + 1e-6)
            z = torch.nn.functional.silu(y * w) * y + x
            outs = [var, y, z, z > 0, z / 3]
        return [(tuple(t.shape), t.stride(), t.dtype) for t in outs]

    assert run(True) == run(False)
    assert calls[True] >= 5
