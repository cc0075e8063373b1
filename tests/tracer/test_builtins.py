"""Differential tests: Python builtins on constants (folded), containers and tensors (where they
mean something without reading tensor data), and generators run to exhaustion."""

from __future__ import annotations

import enum
import math
import operator

import pytest
import torch
from difftest import assert_same, check, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


class Box:
    size = 3

    def __init__(self):
        self.value = 2.0

    def method(self):
        return self.value


def gen_squares(n):
    for i in range(n):
        yield i * i


def gen_tensors(x):
    yield x + 1
    yield x * 2
    yield x.neg()


def test_len_of_tensor():
    def fn(x):
        return x * len(x)

    check(fn, torch.randn(4, 2))


def test_isinstance_with_tuple_of_types():
    def fn(x, n):
        if isinstance(n, (int, float)):
            return x * n
        return x

    check(fn, torch.randn(2), 3)


def test_isinstance_of_containers():
    def fn(x, xs):
        return x * isinstance(xs, list) + isinstance(xs, tuple) + isinstance(x, torch.Tensor)

    check(fn, torch.randn(2), [1])


def test_range_materialised_to_list():
    def fn(x):
        idx = list(range(1, 7, 2))
        return x * idx[-1], idx

    check(fn, torch.randn(2))


def test_range_len_and_index():
    def fn(x):
        r = range(2, 20, 3)
        return x * len(r) + r[2]

    check(fn, torch.randn(2))


def test_enumerate_list_of_pairs():
    def fn(x):
        return [(i, x * v) for i, v in enumerate([1.0, 2.0])]

    check(fn, torch.randn(2))


def test_zip_three_iterables():
    def fn(xs):
        return [a * b + c for a, b, c in zip(xs, (1, 2), [3, 4, 5], strict=False)]

    check(fn, [torch.randn(2), torch.randn(2)])


def test_min_max_of_constants():
    def fn(x):
        return x * max(1, 5, 3) - min([4, 2, 6])

    check(fn, torch.randn(2))


def test_min_max_of_shape():
    def fn(x):
        return x.reshape(max(x.shape), min(x.shape))

    check(fn, torch.randn(2, 3))


def test_abs_of_constant():
    def fn(x):
        return x * abs(-3)

    check(fn, torch.randn(2))


def test_sum_of_tensors_list():
    def fn(xs):
        return sum(xs)

    check(fn, [torch.randn(3) for _ in range(3)])


def test_sum_of_constants_with_start():
    def fn(x):
        return x + sum([1, 2, 3], 10)

    check(fn, torch.randn(3))


def test_getattr_with_constant_name():
    def fn(x):
        return torch.relu(x) + x.sum()

    check(fn, torch.randn(3))


def test_getattr_default_on_object():
    box = Box()

    def fn(x):
        return x * box.value + getattr(box, "missing", 4)

    check(fn, torch.randn(3))


def test_hasattr_on_object_and_tensor():
    box = Box()

    def fn(x):
        return x * (hasattr(box, "size") + hasattr(box, "nope") + hasattr(x, "shape"))

    check(fn, torch.randn(3))


def test_type_of_values():
    def fn(x, n):
        return x * (type(n) is int) + (type(x) is torch.Tensor) + (type([]) is list)

    check(fn, torch.randn(3), 2)


def test_type_name_of_object():
    def fn(x):
        return {type(x).__name__: x + 1}

    check(fn, torch.randn(3))


def test_str_int_float_bool_conversions():
    def fn(x):
        s = str(12) + str(1.5)
        n = int("7") + int(2.9) + float("0.5") + bool(0)
        return x * n, s

    check(fn, torch.randn(2))


def test_round_and_divmod():
    def fn(x):
        return x * round(2.6) + round(3.14159, 2)

    check(fn, torch.randn(2))


def test_sorted_and_reversed_constants():
    def fn(x):
        keys = sorted(["b", "c", "a"])
        back = list(reversed([1, 2, 3]))
        return x * back[0], keys

    check(fn, torch.randn(2))


def test_sorted_list_from_dict():
    def fn(d):
        return [d[k] * 2 for k in sorted(d)]

    check(fn, {"b": torch.randn(2), "a": torch.randn(2)})


def test_any_all_on_constants():
    def fn(x):
        flags = [True, False, True]
        return x * any(flags) + all(flags)

    check(fn, torch.randn(2))


def test_map_and_filter():
    def fn(xs):
        doubled = list(map(lambda t: t * 2, xs))
        evens = list(filter(lambda n: n % 2 == 0, range(6)))
        return doubled, evens

    check(fn, [torch.randn(2), torch.randn(2)])


def test_tuple_list_dict_constructors():
    def fn(x):
        t = tuple([x, x + 1])
        lst = list((1, 2))
        d = dict(a=1)
        return t, lst, d

    check(fn, torch.randn(2))


def test_tuple_of_input_list():
    def fn(xs):
        return tuple(xs)[0] * 2

    check(fn, [torch.randn(2), torch.randn(2)])


