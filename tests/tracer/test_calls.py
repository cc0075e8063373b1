"""Differential tests: calls to user functions, closures, lambdas and methods (inlined into the
caller's graph), argument binding (defaults, keyword-only, *args, **kwargs) and call-site
unpacking."""

from __future__ import annotations

import functools
import math
import types
import warnings

import torch
from difftest import check, compile_counted

import bytegraph

SCALE = 3.0
OFFSETS = (1, 2, 3)


def helper_add(a, b):
    return a + b


def helper_defaults(x, scale=2.0, *, shift=1.0):
    return x * scale + shift


def helper_varargs(*xs):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total


def helper_kwargs(x, **opts):
    out = x
    for name in sorted(opts):
        out = out * opts[name]
    return out


def helper_recursive(x, n):
    if n == 0:
        return x
    return helper_recursive(x * 2, n - 1)


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def apply(self, x):
        return x * self.factor

    def twice(self, x):
        return self.apply(self.apply(x))

    @staticmethod
    def static_add(x, y):
        return x + y

    @classmethod
    def make_name(cls):
        return cls.__name__

    @property
    def double(self):
        return self.factor * 2

    def __call__(self, x):
        return x - self.factor


def test_global_constant_read():
    def fn(x):
        return x * SCALE + OFFSETS[1]

    check(fn, torch.randn(3))


def test_call_global_function():
    def fn(x, y):
        return helper_add(x, y) * 2

    check(fn, torch.randn(3), torch.randn(3))


def test_nested_calls_share_one_graph():
    def inner(x):
        return torch.sin(x)

    def middle(x):
        return inner(x) + inner(x * 2)

    def fn(x):
        return middle(x) * middle(x + 1)

    _, counter = check(fn, torch.randn(3))
    assert counter.op_count >= 8


def test_positional_defaults_used():
    def fn(x):
        return helper_defaults(x)

    check(fn, torch.randn(3))


def test_positional_default_overridden():
    def fn(x):
        return helper_defaults(x, 0.5)

    check(fn, torch.randn(3))


def test_keyword_argument_call():
    def fn(x):
        return helper_defaults(x, scale=4.0)

    check(fn, torch.randn(3))


def test_keyword_only_argument():
    def fn(x):
        return helper_defaults(x, shift=-3.0)

    check(fn, torch.randn(3))


def test_keywords_in_any_order():
    def fn(x):
        return helper_defaults(shift=2.0, x=x, scale=0.1)

    check(fn, torch.randn(3))


def test_varargs_function():
    def fn(a, b, c):
        return helper_varargs(a, b, c)

    check(fn, torch.randn(3), torch.randn(3), torch.randn(3))


def test_kwargs_function():
    def fn(x):
        return helper_kwargs(x, a=2, b=3)

    check(fn, torch.randn(3))


def test_star_args_call():
    def fn(x, y):
        args = (x, y)
        return helper_add(*args)

    check(fn, torch.randn(3), torch.randn(3))


def test_star_star_kwargs_call():
    def fn(x):
        opts = {"scale": 3.0, "shift": 0.5}
        return helper_defaults(x, **opts)

    check(fn, torch.randn(3))


def test_mixed_star_call():
    def fn(x, y):
        return helper_kwargs(*[x], **{"k": 2}, j=y.shape[0])

    check(fn, torch.randn(3), torch.randn(4))


def test_forwarding_star_args_and_kwargs():
    def wrapper(*args, **kwargs):
        return helper_defaults(*args, **kwargs)

    def fn(x):
        return wrapper(x, 2.0, shift=1.5)

    check(fn, torch.randn(3))


def test_closure_reads_outer_variable():
    k = 2.5

    def fn(x):
        return x * k

    check(fn, torch.randn(3))


def test_closure_over_tensor():
    bias = torch.randn(3)

    def fn(x):
        return x + bias

    check(fn, torch.randn(3))


def test_nested_function_defined_inside():
    def fn(x):
        def inner(y):
            return y * 2 + x

        return inner(x) + inner(x + 1)

    check(fn, torch.randn(3))


def test_nested_closure_sees_later_assignment():
    def fn(x):
        def get():
            return scale * x

        scale = 3
        return get()

    check(fn, torch.randn(3))


