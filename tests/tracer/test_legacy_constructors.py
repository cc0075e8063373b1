"""Torch's legacy typed constructors (``torch.FloatTensor([1.0, 2.0])``,
``torch.LongTensor(3)``..., and ``torch.Tensor(...)`` itself, of the default dtype) in the graph,
with eager's semantics: always a CPU tensor of the class's dtype (whatever the default dtype or
device), data copied, sizes uninitialised, a tensor of the same dtype aliased; bad arguments run
in Python and raise what eager raises. Before, every call broke ("creating a FloatTensor
object"); torch.compile: one graph, no break."""

from __future__ import annotations

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_counts

CONSTRUCTORS = [
    torch.FloatTensor,
    torch.DoubleTensor,
    torch.HalfTensor,
    torch.BFloat16Tensor,
    torch.LongTensor,
    torch.IntTensor,
    torch.ShortTensor,
    torch.CharTensor,
    torch.ByteTensor,
    torch.BoolTensor,
    torch.Tensor,  # of the default dtype (colt5-attention's ``torch.Tensor([k]).to(s)``)
]


def check(fn, *args):
    """One graph, no break, eager's results; torch.compile: one graph, no break, too."""
    check_breaks(fn, lambda: args, graphs=1, breaks=0)
    assert dynamo_counts(fn, *args) == (1, 0)


def _float_data(x):
    return torch.FloatTensor([1.0, 2.0, 3.0]) + x


def _new_tensor_and_sized_long(x):
    return x.new_tensor([1, 2, 3]) + torch.LongTensor(3).zero_()


def test_float_tensor_of_a_list():
    check(_float_data, torch.randn(3))


def test_new_tensor_plus_a_zeroed_long_tensor():
    check(_new_tensor_and_sized_long, torch.randn(3))


@pytest.mark.parametrize("cls", CONSTRUCTORS, ids=lambda c: c.__name__)
def test_data_lists_and_tuples(cls):
    # a tuple is data too (not sizes); floats are converted to the class's dtype as eager converts
    def fn(x):
        a, b, c = cls([1, 0, 2]), cls((3, 1)), cls([[1.5, 0.0], [2.25, 7.0]])
        return x + 1, a, b, c, a.dtype, a.device, b.shape, c.shape

    check(fn, torch.randn(3))


@pytest.mark.parametrize("cls", CONSTRUCTORS, ids=lambda c: c.__name__)
def test_sizes_make_uninitialised_tensors(cls):
    # ints, a ``torch.Size`` or a tensor's shape: uninitialised (``torch.empty``), so only what is
    # written is compared; no argument: an empty 1-d tensor
    def fn(x):
        a, b, c = cls(2, 3), cls(torch.Size([4])), cls(x.shape)
        empty, zero = cls(), cls(0, device="cpu")
        filled = (a.fill_(1), b.zero_(), c.fill_(0))
        return filled, empty, zero, a.dtype, a.device, a.shape, c.shape, empty.shape

    check(fn, torch.randn(2, 5))


def _alias(x):
    y = torch.FloatTensor(x)
    y.add_(1)  # the alias shares x's memory: x changes too
    return y, y.dtype, y.shape


def test_a_tensor_of_the_same_dtype_is_aliased():
    check(_alias, torch.randn(3))


def _alias_of_a_leaf(x):
    return torch.FloatTensor(x) * 2


def test_an_alias_keeps_requires_grad():
    check(_alias_of_a_leaf, torch.randn(3, requires_grad=True))


def _under_changed_defaults(x):
    with torch.device("meta"):
        a = torch.FloatTensor([1.0, 2.0])
        b = torch.IntTensor(2).zero_()
    return a, b, a.device, torch.ones(2).device, x + 1


def test_always_cpu_and_the_class_dtype():
    # neither the default dtype nor a ``torch.device`` block changes what the constructor makes
    torch.set_default_dtype(torch.float64)
    try:
        check_breaks(_under_changed_defaults, lambda: (torch.randn(3),), graphs=1, breaks=0)
        assert_no_more_breaks(
            0,
            _under_changed_defaults,
            torch.randn(3),
            baseline_missing="torch.compile runs the call in Python: unsupported context manager",
        )
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize(
    "make",
    [
        lambda x: torch.LongTensor(x),  # another dtype: TypeError
        lambda x: torch.FloatTensor(x, device="cpu"),  # RuntimeError: not supported with a tensor
        lambda x: torch.FloatTensor(-1),  # RuntimeError: negative dimension
        lambda x: torch.FloatTensor(2.5),  # TypeError: data must be a sequence
        lambda x: torch.ByteTensor([300]),  # RuntimeError: overflow
        lambda x: torch.FloatTensor([[1, 2], [3]]),  # ValueError: ragged
        lambda x: torch.FloatTensor([1.0], device="meta"),  # RuntimeError: expects cpu
        lambda x: torch.FloatTensor([1.0], dtype=torch.float32),  # TypeError: no dtype=
    ],
    ids=["dtype", "tensor_device", "negative", "float", "overflow", "ragged", "meta", "dtype_kw"],
)
def test_bad_arguments_raise_as_in_eager(make):
    # the call runs in Python (a break at it): eager's exception, type and message
    def fn(x):
        y = x + 1
        return make(y) + y

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=1)


def _default_dtype_tensor(x, k):
    a, b = torch.Tensor([k]).to(x), torch.Tensor(x)
    return x * a, b.dtype, torch.Tensor(2, 3).shape, torch.Tensor((1, 2)).dtype


def test_torch_tensor_makes_the_default_dtype():
    check(_default_dtype_tensor, torch.randn(3), 4)
    torch.set_default_dtype(torch.float64)
    try:  # float64 tensors, and an alias of float64 x
        check_breaks(_default_dtype_tensor, lambda: (torch.randn(3), 4), graphs=1, breaks=0)
        # a float32 tensor is no alias of the default dtype: runs in Python (eager's result)
        check_breaks(
            _default_dtype_tensor,
            lambda: (torch.randn(3, dtype=torch.float32), 4),
            graphs=2,
            breaks=1,
        )
    finally:
        torch.set_default_dtype(torch.float32)
