"""CPython's exceptions for operations on values the trace knows are the user's exceptions.

An operation the trace computes itself (on constants, on containers it models) that CPython would
reject raises CPython's exception, with its type and message, in the trace: the user's ``except``
catches it there, and an uncaught one is raised when the instruction runs in Python (a graph
break). It is never an internal error that makes the whole function fall back.
"""

from __future__ import annotations

import copy
import functools
import itertools
import operator

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def caught(operation):
    """``fn(x)`` doing tensor work, then ``operation(x)`` inside ``try``: its error as a value."""

    def fn(x):
        y = x + 1
        try:
            result = operation(x)
        except Exception as e:  # noqa: BLE001 (compared with CPython's)
            return y, type(e).__name__, str(e)
        return y, result

    return fn


def uncaught(operation):
    def fn(x):
        y = x * 2
        return y, operation(x)

    return fn


def _imul(value):
    def op(x):
        items = [1, "b"]
        items *= value
        return items

    return op


# counts that are no int: CPython's "can't multiply sequence by non-int of type ..."
NOT_COUNTS = ["ab", 2.5, None, (1, 2), [1], {"a": 1}, frozenset({1}), slice(1, 3), 1 + 2j]
# ``item in container`` on constants that CPython rejects (TypeError)
BAD_CONTAINS = [
    (None, "a,b"),
    (7, "a,b"),
    ((1, "a"), "a,b"),
    (None, b"a,b"),
    ((1, "a"), b"a,b"),
    ([1, 2], frozenset({0})),
    ({"a": 1}, frozenset({0})),
    (slice(1, 3), frozenset({0})),
    (1000, b"ab"),  # a byte out of range: ValueError
]


@pytest.mark.parametrize("value", NOT_COUNTS, ids=repr)
def test_list_repeated_in_place_by_a_non_int_raises_the_users_type_error(value):
    fn = caught(_imul(value))
    check_breaks(fn, randn(3), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(3))


@pytest.mark.parametrize("value", [2, True, 0, -1])
def test_list_repeated_in_place_by_an_int_still_repeats(value):
    check_breaks(caught(_imul(value)), randn(3), graphs=1, breaks=0)


def test_uncaught_repeat_by_a_non_int_is_raised_by_python():
    check_breaks(uncaught(_imul("ab")), randn(3), graphs=1, breaks=1)


@pytest.mark.parametrize(("item", "container"), BAD_CONTAINS, ids=repr)
def test_contains_that_cpython_rejects_raises_the_users_error(item, container):
    fn = caught(lambda x: item in container)
    check_breaks(fn, randn(3), graphs=1, breaks=0)


class _Plain:
    pass


_PLAIN = _Plain()


@pytest.mark.parametrize(
    "operation",
    [lambda x: x in "a,b", lambda x: _PLAIN in "a,b", lambda x: x.sum() in "a,b"],
    ids=["tensor", "object", "scalar_tensor"],
)
def test_a_value_that_is_no_string_searched_for_in_a_string_raises_the_users_error(operation):
    """``str.__contains__`` reads only its operand's type: a tensor or an object is CPython's
    TypeError, in the trace."""
    check_breaks(caught(operation), randn(3), graphs=1, breaks=0)


def test_uncaught_contains_error_is_raised_by_python():
    check_breaks(uncaught(lambda x: None in "a,b"), randn(3), graphs=1, breaks=1)


# operators whose CPU kernel has no implementation for the operands' dtypes (the fake kernels
# accept them): NotImplementedError when the graph would run
KERNEL_REFUSED = {
    "int_and_float": lambda x: 7 & x,
    "float_or_int": lambda x: x | 7,
    "int_lshift_float": lambda x: 7 << x,
    "bool_rshift_float": lambda x: True >> x,
    "complex_lt": lambda x: (1 + 2j) < x,
    "float_xor_float": lambda x: operator.xor(x, x),
    "iand_float": lambda x: operator.iand(x.clone(), x),
    "float_0dim_and_int": lambda x: x.sum() & 3,
}


@pytest.mark.parametrize("name", KERNEL_REFUSED)
def test_operator_the_kernel_refuses_raises_inside_the_users_try(name):
    fn = caught(KERNEL_REFUSED[name])
    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_effects_before_an_operator_the_kernel_refuses_are_kept():
    def fn(x, log):
        log.append(x.sum())
        return x & 1

    check_breaks(fn, lambda: (torch.randn(3), []), graphs=1, breaks=1)


