"""``weakref.ref(obj)`` made in a compiled function (torch 2.11's distribution transforms keep their
inverse as ``self._inv = weakref.ref(inv)``): traced; calling it gives the object; the reference
that escapes is the object's own callback-less one, as in eager."""

import weakref

import torch
from difftest import check, compile_counted


class _Node:
    def __init__(self, value):
        self.value = value


def _ref_of_a_new_object(x):
    node = _Node(x + 1)
    ref = weakref.ref(node)
    node.value = node.value * 2
    return ref().value + 1, ref() is node


def test_a_weak_reference_to_an_object_made_in_the_trace():
    check(_ref_of_a_new_object, torch.randn(3))


def _escaping_ref(x):
    node = _Node(x + 1)
    node.inv = weakref.ref(node)
    return node


def test_an_escaping_weak_reference_is_the_objects_own():
    compiled, counter = compile_counted(_escaping_ref)
    node = compiled(torch.randn(2))
    assert type(node.inv) is weakref.ReferenceType
    assert node.inv() is node and node.inv is weakref.ref(node)
    assert counter.frame_count == 1


def _ref_of_an_input(node, x):
    return weakref.ref(node)().value * x


def test_a_weak_reference_to_an_input():
    check(_ref_of_an_input, _Node(3.0), torch.randn(2))


def _ref_with_callback(x):
    node = _Node(x)
    ref = weakref.ref(node, lambda r: None)
    return ref().value + 1


def test_a_callback_runs_in_python():
    compiled, _ = compile_counted(_ref_with_callback)
    x = torch.randn(2)
    torch.testing.assert_close(compiled(x), _ref_with_callback(x))