def test_iter_and_next():
    def fn(xs):
        it = iter(xs)
        first = next(it)
        second = next(it)
        return first - second, next(it, None)

    check(fn, [torch.randn(2), torch.randn(2)])


def test_callable_builtin():
    def fn(x, f):
        return x * (callable(len) + callable(3) + callable(x) + callable(f) + callable(lambda: 0))

    check(fn, torch.randn(2), torch.relu)


def test_chr_ord_hex():
    def fn(x):
        return {chr(ord("a") + 1) + hex(255): x * 2}

    check(fn, torch.randn(2))


def test_string_methods_folded():
    def fn(x, name):
        parts = name.upper().split("_")
        return {"-".join(parts): x * len(parts), name.startswith("ab"): 1}

    check(fn, torch.randn(2), "ab_cd_ef")


def test_str_format_method():
    def fn(x):
        return {"{}-{:03d}".format("w", 7): x + 1}

    check(fn, torch.randn(2))


def test_operator_module_functions():
    def fn(x, y):
        return operator.add(x, y), operator.mul(x, 2), operator.neg(y), operator.getitem(x, 0)

    check(fn, torch.randn(3), torch.randn(3))


def test_operator_module_on_constants():
    def fn(x):
        return x * operator.sub(10, 4) + operator.truth([1])

    check(fn, torch.randn(3))


def test_generator_function_iterated():
    def fn(x):
        total = x
        for sq in gen_squares(4):
            total = total + sq
        return total

    check(fn, torch.randn(3))


def test_generator_yielding_tensors():
    def fn(x):
        return list(gen_tensors(x))

    check(fn, torch.randn(3))


def test_generator_expression_into_tuple():
    def fn(xs):
        return tuple(t.abs() for t in xs)

    check(fn, [torch.randn(2), torch.randn(2)])


def test_generator_expression_in_sum():
    def fn(xs):
        return sum(t * 2 for t in xs)

    check(fn, [torch.randn(2), torch.randn(2)])


def test_any_all_over_generator_of_constants():
    def fn(x):
        sizes = x.shape
        if all(s > 1 for s in sizes) and not any(s > 100 for s in sizes):
            return x.sum(0)
        return x

    check(fn, torch.randn(2, 3))


def test_max_over_generator_of_shapes():
    def fn(xs):
        widest = max(t.shape[0] for t in xs)
        return [torch.nn.functional.pad(t, (0, widest - t.shape[0])) for t in xs]

    check(fn, [torch.randn(2), torch.randn(4)])


def test_next_on_generator():
    def fn(x):
        g = gen_tensors(x)
        return next(g) + next(g)

    check(fn, torch.randn(3))


def _sent_into_generators(x):
    def inner():
        v = yield 1
        w = yield v + 10
        return w * 3

    def outer():
        r = yield from inner()
        yield r + x.sum()

    def echo():
        v = yield 1
        yield v * 2

    g = echo()
    a = next(g)
    b = g.send(x)  # a tensor goes in and comes back doubled
    h = outer()
    facts = [next(h), h.send(5), h.send(7)]
    fresh = echo()
    try:
        fresh.send(3)
    except TypeError as e:
        facts.append(str(e))
    try:
        g.send(4)
    except StopIteration:
        facts.append("over")
    try:
        g.send(5)
    except StopIteration:
        facts.append("still over")
    return x * a + b, facts


def _sent_once(x):
    def gen():
        v = yield 1
        yield v * 2

    g = gen()
    a = next(g)
    b = g.send(5)
    return x * (a + b)


def test_values_sent_into_generators_made_in_the_trace_are_traced():
    check(_sent_into_generators, torch.randn(3))
    check(_sent_once, torch.randn(3))
    assert_no_more_breaks(0, _sent_once, torch.randn(3))


def test_generator_runs_lazily_between_items():
    def walk(xs):
        for v in xs:  # noqa: UP028 (a plain generator, not `yield from`)
            yield v

    def fn(x):
        xs = [1, 2]
        seen = []
        for v in walk(xs):
            if v == 1:
                xs.append(3)
            seen.append(v)
        return x * len(seen), seen

    check(fn, torch.randn(2))


def test_generator_partially_consumed():
    def fn(x):
        g = gen_squares(100)
        first, second = next(g), next(g)
        return x + first + second

    check(fn, torch.randn(2))


def test_math_functions_on_constants():
    def fn(x):
        return x * math.sqrt(x.shape[0]) + math.pi + math.floor(2.5) + math.log(math.e)

    check(fn, torch.randn(4))


def test_max_min_with_key():
    def fn(x, d):
        best = max(d, key=d.get)
        shortest = min(["abc", "z", "kk"], key=len)
        return {best: x * d[best], shortest: 1}

    check(fn, torch.randn(2), {"a": 1, "b": 3, "c": 2})


def test_max_of_empty_with_default():
    def fn(x):
        return x * max([], default=2)

    check(fn, torch.randn(2))


