"""Tensors of layouts the trace does not model (sparse COO/CSR, nested): fake tensors do not carry
what they store (a fake ``coalesce()`` has ``_nnz() == 0``), so an input of such a layout runs its
frame in Python, and an op making one in the trace breaks the graph there; the code from the break
on runs as eager runs it.

torch.compile 2.13 (``torch._dynamo.explain``) counts 1 graph and 0 breaks on the functions that
build a sparse tensor (it skips the sparse constructor's frame and runs it eagerly: a break it does
not count) and 0 graphs on ``x.to_sparse()``; bytegraph counts the break and the resume function
that runs in Python because a sparse tensor is live in it (2).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import assert_same, compile_counted

from bytegraph.explain import Recorder


def check_in_python(fn, make_args, *, graphs, breaks, in_python):
    """``fn`` compiled gives eager's results (``_nnz()``, indices, values, flags) on each call;
    the graph and break counts are as given, and ``in_python`` frames ran in Python (warned)."""
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with recorder:
                got = compiled(*make_args())
            assert_same(got, fn(*make_args()))
    ran = [w for w in caught if "in Python: tensor_layout" in str(w.message)]
    assert len(ran) == in_python, [str(w.message) for w in caught]
    report = recorder.report()
    assert (counter.frame_count, report.graph_break_count) == (graphs, breaks), [
        str(r) for r in report.break_reasons
    ]


def _coalesced_nnz(x):
    i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    v = torch.tensor([3.0, 4.0, 5.0, 6.0])
    t = torch.sparse_coo_tensor(i, v, (2, 3)).coalesce()
    return t._nnz(), t.values().shape, t.to_dense() + x


def _uncoalesced_flags(x):
    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    t = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0, 5.0]), (2, 3))
    return t._nnz(), t.is_coalesced(), t.layout, t.to_dense() * x


def _sum_of_sparse(x):
    i = torch.tensor([[0, 0], [1, 1]])
    t = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0]), (2, 3))
    return (t + t).coalesce()._nnz(), torch.sparse.sum(t) + x.sum()


def _to_sparse(x):
    t = (x * 2).to_sparse()
    return t._nnz(), t.indices(), t.values()


def _to_sparse_csr(x):
    t = (x * 2).to_sparse_csr()
    return t._nnz(), t.crow_indices(), t.to_dense()


@pytest.mark.parametrize(
    "fn", [_coalesced_nnz, _uncoalesced_flags, _sum_of_sparse, _to_sparse, _to_sparse_csr]
)
def test_sparse_tensor_made_in_the_trace_runs_as_eager(fn):
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    check_in_python(fn, lambda: (x.clone(),), graphs=1, breaks=2, in_python=1)


def test_sparse_input_runs_in_python():
    def fn(x, sp):
        return sp._nnz(), (sp * 2).to_dense() + x, torch.sparse.mm(sp, x.t())

    def make():
        i = torch.tensor([[0, 1, 1], [2, 0, 2]])
        sp = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0, 5.0]), (2, 3))
        return torch.ones(2, 3), sp

    check_in_python(fn, make, graphs=0, breaks=1, in_python=1)
