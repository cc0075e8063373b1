"""Objects of user subclasses of ``list`` (``objects.ListObjectVariable``): made in the compiled
function (a plain subclass, one with methods, with its own ``__init__`` calling
``super().__init__``, with its own ``__new__``), read, changed, given attributes, passed to a
callee and returned; or passed in and changed, the changes written back into the real object.
Results compared with eager's (values, the escaping object's type, items and ``vars()``), break
counts beside torch.compile's (``assert_no_more_breaks``).
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


class Plain(list):
    pass


class WithMethods(list):
    def total(self):
        return sum(self)

    def first(self):
        return self[0]

    def append(self, value):  # a Python override: runs where the code calls it
        super().append(value * 2)


class OwnInit(list):
    def __init__(self, items, tag="t"):
        super().__init__(items)
        self.tag = tag


class OwnNew(list):
    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.made = "new"
        return self


class LengthOverride(list):
    def __len__(self):
        return 7


def _same_object(actual, expected):
    """The same class, the same items and the same instance attributes."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    assert_same(list(actual), list(expected))
    assert_same(dict(vars(actual)), dict(vars(expected)))


def _plain(x):
    xs = Plain([x, x + 1])
    xs.append(x * 2)
    xs.extend([x - 1])
    n = 0
    for item in xs:
        n += item.sum()
    part = xs[1:3]
    return (
        xs[0] + xs[2],
        len(xs),
        xs.index(xs[0]),  # found by identity, as list.index does first
        isinstance(xs, Plain),
        isinstance(xs, list),
        type(xs) is Plain,
        type(part) is list,
        n,
        xs,
    )


def _with_methods(x):
    xs = WithMethods([3, 1, 2])
    xs.sort()
    xs.append(5)  # the override: 10 appended
    joined = xs + [4]
    before = [0] + xs
    return (
        x * xs.total() + xs.first(),
        joined,
        before,
        type(joined) is list,
        xs == [1, 2, 3, 10],
        xs != [1, 2, 3],
        xs.index(2),
        2 in xs,
        bool(xs),
        xs.copy(),
        sorted(xs, reverse=True),
        list(reversed(xs)),
        xs * 2,
        repr(xs),
        xs,
    )


def _own_init(x):
    xs = OwnInit([x, x * 2], tag="a")
    xs.note = 5
    xs.extend([x + 3])
    xs[0] = x - 1
    del xs[1]
    return xs[1] + xs.note, xs.tag, len(xs), xs


def _own_new(x):
    xs = OwnNew([x, 2])
    xs.insert(0, x + 1)
    last = xs.pop()
    return xs[0] * last, xs.made, xs


def _callee(xs):
    xs.append(xs[0] + 1)
    return len(xs)


def _passed_to_callee(x):
    xs = OwnInit([x])
    n = _callee(xs)
    return xs[-1] * n, xs


def _unbound_list_methods(x):
    xs = Plain([1, 2])
    list.append(xs, x)
    list.extend(xs, [3])
    return x + len(xs), list.index(xs, 2), xs


def _copied_reversed_compared(x):
    xs = Plain(range(3))
    ys = Plain(xs)
    ys.reverse()
    return x * ys.count(1), xs == ys, xs is ys, sorted(ys) == xs, ys


def _attributes_read_and_deleted(x):
    xs = WithMethods([i * 2 for i in range(3)])
    xs.flag = 1
    seen = dict(vars(xs))
    del xs.flag
    return x + max(xs), getattr(xs, "flag", 7), seen, xs.__class__ is WithMethods, str(xs), xs


MADE = [
    _plain,
    _with_methods,
    _own_init,
    _own_new,
    _passed_to_callee,
    _unbound_list_methods,
    _copied_reversed_compared,
    _attributes_read_and_deleted,
]


@pytest.mark.parametrize("fn", MADE)
def test_list_subclass_made_in_the_trace(fn):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        fn,
        torch.randn(3),
        baseline_missing="torch 2.11's Dynamo runs the call in Python (a list subclass's method)",
    )


@pytest.mark.parametrize("fn", MADE)
def test_the_escaping_object_has_eagers_type_items_and_attributes(fn):
    # made again after the graph by ``list.__new__`` (no ``__new__`` or ``__init__`` of the
    # class runs again), given its items by ``list.extend`` and the attributes the trace set
    compiled, _ = compile_counted(fn)
    x = torch.randn(3)
    _same_object(compiled(x)[-1], fn(x)[-1])


def _in_place_concat(x):
    xs = OwnInit([x], tag="c")
    xs.note = 1
    xs += [x + 1]  # list.__iadd__: the same object, extended
    return xs[1] * xs.note, xs.tag, xs


def test_in_place_concat_keeps_the_object():
    # no torch.compile baseline: torch.compile (2.13) runs this function in Python ("Unsupported
    # python_type() call"); in other code where it compiles ``+=`` on such an object, it makes
    # ``xs`` a plain list and raises AttributeError reading ``xs.note`` after it
    check_breaks(_in_place_concat, lambda: (torch.randn(3),), graphs=1, breaks=0)
    compiled, _ = compile_counted(_in_place_concat)
    x = torch.randn(3)
    _same_object(compiled(x)[-1], _in_place_concat(x)[-1])


def _escapes_at_a_break(x):
    xs = OwnInit([x], tag="b")
    xs.append(x + 1)
    print("break")
    xs.append(x + 2)
    return xs[0] + xs[-1], xs


def test_list_object_live_at_a_break():
    # made before the break, carried into the resume function, changed there
    check_breaks(_escapes_at_a_break, lambda: (torch.randn(3),), graphs=2, breaks=1)
    compiled, _ = compile_counted(_escapes_at_a_break)
    x = torch.randn(3)
    _same_object(compiled(x)[-1], _escapes_at_a_break(x)[-1])


def _mutate_argument(xs, x):
    xs.append(x + 1)
    xs[0] = xs[0] * 2
    xs.attr = 3
    return xs[0] + x + xs.tag, len(xs), isinstance(xs, OwnInit)


def _argument_args():
    return OwnInit([torch.randn(3)], tag=1), torch.randn(3)


def test_list_subclass_passed_in_and_changed():
    compiled, counter, _ = check_breaks(_mutate_argument, _argument_args, graphs=1, breaks=0)
    assert_no_more_breaks(0, _mutate_argument, *_argument_args())
    # the changes are written back into the real object, as eager makes them
    xs, x = _argument_args()
    expected_xs = OwnInit(list(xs), tag=1)
    compiled(xs, x)
    _mutate_argument(expected_xs, x)
    _same_object(xs, expected_xs)


def _read_argument(xs, x):
    return x * xs.total(), xs.first(), len(xs)


def test_list_subclass_passed_in_read_only_is_guarded_on_its_length():
    compiled, counter = compile_counted(_read_argument)
    x = torch.randn(3)
    for items in ([1, 2], [1, 2], [1, 2, 3]):
        xs = WithMethods(items)
        assert_same(compiled(xs, x), _read_argument(WithMethods(items), x))
    assert counter.frame_count == 2  # a longer list is another variant


def _overrides_len(x):
    xs = LengthOverride([x])
    return x + len(xs), xs


def test_a_class_overriding_lists_protocol_is_left_to_python():
    # ``__len__`` of its own: the storage model does not answer for it; the graph breaks and the
    # result is eager's
    compiled, _ = compile_counted(_overrides_len)
    x = torch.randn(3)
    actual, expected = compiled(x), _overrides_len(x)
    assert_same(actual[0], expected[0])
    _same_object(actual[1], expected[1])