def test_nonlocal_in_nested_function():
    def fn(x):
        count = 0

        def bump(t):
            nonlocal count
            count += 1
            return t + count

        y = bump(x)
        y = bump(y)
        return y, count

    check(fn, torch.randn(3))


def test_closure_two_levels_deep():
    def fn(x):
        a = 2

        def outer(y):
            def inner(z):
                return z * a + y

            return inner(y)

        return outer(x)

    check(fn, torch.randn(3))


def test_lambda():
    def fn(x):
        f = lambda t: t * 3 + 1  # noqa: E731
        return f(x)

    check(fn, torch.randn(3))


def test_lambda_with_default():
    def fn(x):
        f = lambda t, k=4: t * k  # noqa: E731
        return f(x) + f(x, 2)

    check(fn, torch.randn(3))


def test_lambda_capturing_local():
    def fn(x, y):
        f = lambda t: t + y  # noqa: E731
        return f(x)

    check(fn, torch.randn(3), torch.randn(3))


def test_function_passed_as_argument():
    def apply(f, x):
        return f(x)

    def fn(x):
        return apply(torch.tanh, x) + apply(lambda t: t * 2, x)

    check(fn, torch.randn(3))


def test_user_function_as_input_argument():
    def fn(f, x):
        return f(x, x)

    check(fn, helper_add, torch.randn(3))


def test_recursion_with_constant_depth():
    def fn(x):
        return helper_recursive(x, 3)

    check(fn, torch.randn(3))


def test_method_call_on_user_object():
    obj = Scaler(2.0)

    def fn(x):
        return obj.apply(x)

    check(fn, torch.randn(3))


def test_method_calling_other_method():
    obj = Scaler(1.5)

    def fn(x):
        return obj.twice(x)

    check(fn, torch.randn(3))


def test_bound_method_stored_in_variable():
    obj = Scaler(3.0)

    def fn(x):
        m = obj.apply
        return m(x) + m(x)

    check(fn, torch.randn(3))


def test_bound_method_passed_as_input():
    obj = Scaler(0.5)

    def fn(f, x):
        return f(x)

    check(fn, obj.apply, torch.randn(3))


def test_staticmethod_and_classmethod():
    obj = Scaler(1.0)

    def fn(x):
        name = obj.make_name()
        return Scaler.static_add(x, x) * len(name)

    check(fn, torch.randn(3))


def test_property_access():
    obj = Scaler(1.25)

    def fn(x):
        return x * obj.double

    check(fn, torch.randn(3))


def test_callable_object():
    obj = Scaler(0.75)

    def fn(x):
        return obj(x)

    check(fn, torch.randn(3))


def test_object_as_argument():
    def fn(s, x):
        return s.apply(x) + s.factor

    check(fn, Scaler(2.0), torch.randn(3))


def test_attribute_of_object_guarded():
    def fn(s, x):
        return s.apply(x)

    compiled, counter = check(fn, Scaler(2.0), torch.randn(3))
    x = torch.randn(3)
    torch.testing.assert_close(compiled(Scaler(5.0), x), x * 5.0)
    assert counter.frame_count == 2


def test_functools_partial_object_from_outside():
    f = functools.partial(helper_defaults, scale=3.0)

    def fn(x):
        return f.func(x, f.keywords["scale"])

    check(fn, torch.randn(3))


def test_returning_a_global_function_result_tuple():
    def pair(x):
        return x + 1, x - 1

    def fn(x):
        a, b = pair(x)
        return a * b

    check(fn, torch.randn(3))


def test_function_attributes():
    def fn(x):
        return x * len(helper_add.__name__)

    check(fn, torch.randn(3))


def test_call_with_keyword_to_nested_lambda():
    def fn(x):
        f = lambda a, b=1: a - b  # noqa: E731
        return f(b=x, a=x * 3)

    check(fn, torch.randn(3))


def test_keyword_only_nested_function():
    def fn(x):
        def g(a, *, scale):
            return a * scale

        return g(x, scale=3)

    check(fn, torch.randn(3))


def test_builtin_function_call_via_variable():
    def fn(x):
        f = len
        return x * f([1, 2])

    check(fn, torch.randn(3))


def test_int_guard_recompiles_on_change():
    def fn(x, n):
        return x * n

    compiled, counter = check(fn, torch.randn(3), 2)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x, 7), x * 7)
    assert counter.frame_count == 2


