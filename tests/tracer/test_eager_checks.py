"""Calls eager refuses but fake kernels accept break instead of entering a graph (fuzz seed
611524909: a graph raising at run time lost a dict store made before the failing op)."""

from __future__ import annotations

import pytest
import torch
from bytegraph.backends.debug import CompileCounter

import bytegraph


def test_matmul_of_mixed_dtypes_raises_after_earlier_side_effects():
    def fn(x, d):
        d["m"] = 1
        y = x.to(torch.bfloat16) * 2
        return y @ x

    for f in (fn, bytegraph.compile(fn)):
        d = {}
        with pytest.raises(RuntimeError):
            f(torch.randn(4, 4), d)
        assert d == {"m": 1}


@pytest.mark.parametrize(
    "product",
    [
        lambda a, b: a @ b,
        torch.mm,
        lambda a, b: a.mm(b),
        lambda a, b: torch.nn.functional.linear(a, b),
    ],
)
def test_mixed_dtype_products_break(product):
    def fn(x):
        y = x.to(torch.bfloat16)
        try:
            return product(y, x)
        except RuntimeError:
            return y

    report = bytegraph.explain(fn)(torch.randn(3, 3))
    assert [r.kind for r in report.break_reasons] == ["dtype_mismatch"]


def test_mixed_dtypes_under_autocast_stay_in_the_graph():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return x.to(torch.bfloat16) @ x

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    x = torch.randn(3, 3)
    out = compiled(x)
    assert out.dtype == fn(x).dtype == torch.bfloat16
    assert counter.frame_count == 1


_EXPANDED_WRITES = {
    "add_": lambda e: e.add_(1),
    "iadd": lambda e: e.__iadd__(1),
    "copy_": lambda e: e.copy_(torch.ones(2, 3)),
    "sigmoid_": lambda e: e.sigmoid_(),
    "column_store": lambda e: e.__setitem__((slice(None), 0), 5.0),
    "out": lambda e: torch.add(torch.ones(2, 3), 1, out=e),
    "fill_": lambda e: e.fill_(7),  # eager warns only
    "masked_fill_": lambda e: e.masked_fill_(torch.ones(2, 3, dtype=torch.bool), 3.0),
    "row_store": lambda e: e.__setitem__(0, 4.0),  # a row of it shares no memory
}


@pytest.mark.filterwarnings("ignore:Use of .* on expanded tensors is deprecated")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("write", _EXPANDED_WRITES)
def test_writes_into_an_expanded_tensor_are_eagers(write, backend):
    """``x[0].expand(2, 3).add_(1)``: eager refuses most writes into a tensor whose elements share
    memory ("more than one element of the written-to tensor refers to a single memory location")
    and lets a few through; fake kernels refuse none. The graph raised outside the user's
    ``try`` (eager backend) or wrote each element, the input changed twice and no error
    (aot_eager). The write runs in Python: the error, the input and the result are eager's."""
    op = _EXPANDED_WRITES[write]

    def fn(x, log):
        log.append(1)
        e = x[0].expand(2, 3)
        try:
            op(e)
            error = None
        except RuntimeError as ex:
            error = str(ex)
        return e * 1, error

    bytegraph.reset()
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        x, log = torch.arange(6.0).reshape(2, 3), []
        ex, elog = x.clone(), []
        actual, expected = compiled(x, log), fn(ex, elog)
        torch.testing.assert_close(actual[0], expected[0])
        assert actual[1] == expected[1]
        torch.testing.assert_close(x, ex)
        assert log == elog
    assert not [k for k in bytegraph.stats() if k.startswith("fallback")]
