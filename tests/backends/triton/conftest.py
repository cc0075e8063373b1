"""Shared helpers for the triton backend tests: everything runs on CPU under TRITON_INTERPRET=1.

Fixtures (prefixed ``triton_`` so they do not clash with other test dirs): ``triton_compile(fn,
*inputs, dynamic=False)`` -> runner; ``triton_check(fn, *inputs, grad=False)`` compiles, runs,
compares with eager (values, and input gradients when ``grad``) and returns the runner.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported anywhere

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.fx  # noqa: E402
from bytegraph.backends.registry import lookup_backend  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.symbolic_shapes import (  # noqa: E402
    DimDynamic,
    ShapeEnv,
    StatelessSymbolicContext,
)

#: (atol, rtol) per dtype, as torch.testing/Inductor's tests use them.
TOLERANCES = {
    torch.float32: (1e-5, 1.3e-6),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1.6e-2),
}


def to_graph(fn) -> torch.fx.GraphModule:
    return fn if isinstance(fn, torch.fx.GraphModule) else torch.fx.symbolic_trace(fn)


def symbolic_inputs(inputs: list) -> list:
    """Fake copies of ``inputs`` with all sizes symbolic (what Dynamo passes when dynamic)."""
    mode = FakeTensorMode(shape_env=ShapeEnv())
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * x.dim())
            out.append(mode.from_tensor(x, symbolic_context=ctx))
        else:
            out.append(x)
    return out


def compile_fn(fn, *inputs, dynamic: bool = False, options=None):
    gm = to_graph(fn)
    example = symbolic_inputs(list(inputs)) if dynamic else list(inputs)
    return lookup_backend("triton")(gm, example, options)


def flat(out) -> list:
    return list(out) if isinstance(out, tuple | list) else [out]


def assert_close(actual, expected, atol=None, rtol=None) -> None:
    for a, e in zip(flat(actual), flat(expected), strict=True):
        if isinstance(e, torch.Tensor):
            tol = TOLERANCES.get(e.dtype, (0, 0))
            torch.testing.assert_close(a, e, atol=atol if atol is not None else tol[0],
                                       rtol=rtol if rtol is not None else tol[1], equal_nan=True)
        else:
            assert a == e


def check(fn, *inputs, grad: bool = False, atol=None, rtol=None, dynamic: bool = False,
          fallbacks: int | None = None):
    """Compile ``fn``, compare outputs (and input grads) with eager; return the runner.

    Every ATen graph must have been compiled (none ran eagerly); with ``fallbacks`` given, exactly
    that many nodes may have run through torch.
    """
    gm = to_graph(fn)
    leaves = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
              if isinstance(x, torch.Tensor) else x for x in inputs]
    runner = compile_fn(gm, *leaves, dynamic=dynamic)
    actual = runner(*leaves)
    ref_leaves = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
                  if isinstance(x, torch.Tensor) else x for x in inputs]
    expected = gm(*ref_leaves)
    assert_close(actual, expected, atol, rtol)
    if grad:
        _check_grads(actual, expected, leaves, ref_leaves, atol, rtol)
    eager = [g.reason for g in runner.graphs if not hasattr(g, "call")]
    assert not eager, f"graphs ran eagerly: {eager}"
    if fallbacks is not None:
        assert sum(runner.fallback_ops.values()) == fallbacks, dict(runner.fallback_ops)
    return runner


def _check_grads(actual, expected, leaves, ref_leaves, atol, rtol) -> None:
    """Input gradients for a random cotangent match eager's (10x the value tolerance)."""
    outs = [o for o in flat(expected) if isinstance(o, torch.Tensor) and o.requires_grad]
    gen = torch.Generator().manual_seed(0)
    cots = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs]
    wrt = [x for x in ref_leaves if isinstance(x, torch.Tensor) and x.requires_grad]
    want = torch.autograd.grad(outs, wrt, cots, allow_unused=True)
    act_outs = [o for o in flat(actual) if isinstance(o, torch.Tensor) and o.requires_grad]
    act_wrt = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad]
    got = torch.autograd.grad(act_outs, act_wrt, cots, allow_unused=True)
    for g, w in zip(got, want, strict=True):
        if w is not None:
            tol = TOLERANCES[w.dtype]
            torch.testing.assert_close(g, w, atol=(atol or tol[0]) * 10, rtol=(rtol or tol[1]) * 10)


@pytest.fixture
def triton_check():
    return check


@pytest.fixture
def triton_compile():
    return compile_fn


@pytest.fixture(autouse=True)
def triton_seed():
    torch.manual_seed(0)

