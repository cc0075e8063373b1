"""Bound methods (``obj.method``) as values: operators and builtins on them raise CPython's own
errors in the trace, as for an object whose class defines no operator; and builtins that take an
object without operators (``round``, ``int``, ``float``, unary operators) do the same."""

import operator

import pytest
import torch
from difftest import check
from dynamo_baseline import assert_no_more_breaks


class Plain:
    def method(self):
        return 1


class Rounds:
    def __round__(self, ndigits=None):
        return ("rounded", ndigits)


OBJ = Plain()
BOUND = OBJ.method


def _errors(calls):
    """Each call's result, or its error's type and message."""
    out = []
    for call in calls:
        try:
            out.append(call())
        except TypeError as e:
            out.append((type(e).__name__, str(e)))
    return out


def _operators_on_a_bound_method(x):
    items, pair = {0, BOUND}, (BOUND, "b")
    calls = [
        lambda: items - BOUND,
        lambda: BOUND ^ frozenset(items),
        lambda: pair * BOUND,
        lambda: [BOUND] + BOUND,
        lambda: pair < BOUND,
        lambda: BOUND >= BOUND,
        lambda: 0 + BOUND,
        lambda: -BOUND,
        lambda: abs(BOUND),
        lambda: divmod(BOUND, 3),
        lambda: operator.lt(BOUND, BOUND),
    ]
    return x + 1, _errors(calls)


def test_operators_on_a_bound_method_raise_cpythons_type_error():
    check(_operators_on_a_bound_method, torch.ones(2))
    assert_no_more_breaks(
        0,
        _operators_on_a_bound_method,
        torch.ones(2),
        baseline_missing="torch.compile 2.11 runs a set holding a bound method in Python",
    )


def _in_place_on_a_bound_method(x):
    def extend():
        items = [1]
        items += BOUND
        return items

    def intersect():
        items = {1}
        items &= BOUND
        return items

    return x + 1, _errors([extend, intersect])


def test_in_place_operators_with_a_bound_method_raise():
    check(_in_place_on_a_bound_method, torch.ones(2))


def _conversions(x):
    calls = [lambda: int(BOUND), lambda: float(BOUND), lambda: int(OBJ), lambda: float(OBJ)]
    return x + 1, _errors(calls)


def test_number_conversions_of_objects_without_them_raise():
    check(_conversions, torch.ones(2))
    assert_no_more_breaks(0, _conversions, torch.ones(2))


def _rounds(x):
    return x + 1, _errors([lambda: round(BOUND), lambda: round(OBJ), lambda: round(x)])


def test_round_of_classes_without_round_raises():
    # ``round(tensor)``: torch.Tensor defines no ``__round__`` either. No torch.compile baseline:
    # it runs these calls in Python (torch 2.13) or fails on ``round(tensor)`` (torch 2.11)
    check(_rounds, torch.ones(2))


@pytest.mark.parametrize("ndigits", [(), (2,)])
def test_round_inlines_a_user_round(ndigits):
    def fn(x):
        return x + 1, round(Rounds(), *ndigits)

    check(fn, torch.ones(2))


def _unary_on_plain_objects(x):
    return x + 1, _errors([lambda: -OBJ, lambda: +OBJ, lambda: ~OBJ, lambda: abs(OBJ)])


def test_unary_operators_on_a_plain_object_raise():
    check(_unary_on_plain_objects, torch.ones(2))


def _identities(x):
    fresh = OBJ.method
    return x + 1, [
        BOUND is BOUND,
        id(BOUND) == id(BOUND),
        fresh is BOUND,
        BOUND is not fresh,
        fresh is fresh,
    ]


def test_a_bound_method_given_is_itself_and_a_new_one_is_not():
    # ``BOUND`` is one object at every read; ``OBJ.method`` makes a new one at each read
    check(_identities, torch.ones(2))
    assert_no_more_breaks(0, _identities, torch.ones(2))
