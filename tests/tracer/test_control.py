"""Differential tests: control flow the tracer decides at trace time (loops unrolled over known
iterables, branches on constants, types and shapes), comprehensions, f-strings, asserts and
``with torch.no_grad()``."""

from __future__ import annotations

import torch
from difftest import check


def test_for_range_unrolled():
    def fn(x):
        for i in range(3):
            x = x * 2 + i
        return x

    _, counter = check(fn, torch.randn(3))
    assert counter.op_count == 6


def test_for_range_with_start_stop_step():
    def fn(x):
        acc = x
        for i in range(10, 2, -3):
            acc = acc + i
        return acc

    check(fn, torch.randn(3))


def test_for_over_tuple_of_tensors():
    def fn(a, b, c):
        out = 0
        for t in (a, b, c):
            out = out + t.sin()
        return out

    check(fn, torch.randn(3), torch.randn(3), torch.randn(3))


def test_for_over_dict_items():
    def fn(d):
        out = []
        for name, t in d.items():
            out.append(t * len(name))
        return out

    check(fn, {"ab": torch.randn(2), "c": torch.randn(2)})


def test_for_with_break():
    def fn(x):
        for i in range(10):
            if i == 3:
                break
            x = x + 1
        return x

    check(fn, torch.randn(3))


def test_for_with_continue():
    def fn(x):
        for i in range(5):
            if i % 2 == 0:
                continue
            x = x * i
        return x

    check(fn, torch.randn(3))


def test_for_else_runs_when_no_break():
    def fn(x):
        for i in range(3):
            if i > 5:
                break
        else:
            x = x + 100
        return x

    check(fn, torch.randn(3))


def test_nested_for_loops():
    def fn(x):
        for i in range(2):
            for j in range(3):
                x = x + i * j
        return x

    check(fn, torch.randn(3))


def test_for_over_enumerate():
    def fn(xs):
        total = 0
        for i, t in enumerate(xs):
            total = total + t * i
        return total

    check(fn, [torch.randn(2) for _ in range(3)])


def test_for_over_enumerate_with_start():
    def fn(xs):
        return [t * i for i, t in enumerate(xs, 1)]

    check(fn, (torch.randn(2), torch.randn(2)))


def test_for_over_zip():
    def fn(xs, ys):
        return [a * b for a, b in zip(xs, ys, strict=True)]

    check(fn, [torch.randn(2), torch.randn(2)], [torch.randn(2), torch.randn(2)])


def test_for_over_reversed():
    def fn(xs):
        out = []
        for t in reversed(xs):
            out.append(t + len(out))
        return out

    check(fn, [torch.randn(2) for _ in range(3)])


def test_for_over_tensor_rows():
    def fn(x):
        rows = []
        for row in x:
            rows.append(row.sum())
        return torch.stack(rows)

    check(fn, torch.randn(3, 4))


def test_for_over_string_constant():
    def fn(x):
        for ch in "abc":
            x = x + ord(ch)
        return x

    check(fn, torch.randn(2))


def test_while_with_constant_condition():
    def fn(x):
        i = 0
        while i < 4:
            x = x + i
            i += 1
        return x

    check(fn, torch.randn(3))


def test_while_true_with_break():
    def fn(x):
        n = 0
        while True:
            n += 1
            x = x * 1.5
            if n >= 3:
                break
        return x

    check(fn, torch.randn(3))


def test_while_over_list_pop():
    def fn(x):
        todo = [1, 2, 3]
        while todo:
            x = x + todo.pop()
        return x

    check(fn, torch.randn(3))


def test_if_on_constant_argument():
    def fn(x, mode):
        if mode == "double":
            return x * 2
        elif mode == "half":
            return x / 2
        return x

    check(fn, torch.randn(3), "half")


def test_if_on_shape_specialises():
    def fn(x):
        if x.shape[0] > 2:
            return x.sum()
        return x.mean()

    compiled, counter = check(fn, torch.randn(4))
    small = torch.randn(2)
    torch.testing.assert_close(compiled(small), small.mean())
    assert counter.frame_count == 2


def test_if_on_ndim():
    def fn(x):
        if x.ndim == 2:
            return x.t()
        return x

    check(fn, torch.randn(2, 3))


def test_if_on_dtype():
    def fn(x):
        if x.dtype == torch.float32:
            return x.double()
        return x

    check(fn, torch.randn(3))


def test_if_on_isinstance():
    def fn(x, y):
        if isinstance(y, torch.Tensor):
            return x + y
        return x * y

    check(fn, torch.randn(3), 2.0)


def test_if_on_type_identity():
    def fn(x, y):
        if type(y) is int:
            return x + y
        return x

    check(fn, torch.randn(3), 4)


def test_if_on_none_default():
    def fn(x, bias=None):
        if bias is not None:
            x = x + bias
        return x * 2

    check(fn, torch.randn(3))


def test_conditional_expression():
    def fn(x, flag):
        return x.relu() if flag else x.sigmoid()

    check(fn, torch.randn(3), True)