def test_max_returns_the_item_itself():
    def fn(xs):
        longest = max(xs, key=len)
        return longest[0] * 2

    check(fn, [[torch.randn(2)], [torch.randn(2), torch.randn(2)]])


def test_sorted_with_key_and_reverse():
    def fn(x, names):
        order = sorted(names, key=lambda n: len(n), reverse=True)
        return [x * len(n) for n in order], order

    check(fn, torch.randn(2), ["bb", "a", "ccc", "dd"])


def test_sorted_tensors_by_shape():
    def fn(xs):
        return [t * 2 for t in sorted(xs, key=lambda t: t.shape[0])]

    check(fn, [torch.randn(3), torch.randn(1), torch.randn(2)])


def test_enumerate_sees_appends_in_loop_body():
    def fn(x):
        xs = [1, 2]
        total = x
        for i, v in enumerate(xs):
            if v == 1:
                xs.append(5)
            total = total + i * v
        return total

    check(fn, torch.randn(2))


def test_zip_pulls_generators_lazily():
    def numbers(log):
        for i in range(5):
            log.append(i)
            yield i

    def fn(x):
        log = []
        pairs = list(zip("ab", numbers(log), strict=False))
        return x * len(pairs), pairs, log

    check(fn, torch.randn(2))


def test_zip_strict_equal_lengths():
    def fn(xs):
        return [a * b for a, b in zip(xs, (1, 2), strict=True)]

    check(fn, [torch.randn(2), torch.randn(2)])


def _zip_strict_mismatch(x, *iterables):
    try:
        pairs = list(zip(*iterables, strict=True))
    except ValueError as e:  # caught in the trace: CPython's message, which names the argument
        pairs = str(e)
    return x + 1, pairs


@pytest.mark.parametrize(
    "iterables",
    [([1, 2], [3]), ([1], [3, 4]), ([1, 2], [3, 4], [5]), ([1], [3], [5, 6]), ([], [1])],
    ids=["shorter", "longer", "third-shorter", "third-longer", "first-empty"],
)
def test_zip_strict_unequal_lengths_raise_cpythons_error(iterables):
    # the error was no Python exception of the trace: the whole function ran in Python
    check(_zip_strict_mismatch, torch.randn(2), *iterables)


def test_map_filter_lazy_over_generator():
    def fn(x):
        evens = filter(lambda n: n % 2 == 0, gen_squares(6))
        return [x * v for v in map(lambda n: n + 1, evens)]

    check(fn, torch.randn(2))


# -- id() of values the trace has no address for ---------------------------------------------------
NUMBER, OTHER_NUMBER, NAMES = 2.5, 7.5, {"a": 1}
HOLDER = [NUMBER, "b"]


def _ids_compared(x):
    made = [x]
    return x + 1, [
        id(NUMBER) == id(NUMBER),
        id(HOLDER[0]) == id(NUMBER),
        id(HOLDER[0]) != id(OTHER_NUMBER),
        id(7) == id(7),
        id(NAMES) == id(NAMES),
        id(x) == id(x),
        id(x) == id(made[0]),
        id(made) == id(made),
        isinstance(id(x), int),
    ]


def test_ids_compared_are_identities():
    # ``id(a) == id(b)`` is ``a is b``: no number is needed
    check(_ids_compared, torch.ones(2))
    assert_no_more_breaks(0, _ids_compared, torch.ones(2))


def _ids_given_back(x):
    made = [x]
    return x + 1, id(NUMBER), id(NAMES), id(x), made, id(made)


def test_ids_given_back_are_the_objects_ids():
    compiled, _ = compile_counted(_ids_given_back)
    x = torch.ones(2)
    _, number, names, of_x, made, of_made = compiled(x)
    assert (number, names, of_x, of_made) == (id(NUMBER), id(NAMES), id(x), id(made))


def test_an_equal_constant_held_elsewhere_is_another_object():
    # identity of constants read from two inputs is guarded: an equal float is another object
    global NUMBER
    compiled, counter = compile_counted(_ids_compared)
    assert compiled(torch.ones(2))[1][1] is True
    saved, NUMBER = NUMBER, float("2.5")  # equal, another object
    try:
        assert compiled(torch.ones(2))[1][1] is (HOLDER[0] is NUMBER) is False
    finally:
        NUMBER = saved


# -- operator.length_hint ---------------------------------------------------------------------
class Sized:
    def __len__(self):
        return 4


class Hinted:
    def __length_hint__(self):
        return 6


class NoHint:
    def __length_hint__(self):
        return NotImplemented


SIZES = [1, 2, 3]


def _length_hints(x):
    return x + 1, [
        operator.length_hint(SIZES),
        operator.length_hint([x, "b"]),
        operator.length_hint((1, 2)),
        operator.length_hint({"a": 1}),
        operator.length_hint(range(5)),
        operator.length_hint("abc"),
        operator.length_hint(x),
        operator.length_hint(Sized()),
        operator.length_hint(Hinted(), 2),
        operator.length_hint(NoHint(), 2),
        operator.length_hint((i for i in SIZES), 9),
        operator.length_hint(7, 3),
    ]


