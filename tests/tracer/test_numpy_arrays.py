"""NumPy arrays traced through ``torch._numpy`` (``tracer/variables/tensors.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.registry import lookup_backend
from difftest import check_breaks, compile_counted
from dynamo_baseline import dynamo_counts

import bytegraph


def test_numpy_functions_and_methods_are_one_graph():
    def fn(x):
        a = x.numpy()
        b = np.clip(a * 2, -1.0, 1.0).reshape(-1, 1)
        return torch.from_numpy(b.T @ b), np.sum(a), a.shape

    check_breaks(fn, lambda: (torch.randn(4),), graphs=1, breaks=0)


def test_array_shares_memory_with_its_tensor():
    def fn(x):
        a = x.numpy()
        a[1] = 5.0
        a *= 2
        return x

    check_breaks(fn, lambda: (torch.zeros(3),), graphs=1, breaks=0)


def test_numpy_scalar_results_leave_as_numpy_scalars():
    def fn(x):
        return np.mean(x.numpy()), np.max(x.numpy(), axis=0)

    compiled, _ = compile_counted(fn)
    x = torch.randn(3, 2)
    mean, rows = compiled(x)
    assert type(mean) is np.float32 and type(rows) is np.ndarray
    np.testing.assert_allclose(mean, fn(x)[0], rtol=1e-6)


def test_input_array_is_guarded_on_its_dtype():
    def fn(a):
        return np.sin(a) + 1

    compiled, counter = compile_counted(fn)
    for dtype in (np.float32, np.float32, np.float64):
        a = np.arange(3, dtype=dtype)
        out = compiled(a)
        assert out.dtype == fn(a).dtype
        np.testing.assert_allclose(out, fn(a), rtol=1e-6)
    assert counter.frame_count == 2


def test_numpy_of_a_tensor_requiring_grad_raises_as_eager():
    def fn(x):
        return x.numpy()

    check_breaks(fn, lambda: (torch.ones(2, requires_grad=True),), graphs=0, breaks=1)


# -- arrays stacked by ``np.array([...])`` and changed in place by NumPy functions ----------------
# transformers' SpecAugment sampler (wav2vec2, HuBERT: ``_compute_mask_indices``) does both on
# arrays made in the trace. Before: a break at each (``np.array`` of arrays converted them through
# Python numbers, which fake tensors do not have; ``np.put_along_axis`` returns None and changes
# its argument, which was taken for an effect the graph does not carry).
def _stacked(x, a, b):
    pad = [np.concatenate([a, np.ones(2, dtype=a.dtype) * a[0]]), np.concatenate([b, b[:2]])]
    m = np.array(pad)
    return x + torch.from_numpy(m).float().sum(), m


def _stacked_mixed_dtypes(x, a, b):
    m = np.array([a, b.astype(np.float32)])  # int64 with float32: float64 in NumPy, not in torch
    return x + 1, m


def _put_along_axis_new_array(x):
    mask = np.zeros((2, 6), dtype=bool)
    idx = np.broadcast_to(np.arange(2)[None, :], (2, 2)) + np.array([[0], [3]])
    np.put_along_axis(mask, idx, 1, -1)
    return x + torch.from_numpy(mask).float(), mask


def _put_along_axis_input_array(x, mask):
    np.put_along_axis(mask, np.array([[1], [4]]), 1, -1)  # the caller sees its array change
    return x * 2


def _arrays():
    return torch.zeros(2, 6), np.array([3, 1, 4]), np.array([2, 0, 5])


@pytest.mark.parametrize(
    ("fn", "make_args", "graphs", "breaks"),
    [
        (_stacked, _arrays, 1, 0),
        # NumPy's promotion (torch.compile 2.13 returns float32 here: a wrong dtype)
        (_stacked_mixed_dtypes, _arrays, 1, 0),
        (_put_along_axis_new_array, lambda: (torch.zeros(2, 6),), 1, 0),
        (_put_along_axis_input_array, lambda: (torch.ones(2), np.zeros((2, 6), dtype=bool)), 1, 0),
    ],
)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_arrays_stacked_and_changed_in_place(fn, make_args, graphs, breaks, backend):
    counter = CompileCounter(lookup_backend(backend))
    compiled = bytegraph.compile(fn, backend=counter)
    check_breaks(fn, make_args, graphs=graphs, breaks=breaks, compiled=compiled, counter=counter)
    tc_graphs, tc_breaks = dynamo_counts(fn, *make_args())
    assert breaks <= max(tc_breaks, 0) or tc_graphs == 0, (tc_graphs, tc_breaks)


# -- tensors made from arrays with a dtype or device (wav2vec2: ``torch.tensor(mask_time_indices,
# device=hidden_states.device, dtype=torch.bool)`` of the sampler's array). ``torch.tensor``
# copies; ``torch.as_tensor`` shares the array's memory where dtype and device match: the
# functions write into the result, and the check compares the caller's arrays after each call.
def _tensor_of_array_with_dtype(x, mask, a):
    m = torch.tensor(mask, device=x.device, dtype=torch.bool)
    c = torch.tensor(a, dtype=torch.float32)
    c += 1  # a copy: ``a`` unchanged
    return x.masked_fill(m, 0.0) + c.sum()


def _as_tensor_of_array_with_dtype(x, a):
    same = torch.as_tensor(a, dtype=torch.float64, device="cpu")
    same[0] = 7.0  # the array's memory
    other = torch.as_tensor(a, dtype=torch.float32)
    other[1] = 9.0  # a copy
    return x + other.sum()


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_tensor_of_array_with_dtype, lambda: (torch.ones(2, 3), np.eye(2, 3) > 0, np.ones(4))),
        (_as_tensor_of_array_with_dtype, lambda: (torch.ones(2), np.arange(3.0))),
    ],
)
def test_tensor_from_array_with_dtype_and_device_is_one_graph(fn, make_args):
    check_breaks(fn, make_args, graphs=1, breaks=0)
