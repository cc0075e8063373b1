"""``is`` between the immutable values a trace received: numbers, strings, bytes and tuples passed
as arguments (the same object twice, or two equal objects), read back from a list, a tuple or an
attribute, or made in the trace.

CPython's answer is the real objects': a float or an int outside -5..256, a str or bytes of two
or more characters, is an object of its own that only an operation giving back what it was given
(``(a,)[0]``, ``max(a, b)``) makes again. A symbolic number stands for the argument's object
(``operations._input_number``); a constant folded at trace time keeps the tracker of an argument
it gives back (``builder.fold_call``); two inputs found to be one object, or two, are guarded so
(``L['a'] is L['b']`` / ``is not``), so that a later call passing them the other way compiles
again while identical calls do not. Every call's result is compared with eager's, over calls
whose values change (the numbers become symbolic) and whose objects are shared or not.
"""

from __future__ import annotations

import io
import operator

import pytest
import torch
from difftest import break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks

from bytegraph.explain import Recorder


def _copy(value):
    """An object equal to ``value`` and of its type, made anew (never ``value`` itself)."""
    if type(value) is float:
        return float(repr(value))
    if type(value) is int:
        return int(str(value))
    if type(value) is str:
        return "".join(list(value))
    if type(value) is bytes:
        return bytes(bytearray(value))
    return tuple(list(value))


def _run(fn, calls, frames=None):
    """``fn(x, a, b)`` compiled and eager on each of ``calls`` (``(a, shared)``: ``b`` is ``a``
    itself, or an equal copy); returns the compiled frames counted."""
    compiled, counter = compile_counted(fn)
    x = torch.ones(2)
    for value, shared in calls:
        b = value if shared else _copy(value)
        expected = fn(x, value, b)
        actual = compiled(x, value, b)
        assert actual[1] == expected[1], (value, shared, actual[1], expected[1])
        torch.testing.assert_close(actual[0], expected[0])
    if frames is not None:
        assert counter.frame_count == frames
    return counter.frame_count


def list_item_is(x, a, b):
    items = [a]
    return x + 1, operator.is_(items[0], b)


def is_(x, a, b):
    return x + 1, a is b


def is_not(x, a, b):
    return x + 1, a is not b


def operator_is_not(x, a, b):
    return x + 1, operator.is_not(a, b)


def same_id(x, a, b):
    return x + 1, id(a) == id(b)


def in_list(x, a, b):
    return x + 1, a in [b]


def tuple_item_is(x, a, b):
    return x + 1, (a,)[0] is b


def dict_value_is(x, a, b):
    return x + 1, {0: a}[0] is b


FORMS = [list_item_is, is_, is_not, operator_is_not, same_id, in_list, tuple_item_is, dict_value_is]


#: (value, shared) call sequences; the numbers change from call to call, so they become symbolic
SEQUENCES = {
    "float_shared": [(2.5, True), (3.5, True), (5.5, True), (5.5, True)],
    "float_copies": [(2.5, False), (3.5, False), (5.5, False), (5.5, True), (7.5, False)],
    "float_alternating": [(2.5, True), (3.5, False), (5.5, True), (7.5, False), (7.5, True)],
    "float_constant": [(2.5, True), (2.5, False), (2.5, True)],
    "int_large": [(1000, True), (2000, False), (3000, True), (4000, False), (4000, True)],
    "int_small_and_large": [(1000, True), (5, True), (3000, False), (300, True), (7, False)],
    "str": [("ab", True), ("cd", False), ("ab", True), ("ab", False)],
    "bytes": [(b"ab", True), (b"ab", False), (b"ab", True)],
    "tuple": [((1, 2), True), ((1, 2), False), ((1, 2), True)],
}


@pytest.mark.parametrize("sequence", SEQUENCES)
@pytest.mark.parametrize("form", FORMS, ids=lambda fn: fn.__name__)
def test_identity_of_two_arguments_is_cpythons_on_every_call(form, sequence):
    _run(form, SEQUENCES[sequence])


def test_a_changing_float_is_the_object_the_list_holds_without_recompiling():
    """The float becomes symbolic at the second call; ``is`` is decided on the argument's object
    and guarded as a relation, not by value: the later values reuse that variant."""
    calls = [(2.5, True), (3.5, True), (5.5, True), (7.5, True), (7.5, True)]
    assert _run(list_item_is, calls) == 2


def test_one_object_passed_twice_then_two_equal_objects_compile_again_once():
    calls = [(2.5, True), (3.5, True), (5.5, False), (7.5, False), (9.5, True), (11.5, False)]
    assert _run(is_, calls) == 3


class Holder:
    pass


H = Holder()


def attribute_item_is_not(x, a):
    return x + 1, operator.is_not(H.items[0], a)


def test_an_attributes_item_is_the_argument_it_holds():
    compiled, counter = compile_counted(attribute_item_is_not)
    x = torch.ones(2)
    for value in (2.5, 3.5, 5.5, 5.5, 7.5):
        for shared in (True, False, True):
            H.items = [value if shared else _copy(value), "b"]
            expected = attribute_item_is_not(x, value)[1]
            assert compiled(x, value)[1] == expected
    assert counter.frame_count == 4  # 2.5 shared, 2.5 copied, then symbolic: shared, copied


def positive(x, a, b):
    return x + 1, (+a) is a


def converted(x, a, b):
    return x + 1, float(a) is a


def added_zero(x, a, b):
    return x + 1, (a + 0) is a


def larger(x, a, b):
    return x + 1, max(a, b) is a


MADE = [positive, converted, added_zero, larger]


@pytest.mark.parametrize("form", MADE, ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("sequence", ["float_copies", "int_small_and_large"])
def test_a_number_made_in_the_trace_is_what_cpythons_operation_gives(form, sequence):
    """``+f`` and ``float(f)`` give ``f`` itself, ``n + 0`` a new int unless it is a cached
    small one: on a symbolic number the trace breaks rather than guess."""
    _run(form, SEQUENCES[sequence])


def test_is_of_two_float_arguments_breaks_no_more_than_torch_compile():
    recorder = Recorder()
    compiled, _ = compile_counted(list_item_is)
    x = torch.ones(2)
    with recorder:
        for value in (2.5, 3.5, 5.5):
            compiled(x, value, value)
    breaks = break_count(recorder.report())
    assert breaks == 0
    assert_no_more_breaks(breaks, list_item_is, x, 2.5, 2.5)


def held_across_a_break(x, a, b):
    y = x + 1
    print("", end="", file=_SINK)  # a graph break: a and b are live, given to the resume function
    return y, a is b


def given_back_after_a_break(x, a, b):
    y = x + 1
    print("", end="", file=_SINK)
    return y, a


_SINK = io.StringIO()


@pytest.mark.parametrize("sequence", ["str", "float_constant", "tuple", "bytes"])
def test_arguments_live_at_a_break_are_the_calls_own_objects(sequence):
    """Equal constants are one object in the rewritten code's ``co_consts``: an argument held
    across a break is given to the resume function as the call's object, not as the trace's."""
    _run(held_across_a_break, SEQUENCES[sequence])
    compiled, _ = compile_counted(given_back_after_a_break)
    x = torch.ones(2)
    for value, shared in SEQUENCES[sequence]:
        a = value if shared else _copy(value)
        assert compiled(x, a, a)[1] is a
