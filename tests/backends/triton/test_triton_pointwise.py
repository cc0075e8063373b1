"""Differential tests of the elementwise lowerings against eager (fp32, fp16, bf16, int, bool)."""

from __future__ import annotations

import pytest
import torch

UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": lambda x: torch.log(x.abs() + 0.1),
    "log2": lambda x: torch.log2(x.abs() + 0.1),
    "log1p": lambda x: torch.log1p(x.abs()),
    "sqrt": lambda x: torch.sqrt(x.abs()),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1),
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "erf": torch.erf,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "trunc": torch.trunc,
    "relu": torch.relu,
    "sign": torch.sign,
    "reciprocal": lambda x: torch.reciprocal(x + 5),
    "square": torch.square,
    "pow2": lambda x: x**2,
    "pow3": lambda x: x**3,
    "pow_half": lambda x: x.abs() ** 0.5,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "leaky_relu": torch.nn.functional.leaky_relu,
    "hardtanh": torch.nn.functional.hardtanh,
    "clamp": lambda x: x.clamp(-0.5, 0.7),
    "clamp_min": lambda x: x.clamp(min=0.1),
    "isnan": torch.isnan,
    "logical_not": torch.logical_not,
    "softplus": torch.nn.functional.softplus,
    "elu": torch.nn.functional.elu,
    "hardswish": torch.nn.functional.hardswish,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_eager_fp32(name, triton_check):
    runner = triton_check(lambda x: (UNARY[name](x),), torch.randn(7, 5) * 2)
    assert len(runner.kernels) >= 1


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "add_alpha": lambda x, y: torch.add(x, y, alpha=3),
    "rsub": lambda x, y: 2 - x,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "where": lambda x, y: torch.where(x > y, x, y),
    "atan2_free": lambda x, y: x * y - x / (y + 9),
    "floor_divide": lambda x, y: torch.floor_divide(x, y + 5),
    "remainder": lambda x, y: torch.remainder(x, y + 5),
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "div_trunc": lambda x, y: torch.div(x, y + 5, rounding_mode="trunc"),
    "div_floor": lambda x, y: torch.div(x, y + 5, rounding_mode="floor"),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_matches_eager_fp32(name, triton_check):
    triton_check(lambda x, y: (BINARY[name](x, y),), torch.randn(3, 1, 5), torch.randn(4, 1))


def chain(x, y):
    a = torch.relu(x * y + 1)
    b = torch.sigmoid(x) * y - torch.tanh(y)
    c = torch.where(x > 0, x, y * 0.5)
    return a, b + c, (x / (y.abs() + 1)).exp()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_chain_matches_eager(dtype, triton_check):
    x, y = torch.randn(6, 9).to(dtype), torch.randn(6, 9).to(dtype)
    triton_check(chain, x, y)


def _floor_division(a, b, t, d):
    return (
        a // b,
        a % b,
        torch.div(a, b, rounding_mode="floor"),
        t // 0.1,
        t % 0.1,
        t // -0.7,
        t % -0.7,
        d // 0.1,
        d % 0.1,
    )


