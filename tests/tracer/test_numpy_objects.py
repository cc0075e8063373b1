"""NumPy value objects made in the compiled function: ``np.iinfo``, ``np.finfo``,
``np.dtype(...)`` are immutable, folded on constant arguments as torch.compile folds them;
``np.ones_like``/``np.full_like`` with a dtype on an array of a tensor."""

from __future__ import annotations

import numpy as np
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks, dynamo_counts


def check(fn, *args, baseline_missing=""):
    check_breaks(fn, lambda: args, graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, *args, baseline_missing=baseline_missing)


def _limits(x):
    big = np.iinfo(np.int32).max
    eps = np.finfo(np.float32).eps
    tiny = np.finfo(x.numpy().dtype).tiny
    dt = np.dtype("float")
    return x * big + eps + tiny, dt.itemsize, dt == np.float64, str(np.dtype("int16")), eps


def test_iinfo_finfo_and_dtype():
    check(
        _limits,
        torch.randn(3),
        baseline_missing="torch.compile runs the call in Python: an ndarray attribute",
    )


def _like(x):
    a = np.ones_like(x.numpy(), dtype=np.float64)
    dt = np.dtype("float32")
    b = np.full_like(x.numpy(), 2.4, dtype=dt)
    return torch.from_numpy(a) + torch.from_numpy(b), a.dtype == np.float64


def test_ones_like_and_full_like_with_a_dtype():
    check(_like, torch.randn(3))
    assert dynamo_counts(_like, torch.randn(3)) == (1, 0)


def _bad_dtype(x):
    return x + np.dtype("no such type").itemsize


def test_an_invalid_dtype_raises_like_numpy():
    check_breaks(_bad_dtype, lambda: (torch.randn(3),), graphs=0, breaks=1)
