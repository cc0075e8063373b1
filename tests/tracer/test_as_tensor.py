"""Issue 24: ``torch.as_tensor`` in the graph where it shares no memory the graph would lose: of
Python numbers (a new tensor, as ``torch.tensor``) and of a tensor (``t.to(device, dtype)``: the
tensor itself when both match). Before, every call broke ("effects outside the graph"). And a list
indexed by such a tensor, whose value the trace knows."""

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def _list_indexed_by_a_tensor(x):
    items = [x, x + 1, x + 2]
    return items[torch.as_tensor(2)] * 2


def test_a_list_indexed_by_as_tensor_of_a_number():
    # ``list[tensor]`` reads the tensor's value (``__index__``): made from a Python number in the
    # trace, its value is known (the fake tensor's ``constant``). Before: 2 breaks (as_tensor,
    # then the index). torch.compile: 1 graph, 0 breaks on torch 2.11; 2 graphs, 1 break on 2.13
    # (``Tensor.item()``)
    check_breaks(_list_indexed_by_a_tensor, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _list_indexed_by_a_tensor, torch.randn(3))


def _index_changed_in_place(x):
    items = [x, x + 1, x + 2]
    i = torch.as_tensor(0)
    i.add_(2)  # its value is no longer the number it was made from
    return items[i] * 2


def test_a_tensor_index_changed_in_place_is_known_too():
    # fake tensors carry the constant through the in-place add (the value compared is eager's:
    # items[2]); torch.compile: 2 graphs, 1 break (Tensor.item())
    check_breaks(_index_changed_in_place, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _index_changed_in_place, torch.randn(3))


def _of_numbers(x):
    a = torch.as_tensor(3)
    b = torch.as_tensor([1.5, 2.0, -1.0], dtype=torch.float64)
    c = torch.as_tensor(((1, 2), (3, 4)))
    return x * a + b, c.sum(), a.dtype, b.dtype, c.shape


def test_as_tensor_of_numbers():
    check_breaks(_of_numbers, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _of_numbers, torch.randn(3))


def _of_a_tensor(x):
    same = torch.as_tensor(x)
    other = torch.as_tensor(x, dtype=torch.float64)
    return same is x, other is x, other.dtype, same + 1, other * 2


def test_as_tensor_of_a_tensor_is_the_tensor_where_nothing_changes():
    check_breaks(_of_a_tensor, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _of_a_tensor, torch.randn(3))


def _writes_through(x):
    y = torch.as_tensor(x)
    y.add_(1)  # the same tensor: the caller's x changes, as in eager
    return x


def test_as_tensor_of_a_tensor_aliases_it():
    check_breaks(_writes_through, lambda: (torch.randn(3),), graphs=1, breaks=0)