def test_length_hint_is_len_or_the_hint_or_the_default():
    check(_length_hints, torch.ones(2))
    assert_no_more_breaks(0, _length_hints, torch.ones(2))


# -- dir() and vars() ----------------------------------------------------------------------------
class Color(enum.Enum):
    RED = 1


def _dirs(x):
    return x + 1, [
        dir(7),
        dir(NUMBER),
        dir(SIZES),
        dir({"a": 1}),
        dir((1, 2)),
        dir(range(3)),
        dir(None),
        dir(len),
        dir(int),
        dir(torch.float32),
        dir(torch.device("cpu")),
    ]


def test_dir_of_values_whose_attributes_are_their_c_types_is_computed():
    check(_dirs, torch.ones(2))
    assert_no_more_breaks(0, _dirs, torch.ones(2))


class Level(enum.IntEnum):
    LOW = 1

    def describe(self):
        return self.name


def _enum_dirs(x, member):
    return x + 1, dir(Color.RED), dir(member)


def test_dir_of_an_enum_member_is_computed_and_sees_later_changes():
    """``Enum.__dir__`` lists the member's own names and its classes': guarded on their keys."""
    compiled, counter = check(_enum_dirs, torch.ones(2), Level.LOW)
    assert_no_more_breaks(0, _enum_dirs, torch.ones(2), Level.LOW)
    Level.LOW.tag = 1  # a name of the member's own
    try:
        assert compiled(torch.ones(2), Level.LOW)[2] == dir(Level.LOW)
    finally:
        del Level.LOW.tag
    Color.extra = 2  # a name of its class
    try:
        assert "extra" in compiled(torch.ones(2), Level.LOW)[1]
    finally:
        del Color.extra
    assert counter.frame_count == 3


def _vars_without_dict(x):
    out = []
    for value in (7, "ab", None, NUMBER, SIZES, torch.float32):
        try:
            out.append(vars(value))
        except TypeError as e:
            out.append(str(e))
    return x + 1, out


def test_vars_of_values_without_dict_raises_cpythons_type_error():
    check(_vars_without_dict, torch.ones(2))


def _deleting_fixed_attributes(x):
    out = []
    calls = (
        lambda: delattr(7, "a"),
        lambda: delattr(True, "real"),
        lambda: delattr(NUMBER, "a"),
        lambda: delattr((1, 2), "count"),
        lambda: delattr(int, "a"),
        lambda: delattr([x], "append"),
    )
    for call in calls:
        try:
            call()
        except (AttributeError, TypeError) as e:
            out.append((type(e).__name__, str(e)))
    return x + 1, out


def test_delattr_on_values_whose_attributes_cannot_change_raises():
    check(_deleting_fixed_attributes, torch.ones(2))
    assert_no_more_breaks(
        0,
        _deleting_fixed_attributes,
        torch.ones(2),
        baseline_missing="torch.compile runs delattr() of a constant in Python",
    )


class WithSuper:
    def classes(self):
        return super().__class__, super(WithSuper, self).__class__  # noqa: UP008 (both forms)


def _super_classes(x):
    return x + 1, [
        super(type(NUMBER), NUMBER).__class__,
        super(type(None), None).__class__,
        super(bool, True).__class__,
        WithSuper().classes(),
    ]


def test_the_class_of_a_super_object_is_super():
    # ``super`` answers ``__class__`` itself: not an attribute found along the MRO
    check(_super_classes, torch.ones(2))
    assert_no_more_breaks(
        0,
        _super_classes,
        torch.ones(2),
        baseline_missing="torch.compile on torch 2.11 and 2.15 runs the call in Python",
    )


def _constant_methods_read_then_called(x):
    values = (7, NUMBER, True, None, b"ab", "ab", 1 + 2j, range(3), frozenset({1}))
    out = [operator.methodcaller("__repr__")(v) for v in values]
    out.append(getattr("a,b", "split")(","))  # noqa: B009 (read, then called)
    return x + 1, out, getattr(7, "__add__")  # noqa: B009


def test_a_method_of_a_constant_read_by_getattr_is_called_at_trace_time():
    check(_constant_methods_read_then_called, torch.ones(2))
    assert_no_more_breaks(0, _constant_methods_read_then_called, torch.ones(2))


def _plain_function():
    return 0


class FunctionHolder:
    function = staticmethod(_plain_function)


def _reading_methods_of_functions(x, fn):
    held = FunctionHolder.function
    out = [operator.methodcaller(name)(v) for name in ("__repr__", "__str__") for v in (fn, held)]
    out += [len.__repr__(), getattr(len, "__str__")(), fn.__hash__() == hash(fn)]  # noqa: B009
    out += [held.__eq__(held), fn.__ne__(held), held.__format__(""), fn.__sizeof__() > 0]
    return x + 1, out


