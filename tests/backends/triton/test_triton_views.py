"""Views and data movement: permute, expand, reshape, slice, select, cat, pad, scatters."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def test_permute_and_transpose_outputs(triton_check):
    triton_check(
        lambda x: ((x * 2).permute(2, 0, 1), (x + 1).transpose(0, 1) * 3), torch.randn(3, 4, 5)
    )


def test_reshape_of_non_contiguous_value(triton_check):
    triton_check(
        lambda x: ((x.t() + 1).reshape(-1) * 2, (x * 2).t().reshape(4, 6)), torch.randn(6, 4)
    )


def test_view_of_input_with_flatten(triton_check):
    triton_check(lambda x: (torch.flatten(x, 1).sin(), x.view(-1, 3).cos()), torch.randn(2, 3, 3))


def test_slices_select_and_squeeze(triton_check):
    def fn(x):
        return x[1:, ::2] * 2, x[:, 3] + 1, x[-1].unsqueeze(0).exp(), x[None, :, :1].squeeze(-1)

    triton_check(fn, torch.randn(5, 7))


def test_expand_and_broadcast(triton_check):
    triton_check(
        lambda x, y: (x.expand(4, 3, 5) + y, y.expand(3, 5) * 2),
        torch.randn(3, 1),
        torch.randn(1, 5),
    )


def test_cat_of_computed_and_input_tensors(triton_check):
    triton_check(
        lambda x, y: (torch.cat([x * 2, y, x.relu()], dim=1),), torch.randn(3, 4), torch.randn(3, 2)
    )
    triton_check(lambda x, y: (torch.cat([x, y.sin()], 0),), torch.randn(2, 5), torch.randn(3, 5))


def test_constant_pad(triton_check):
    triton_check(
        lambda x: (F.pad(x, (1, 2)) + 1, F.pad(x, (0, 1, 2, 0), value=-3.0)), torch.randn(3, 4)
    )


def test_gradients_through_views_slices_and_cat(triton_check):
    def fn(x, y):
        z = torch.cat([x[:, 1:] * y, x[:, :1]], dim=1)
        return (z.t().reshape(-1)[2:9] * 3, x[2].sum() * y)

    triton_check(fn, torch.randn(4, 5), torch.randn(4, 4), grad=True)


def test_as_strided_input_layouts(triton_check):
    storage = torch.randn(40)
    x = storage.as_strided((3, 4), (1, 5), 2)
    triton_check(lambda x: (x * x + 1, x.sum(0)), x)
