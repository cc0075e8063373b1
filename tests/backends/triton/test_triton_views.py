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


def test_view_strides_agree_with_torch_view():
    """``view_strides`` gives the strides ``Tensor.view`` gives, and None where it refuses, over
    random layouts (permuted, sliced, expanded) and random regroupings of their sizes."""
    import random

    import sympy
    from bytegraph.backends.triton.lower_views import view_strides

    rng = random.Random(0)
    checked = refused = 0
    for _ in range(400):
        shape = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 4))]
        t = torch.empty(shape)
        if rng.random() < 0.5:
            t = t.permute(*rng.sample(range(t.dim()), t.dim()))
        if rng.random() < 0.3:
            d = rng.randrange(t.dim())
            t = t.narrow(d, 0, max(1, t.size(d) // 2))
        if rng.random() < 0.2:
            t = t.unsqueeze(0).expand(2, *t.shape)
        flat = [f for n in t.shape for f in ([n] if n < 4 or rng.random() < 0.5 else [2, n // 2])]
        new = flat if t.numel() == torch.Size(flat).numel() else [t.numel()]
        if rng.random() < 0.5 and len(new) > 1:  # merge two neighbours
            i = rng.randrange(len(new) - 1)
            new = new[:i] + [new[i] * new[i + 1]] + new[i + 2 :]
        ours = view_strides(*([sympy.Integer(n) for n in v] for v in (t.shape, t.stride(), new)))
        try:
            expected = t.view(new).stride()
        except RuntimeError:
            refused += 1
            assert ours is None, (t.shape, t.stride(), new)
            continue
        checked += 1
        assert ours is not None, (t.shape, t.stride(), new)
        sizes = t.view(new).shape
        assert all(n == 1 or int(a) == b for n, a, b in zip(sizes, ours, expected, strict=True))
    assert checked > 100 and refused > 20


def test_attention_reads_its_heads_where_the_projection_wrote_them(triton_check):
    """q, k and v: column slices of one projection's output split into heads, passed to
    attention as strided views, with no kernel copying them."""

    def fn(x, w):
        b, t, c = x.shape
        q, k, v = (x @ w).split(c, -1)
        q, k, v = (z.view(b, t, 2, c // 2).transpose(1, 2) for z in (q, k, v))
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True),)

    runner = triton_check(fn, torch.randn(2, 5, 8), torch.randn(8, 24), fallbacks=0)
    assert runner.kernels == []