def test_reading_methods_of_functions_are_called_at_trace_time():
    # a C method that only reads a function guarded by identity (its repr, hash, equality)
    check(_reading_methods_of_functions, torch.ones(2), len)
    check(_reading_methods_of_functions, torch.ones(2), _plain_function)
    assert_no_more_breaks(
        0,
        _reading_methods_of_functions,
        torch.ones(2),
        _plain_function,
        baseline_missing="torch.compile runs the call in Python (torch 2.13) or fails on it "
        "(torch 2.11: IndexError inside Dynamo)",
    )


def test_a_functions_own_attribute_shadows_its_reading_method():
    def fn(x, f):
        return x + 1, f.__repr__()

    def shadowed():
        return 0

    compiled, counter = compile_counted(fn)
    assert compiled(torch.ones(2), shadowed)[1] == repr(shadowed)
    shadowed.__repr__ = lambda: "its own"
    assert compiled(torch.ones(2), shadowed)[1] == "its own"


class Described:
    """``dir`` lists what its own ``__dir__`` (Python code) gives, sorted."""

    def __init__(self) -> None:
        self.names = ["zeta", "alpha"]

    def __dir__(self):
        return (n.upper() for n in self.names)


def _own_dir(x, obj):
    obj.names.append("mid")
    return x + 1, dir(obj)


def test_dir_of_an_object_with_its_own_dir_traces_it_and_sorts():
    check_breaks(_own_dir, lambda: (torch.ones(2), Described()), graphs=1, breaks=0)
    assert_no_more_breaks(0, _own_dir, torch.ones(2), Described())


# -- staticmethod() and classmethod() of any value -------------------------------------------------
def _method_objects(x, obj):
    s, c = staticmethod(x), classmethod(obj.method)
    out = [s.__func__ is x, s.__wrapped__ is x, c.__func__ == obj.method, staticmethod(abs)(-2)]
    for make in (lambda: staticmethod(), lambda: classmethod(x, x)):
        try:
            make()
        except TypeError as e:
            out.append(str(e))
    return x + 1, out


def _returned_twice(x, obj):
    s = staticmethod(x)
    return x + 1, s, s, classmethod(obj.method)


class _Holder:
    def method(self):
        return 1


def test_staticmethod_and_classmethod_objects_of_any_value():
    """Each object rebuilt once: returned twice, it is one object, as in CPython."""
    check_breaks(_method_objects, lambda: (torch.ones(2), _Holder()), graphs=1, breaks=0)
    compiled, counter = compile_counted(_returned_twice)
    x, obj = torch.ones(2), _Holder()
    _, s, again, c = compiled(x, obj)
    assert type(s) is staticmethod and s is again and s.__func__ is x
    assert type(c) is classmethod and c.__func__ == obj.method
    assert counter.frame_count == 1


def _static_func(x):
    return x + 1, staticmethod(x).__func__


def test_staticmethod_breaks_no_more_than_torch_compile():
    assert_no_more_breaks(0, _static_func, torch.ones(2))


class _NoIndex:
    """An object with no ``__index__``, no items and no buffer."""


class _Items:
    def __iter__(self):
        return iter([1, 2])


def test_builtins_taking_an_index_raise_cpythons_error_on_other_values():
    def fn(x, obj, t):
        errors = []
        for call in (bin, hex, oct, range, bytearray):
            for value in (obj, len) if call is bytearray else (obj, t, len):
                try:
                    call(value)
                except TypeError as e:
                    errors.append(str(e))
        for args in ((1, obj), (1.5, obj), (obj, "x")):
            try:
                range(*args)
            except TypeError as e:
                errors.append(str(e))
        return x + 1, errors

    check_breaks(
        fn, lambda: (torch.randn(2), _NoIndex(), torch.tensor([1.0, 2.0])), graphs=1, breaks=0
    )


def test_bytearray_raises_cpythons_error_and_breaks_where_it_reads_python_code():
    def fn(x, values):
        errors = []
        for value in values:
            try:
                bytearray(value)
            except (TypeError, ValueError) as e:
                errors.append(str(e))
        return x + 1, errors

    bad = [None, 2.5, "ab", (1, "a"), [256], {"a": 1}, torch.float32, torch.device("cpu"), _NoIndex]
    check_breaks(fn, lambda: (torch.randn(2), bad), graphs=1, breaks=0)

    def made(x, value):
        return x + 1, bytearray(value)

    check_breaks(made, lambda: (torch.randn(2), [1, 2]), graphs=1, breaks=0)
    check_breaks(made, lambda: (torch.randn(2), torch.Size([2, 3])), graphs=1, breaks=0)
    check_breaks(made, lambda: (torch.randn(2), _Items()), graphs=1, breaks=1)


