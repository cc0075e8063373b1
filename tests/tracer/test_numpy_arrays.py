"""NumPy arrays traced through ``torch._numpy`` (``tracer/variables/tensors/numpy_arrays.py``)."""

from __future__ import annotations

import numpy as np
import torch
from difftest import check_breaks, compile_counted


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