def test_and_or_short_circuit_values():
    def fn(x, a, b):
        c = a or 5
        d = b and 7
        return x * c + d

    check(fn, torch.randn(3), 0, 2)


def test_or_returns_container():
    def fn(x, opts):
        opts = opts or {"k": 2}
        return x * opts["k"]

    check(fn, torch.randn(3), {})


def test_not_on_constant():
    def fn(x, flag):
        if not flag:
            return x - 1
        return x + 1

    check(fn, torch.randn(3), False)


def test_list_comprehension():
    def fn(x):
        return [x * i for i in range(3)]

    check(fn, torch.randn(2))


def test_list_comprehension_with_condition():
    def fn(xs):
        return [t.exp() for i, t in enumerate(xs) if i != 1]

    check(fn, [torch.randn(2) for _ in range(3)])


def test_nested_list_comprehension():
    def fn(x):
        return [[x * i + j for j in range(2)] for i in range(2)]

    check(fn, torch.randn(2))


def test_dict_comprehension():
    def fn(x):
        return {f"k{i}": x + i for i in range(3)}

    check(fn, torch.randn(2))


def test_set_comprehension():
    def fn(x):
        s = {i % 3 for i in range(10)}
        return x * len(s)

    check(fn, torch.randn(2))


def test_generator_expression_in_sum():
    def fn(xs):
        return sum(t * 2 for t in xs)

    check(fn, [torch.randn(2), torch.randn(2)])


def test_comprehension_keeps_outer_variable():
    def fn(x):
        i = 10
        ys = [x + i for i in range(2)]
        return ys, x * i

    check(fn, torch.randn(2))


def test_comprehension_capturing_local():
    def fn(x, w):
        return [x * w + k for k in (1, 2)]

    check(fn, torch.randn(2), torch.randn(2))


def test_fstring_constant():
    def fn(x, name):
        key = f"{name}_{x.shape[0]}:{3.14159:.2f}!r={name!r}"
        return {key: x + 1}

    check(fn, torch.randn(2), "w")


def test_fstring_used_as_dict_key():
    def fn(d):
        return [d[f"layer{i}"] * 2 for i in range(2)]

    check(fn, {"layer0": torch.randn(2), "layer1": torch.randn(2)})


def test_assert_on_constant_passes():
    def fn(x):
        assert x.dim() == 1, "expects a vector"
        assert isinstance(x, torch.Tensor)
        return x * 2

    check(fn, torch.randn(3))


def test_with_no_grad():
    def fn(x):
        with torch.no_grad():
            y = x * 2
        return y, x * 3

    check(fn, torch.randn(3, requires_grad=True))


def test_with_enable_grad_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            a = x + 1
            with torch.enable_grad():
                b = x * 2
        return a, b

    check(fn, torch.randn(3, requires_grad=True))


def test_with_no_grad_nested_call():
    def inner(x):
        with torch.no_grad():
            return x.sin()

    def fn(x):
        return inner(x) + 0, x.cos()

    check(fn, torch.randn(3, requires_grad=True))


def test_early_return_inside_loop():
    def fn(x):
        for i in range(5):
            x = x + 1
            if i == 2:
                return x
        return x * 0

    check(fn, torch.randn(3))


def test_loop_building_dict():
    def fn(x):
        d = {}
        for i in range(3):
            d[i] = x * i
        return d

    check(fn, torch.randn(2))


def test_if_on_len_of_list():
    def fn(xs):
        if len(xs) == 2:
            return xs[0] + xs[1]
        return xs[0]

    check(fn, [torch.randn(2), torch.randn(2)])


def test_try_finally_without_exception():
    def fn(x):
        try:
            y = x + 1
        finally:
            z = 2
        return y * z

    check(fn, torch.randn(2))


def test_for_over_list_sees_appends_in_body():
    def fn(x):
        xs = [1, 2]
        for v in xs:
            if v == 1:
                xs.append(3)
            x = x + v
        return x

    check(fn, torch.randn(2))


def test_walrus_operator():
    def fn(x):
        if (n := x.shape[0]) > 2:
            return (y := x * n) + y
        return x

    check(fn, torch.randn(3))


def test_shape_equality_with_tuple_and_other_shape():
    def fn(x, y):
        if x.shape == y.shape and x.shape == (2, 3):
            return x + y
        return x - y

    check(fn, torch.randn(2, 3), torch.randn(2, 3))


def test_starred_unpack_of_shape():
    def fn(x):
        *batch, features = x.shape
        return x.view(*batch, features, 1), batch

    check(fn, torch.randn(2, 3, 4))


def test_unpack_dict_gives_keys():
    def fn(x):
        a, b = {"p": 1, "q": 2}
        return {a: x, b: x + 1}

    check(fn, torch.randn(2))


def test_reversed_range_loop():
    def fn(x):
        for i in reversed(range(3)):
            x = x * 2 + i
        return x

    check(fn, torch.randn(3))
