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