@pytest.mark.parametrize(
    "operation",
    [lambda x: x.long() & 6, lambda x: (x > 0) | True, lambda x: 3 << x.int(), lambda x: 1j == x],
    ids=["long_and_int", "bool_or_bool", "int_lshift_int", "complex_eq"],
)
def test_operator_the_kernel_implements_stays_in_the_graph(operation):
    check_breaks(caught(operation), randn(3), graphs=1, breaks=0)


@pytest.mark.parametrize(
    "args",
    [(None,), ("ab",), ((1, 2),), (range(3),), (1, "x"), (int,)],
    ids=repr,
)
def test_count_of_something_that_is_no_number_raises_the_users_type_error(args):
    check_breaks(caught(lambda x: next(itertools.count(*args))), randn(3), graphs=1, breaks=0)


@pytest.mark.parametrize(
    "args",
    [(True,), (True, 2), (True, True), (2.5,), (1, 0.5), (1 + 2j,), (-3, -1), (2**70,)],
    ids=repr,
)
def test_count_gives_cpythons_numbers_and_types(args):
    def fn(x):
        c = itertools.count(*args)
        first, second = next(c), next(c)
        return x + 1, first, type(first).__name__, second, type(second).__name__

    check_breaks(fn, randn(3), graphs=1, breaks=0)


class Plain:
    def method(self):
        return 1


PLAIN = Plain()
PAIR = (1, 2)


@pytest.mark.parametrize(
    "read",
    [
        lambda: getattr(PLAIN.method, "__reduce_ex__", None) is not None,
        lambda: hasattr(PLAIN.method, "__reduce__"),
    ],
    ids=["getattr_default", "hasattr"],
)
def test_attribute_the_tracer_does_not_read_is_not_taken_for_absent(read):
    """``getattr(o, name, default)`` and ``hasattr`` give the default (False) only where the
    attribute is absent: a bound method's ``__reduce__`` and ``__reduce_ex__`` are read, as
    ``MethodType`` has them (torch.compile reads them too)."""

    def fn(x):
        return x + 1, read()

    check_breaks(fn, randn(3), graphs=1, breaks=0, calls=1)


def test_shallow_copy_of_a_bound_method_is_a_bound_method():
    """``copy.copy`` follows the method's ``__reduce_ex__``: ``getattr(obj, name)``, traced."""

    def fn(x):
        return x + 1, copy.copy(PLAIN.method)

    check_breaks(fn, randn(3), graphs=1, breaks=0, calls=1)


class Point:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Point) and other.x == self.x

    __hash__ = None


class Halves:
    """Defines ``//`` and ``%`` but not ``divmod``, and ``|`` only reflected."""

    def __floordiv__(self, other):
        return "floordiv"

    def __mod__(self, other):
        return "mod"

    def __ror__(self, other):
        return ("ror", other)


OBJECT_OPERATIONS = {
    "object_or_int": lambda x: PLAIN | 7,
    "int_or_object": lambda x: 7 | PLAIN,
    "object_or_set": lambda x: Point(1) | {1},
    "class_or_object": lambda x: Plain | PLAIN,
    "object_lt_float": lambda x: Point(1) < 2.5,
    "str_ge_object": lambda x: "a" >= PLAIN,
    "object_add_object": lambda x: PLAIN + Point(2),
    "object_in_place_xor": lambda x: operator.ixor(Point(1), 3),
    "divmod_of_objects": lambda x: divmod(PLAIN, 2),
    "divmod_without_dunder": lambda x: divmod(Halves(), 2),
    "reflected_or": lambda x: 7 | Halves(),
    "int_mul_object": lambda x: 3 * PLAIN,
    "str_mod_object": lambda x: PLAIN % "s",
}


@pytest.mark.parametrize("name", OBJECT_OPERATIONS)
def test_operator_no_operand_implements_raises_the_users_type_error(name):
    """CPython's own TypeError (``unsupported operand type(s) for |: 'Plain' and 'int'``), in the
    trace: the metaclass's ``type.__or__`` is not the object's ``__or__``."""
    fn = caught(OBJECT_OPERATIONS[name])
    check_breaks(fn, randn(3), graphs=1, breaks=0)
    # torch 2.11's Dynamo fails on the operator ("Unsupported method call", "Failed to trace
    # builtin operator") and runs the whole call in Python: no graph to compare with there
    assert_no_more_breaks(
        0, fn, torch.randn(3), baseline_missing="torch 2.11's Dynamo runs the call in Python"
    )