def _bytearray_changed(x):
    ba = bytearray(b"ab")
    held = [ba, ba]
    ba.append(99)
    ba += b"xy"
    ba[0] = 65
    del ba[1]
    copy = ba.copy()
    copy.reverse()
    facts = [len(ba), ba[0], ba[1:3], b"x" in ba, ba == copy, ba * 2, ba.split(b"x"), ba.hex()]
    try:
        ba.append(256)
    except ValueError as e:
        facts.append(str(e))
    return x + 1, held, copy, facts, bool(bytearray()), held[0] is held[1]


def test_bytearray_made_in_the_trace_is_changed_in_place_and_rebuilt():
    check_breaks(_bytearray_changed, lambda: (torch.ones(2),), graphs=1, breaks=0)
    compiled, _ = compile_counted(_bytearray_changed)
    _, (a, b), copy, *_ = compiled(torch.ones(2))
    assert a is b and a is not copy  # one object however often it is returned


def _bytearray_across_a_break(x):
    ba = bytearray(b"a")
    ba.append(98)
    held = [ba]
    y = x + 1
    print("break")
    return y, ba, held[0] is ba


def test_bytearray_live_at_a_break_is_the_same_object_after_it():
    check_breaks(_bytearray_across_a_break, lambda: (torch.ones(2),), graphs=1, breaks=1)


def _pure_builtins_on_a_bytearray(x):
    b = bytearray(b"ab")
    b.append(99)
    other = bytearray(b"ab")
    facts = [len(b), bytes(b), b.hex(), tuple(b), list(b), str(b), repr(b), sorted(b), sum(b)]
    facts += [bool(b), int(bytearray(b"12")), max(b, other) is b, min(b, other) is other]
    try:
        hash(b)
    except TypeError as e:
        facts.append(str(e))
    b.append(100)  # after the reads: they were of its contents then
    return x + len(b), facts, b, other


def _bytes_of_a_bytearray(x):
    b = bytearray(b"ab")
    b.append(99)
    return x + len(b), bytes(b), b.hex()


def test_pure_builtins_on_a_bytearray_made_in_the_trace_are_computed():
    check_breaks(_pure_builtins_on_a_bytearray, lambda: (torch.ones(2),), graphs=1, breaks=0)
    check_breaks(_bytes_of_a_bytearray, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _bytes_of_a_bytearray, torch.ones(2))


def _first_byte_of_a_memoryview(x):
    m = memoryview(b"abc")
    return x + m[0], m.tobytes()


def _reads_of_a_memoryview_of_bytes(x):
    y = x * 2
    m = memoryview(b"abcdef")
    facts = [len(m), m[-1], m[1:3].tobytes(), m[::2].tolist(), m.tolist(), m.hex(), m.hex(":")]
    facts += [m.nbytes, m.format, m.itemsize, m.readonly, m.ndim, m.shape, m.strides]
    facts += [m.suboffsets, m.contiguous, m.c_contiguous, m.f_contiguous, m.cast("H").tolist()]
    facts += [m == b"abcdef", m != m[1:], b"abcdef" == m, memoryview(b"ab") == memoryview(b"ab")]
    facts += [98 in m, 7 in m, hash(m) == hash(b"abcdef"), bool(m), bool(memoryview(b""))]
    facts += [bytes(m), bytearray(m[:2]), list(m), tuple(m), sorted(m), sum(m), max(m)]
    facts += [[c for c in m[4:]], isinstance(m, memoryview), type(m) is memoryview]
    facts += [m.cast("B", (2, 3)).tolist(), m.toreadonly().tobytes(), memoryview(m)[0]]
    bad_reads = [lambda: m[6], lambda: m.__setitem__(0, 1), lambda: list(m.cast("B", (2, 3)))]
    bad_reads += [lambda: memoryview("s"), lambda: memoryview([1]), lambda: memoryview(x)]
    for bad in bad_reads:
        try:
            bad()
        except (IndexError, TypeError, NotImplementedError) as e:
            facts.append(f"{type(e).__name__}: {e}")
    ba = bytearray(b"xy")
    ba += m[:2]
    return y + len(m), facts, ba


def test_a_memoryview_of_bytes_is_a_value_whose_reads_are_computed():
    """``memoryview(b"...")``: what it shows never changes, so its items, slices, casts, length,
    ``tobytes``/``tolist``/``hex``, ``==``, ``in``, ``hash``, attributes, iteration and CPython's
    errors are computed at trace time (it broke at ``memoryview()``, at ``m[0]`` and at each
    method; torch.compile breaks at each too)."""
    check_breaks(_first_byte_of_a_memoryview, lambda: (torch.ones(2),), graphs=1, breaks=0)
    check_breaks(_reads_of_a_memoryview_of_bytes, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _first_byte_of_a_memoryview, torch.ones(2))
    assert_no_more_breaks(0, _reads_of_a_memoryview_of_bytes, torch.ones(2))


_SHOWN = b"abcdef"


