"""Reductions vs eager: persistent and looped, any dim, fp32/fp16/bf16/int/bool, NaN, grads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from bytegraph.backends.triton import config

REDUCTIONS = {
    "sum": lambda x, d: x.sum(d),
    "sum_keep": lambda x, d: x.sum(d, keepdim=True),
    "prod": lambda x, d: x.prod(d),
    "mean": lambda x, d: x.mean(d),
    "amax": lambda x, d: x.amax(d),
    "amin": lambda x, d: x.amin(d, keepdim=True),
    "max_dim": lambda x, d: (x.max(d)[0], x.max(d)[1]),
    "min_dim": lambda x, d: x.min(d)[0],
    "argmax": lambda x, d: x.argmax(d),
    "argmin": lambda x, d: x.argmin(d, keepdim=True),
    "var": lambda x, d: x.var(d),
    "std": lambda x, d: x.std(d, correction=0),
    "softmax": lambda x, d: torch.softmax(x, d),
    "log_softmax": lambda x, d: torch.log_softmax(x, d),
    "logsumexp": lambda x, d: torch.logsumexp(x, d),
}


@pytest.fixture(params=["persistent", "looped"])
def reduction_mode(request, monkeypatch):
    if request.param == "looped":
        monkeypatch.setattr(config, "persistent_reduction_max", 4)
        monkeypatch.setattr(config, "looped_rblock", 4)
    return request.param


@pytest.fixture
def split_everything(monkeypatch):
    """Split every reduction whose length has a power-of-two factor of at least 4."""
    monkeypatch.setattr(config, "split_reduction_rows", 1 << 30)
    monkeypatch.setattr(config, "split_reduction_min_chunk", 4)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", [0, -1, (0, 1)])
def test_split_reduction_matches_eager(name, dim, split_everything, triton_check):
    one_dim = ("max_dim", "min_dim", "argmax", "argmin", "prod", "softmax", "log_softmax")
    if dim == (0, 1) and name in one_dim:
        pytest.skip("takes one dim")
    x = torch.randn(16, 24)
    x[3, 5] = float("nan") if name in ("amax", "amin", "max_dim", "min_dim") else x[3, 5]
    runner = triton_check(lambda x: REDUCTIONS[name](x, dim), x, fallbacks=0)
    if name in ("sum", "amax", "mean"):  # partial results, then their reduction
        assert len(runner.kernels) == 2


def test_split_low_precision_int_and_bool_reductions(split_everything, triton_check):
    x = torch.randn(32, 8) * 3
    triton_check(
        lambda x, b, h: (
            b.sum(0),
            h.mean(),
            (x * 10).int().sum(0),
            (x > 4).any(),
            (x > -9).all(0),
            x.amin(),
            (x * 0.1).prod(0),
        ),
        x,
        x.bfloat16(),
        x.half(),
    )


def test_long_column_and_full_reductions_split_by_default(triton_check):
    x = torch.randn(4096, 8)
    runner = triton_check(lambda x: (x.sum(0), x.sum(), x.amax(-1)), x)
    shapes = [(k.kernel.numel, k.kernel.rnumel) for k in runner.kernels]
    assert len(shapes) == 5  # two each for the sums, one for amax
    assert (8 * 16, 256) in shapes  # the column sum's 16 partial sums per column
    assert (32, 1024) in shapes  # the full sum's 32 partial sums
    assert (4096, 8) in shapes  # a row reduction with many results is not split


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", [0, -1])
def test_reduction_matches_eager(name, dim, reduction_mode, triton_check):
    fn = REDUCTIONS[name]
    runner = triton_check(lambda x: fn(x, dim), torch.randn(6, 11), fallbacks=0)
    assert runner.kernels


@pytest.mark.parametrize("dims", [(1,), (0, 2), None])
def test_sum_over_several_dims_of_3d(dims, reduction_mode, triton_check):
    triton_check(lambda x: (x.sum(dims) if dims else x.sum(),), torch.randn(3, 5, 7))


def test_full_reductions(reduction_mode, triton_check):
    triton_check(
        lambda x: (x.sum(), x.max(), x.min(), x.argmax(), x.mean(), x.std()), torch.randn(5, 9)
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_reductions_accumulate_in_fp32(dtype, reduction_mode, triton_check):
    x = (torch.randn(4, 37) * 3).to(dtype)
    triton_check(lambda x: (x.sum(-1), torch.softmax(x, -1), x.amax(0), x.mean(-1)), x)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
def test_integer_and_bool_reductions(dtype, triton_check):
    x = torch.randint(-5, 5, (5, 6)).to(dtype)
    if dtype == torch.bool:
        triton_check(lambda x: (x.sum(-1), x.amax(0), x.any(-1), x.all(0)), x)
    else:
        triton_check(lambda x: (x.sum(-1), x.amax(0), x.argmax(-1), x.any(-1)), x)


def test_nan_propagates_like_eager(reduction_mode, triton_check):
    x = torch.randn(4, 9)
    x[1, 3] = float("nan")
    x[2, 0] = float("nan")
    x[2, 5] = float("nan")
    triton_check(lambda x: (x.amax(-1), x.amin(-1), x.argmax(-1), x.argmin(-1), x.sum(-1)), x)


def test_argmax_picks_first_of_ties(reduction_mode, triton_check):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    triton_check(lambda x: (x.argmax(-1), x.argmin(-1)), x)


def test_reduction_of_transposed_and_sliced_inputs(reduction_mode, triton_check):
    base = torch.randn(10, 7)
    triton_check(lambda x: (x.sum(-1), torch.softmax(x, -1)), base.t())
    triton_check(lambda x: (x.amax(0), x.var(-1)), base[::2, 1:6])


def test_size_one_reduction_dim(triton_check):
    triton_check(lambda x: (x.sum(1), x.argmax(1), torch.softmax(x, 1)), torch.randn(5, 1, 3))


def test_norms_forward_and_backward(reduction_mode, triton_check):
    def fn(x, w, b):
        ln = F.layer_norm(x, (9,), w, b)
        rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return ln, rms, torch.log_softmax(x, 0)

    triton_check(fn, torch.randn(6, 9), torch.randn(9), torch.randn(9), grad=True)


def test_batch_norm_training_forward_and_backward(triton_check):
    def fn(x, w, b):
        return (F.batch_norm(x, None, None, w, b, training=True) * 2,)

    triton_check(fn, torch.randn(2, 3, 4, 5), torch.randn(3), torch.randn(3), grad=True)


def test_column_reductions_get_tall_short_blocks(triton_check, monkeypatch):
    """A looped reduction whose loads step along rows (a column sum's partial sums) is launched
    with many rows per program and a short step along them, so its loads are coalesced; a row
    reduction keeps long row chunks, and few rows per program while rows are few."""
    from bytegraph.backends.triton.launch import block_sizes

    monkeypatch.setattr(config, "persistent_reduction_max", 64)
    x = torch.randint(-8, 8, (8192, 64)).float()  # sums exact in any order
    runner = triton_check(lambda x, y: (x.sum(0), y.sum(-1)), x, x.t().contiguous())
    looped = [k.kernel for k in runner.kernels if not k.kernel.persistent]
    assert {k.outer for k in looped} == {True, False}
    for kernel in looped:
        sizes = block_sizes(kernel)
        # 512 rows (the split's partial sums) over at least 264 programs: one row each
        assert (sizes["XBLOCK"], sizes["RBLOCK"]) == ((64, 8) if kernel.outer else (1, 256))


def long_rows(dtype: torch.dtype) -> torch.Tensor:
    """Rows of 45 with what softmax must survive: -inf entries, a row of -inf, NaN, +inf, and a
    large spread (the running max grows chunk by chunk in some rows and stays in others)."""
    x = torch.randn(7, 45) * 4
    x[0, ::3] = float("-inf")
    x[1] = float("-inf")
    x[2, 17] = float("nan")
    x[3, 30] = float("inf")
    x[4] = torch.linspace(-50, 50, 45)  # ascending: a new max in every chunk
    x[5] = torch.linspace(50, -50, 45)  # descending: the first chunk holds it
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_long_row_softmax_reads_each_row_twice_and_writes_once(
    log, dtype, split_everything, triton_check, monkeypatch
):
    """One kernel: the row max and the online sum of exp(x - max) in one loop, the result in a
    second; no buffer between kernels, even where reductions are split."""
    monkeypatch.setattr(config, "persistent_reduction_max", 8)
    monkeypatch.setattr(config, "looped_rblock", 8)
    fn = torch.log_softmax if log else torch.softmax
    runner = triton_check(lambda x: (fn(x, -1),), long_rows(dtype), fallbacks=0)
    (kernel,) = runner.kernels
    assert kernel.source.count("for roffset in range(0, rnumel, RBLOCK):") == 2
    assert kernel.source.count("tl.load(") == 2 and kernel.source.count("tl.store(") == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_persistent_softmax_with_infinities_and_nan(dtype, triton_check):
    runner = triton_check(
        lambda x: (torch.softmax(x, -1), torch.log_softmax(x, 1)), long_rows(dtype), fallbacks=0
    )
    assert len(runner.kernels) == 1


def test_softmax_of_one_element_rows_and_a_scalar(triton_check):
    x = torch.tensor([[1.0], [float("inf")], [float("-inf")], [float("nan")]])
    triton_check(
        lambda x, s: (torch.softmax(x, -1), torch.log_softmax(x, 1), torch.softmax(s, 0)),
        x,
        torch.tensor(3.0),
    )


def test_softmax_backward_through_the_one_pass_forward(triton_check, monkeypatch):
    monkeypatch.setattr(config, "persistent_reduction_max", 8)
    monkeypatch.setattr(config, "looped_rblock", 8)
    x = torch.randn(5, 37)
    triton_check(lambda x: (torch.softmax(x * 2, -1), torch.log_softmax(x, 0)), x, grad=True)