@pytest.mark.parametrize(
    "operation",
    [
        lambda x: len(PLAIN),
        lambda x: len(Point(1)),
        lambda x: PAIR[[0]],
        lambda x: PAIR[5],
        lambda x: PAIR[{"a": 1}],
        lambda x: list(PAIR)[(0,)],
        lambda x: UnicodeDecodeError("m"),
        lambda x: ExceptionGroup("m"),
        lambda x: UnicodeTranslateError("a", 0),
        lambda x: StopIteration(3).value,
        lambda x: ValueError("m", 2).args,
    ],
    ids=[
        "len_of_object",
        "len_of_new_object",
        "tuple_index_list",
        "tuple_index_out_of_range",
        "tuple_index_dict",
        "list_index_tuple",
        "unicode_decode_error_needs_five",
        "exception_group_needs_two",
        "unicode_translate_error_needs_four",
        "stop_iteration_value",
        "plain_exception_args",
    ],
)
def test_builtins_raise_cpythons_error_on_known_values(operation):
    fn = caught(operation)
    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_os_error_making_a_subclass_breaks():
    def fn(x):
        return x + 1, type(OSError(2, "missing")).__name__

    check_breaks(fn, randn(3), graphs=1, breaks=1, calls=1)


@pytest.mark.parametrize(
    "operation",
    [lambda t: t * 1, lambda t: True * t, lambda t: t + (), lambda t: () + t],
    ids=["times_one", "true_times", "plus_empty", "empty_plus"],
)
def test_tuple_repeated_once_or_extended_by_nothing_is_itself(operation):
    def fn(x):
        t = (x, "b")
        return x + 1, operation(t) is t

    check_breaks(fn, randn(3), graphs=1, breaks=0)


def test_class_attribute_whose_descriptor_raises_attribute_error_is_the_users():
    """``type.__abstractmethods__`` is a descriptor of the metaclass that raises AttributeError for
    a class without abstract methods."""
    check_breaks(caught(lambda x: Plain.__abstractmethods__), randn(3), graphs=1, breaks=0)


@pytest.mark.parametrize(
    "operation",
    [
        lambda x: hasattr([1], "__name__"),
        lambda x: getattr({1}, "__qualname__", "none"),
        lambda x: [1].__module__,
        lambda x: functools.update_wrapper(lambda: 0, [1, 2]).__wrapped__,
        lambda x: functools.update_wrapper(lambda: 0, {"a": 1}).__wrapped__,
    ],
    ids=["hasattr_list_name", "getattr_set_qualname", "list_module", "wraps_list", "wraps_dict"],
)
def test_attributes_of_the_class_object_are_not_its_instances(operation):
    """``list.__name__`` is the class's (its metaclass gives it); ``[1].__name__`` is missing."""
    check_breaks(caught(operation), randn(3), graphs=1, breaks=0)


NAN = float("nan")
NANS = [NAN, 1.0]


@pytest.mark.parametrize(
    "operation",
    [
        lambda x: NAN in [NAN],
        lambda x: NAN in NANS,
        lambda x: NAN in (1.0, NAN),
        lambda x: NANS.count(NAN),
        lambda x: NANS.index(NAN),
        lambda x: float("nan") in NANS,
    ],
    ids=["in_new_list", "in_global_list", "in_tuple", "count", "index", "other_nan"],
)
def test_searching_a_sequence_asks_identity_first(operation):
    """``x in seq``, ``seq.count(x)``, ``seq.index(x)`` compare ``item is x or item == x``: the same
    NaN object is found though ``nan != nan``."""
    check_breaks(caught(operation), randn(3), graphs=1, breaks=0)


class Keyed:
    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, Keyed) and other.key == self.key

    __hash__ = None


KEYED = Keyed(1)
METHODS = (PLAIN.method, "b")


@pytest.mark.parametrize(
    "operation",
    [
        lambda x: Keyed(1) in [Keyed(1)],
        lambda x: KEYED in (Keyed(1), 2),
        lambda x: Keyed(2) in [KEYED],
        lambda x: PLAIN.method in METHODS,
        lambda x: PLAIN.method in [PLAIN.method],
        lambda x: operator.contains([PLAIN, KEYED], Keyed(1)),
    ],
    ids=["new_equal", "global_equal", "unequal", "bound_method", "new_bound_method", "operator"],
)
def test_searching_a_sequence_asks_eq_of_objects(operation):
    check_breaks(caught(operation), randn(3), graphs=1, breaks=0)
