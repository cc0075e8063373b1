"""Numbers computed from tensor data (``t.item()``, ``int(t)``, ``float(t)``, tensor slice bounds)
are unbacked symbolic numbers inside the graph: one graph for any value, the same results, errors
and mutations as eager; what needs the value while tracing is a clean graph break."""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted

import bytegraph


def _kv_write(cache, k, start, end):
    cache[:, start:end] = k
    return cache.sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_kv_cache_write_with_tensor_bounds_is_one_graph(backend):
    compiled, counter = compile_counted(_kv_write)
    if backend != "eager":
        compiled = bytegraph.compile(_kv_write, backend=backend)
    for start, end in [(2, 5), (0, 3), (7, 10), (-3, 10), (-13, 3), (7, 20)]:  # 3 rows each
        k = torch.randn(2, len(range(10)[start:end]), 4)
        cache, expected_cache = torch.zeros(2, 10, 4), torch.zeros(2, 10, 4)
        bounds = torch.tensor(start), torch.tensor(end)
        out = compiled(cache, k, *bounds)
        expected = _kv_write(expected_cache, k, *bounds)
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(cache, expected_cache)
    if backend == "eager":
        assert counter.frame_count == 1
        assert len(bytegraph.cache_entries(compiled)) == 1


def test_kv_cache_write_of_the_wrong_length_raises_like_eager():
    """Eager raises (the slice has 2 rows, ``k`` 3); so does the graph, before writing anything.
    The message is the graph's runtime check of the shape it assumed, not eager's own."""
    compiled = bytegraph.compile(_kv_write)
    k = torch.randn(2, 3, 4)
    compiled(torch.zeros(2, 10, 4), k, torch.tensor(0), torch.tensor(3))  # traced on a valid call
    for fn in (_kv_write, compiled):
        cache = torch.zeros(2, 10, 4)
        with pytest.raises(RuntimeError):
            fn(cache, k, torch.tensor(0), torch.tensor(2))
        assert not cache.any()


def test_slice_read_with_tensor_bounds():
    def fn(x, start, end):
        return x[:, start:end] * 2

    check_breaks(
        fn,
        lambda: (torch.randn(3, 8), torch.tensor(1), torch.tensor(6)),
        graphs=1,
        breaks=0,
        calls=[
            lambda: (torch.randn(3, 8), torch.tensor(1), torch.tensor(6)),
            lambda: (torch.randn(3, 8), torch.tensor(-2), torch.tensor(100)),
            lambda: (torch.randn(3, 8), torch.tensor(5), torch.tensor(2)),
        ],
    )


def test_item_int_and_float_conversions():
    def fn(x, t, f):
        a = t.item()
        b = int(f)  # truncates a float tensor
        c = float(t)
        return x * a + b - c, a, b, c

    make = [
        lambda: (torch.randn(3), torch.tensor(4), torch.tensor(-2.7)),
        lambda: (torch.randn(3), torch.tensor(-1), torch.tensor(3.9)),
    ]
    check_breaks(fn, make[0], graphs=1, breaks=0, calls=make)


def test_narrow_with_an_unbacked_length():
    def fn(x, n):
        return x.narrow(0, 1, n.item()).sum()

    make = [lambda k=k: (torch.arange(10.0), torch.tensor(k)) for k in (3, 5, 9)]
    check_breaks(fn, make[0], graphs=1, breaks=0, calls=make)


@bytegraph.config.patch(speculate=False)  # the break at the branch is under test
def test_branch_on_an_unbacked_value_breaks_cleanly():
    def fn(x, t):
        v = t.item()
        if v > 0:
            return x + 1
        return x - 1

    make = [lambda k=k: (torch.randn(3), torch.tensor(k)) for k in (2, -2)]
    # one graph before the branch and one in the resume function of each side
    _, _, report = check_breaks(fn, make[0], graphs=3, breaks=1, calls=make)
    assert report.break_reasons[0].kind == "data_dependent"


def test_range_of_an_unbacked_value_breaks_cleanly():
    def fn(x, t):
        out = x
        for i in range(t.item()):
            out = out + i
        return out

    _, _, report = check_breaks(fn, lambda: (torch.randn(3), torch.tensor(3)), graphs=2, breaks=1)
    assert not report.break_reasons[0].fell_back


def test_unbacked_value_lives_across_a_break():
    def fn(x, t):
        v = t.item() * 2
        bytegraph.graph_break()
        return x + v, v

    check_breaks(fn, lambda: (torch.randn(3), torch.tensor(3)), graphs=2, breaks=1)


def test_item_of_many_elements_raises_like_eager():
    def fn(x):
        return x.item()

    compiled = bytegraph.compile(fn)
    for f in (fn, compiled):
        with pytest.raises(RuntimeError):
            f(torch.randn(3))


def test_slice_object_with_tensor_bounds_lives_across_a_break():
    def fn(x, start, end):
        window = slice(start, end)
        bytegraph.graph_break()
        return x[window] * 2

    make = [
        lambda a=a, b=b: (torch.randn(8), torch.tensor(a), torch.tensor(b))
        for a, b in [(1, 5), (2, 6), (-3, 8)]
    ]
    check_breaks(fn, make[0], graphs=1, breaks=1, calls=make)  # nothing to compute before


def _masked_read(x, v):
    return x[x > 0] * 2


def _masked_add(x, v):
    y = x.clone()
    y[y < 0] += 1
    return y


def _nonzero_count(x, v):
    idx = torch.nonzero(x > 0)
    return idx, idx.shape[0] + x


def _masked_write_backward(x, v):
    h = x * 2
    h[x[:, 0] > 0] = v
    return (h * 3).sum()


@pytest.mark.parametrize(
    "fn",
    [_masked_read, _masked_add, _nonzero_count, _masked_write_backward],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("backend", ["aot_eager", "triton"])
def test_sizes_from_data_compile_with_aot_autograd(fn, backend):
    """A boolean-mask read or write, ``nonzero``: a size read from data, in the forward or in the
    backward AOTAutograd derives. The graph (one, as with the eager backend) compiles with
    ``aot_eager`` and ``triton`` as it does with Inductor: AOTAutograd's fakes of the real inputs
    have no symbols, so the compile is made again in the trace's fake mode (it ran in Python).
    The triton backend runs a graph holding such a size with torch (its lowering binds none)."""
    bytegraph.reset()
    compiled = bytegraph.compile(fn, backend=backend)
    torch.manual_seed(0)
    for _ in range(2):
        x, v = torch.randn(4, 3, requires_grad=True), torch.randn(3, requires_grad=True)
        ex, ev = (t.detach().clone().requires_grad_() for t in (x, v))
        got, want = compiled(x, v), fn(ex, ev)
        assert_same(got, want)
        if fn is _masked_write_backward:
            got.backward()
            want.backward()
            assert_same((x.grad, v.grad), (ex.grad, ev.grad))
    assert bytegraph.stats() == {"frames": 1}
