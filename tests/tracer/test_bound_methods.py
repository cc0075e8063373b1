"""Bound methods (``obj.method``) as values: operators and builtins on them raise CPython's own
errors in the trace, as for an object whose class defines no operator; and builtins that take an
object without operators (``round``, ``int``, ``float``, unary operators) do the same."""

import operator

import pytest
import torch
from difftest import check, check_breaks
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


class Kinds:
    def method(self):
        return 1

    @classmethod
    def klass(cls):
        return 2

    @staticmethod
    def static():
        return 3

    def own_methods(self):
        return (
            self.method is self.method,
            self.method == self.method,
            hash(self.method) == hash(self.method),
            len({self.method: 1, self.method: 2}),
        )


def _python_methods_read_twice(x, obj):
    new = Kinds()
    m = obj.method
    return x + 1, [
        obj.method is obj.method,
        obj.method == obj.method,
        obj.method != obj.method,
        hash(obj.method) == hash(obj.method),
        len({obj.method: 1, obj.method: 2}),
        obj.own_methods(),
        new.method is new.method,
        new.method == new.method,
        new.method == obj.method,
        len({new.method: 1, new.method: 2, obj.method: 3}),
        m is m,
        m is obj.method,
        m == obj.method,
        obj.klass is obj.klass,
        obj.klass == obj.klass,
        Kinds.klass is Kinds.klass,
        Kinds.klass == Kinds.klass,
        Kinds.klass == obj.klass,
        hash(Kinds.klass) == hash(obj.klass),
        len({Kinds.klass: 1, obj.klass: 2}),
        obj.static is obj.static,
        Kinds.static is obj.static,
        Kinds.method is Kinds.method,
    ]


def _c_methods_read_twice(x, items):
    new = []
    return x + 1, [
        items.append is items.append,
        items.append == items.append,
        items.append != items.append,
        new.append is new.append,
        new.append == new.append,
        new.append == items.append,
        new.append == new.extend,
        x.add is x.add,
        x.add == x.add,
        x.add == x.mul,
        "ab".upper is "ab".upper,
        "ab".upper == "ab".upper,
    ]


@pytest.mark.parametrize("fn", [_python_methods_read_twice, _c_methods_read_twice])
def test_a_method_read_twice_is_two_equal_objects(fn):
    """Each ``obj.name`` read of a method makes a new bound method in CPython: ``a.f is a.f`` is
    False, ``a.f == a.f`` True (the same function bound to the same object), their hashes equal
    and one dict key; for Python methods of plain classes, ``self``, class methods read through
    the class or an object, static methods (the function itself), and C methods of lists,
    tensors and strings."""
    arg = Kinds() if fn is _python_methods_read_twice else [1]
    check(fn, torch.ones(2), arg)
    # torch.compile fails on ``t.add == t.add``, and torch 2.11's on ``obj.method == obj.method``
    missing = "torch.compile fails comparing bound methods"
    assert_no_more_breaks(0, fn, torch.ones(2), arg, baseline_missing=missing)


GLOBAL_TENSOR = torch.ones(2)
LINEAR = torch.nn.Linear(2, 2)


def _c_methods_as_keys(x, items):
    new = []
    return x + 1, [
        len({items.append: 1, items.append: 2}),
        {items.append: 1}.get(items.append),
        {items.append: 1}.get(items.pop),
        {items.append: 1}.get(new.append),
        items.append in {items.append, items.pop},
        new.append in {items.append, new.extend},
        len({new.append, new.append, items.append}),
        {x.add: 1}.get(x.add),
        x.mul in {x.add},
        {GLOBAL_TENSOR.view: 1}[GLOBAL_TENSOR.view],
        GLOBAL_TENSOR.view in {x.view},
        sorted(m.__name__ for m in {items.append: 0, items.pop: 1, x.add: 2}),
        hash(LINEAR.parameters) == hash(LINEAR.parameters),
        {LINEAR.parameters: 1}.get(LINEAR.parameters),
    ]


def test_c_methods_hash_and_compare_by_their_object_and_method():
    """A method read from its object's class (``xs.append``, ``t.view``) is a dict key and set
    item as CPython's ``meth_hash``/``meth_richcompare`` make it: equal to another read of the
    same method of the same object (``is``), of no other; ``hash()`` of one bound to an object
    the trace holds by identity (a module) is computed, its identity guarded."""
    check(_c_methods_as_keys, torch.ones(2), [1])
    # torch.compile runs the set and dict of tensor methods in Python (no graph)
    missing = "torch.compile runs the call in Python"
    assert_no_more_breaks(0, _c_methods_as_keys, torch.ones(2), [1], baseline_missing=missing)


