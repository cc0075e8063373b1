"""Reads at indices from another tensor (``embedding``, ``gather``): lowered to kernels whose loads
go through the loaded index, fused with the pointwise work around them, bounds-checked."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_embedding_plus_positions_is_one_kernel(triton_check, dtype):
    def fn(tokens, wte, wpe):
        positions = torch.arange(tokens.shape[1])
        return (F.embedding(tokens, wte) + F.embedding(positions, wpe)) * 2

    tokens = torch.randint(0, 11, (2, 7))
    runner = triton_check(
        fn, tokens, torch.randn(11, 6, dtype=dtype), torch.randn(7, 6, dtype=dtype), fallbacks=0
    )
    assert len(runner.kernels) == 1


def test_embedding_of_a_computed_weight_and_int32_indices_with_gradient(triton_check):
    def fn(tokens, weight):
        return (F.embedding(tokens, weight.tanh()) + 1,)

    triton_check(fn, torch.randint(0, 5, (3, 4), dtype=torch.int32), torch.randn(5, 3), grad=True)


def test_embedding_of_a_transposed_weight(triton_check):
    triton_check(
        lambda t, w: (F.embedding(t, w.t()),),
        torch.randint(0, 4, (5,)),
        torch.randn(3, 4),
        fallbacks=0,
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_along_each_dim(triton_check, dim):
    x = torch.randn(4, 5)
    index = torch.randint(0, x.shape[dim], (3, 2) if dim == 0 else (4, 3))
    triton_check(lambda x, i: (torch.gather(x * 2, dim, i) + 1,), x, index, fallbacks=0)


def test_gather_then_reduce_and_log_softmax_pick(triton_check):
    def fn(logits, target):  # cross entropy's pick: log_softmax then gather along the classes
        return (-torch.gather(logits.log_softmax(-1), 1, target[:, None]).mean(),)

    # the backward scatters the gradient back with an atomic-add scatter kernel
    runner = triton_check(fn, torch.randn(6, 9), torch.randint(0, 9, (6,)), grad=True, fallbacks=0)
    assert "tl.atomic_add(" in runner.source


def test_out_of_range_index_never_reads_outside_the_weight(triton_compile):
    """Eager raises; the kernel asserts only in Triton's debug mode (``TRITON_DEBUG=1`` on a GPU:
    the interpreter ignores asserts) and otherwise masks the read: a bad row reads as zeros, never
    as memory outside the weight. Inductor behaves the same way."""
    runner = triton_compile(
        lambda t, w: (F.embedding(t, w) * 2,), torch.zeros(3, dtype=torch.long), torch.randn(4, 2)
    )
    weight = torch.randn(4, 2)
    for bad in ([0, 4, 1], [0, -1, 1]):
        (out,) = runner(torch.tensor(bad), weight)
        torch.testing.assert_close(out, torch.stack([weight[0], torch.zeros(2), weight[1]]) * 2)
    assert "tl.device_assert" in runner.kernels[0].source


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_advanced_indexing_with_negative_and_broadcast_indices(triton_check, dtype):
    x = torch.randn(5, 6, 7)
    rows = torch.tensor([[0, -1], [2, 4]], dtype=dtype)
    cols = torch.tensor([1, -2], dtype=dtype)
    triton_check(
        lambda x, r, c: (x[r] * 2, x[:, c] + 1, x[r, c], x[r, :, c]), x, rows, cols, fallbacks=0
    )


def test_advanced_indexing_gradient(triton_check):
    # the backward accumulates into rows 5 (three times, -1 included) with atomic adds
    triton_check(
        lambda x, i: ((x.sin()[i] * 3).sum(),),
        torch.randn(6, 3),
        torch.tensor([0, 5, 5, -1]),
        grad=True,
        fallbacks=0,
    )