def _memoryviews_rebuilt(x, given):
    m = memoryview(_SHOWN)
    part = m[1:5]
    cast = part.cast("H")
    again = memoryview(m)
    of_given = memoryview(given)
    facts = [m.obj is _SHOWN, part.obj is _SHOWN, cast.obj is _SHOWN, again.obj is _SHOWN]
    facts += [of_given.obj is given, part is m, again is m, m is m, [m, m][1] is m]
    y = x + of_given[0]
    print("break")
    return y, m, part, cast, again, of_given, facts


def test_a_memoryview_made_in_the_trace_is_rebuilt_as_it_was_made():
    """A view returned or live at a break is made again as the trace made it (of the same bytes:
    its ``obj`` is the object, given or global; a slice, a cast, a view of a view), a new one
    at each call."""
    check_breaks(_memoryviews_rebuilt, lambda: (torch.ones(2), b"xyz"), graphs=1, breaks=1, calls=3)
    compiled, _ = compile_counted(_memoryviews_rebuilt)
    first, second = compiled(torch.ones(2), b"xyz"), compiled(torch.ones(2), b"pq")
    assert first[1] is not second[1] and first[2].format == "B" and second[3].format == "H"
    assert second[5].tobytes() == b"pq" and all(v.obj is _SHOWN for v in second[1:5])


def _memoryview_of_a_bytearray(x):
    y = x + 1
    ba = bytearray(b"abc")
    m = memoryview(ba)
    m[0] = 120
    ba[1] = 121
    seen = [m[1], bytes(ba), m.tobytes()]
    try:
        ba.append(0)  # a view holds the buffer: CPython refuses to resize it
    except BufferError as e:
        seen.append(str(e))
    return y, m[0], seen, ba


def _memoryview_state_and_address(x):
    y = x + 1
    m = memoryview(b"abc")
    shown = repr(m).startswith("<memory at ")
    with memoryview(b"de") as held:
        inside = held[0]
    m.release()
    try:
        m[0]
    except ValueError as e:
        return y, inside, shown, str(e)


def test_what_a_memoryview_does_beyond_reading_bytes_breaks():
    """A bytearray's view is live (a write through the view shows in the bytearray and back):
    the trace breaks there rather than compute on a copy; its repr (an address) and its context
    manager break too (the block runs in Python; ``release`` after it is traced). Each runs in
    Python: eager's values. The second function's breaks are counted on one call: the resume
    function after ``repr`` takes the address text, a string guarded by value, so a later call
    compiles it again where the new view lies elsewhere (it counted 3 or 2 breaks over two calls
    as addresses were reused or not); later calls are compared with eager below."""
    _, _, report = check_breaks(
        _memoryview_of_a_bytearray, lambda: (torch.ones(2),), graphs=1, breaks=7
    )
    assert report.break_reasons[0].kind == "memoryview", report.break_reasons[0]
    compiled, _, report = check_breaks(
        _memoryview_state_and_address, lambda: (torch.ones(2),), graphs=1, breaks=2, calls=1
    )
    kinds = [b.kind for b in report.break_reasons]
    assert kinds == ["builtin", "context_manager"], report.break_reasons
    for _ in range(3):
        assert_same(compiled(torch.ones(2)), _memoryview_state_and_address(torch.ones(2)))


def _method_of_an_input_bytearray(x, b):
    return x + 1, b.hex()


def test_attribute_lookup_of_builtin_types_is_the_generic_one():
    """A bytearray looks attributes up with CPython's generic lookup (its ``__dict__`` lists that
    slot wrapper): a break comes from the C method called, not from a custom
    ``__getattribute__``."""
    _, _, report = check_breaks(
        _method_of_an_input_bytearray,
        lambda: (torch.ones(2), bytearray(b"ab")),
        graphs=1,
        breaks=1,
    )
    reasons = "\n".join(map(str, report.break_reasons))
    assert "custom_getattr" not in reasons, reasons


def test_class_methods_of_constant_types_read_from_instances():
    def fn(x, n, f, flag, values):
        out = [n.from_bytes(b"\x01\x02", "big"), f.fromhex("0x1.8p1"), flag.from_bytes(b"\x01")]
        for value in values:
            try:
                out.append(n.from_bytes(value))
            except TypeError as e:
                out.append(str(e))
            try:
                out.append(f.fromhex(value))
            except (TypeError, ValueError) as e:
                out.append(str(e))
        return x + 1, out

    values = [7, None, (1, "a"), [1, 2], "0x1p2"]
    check_breaks(fn, lambda: (torch.randn(2), 7, 2.5, True, values), graphs=1, breaks=0)


def _order_error(fn, *args):
    try:
        fn(*args)
    except TypeError as e:
        return str(e)
    return None


def _orders_without_an_ordering(x, obj):
    unordered = [obj, obj.method, x]
    return (
        x + 1,
        [
            (
                _order_error(sorted, [v, "b"]),
                _order_error(sorted, ["b", v]),
                _order_error(lambda ls: ls.sort(), [v, "b"]),
                _order_error(min, v, "b"),
                _order_error(max, v, "b"),
            )
            for v in unordered
        ],
        _order_error(max, obj.method, obj.method),
    )


