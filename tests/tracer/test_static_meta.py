"""``tracer/fakes/static_meta.py`` decides the output of a matrix product, reduction, softmax or
embedding without its meta kernel only where that output is the fake mode's own: each rule, on
seeded random arguments (fitting and not, several dtypes and layouts, keepdim, negative and repeated
dims), either gives no answer or the mode's shape, strides and dtype; and each rule decides some of
them."""

from __future__ import annotations

import random

import pytest
import torch
from bytegraph.tracer.fakes import static_meta
from torch._subclasses.fake_tensor import FakeTensorMode

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64]


def _tensor(rng: random.Random, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    kind = rng.random()
    if kind < 0.6 or len(shape) < 2:
        return torch.empty(shape, dtype=dtype)
    if kind < 0.8:
        return torch.empty(list(reversed(shape)), dtype=dtype).permute(*reversed(range(len(shape))))
    return torch.empty([2 * s for s in shape], dtype=dtype)[tuple(slice(0, s) for s in shape)]


def _size(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, 3, 5])


def _arguments(rng: random.Random, op) -> tuple[tuple, dict]:
    dtype = rng.choice(DTYPES) if rng.random() < 0.3 else torch.float32
    other = rng.choice(DTYPES) if rng.random() < 0.1 else dtype
    n, k, m, b = (_size(rng) for _ in range(4))
    k2 = k if rng.random() < 0.9 else _size(rng)
    if op is aten.mm.default:
        return (_tensor(rng, [n, k], dtype), _tensor(rng, [k2, m], other)), {}
    if op is aten.bmm.default:
        return (_tensor(rng, [b, n, k], dtype), _tensor(rng, [b, k2, m], other)), {}
    if op is aten.addmm.default:
        bias = rng.choice([[m], [n, m], [1, m], [n, 1], [m + 1]])
        kwargs = {"beta": rng.choice([1, 0.5, 0])} if rng.random() < 0.3 else {}
        args = (
            _tensor(rng, bias, dtype),
            _tensor(rng, [n, k], dtype),
            _tensor(rng, [k2, m], other),
        )
        return args, kwargs
    shape = [_size(rng) or 1 for _ in range(rng.randint(1, 4))]
    if op is aten.cat.default:
        dim = rng.randint(-len(shape), len(shape) - 1)
        parts = []
        for _ in range(rng.randint(1, 3)):
            part = list(shape)
            part[dim] = _size(rng) if rng.random() < 0.9 else part[dim] + 1
            if rng.random() < 0.1:
                part[(dim + 1) % len(part)] += 1  # another size where they must agree
            if len(part) == 4 and rng.random() < 0.4:
                t = torch.empty(part, dtype=dtype).to(memory_format=torch.channels_last)
            else:
                t = _tensor(rng, part, dtype if rng.random() < 0.9 else other)
            parts.append(t)
        return (parts, dim), {}
    if op is aten._scaled_dot_product_flash_attention_for_cpu.default:
        b, h, length, e = (rng.randint(1, 4) for _ in range(4))
        q = _tensor(rng, [b, h, length, e], dtype)
        if rng.random() < 0.3:
            q = torch.empty(b, length, h, e, dtype=dtype).transpose(1, 2)
        kv = [_tensor(rng, [b, h, rng.randint(1, 4), e], dtype) for _ in range(2)]
        kwargs = {"scale": 0.5} if rng.random() < 0.5 else {}
        return (q, *kv, 0.0, rng.random() < 0.5), kwargs
    x = _tensor(rng, shape, dtype)
    if op is aten.native_layer_norm.default:
        n = rng.randint(1, len(shape))
        normalized = shape[len(shape) - n :] if rng.random() < 0.9 else [s + 1 for s in shape]
        affine = [_tensor(rng, normalized, dtype) if rng.random() < 0.7 else None for _ in range(2)]
        return (x, normalized, *affine, 1e-5), {}
    if op is aten._softmax.default:
        return (x, rng.randint(-len(shape), len(shape) - 1), False), {}
    if op is aten.embedding.default:
        weight = _tensor(rng, [rng.randint(1, 6), rng.randint(1, 4)], dtype)
        index_dtype = rng.choice([torch.int64, torch.int32, torch.float32])
        indices = torch.zeros(
            [rng.randint(1, 3) for _ in range(rng.randint(0, 3))], dtype=index_dtype
        )
        return (weight, indices), {}
    dims = rng.sample(range(-len(shape), len(shape)), rng.randint(1, len(shape)))
    if rng.random() < 0.1:
        dims = dims + dims[:1]  # a repeated dim: the kernel's error
    return (x, dims, rng.random() < 0.5), {}