def test_floor_divide_and_remainder_are_pythons(triton_compile):
    """``//`` and ``%`` of floats as Python and eager compute them (from an exact fmod): ``3 //
    0.1`` is 29 and ``3 % 0.1`` 0.0999..., not ``floor(3 / 0.1)`` (30) and 0; the signs of
    divisor, remainder and a zero quotient, a zero divisor and an infinite one; an int tensor with
    a Python float (in float32), a float64 tensor."""
    inf = float("inf")
    a = torch.tensor([3.0, 7.0, -3.0, 3.0, -3.0, 0.0, -0.0, 5.0, 1e10, 1.0, -1.0, 2.5, 7.5, 0.3])
    b = torch.tensor([0.1, 0.1, 0.1, -0.1, -0.1, 0.1, 0.1, 0.0, 3.0, inf, inf, 0.5, -2.5, -0.1])
    t = torch.tensor([3, 7, -3, 16777217, 123456789, 0])
    d = torch.tensor([3.0, 7.0, -3.0, 1e15], dtype=torch.float64)
    runner = triton_compile(_floor_division, a, b, t, d)
    for got, want in zip(runner(a, b, t, d), _floor_division(a, b, t, d), strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        number = ~want.isnan()
        assert torch.equal(got[number].signbit(), want[number].signbit())  # -0.0 where eager's is
    assert not runner.fallback_ops


def test_mixed_precision_promotes_like_eager(triton_check):
    runner = triton_check(
        lambda x, y: (x + y, x * 2.5, (x > y).to(torch.float16)),
        torch.randn(5, 3).half(),
        torch.randn(5, 3),
    )
    assert not runner.fallback_ops


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_ops_match_eager(dtype, triton_check):
    def fn(x, y):
        return x + y * 3, x & y, x | y, x ^ y, torch.maximum(x, y), x > y, x * 0.5, -x, x.abs()

    x = torch.randint(-50, 50, (4, 7), dtype=dtype)
    y = torch.randint(-50, 50, (7,), dtype=dtype)
    triton_check(fn, x, y)


def test_bool_ops_match_eager(triton_check):
    def fn(a, b):
        return a & b, a | b, ~a, torch.logical_xor(a, b), a.to(torch.float32) + b

    triton_check(fn, torch.rand(5, 6) > 0.5, torch.rand(5, 6) > 0.3)


def test_int_and_float_mixes_promote(triton_check):
    triton_check(
        lambda x, y: (x + y, x / 3, (x * y).to(torch.int32)),
        torch.randint(0, 9, (4, 5)),
        torch.randn(4, 5),
    )


def test_dtype_conversions_round_like_eager(triton_check):
    def fn(x):
        return (
            x.to(torch.float16).to(torch.float32),
            x.to(torch.int32),
            x.to(torch.bool),
            x.to(torch.bfloat16) * 3,
        )

    triton_check(fn, torch.randn(8, 8) * 100)


def test_transposed_and_sliced_inputs(triton_check):
    base = torch.randn(9, 12)
    triton_check(lambda x, y: (x * 2 + y,), base.t(), torch.randn(12, 9))
    triton_check(lambda x: (torch.relu(x) + 1,), base[1:8:2, ::3])


def test_expanded_and_size1_inputs(triton_check):
    triton_check(
        lambda x, y: (x + y, x * y.sum()), torch.randn(1, 5).expand(4, 5), torch.randn(4, 1)
    )
    triton_check(lambda x: (x.sigmoid(),), torch.randn(1, 1, 1))


def test_zero_dim_and_scalar_tensors(triton_check):
    triton_check(lambda x, y: (x * y + 1, y.exp()), torch.randn(3, 4), torch.tensor(2.5))


def test_odd_sizes(triton_check):
    for shape in [(1,), (17,), (3, 1, 7), (1025,)]:
        triton_check(lambda x: (torch.sin(x) * x,), torch.randn(shape))


def test_factories_and_arange(triton_check):
    def fn(x):
        return (
            x + torch.arange(5),
            torch.full((3, 5), 2.0) * x,
            torch.zeros_like(x) + 1,
            torch.ones(5, dtype=torch.int64),
        )

    triton_check(fn, torch.randn(3, 5))


def test_gradients_of_pointwise_ops(triton_check):
    def fn(x, y):
        return ((torch.nn.functional.gelu(x * y) + torch.tanh(x) * torch.sigmoid(y)).relu(),)

    triton_check(fn, torch.randn(6, 5), torch.randn(6, 5), grad=True)


def test_gradients_low_precision(triton_check):
    def fn(x, w):
        return (torch.nn.functional.silu(x) * w,)

    triton_check(fn, torch.randn(4, 8).half(), torch.randn(8).half(), grad=True)


def test_factories_take_their_fill_value_from_their_own_argument(triton_check):
    """Each factory fills with its own value: ``full``/``full_like`` (second argument),
    ``new_full`` (third: ``self, size, value``), ``zeros``/``ones`` and their variants (a
    constant), ``scalar_tensor`` (first); none runs through torch."""

    def fn(x):
        a = torch.ops.aten.new_full.default(x, [2, 3], 7.0)
        b = torch.ops.aten.full_like.default(x, 2.0)
        c = torch.ops.aten.full.default([2, 3], -1.5)
        d = torch.ops.aten.new_ones.default(x, [2, 3]) + torch.ops.aten.zeros_like.default(x)
        e = torch.ops.aten.scalar_tensor.default(4.0)
        return (a + b + c + d + e + x,)

    triton_check(fn, torch.randn(2, 3), fallbacks=0)