def test_functools_partial_from_outside_called():
    f = functools.partial(helper_defaults, scale=3.0)

    def fn(x):
        return f(x) + f(x, shift=0.0)

    check(fn, torch.randn(3))


def test_functools_partial_made_inside():
    def fn(x):
        add_x = functools.partial(helper_add, x)
        return add_x(1.0) * add_x(x)

    check(fn, torch.randn(3))


def test_a_partial_of_a_partial_made_inside_is_flattened():
    # CPython's partial.__new__ takes the inner partial apart: the outer one holds its function,
    # both argument lists and the keywords merged, the outer ones winning
    class Flat(functools.partial):
        pass

    def fn(x):
        p = functools.partial(helper_defaults, x, shift=10.0)
        q = functools.partial(p, scale=0.5)
        r = Flat(q, shift=-1.0)
        return (
            q(),
            p(shift=0.0),
            r(),
            q.func is helper_defaults,
            q.args[0] is x,
            q.keywords,
            r.func is helper_defaults,
            r.keywords,
            type(r) is Flat,
        )

    check(fn, torch.randn(3))


def helper_default_tuple(x, dims=(0, 1), name="n", scale=None):
    out = x.sum(dims)
    return out if scale is None else out * scale


def helper_default_list(x, acc=[]):  # noqa: B006 (the shared default is the point of the test)
    acc.append(1)
    return x * len(acc)


def test_default_tuple_argument():
    def fn(x):
        return helper_default_tuple(x), helper_default_tuple(x, (1,), scale=2.0)

    check(fn, torch.randn(2, 3))


def test_mutable_default_list_stays_correct():
    def fn(x):
        return helper_default_list(x)

    compiled, _ = compile_counted(fn)
    x = torch.randn(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # may run in Python: the default changes on every call
        for expected in (1, 2, 3):
            torch.testing.assert_close(compiled(x), x * expected)


def test_lambdas_in_comprehension_bind_late():
    def fn(x):
        fs = [lambda t: t * i for i in range(3)]  # noqa: B023 (late binding is the point)
        return [f(x) for f in fs]

    check(fn, torch.randn(3))


def test_comprehension_cell_does_not_leak_outer_value():
    def fn(x):
        i = 10
        fs = [lambda: i for i in range(3)]  # noqa: B023
        g = lambda: i  # noqa: E731
        return x * fs[0]() + g()

    check(fn, torch.randn(3))


def test_outer_closure_survives_comprehension_over_same_name():
    def fn(x):
        i = 5
        before = lambda: i  # noqa: E731
        ys = [x * i for i in range(2)]
        i = 7
        return ys, x * before()

    check(fn, torch.randn(3))


class Bag:
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __iter__(self):
        return iter(self.items)


class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n, 0, -1):  # noqa: UP028 (a plain generator)
            yield i


def test_user_container_protocols():
    def fn(bag):
        return len(bag), bag[0] + bag[-1], [t * 2 for t in bag]

    check(fn, Bag([torch.randn(2), torch.randn(2)]))


def test_user_generator_iter_method():
    def fn(x, c):
        for i in c:
            x = x * i
        return x, list(c)

    check(fn, torch.randn(2), Countdown(3))


def test_outer_cell_keeps_its_value_across_comprehension_over_same_name():
    def fn(x):
        i = 10
        before = lambda: i  # noqa: E731
        ys = [x * i for i in range(3)]
        return ys[1] + before()

    check(fn, torch.randn(3))


CFG = types.SimpleNamespace(scale=2.0)


def test_simple_namespace_attribute_is_traced_and_guarded():
    def fn(x):
        return x * CFG.scale

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), fn(x))
    CFG.scale = 5.0
    try:
        torch.testing.assert_close(compiled(x), fn(x))
    finally:
        CFG.scale = 2.0
    assert counter.frame_count == 2  # a recompile on the new value
    assert not [kind for kind in bytegraph.stats() if kind.startswith("break:")]


NOT_CALLABLE = (math, torch.float32, 3, "s", types)  # classes without ``__call__``


def _call_values_without_call(x):
    errors = []
    for value in NOT_CALLABLE:
        try:
            value()
        except TypeError as e:
            errors.append(str(e))
    return x + 1, errors


def test_calling_a_value_whose_class_has_no_call_raises_cpythons_type_error():
    check(_call_values_without_call, torch.ones(2))
