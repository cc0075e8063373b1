"""Sizes that change between calls, over views, strided inputs, inputs sharing a storage, size
arithmetic, lists, ints and floats: bytegraph recompiles no more than torch.compile does (a size
becomes dynamic once it has changed: automatic dynamic), and every call's values, strides,
aliasing (``out is x``, an output sharing an input's storage) and writes through views are eager's.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import assert_same
from dynamo_baseline import untimed_guards

import bytegraph

SIZES = (2, 3, 4, 5, 8)


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def alone(n):
    return (randn(n, n, 3),), []


def transposed(n):
    b = randn(n, n, 3)
    return (b.t(),), [b]


def sliced(n):
    b = randn(n, n, 3)
    return (b[1:],), [b]


def stepped(n):
    b = randn(n, 3, 2 * n)
    return (b[:, ::2],), [b]


def expanded(n):
    b = randn(n, n, 1)
    return (b.expand(n, 4),), [b]


def strided(n):
    b = randn(n, n * n)
    return (b.as_strided((n, n), (1, n)),), [b]


def view_then_base(n):
    b = randn(n, n, 3)
    return (b.t(), b), []


def base_then_view(n):
    b = randn(n, n, 3)
    return (b, b.t()), []


def slice_then_base(n):
    b = randn(n, n, 3)
    return (b[1:], b), []


def row_then_base(n):
    b = randn(n, n, 3)
    return (b[0], b), []


def halves(n):
    b = randn(n, 2 * n, 3)
    return (b[:n], b[n:]), []


def with_int(n):
    return (randn(0, 3), n), []


def write_first(a, b):
    a.add_(1)
    return a.t() + b


def write_second(a, b):
    b.mul_(2)
    return a + 1


def write_first_read_second(a, b):
    a.add_(1)
    return b * 2


#: name -> (make(n) -> (arguments, other tensors to compare after the call), function)
PATTERNS = {
    "plain": (alone, lambda x: x * 2),
    "plain_written": (alone, lambda x: x.mul_(2)),
    "returned": (alone, lambda x: x),
    "t": (transposed, lambda x: x + 1),
    "t_written": (transposed, lambda x: x.add_(1)),
    "t_returned_view": (transposed, lambda x: x.t()),
    "slice": (sliced, lambda x: x * 2),
    "slice_written": (sliced, lambda x: x.add_(1)),
    "step": (stepped, lambda x: x * 2),
    "step_written": (stepped, lambda x: x.add_(1)),
    "expand": (expanded, lambda x: x * 2),
    "as_strided": (strided, lambda x: x @ x),
    "as_strided_written": (strided, lambda x: x.mul_(3)),
    "unsqueeze": (alone, lambda x: x.unsqueeze(0).sum(1)),
    "view_and_base": (view_then_base, lambda a, b: a.t() * b),
    "view_and_base_write_view": (view_then_base, write_first),
    "view_and_base_write_base": (view_then_base, write_second),
    "base_and_view_write_view": (base_then_view, lambda b, a: write_first(a, b)),
    "slice_and_base_write_slice": (slice_then_base, lambda a, b: (a.add_(1), b.sum(0))[1]),
    "row_and_base_write_base": (row_then_base, write_second),
    "halves_write_first": (halves, write_first_read_second),
    "view_and_base_as_varargs": (view_then_base, lambda *ts: write_first(*ts)),
    "size_arithmetic": (alone, lambda x: x.new_zeros(x.shape + (2,)) + x.shape[0]),
    "size_slice_arithmetic": (alone, lambda x: x.reshape(x.shape[:-1] + (3, 1))),
    "floordiv": (alone, lambda x: x[: x.shape[0] // 2] * 2),
    "reshape": (lambda n: ((randn(n, n, 4),), []), lambda x: x.reshape(-1, 2)),
    "list": (lambda n: ([[randn(i, 3) for i in range(n)]], []), lambda xs: sum(x * 2 for x in xs)),
    "int": (with_int, lambda x, k: x * k + k),
    "int_bounds_slice": (lambda n: ((randn(n, n, 3), n), []), lambda x, k: x[: k - 1] + k),
    "float": (lambda n: ((randn(0, 3), n + 0.5), []), lambda x, k: x * k),
}

#: torch.compile's count on torch 2.13, where this Python's torch.compile cannot run the function
RECORDED = {"returned": 0, "floordiv": 3, "list": len(SIZES)}


def tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors(item)]
    return []


def assert_as_eager(out, expected, inputs, eager_inputs):
    """Values, dtype, shape, strides and requires_grad; which inputs each output tensor is, and
    which it shares a storage with; the inputs (and the bases of views) after the call."""
    assert_same(out, expected)
    for got, want in zip(tensors(out), tensors(expected), strict=True):
        assert got.stride() == want.stride()
        assert [x is got for x in inputs] == [x is want for x in eager_inputs]
        storage = torch._C._storage_id
        assert [storage(x) == storage(got) for x in inputs] == [
            storage(x) == storage(want) for x in eager_inputs
        ]
    for got, want in zip(inputs, eager_inputs, strict=True):
        assert torch.equal(got, want)


def bytegraph_recompiles(fn, make, backend) -> int:
    compiled = bytegraph.compile(lambda *args: fn(*args), backend=backend)
    for n in SIZES:
        (args, bases), (eager_args, eager_bases) = make(n), make(n)
        out = compiled(*args)
        expected = fn(*eager_args)
        assert_as_eager(out, expected, tensors(args) + bases, tensors(eager_args) + eager_bases)
    entries = bytegraph.cache_entries(compiled)
    assert all(entry.graphs for entry in entries), [entry.reason for entry in entries]
    return len(entries)


def torch_compile_recompiles(fn, make, backend) -> int | None:
    """torch.compile's graphs over the same calls; None where it fails."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(lambda *args: fn(*args), backend=backend)
    try:
        with untimed_guards(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n in SIZES:
                compiled(*make(n)[0])
        return counters["stats"]["unique_graphs"]
    except Exception:  # noqa: BLE001 (torch.compile's own failure: no count)
        return None
    finally:
        torch._dynamo.reset()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(PATTERNS))
def test_recompiles_no_more_than_torch_compile(name, backend):
    make, fn = PATTERNS[name]
    count = bytegraph_recompiles(fn, make, backend)
    theirs = torch_compile_recompiles(fn, make, backend)
    assert count <= (RECORDED.get(name, 2) if theirs is None else theirs), (count, theirs)


@pytest.mark.parametrize("name", ["view_and_base_write_view", "slice_and_base_write_slice"])
def test_views_of_one_tensor_under_inductor(name):
    make, fn = PATTERNS[name]
    assert bytegraph_recompiles(fn, make, "inductor") <= 2  # torch.compile's count: 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("shared_first", [False, True])
def test_inputs_sharing_a_storage_in_one_call_only(backend, shared_first):
    """One call passes two overlapping slices of one tensor, the other two tensors of their own,
    with equal sizes and strides: a write into the first is seen through the second only in the
    shared call (a graph traced on the other kind of call may not be reused)."""

    def fn(a, b):
        a.add_(1)
        return b * 2

    def shared():
        z = torch.zeros(4)
        return (z[:3], z[1:]), [z]

    def apart():
        return (torch.zeros(3), torch.zeros(3)), []

    compiled = bytegraph.compile(fn, backend=backend)
    for make in (shared, apart) if shared_first else (apart, shared):
        (args, bases), (eager_args, eager_bases) = make(), make()
        out = compiled(*args)
        assert_as_eager(out, fn(*eager_args), [*args, *bases], [*eager_args, *eager_bases])
