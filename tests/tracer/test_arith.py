"""Differential tests: tensor arithmetic, comparisons, unary and in-place ops, reflected ops, and
Python number arithmetic folded at trace time."""

from __future__ import annotations

import operator

import pytest
import torch
from difftest import check

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.matmul]
COMPARE = [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_tensor_tensor(op):
    def fn(x, y):
        return op(x, y)

    x = torch.rand(3, 3) + 0.5
    check(fn, x, torch.randn(3, 3))


def test_floordiv_and_mod_tensors():
    def fn(x, y):
        return x // y, x % y

    check(fn, torch.randn(4) * 10, torch.rand(4) + 1)


def test_bitwise_ops_on_int_tensors():
    def fn(a, b):
        return a & b, a | b, a ^ b, ~a, a << 1, b >> 1

    check(fn, torch.randint(0, 16, (5,)), torch.randint(0, 16, (5,)))


@pytest.mark.parametrize("op", COMPARE, ids=lambda op: op.__name__)
def test_compare_tensors(op):
    def fn(x, y):
        return op(x, y)

    check(fn, torch.randn(6), torch.randn(6))


@pytest.mark.parametrize("op", COMPARE, ids=lambda op: op.__name__)
def test_compare_tensor_with_scalar(op):
    def fn(x):
        return op(x, 0.0)

    check(fn, torch.randn(6))


def test_unary_negative_positive():
    def fn(x):
        return -x, +x

    check(fn, torch.randn(3))


def test_unary_invert_bool_tensor():
    def fn(x):
        return ~(x > 0)

    check(fn, torch.randn(5))


def test_abs_of_tensor():
    def fn(x):
        return abs(x)

    check(fn, torch.randn(5))


@pytest.mark.parametrize(
    "op",
    [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow],
    ids=lambda op: op.__name__,
)
def test_reflected_scalar_tensor(op):
    def fn(x):
        return op(2.0, x)

    check(fn, torch.rand(4) + 0.5)


def test_reflected_int_scalar():
    def fn(x):
        return 1 - x + 3 * x

    check(fn, torch.randn(4))


def test_inplace_add_on_local():
    def fn(x):
        y = x * 1
        y += 2
        y *= x
        y -= 1
        y /= 3
        return y

    check(fn, torch.randn(4))


def test_inplace_ops_rebinding_python_number():
    def fn(x):
        n = 3
        n += 2
        n *= 4
        n //= 3
        n **= 2
        n %= 7
        return x * n

    check(fn, torch.randn(2))


def test_inplace_operator_on_python_number_with_tensor():
    # T5's relative position buckets: ``buckets = 0; buckets += (rel > 0).long() * n`` makes a new
    # tensor (a number is immutable); FX would write an iadd node as ``0 += ...`` (a SyntaxError)
    def fn(x):
        buckets = 0
        buckets += (x > 0).to(torch.long) * 4
        scale = 1.5
        scale *= x
        scale -= x.sum()
        return buckets, scale

    check(fn, torch.randn(5))


def test_inplace_operator_on_tensor_stays_in_place():
    def fn(x, y):
        alias = x
        x += y
        same = x.mul_(2) is alias
        return alias is x, same, alias

    x = torch.randn(3)
    compiled, _ = check(fn, x.clone(), torch.randn(3))
    y = torch.randn(3)
    before = x.clone()
    out = compiled(x, y)
    assert out[:2] == (True, True) and out[2] is x
    torch.testing.assert_close(x, (before + y) * 2)


def test_inplace_tensor_method_add_():
    def fn(x):
        y = x.clone()
        y.add_(1)
        y.mul_(2)
        return y

    check(fn, torch.randn(4))


def test_inplace_matmul():
    def fn(x, w):
        y = x
        y @= w
        return y

    check(fn, torch.randn(2, 3), torch.randn(3, 3))


def test_chained_arithmetic_expression():
    def fn(a, b, c):
        return (a + b) * c - a / (b.abs() + 1) + c**2

    check(fn, torch.randn(3), torch.randn(3), torch.randn(3))


def test_broadcasting():
    def fn(x, y):
        return x + y, x * y

    check(fn, torch.randn(3, 1), torch.randn(1, 4))


def test_python_int_arithmetic_is_folded():
    def fn(x):
        a = 7
        b = (a * 3 + 1) // 2 - a % 3
        return x + b

    _, counter = check(fn, torch.randn(2))
    assert counter.op_count == 1


def test_python_float_arithmetic_is_folded():
    def fn(x):
        scale = 1.5**2 / 3.0 - 0.25
        return x * scale

    check(fn, torch.randn(2))


def test_python_bool_arithmetic():
    def fn(x):
        flag = True and not False
        return x + (flag + True)

    check(fn, torch.randn(2))


def test_string_concatenation_and_repeat():
    def fn(x):
        s = "ab" + "cd"
        s = s * 2
        return x * len(s)

    check(fn, torch.randn(2))


def test_none_comparison():
    def fn(x, y):
        if y is None:
            return x + 1
        return x - 1

    check(fn, torch.randn(2), None)


def test_int_argument_arithmetic_specialised():
    def fn(x, n):
        return x * (n + 1) - n // 2

    check(fn, torch.randn(3), 5)


def test_float_argument():
    def fn(x, alpha):
        return x * alpha + alpha**2

    check(fn, torch.randn(3), 0.3)


def test_bool_argument():
    def fn(x, flag):
        return x + 1 if flag else x - 1

    check(fn, torch.randn(3), False)


def test_divmod_and_pow_builtins_on_constants():
    def fn(x):
        q, r = divmod(17, 5)
        return x * q + pow(r, 2)

    check(fn, torch.randn(3))


def test_tensor_compared_chain():
    def fn(x):
        return (x > -1) & (x < 1)

    check(fn, torch.randn(6))


def test_scalar_tensor_ops():
    def fn(x):
        s = x.sum()
        return x / s, s * 2

    check(fn, torch.rand(4) + 1)


def test_integer_tensor_true_division():
    def fn(a):
        return a / 2, a // 2

    check(fn, torch.arange(6))


def test_mixed_dtype_promotion():
    def fn(a, b):
        return a + b

    check(fn, torch.arange(4, dtype=torch.int32), torch.randn(4))


def test_comparison_of_python_numbers_folded():
    def fn(x):
        a, b = 3, 4.5
        return x * (a < b) + x * (a == 3) + x * (a != b)

    check(fn, torch.randn(2))


def test_chained_comparison_on_constants():
    def fn(x):
        n = 5
        if 0 < n < 10:
            return x + n
        return x

    check(fn, torch.randn(2))