def test_sorting_values_no_ordering_compares_raises_cpythons_type_error():
    # '<' (sorted, min) and '>' (max) between a str and a plain object, a bound method or a
    # tensor: no operand implements it, so CPython's TypeError whatever they hold
    check_breaks(_orders_without_an_ordering, lambda: (torch.ones(2), Box()), graphs=1, breaks=0)


def _plain_objects(x):
    a, b = object(), object()
    return x + 1, type(a), a is b, a == a, a != b, isinstance(a, object), hasattr(a, "__dict__")


def test_object_makes_a_new_plain_object():
    check_breaks(_plain_objects, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, lambda x: (x + 1, type(object())), torch.ones(2))
    compiled, counter = compile_counted(lambda x: (x + 1, [object()] * 2, object()))
    _, (a, b), c = compiled(torch.ones(2))
    assert type(a) is object and a is b and a is not c  # one new object however often returned
    assert counter.frame_count == 1


def _class_and_static_methods_of_constant_types(x):
    return (
        x * int.from_bytes(b"\x01\x02", "big"),
        bool.from_bytes(b"\x00", "little"),
        float.fromhex("0x1p-2") * x,
        bytes.fromhex("00ff"),
        "abc".translate(str.maketrans("a", "z")),
        str.maketrans({"a": "b"}),
        bytes.maketrans(b"a", b"b"),
        (7).from_bytes(b"\x07", "big"),
    )


def test_class_and_static_methods_of_constant_types_are_computed():
    # every class and static method of int, float, bytes, str...: they build a new value from
    # their arguments alone (enumerated from the types: ``builder._constant_method``)
    check(_class_and_static_methods_of_constant_types, torch.ones(2))
    assert_no_more_breaks(0, _class_and_static_methods_of_constant_types, torch.ones(2))


def _method_of_a_builtin_type_live_at_a_break(x):
    make = bytearray.fromhex  # a C method the trace does not model, live across the call's break
    y = x * 2
    return y, make("0a"), bytearray.fromhex("ff")


def test_a_builtin_types_method_is_rebuilt_at_a_break():
    # the call breaks (as torch.compile's does); the method read from the builtin type is loaded as
    # the constant it is, where the whole function used to run in Python (nothing could rebuild it)
    check_breaks(
        _method_of_a_builtin_type_live_at_a_break, lambda: (torch.ones(2),), graphs=1, breaks=2
    )
    assert_no_more_breaks(2, _method_of_a_builtin_type_live_at_a_break, torch.ones(2))


def _tagged():
    return 0


_tagged.tag = "t"


def _function_namespace(x):
    import functools

    wrapper = functools.update_wrapper(lambda: 0, _tagged)  # copies _tagged.__dict__
    own = _tagged.__dict__
    return x + 1, wrapper.__wrapped__ is _tagged, wrapper.tag, dict(own), "tag" in own, len(own)


def test_a_functions_dict_is_its_namespace():
    # ``f.__dict__`` of a function from outside the call is its real dict, guarded (it broke, and
    # ``update_wrapper(w, f)`` with it: 2 breaks, torch.compile 0)
    compiled = check_breaks(_function_namespace, lambda: (torch.ones(2),), graphs=1, breaks=0)[0]
    assert_no_more_breaks(
        0,
        _function_namespace,
        torch.ones(2),
        baseline_missing="torch 2.11's Dynamo runs update_wrapper's dict update in Python",
    )
    _tagged.tag = "changed"  # the guard on the namespace sees it
    try:
        assert compiled(torch.ones(2))[2] == "changed"
    finally:
        _tagged.tag = "t"


def _function_namespace_after_a_store(x):
    _tagged.extra = 1
    return x + 1, sorted(_tagged.__dict__)


def test_a_functions_dict_after_a_store_breaks():
    # the namespace as the trace left it is not rebuilt: the read breaks, the store still happens
    try:
        check_breaks(
            _function_namespace_after_a_store, lambda: (torch.ones(2),), graphs=1, breaks=1
        )
    finally:
        vars(_tagged).pop("extra", None)


def _builtin_type_namespace(x):
    import functools

    wrapper = functools.update_wrapper(lambda: 0, int)
    space = int.__dict__
    return (
        x + 1,
        wrapper.__wrapped__ is int,
        wrapper.__doc__ == int.__doc__,
        "__add__" in space,
        space["real"] is int.real,
        len(space) == len(vars(int)),
    )


def test_a_builtin_types_dict_is_its_namespace():
    # ``int.__dict__``, fixed as all a builtin type holds: read as the class namespaces are (the
    # whole function ran in Python: nothing could rebuild the proxy)
    check_breaks(_builtin_type_namespace, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _builtin_type_namespace,
        torch.ones(2),
        baseline_missing="torch 2.11's Dynamo runs update_wrapper's dict update in Python",
    )
