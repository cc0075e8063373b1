"""Everyday torch idioms of model code, compiled and compared with eager.

Each snippet is a small function as model code writes it (sizes and dtypes read into Python
control flow, the return types of torch's ops, dtype promotion with Python scalars, in-place ops on
views and slices, grad modes, autograd inside, random ops, ``torch.Size`` arithmetic), called three
times with identical arguments and then with changed ones (other shapes, dtypes, values): results,
exceptions, printed output, the arguments after the call and the grad mode are eager's
(``check_breaks``), the identical calls compile once, and the graphs and breaks are counted.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from difftest import check_breaks
from torch import nn
from torch.utils import checkpoint

R = torch.randn

#: name -> (fn, argument makers (the first called three times, then each other once), graphs
#: and breaks after the identical calls, the same in all)
SNIPPETS: dict[str, tuple] = {}


def snippet(*makers, graphs: tuple[int, int], breaks: tuple[int, int] = (0, 0)):
    def register(fn):
        SNIPPETS[fn.__name__] = (fn, makers, graphs, breaks)
        return fn

    return register


# -- sizes, dtypes and devices read into Python --------------------------------------------------


@snippet(lambda: (R(2, 8),), lambda: (R(3, 6),), lambda: (R(2, 10).double(),), graphs=(1, 3))
def half_of_the_last_dim(t):
    h = t.shape[-1] // 2
    return t[..., :h] * 2, t[..., h:], h


@snippet(lambda: (R(4, 3),), lambda: (R(5, 3),), lambda: (R(2, 3, 4),), graphs=(1, 3))
def size_dim_numel_in_branches(t):
    n = t.size(0)
    if t.dim() == 2 and t.numel() > 10:
        return t.sum(0) / n, t.ndim
    return t * n, t.ndim


@snippet(lambda: (R(3),), lambda: (torch.arange(3),), lambda: (R(3).half(),), graphs=(1, 3))
def dtype_tests_in_branches(t):
    if t.is_floating_point():
        if t.dtype == torch.float16:
            return t.float() + 1
        return t * 0.5
    return t // 2


@snippet(lambda: (R(3),), lambda: (R(3).double(),), graphs=(1, 2))
def device_type_read(t):
    if t.device.type == "cpu":
        return t + 1, t.device.type, str(t.device), t.device == torch.device("cpu")
    return t


@snippet(lambda: (torch.tensor([0.5, 0.2]),), lambda: (torch.tensor([-0.5, 0.2]),), graphs=(1, 1))
def item_in_an_if(t):
    if t.sum().item() > 0:
        return t * 2
    return t - 1


@snippet(lambda: (torch.tensor([0.0, 1.0]),), lambda: (torch.zeros(2),), graphs=(1, 1))
def bool_of_any(t):
    if bool(t.any()):
        return t + 1
    return t - 1


@snippet(lambda: (R(4, 2),), lambda: (R(6, 2),), graphs=(1, 2))
def len_of_a_tensor(t):
    return t[: len(t) // 2] * len(t)


@snippet(lambda: (R(2, 5, 8),), lambda: (R(2, 7, 8),), lambda: (R(3, 9, 8),), graphs=(1, 3))
def attention_heads_from_sizes(x):
    B, T, C = x.size()
    q = x.view(B, T, 2, C // 2).transpose(1, 2)
    att = (q @ q.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    return att.softmax(-1), q.shape[-1] ** -0.5


@snippet(lambda: (R(2, 5),), lambda: (R(2, 11),), lambda: (R(2, 16),), graphs=(1, 3))
def pad_to_a_multiple_of_eight(x):
    pad = (8 - x.shape[-1] % 8) % 8
    if pad > 0:
        x = F.pad(x, (0, pad))
    return x, pad


# -- return types of torch ops ---------------------------------------------------------------------


@snippet(lambda: (R(3, 4),), lambda: (R(2, 5),), graphs=(1, 2))
def named_tuples_of_reductions(t):
    r = torch.max(t, dim=1)
    v, i = t.min(dim=-1, keepdim=True)
    s = torch.sort(t, descending=True)
    k = t.topk(2)
    return r.values, r.indices, r[0], type(r), v, i, s.indices, k.values, type(k)


@snippet(
    lambda: (torch.tensor([1, 2, 2, 3, 3, 3]),), lambda: (torch.tensor([5, 5, 1]),), graphs=(1, 2)
)
def unique_with_counts(t):
    u, c = torch.unique(t, return_counts=True)
    return u, c, c.max()


@snippet(lambda: (R(6, 2),), lambda: (R(7, 2),), graphs=(1, 2))
def split_chunk_unbind(t):
    a = torch.split(t, 2)
    b = t.chunk(3, dim=0)
    rows = t.unbind(0)
    return len(a), len(b), [x.sum() for x in a], type(a), type(b), type(rows), torch.stack(rows)


# -- dtype promotion -----------------------------------------------------------------------------


@snippet(lambda: (torch.arange(4),), lambda: (torch.arange(4, dtype=torch.int32),), graphs=(1, 2))
def int_and_bool_tensors_with_python_numbers(t):
    return t * 1.5, t * 2, t / 2, t + True, (t > 1) + (t > 2), (t > 1) * 3


@snippet(lambda: (R(3).half(),), lambda: (R(3).bfloat16(),), graphs=(1, 2))
def half_with_python_floats_and_zero_dim_tensors(t):
    return t * 1e-3, t + torch.tensor(2.0), t + torch.tensor(2.0).double(), t * torch.tensor(3)


@snippet(
    lambda: (torch.tensor([-7, 7, -3, 3]),),
    lambda: (torch.tensor([-7.5, 7.5, -1.0, 0.5]),),
    graphs=(1, 2),
)
def division_and_modulo_of_negatives(t):
    return (
        t // 2,
        t % 3,
        t % -3,
        torch.div(t, 2, rounding_mode="floor"),
        torch.div(t, 2, rounding_mode="trunc"),
        torch.fmod(t, 3),
        5 // t,
        -5 % t,
        2 // t.clamp(min=1),
    )


@snippet(
    lambda: (torch.tensor([250, 3], dtype=torch.uint8),),
    lambda: (torch.tensor([127, -128], dtype=torch.int8),),
    graphs=(1, 2),
)
def small_int_overflow(t):
    return t + 10, t * 2, t - 200, t // 3, t.sum(), (t + 1.5).dtype


# -- out=, in-place ops on views and slices --------------------------------------------------------


@snippet(lambda: (R(3),), graphs=(1, 1))
def out_aliasing_its_input(x):
    torch.add(x, 1, out=x)
    torch.mul(x, x, out=x)
    return x


@snippet(lambda: (R(3, 4),), lambda: (R(2, 4),), graphs=(1, 2))
def in_place_on_slices(x):
    x[:, 0] += 1
    x[0] *= 2
    x[x < 0] = 0
    return x.sum()


@snippet(lambda: (torch.zeros(3, 4),), lambda: (torch.ones(3, 4),), graphs=(1, 1))
def index_put_scatter_masked_fill(x):
    idx = torch.tensor([[0, 1], [2, 3], [1, 1]])
    x.scatter_(1, idx, 5.0)
    x.index_put_((torch.tensor([0, 2]),), torch.tensor(1.0), accumulate=True)
    v = x[1:]
    v.masked_fill_(v > 4, -1.0)
    return x, v


@snippet(lambda: (R(3, requires_grad=True),), graphs=(1, 1))
def data_and_detach_then_in_place(p):
    p.data.mul_(0.5)
    d = p.detach()
    d.add_(1)
    return p * 2, d, d.requires_grad


# -- grad modes and autograd inside ----------------------------------------------------------------


@torch.no_grad()
def _doubled_without_grad(x):
    return x * 2, torch.is_grad_enabled()


@snippet(lambda: (R(3, requires_grad=True),), graphs=(1, 1))
def grad_modes_nested(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
    c, enabled = _doubled_without_grad(x)
    return a, b, c, enabled, torch.is_grad_enabled()


@snippet(
    lambda: (R(3, 3, requires_grad=True), R(3, requires_grad=True), R(3, 3)),
    lambda: (R(4, 3, requires_grad=True), R(4, requires_grad=True), R(3, 3)),
    graphs=(1, 2),
)
def weights_set_in_place_under_no_grad(w, b, v):
    with torch.no_grad():
        w.copy_(v[:1].expand_as(w))
        b.zero_()
        w[0].fill_(1.0)
        w[1:].mul_(0.5)
    y = F.linear(v, w, b)
    gw, gb = torch.autograd.grad(y.sum(), (w, b))
    return y, gw, gb


@snippet(lambda: (R(3, requires_grad=True),), graphs=(1, 1))
def autograd_grad_inside(x):
    (g,) = torch.autograd.grad((x**2).sum(), x, create_graph=True)
    return g, g.requires_grad


@snippet(lambda: (R(3, requires_grad=True),), graphs=(2, 2), breaks=(1, 1))
def backward_inside_accumulates_into_the_leaf(x):
    y = (x * 3).sum()
    y.backward()
    return y.detach(), x.grad.clone()


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * k, 7

    @staticmethod
    def backward(ctx, g, _):
        (x,) = ctx.saved_tensors
        return (2 * x * ctx.k * g if ctx.needs_input_grad[0] else None), None


@snippet(lambda: (R(3, requires_grad=True),), lambda: (R(4, requires_grad=True),), graphs=(1, 2))
def autograd_function_with_a_python_output(x):
    y, n = _Square.apply(x, 3.0)
    (g,) = torch.autograd.grad(y.sum(), x)
    return y + n, n, g


@snippet(lambda: (R(2, 3, requires_grad=True), R(3, 3, requires_grad=True)), graphs=(1, 1))
def non_reentrant_checkpoint(x, w):
    y = checkpoint.checkpoint(lambda a, b: torch.relu(a @ b) * 2, x, w, use_reentrant=False)
    (gx,) = torch.autograd.grad(y.sum(), x)
    return y, gx


# -- random ops --------------------------------------------------------------------------------


@snippet(lambda: (R(5),), graphs=(1, 1))
def random_ops_on_the_global_generator(x):
    return (
        x + torch.randn(5),
        torch.randperm(5),
        torch.bernoulli(x.sigmoid()),
        x.clone().uniform_(-1, 1),
        F.dropout(x, 0.3, training=True),
        F.dropout(x, 0.3, training=False),
    )


# -- builders and functional ops ---------------------------------------------------------------


@snippet(lambda: (R(3, 4),), lambda: (R(5, 2),), graphs=(1, 2))
def tensors_from_python_numbers_and_shapes(x):
    return (
        torch.tensor([1, 2.5, 3]),
        torch.tensor(x.shape),
        torch.tensor([x.shape[0], x.shape[1] * 2]),
        torch.tensor(x.size(0) / 2),
        torch.full((2,), 3),
        torch.full((2, 3), 7, dtype=x.dtype),
        torch.arange(0.5, 2.0, 0.25),
    )


@snippet(lambda: (R(4),), lambda: (R(6),), lambda: (R(8),), graphs=(1, 2))
def arange_to_a_float_computed_from_a_size(x):
    n = x.shape[0]
    return torch.arange(n * 1.5), torch.arange(0, n / 2, 0.5), torch.arange(end=n * 0.75), x * 2


@snippet(lambda: (R(2, 2, 4, 8),), lambda: (R(1, 2, 5, 8),), graphs=(1, 2))
def attention_with_masks(q):
    n = q.shape[-2]
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    additive = torch.zeros(n, n).masked_fill(~keep, float("-inf"))
    return (
        F.scaled_dot_product_attention(q, q, q, is_causal=True),
        F.scaled_dot_product_attention(q, q, q, attn_mask=keep),
        F.scaled_dot_product_attention(q, q, q, attn_mask=additive, scale=0.5),
        torch.einsum("bhij,bhjd->bhid", q @ q.transpose(-1, -2), q),
    )


@snippet(lambda: (R(1, 2, 5, 6),), lambda: (R(1, 2, 4, 4),), graphs=(1, 2))
def interpolate_and_negative_pads(x):
    return (
        F.interpolate(x, scale_factor=2, mode="nearest"),
        F.interpolate(x, size=(x.shape[-2] * 3, 7), mode="bilinear", align_corners=False),
        F.pad(x, (-1, -1, 1, 2)),
        torch.where(x > 0, x, 0.0),
        torch.where(x > 0, 1, -1),
    )


@snippet(lambda: (torch.randn(3, dtype=torch.complex64),), lambda: (R(3),), graphs=(1, 2))
def complex_numbers(z):
    w = z * (1 + 2j)
    return w, w.real, w.imag, w.abs(), w.conj(), w.angle()


@snippet(lambda: (nn.Parameter(R(3)),), graphs=(1, 1))
def parameter_arithmetic_gives_tensors(p):
    a = p * 2
    return a, type(a), type(p.detach()), isinstance(p + p, nn.Parameter), p.requires_grad


@snippet(
    lambda: (torch.tensor([2, -3, 4]),),
    lambda: (torch.tensor([2.0, -3.0, 0.5]),),
    lambda: (torch.tensor(3),),
    graphs=(1, 3),
)
def python_numbers_on_the_left(t):
    return 3 - t, 2 ** t.abs(), 1 / t, 7 % t, 2.5 ** t.abs(), t**0.5, abs(t), 10 - t * 2


@snippet(lambda: (torch.tensor([2, 3]),), graphs=(1, 1))
def int_tensor_to_a_negative_power_raises(t):
    return t**-1


@snippet(lambda: (R(3, requires_grad=True),), graphs=(0, 0), breaks=(1, 1))
def in_place_on_a_leaf_that_requires_grad_raises(x):
    x.add_(1)
    return x


@snippet(lambda: (R(4),), lambda: (R(4).double(),), graphs=(1, 2))
def return_types_of_statistics(x):
    a = torch.aminmax(x)
    b = torch.var_mean(x)
    e = torch.median(x.view(2, 2), dim=1)
    h = torch.cummax(x, 0)
    return a.min, a.max, type(a), b, type(b), e.values, e.indices, h.indices, len(a)


@snippet(lambda: (R(4, 4),), lambda: (R(4, 4).double(),), graphs=(1, 2))
def autocast_and_default_dtype_inside(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = F.linear(x, x)
        b = a.float().softmax(-1)
    torch.set_default_dtype(torch.float64)
    c = torch.ones(2) + torch.tensor([1.5])
    torch.set_default_dtype(torch.float32)
    return a, b, c, torch.is_autocast_enabled()


@snippet(lambda: (R(3), R(3)), lambda: (R(3), R(3)), graphs=(1, 1))
def ema_update_in_place_chain(ema, p):
    ema.mul_(0.9).add_(p.detach(), alpha=0.1)
    ema.lerp_(p, 0.5)
    ema.addcmul_(p, p, value=0.01).addcdiv_(p, p.abs() + 1, value=0.1)
    return ema


@snippet(
    lambda: (torch.randint(0, 10, (2, 5)),), lambda: (torch.randint(0, 10, (3, 4)),), graphs=(1, 2)
)
def embedding_with_padding_mask(ids):
    h = F.embedding(ids, torch.ones(10, 4).cumsum(0), padding_idx=0)
    mask = (ids != 0).unsqueeze(-1).to(h.dtype)
    pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    ext = (1.0 - mask.squeeze(-1)[:, None, None, :]) * torch.finfo(torch.float32).min
    return pooled, ext


# -- torch.Size ----------------------------------------------------------------------------------


@snippet(lambda: (R(2, 3, 4),), lambda: (R(2, 3, 5),), graphs=(1, 2))
def size_arithmetic_and_comparisons(x):
    s = x.shape
    return (
        s + (5,),
        s[:-1] + torch.Size([7]),
        (1,) + s,
        2 * s[1:],
        s == (2, 3, 4),
        s[1:] == torch.Size([3, 4]),
        s > (1,),
        s.numel(),
        x.view(*s[:-1], -1, 1).shape,
    )


@snippet(lambda: (torch.Size([2, 3]),), lambda: (torch.Size([4]),), graphs=(1, 2))
def size_given_as_an_argument(s):
    return s * 2, s[0:1], (1,) + s, s + (1,), (True,) + s, s.count(2), torch.zeros(s).shape == s


@snippet(lambda: (R(2, 3),), lambda: (R(3, 3),), graphs=(0, 1), breaks=(1, 2))
def size_refuses_a_str_item(x):
    return ("a", 2) + x.shape


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet_is_eager(name):
    fn, makers, graphs, breaks = SNIPPETS[name]
    compiled, counter, first = check_breaks(
        fn, None, calls=[makers[0]] * 3, graphs=graphs[0], breaks=breaks[0], setup=_seed
    )
    check_breaks(
        fn,
        None,
        calls=list(makers[1:]),
        graphs=graphs[1],
        breaks=breaks[1] - breaks[0],
        compiled=compiled,
        counter=counter,
        setup=_seed,
    )


def _seed():
    torch.manual_seed(0)
