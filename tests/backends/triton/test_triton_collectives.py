"""Collectives through the triton backend: functional collectives and their waits are
extern calls run with torch (on purpose: not counted as fallbacks), between generated kernels, and
one whose result is unused is still run. A single-process world of the ``fake`` backend stands in
for real ranks (its collectives return their input); tests/distributed runs real gloo ranks."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from bytegraph.backends.debug import CompileCounter
from bytegraph.backends.registry import lookup_backend
from torch.testing._internal.distributed.fake_pg import FakeStore

import bytegraph


@pytest.fixture(scope="module", autouse=True)
def fake_world():
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    yield
    dist.destroy_process_group()


def tensor_parallel_step(x, w):
    y = torch.relu(x @ w)
    dist.all_reduce(y)  # rewritten to a functional all_reduce plus a copy back
    z = funcol.all_reduce(y * 2, "sum", dist.group.WORLD)
    funcol.all_reduce(x, "sum", dist.group.WORLD).wait()  # result unused: must still run
    return z + 1


def test_collectives_are_extern_calls_between_kernels():
    counter = CompileCounter(lookup_backend("triton"))
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    torch.testing.assert_close(
        bytegraph.compile(tensor_parallel_step, backend=counter)(x, w), tensor_parallel_step(x, w)
    )
    (compiled,) = counter.compiled
    wrapper = compiled.graphs[0].source
    assert wrapper.count("# all_reduce") == 3 and wrapper.count("# wait_tensor") == 3, wrapper
    assert compiled.kernels, "the pointwise work around the collectives became kernels"
    assert not any("c10d" in op for op in compiled.fallback_ops), compiled.fallback_ops