def _fake(mode, value):
    if isinstance(value, torch.Tensor):
        return mode.from_tensor(value)
    if isinstance(value, list):
        return [mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for v in value]
    return value


def _described(value):
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.stride(), value.dtype)
    if isinstance(value, (list, tuple)):
        return [_described(v) for v in value]
    return value


@pytest.mark.parametrize(
    "op", sorted(set(static_meta.RULES) - static_meta.FACTORIES, key=str), ids=str
)
def test_decides_only_what_the_fake_mode_gives(op):
    rng = random.Random(str(op))
    mode = FakeTensorMode()
    decided = 0
    for _ in range(300):
        args, kwargs = _arguments(rng, op)
        args = tuple(_fake(mode, a) for a in args)
        got = static_meta.output(op, args, kwargs)
        if got is None:
            continue
        decided += 1
        with mode:
            want = op(*args, **kwargs)
        if isinstance(want, torch.Tensor):
            want = (tuple(want.shape), want.stride(), want.dtype)
        else:
            want = tuple((tuple(w.shape), w.stride(), w.dtype) for w in want)
        assert got == want, (_described(args), kwargs)
    assert decided >= 30


def test_what_does_not_fit_goes_to_the_kernel():
    mode = FakeTensorMode()
    f = mode.from_tensor
    a, b = f(torch.empty(2, 3)), f(torch.empty(4, 5))
    assert static_meta.output(aten.mm.default, (a, b), {}) is None  # the kernel raises
    assert (
        static_meta.output(aten.mm.default, (a, f(torch.empty(3, 2))), {"out_dtype": None}) is None
    )
    assert static_meta.output(aten.sum.dim_IntList, (a, None), {}) is None  # all dims
    assert static_meta.output(aten.sum.dim_IntList, (a, [0]), {"dtype": torch.float64}) is None
    assert (
        static_meta.output(aten.mean.dim, (f(torch.empty(2, 3, dtype=torch.bfloat16)), [0]), {})
        is None
    )
    assert static_meta.output(aten._softmax.default, (a, 0, True), {}) is None


def test_arange_is_the_mode_s_own():
    from bytegraph.tracer.fakes import fast_meta

    cases = [(16,), (2, 10), (2, 11, 3), (10, 2, -3), (0, 5, 7), (5, 5), (3, 1), (2.5,), (0, 1, 0)]
    factory = {1: aten.arange.default, 2: aten.arange.start, 3: aten.arange.start_step}
    decided = 0
    for bounds in cases:
        for kwargs in ({}, {"dtype": torch.float32, "device": torch.device("cpu")}):
            op, mode = factory[len(bounds)], FakeTensorMode()
            got = fast_meta.run(mode, op, bounds, kwargs)
            if got is fast_meta.NOT_FAST:
                continue
            decided += 1
            with mode:
                want = op(*bounds, **kwargs)
            assert (got.shape, got.stride(), got.dtype, got.device) == (
                want.shape,
                want.stride(),
                want.dtype,
                want.device,
            ), (bounds, kwargs)
    assert decided == 10  # not: empty ranges, a zero step, float bounds