GLOBAL_LIST = [1]
OTHER_LIST = [2]
GIVEN_APPEND, GIVEN_VIEW = GLOBAL_LIST.append, GLOBAL_TENSOR.view
#: a dict and a set read from globals, keyed by C methods of lists and tensors
METHOD_TABLE = {GLOBAL_LIST.append: 1, OTHER_LIST.append: 2, GLOBAL_TENSOR.view: 3}
METHOD_SET = {GLOBAL_LIST.pop, OTHER_LIST.pop, GLOBAL_TENSOR.add}


def _c_methods_given_and_read(x):
    return x + 1, [
        GIVEN_APPEND == GLOBAL_LIST.append,
        GIVEN_APPEND != OTHER_LIST.append,
        GIVEN_VIEW == GLOBAL_TENSOR.view,
        {GIVEN_APPEND: 1}.get(GLOBAL_LIST.append),
        METHOD_TABLE.get(GLOBAL_LIST.append),
        METHOD_TABLE[GIVEN_APPEND],
        METHOD_TABLE.get(GLOBAL_TENSOR.view),
        GLOBAL_TENSOR.add in METHOD_TABLE,
        OTHER_LIST.pop in METHOD_SET,
        OTHER_LIST.append in METHOD_SET,
        len(METHOD_SET | {GLOBAL_LIST.pop, GLOBAL_LIST.copy}),
        sorted(m.__name__ for m in METHOD_TABLE),
        METHOD_SET - {GLOBAL_TENSOR.add},
    ]


def test_c_methods_given_and_in_input_containers_are_keys():
    """A C method given to the trace (a global) equals a read of the same method of the same
    object; dicts and sets read from globals keyed by C methods of lists and tensors are traced,
    their keys one with the methods read in the call (they broke)."""
    check(_c_methods_given_and_read, torch.ones(2))
    missing = "torch.compile runs the call in Python"
    assert_no_more_breaks(0, _c_methods_given_and_read, torch.ones(2), baseline_missing=missing)


GIVEN_PARAMETERS = LINEAR.parameters


def _a_module_method_given_and_read(x):
    return x + 1, [
        {GIVEN_PARAMETERS: 1}.get(LINEAR.parameters),
        LINEAR.parameters in {GIVEN_PARAMETERS, LINEAR.forward},
        {LINEAR.parameters: 2}.get(GIVEN_PARAMETERS),
        {LINEAR.parameters: 2}.get(LINEAR.buffers),
    ]


def test_a_method_of_an_object_held_by_identity_keys_as_the_real_method():
    """A method read from the class of an object the trace holds (a module) keys as the real
    bound method does: one given to the trace finds it (it was another key: None, False)."""
    check_breaks(_a_module_method_given_and_read, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _a_module_method_given_and_read, torch.ones(2))


def _hash_of_a_module_method(x):
    method = LINEAR.parameters
    return x + 1, hash(method), method.__self__ is LINEAR, method.__name__, method.__qualname__


def test_hash_of_a_method_of_an_object_held_by_identity_is_cpythons():
    compiled = check_breaks(_hash_of_a_module_method, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert compiled[0](torch.ones(2))[1] == hash(LINEAR.parameters)
    assert_no_more_breaks(0, _hash_of_a_module_method, torch.ones(2))


def _method_held_twice_across_a_break(x, obj):
    m = obj.method
    held = m
    k = Kinds.klass
    y = x + 1
    print("break")
    return y, [m is held, m is obj.method, m == obj.method, k is Kinds.klass, k == Kinds.klass]


def test_a_method_made_in_the_trace_stays_one_object_across_a_break():
    """A bound method made in the trace and held by two locals at a break is rebuilt once (one
    object, ``m is held``), never as the object a new read makes."""
    make = lambda: (torch.ones(2), Kinds())  # noqa: E731
    check_breaks(_method_held_twice_across_a_break, make, graphs=1, breaks=1)
    assert_no_more_breaks(1, _method_held_twice_across_a_break, *make())
