"""Shared helpers for the triton backend tests: on CPU everything runs under TRITON_INTERPRET=1;
on a CUDA machine the same tests also run on the GPU (``TRITON_INTERPRET=0 pytest -m gpu``).

Fixtures (prefixed ``triton_`` so they do not clash with other test dirs): ``triton_compile(fn,
*inputs, dynamic=False, options=None)`` -> runner; ``triton_check(fn, *inputs, grad=False)``
compiles, runs, compares with eager (values, and input gradients when ``grad``) and returns the
runner. Both run once per ``Target``: the interpreter on CPU, and, marked ``gpu`` (skipped without
CUDA), ``triton_check`` tests on CUDA in fp32, fp16 and bf16 (fp32 inputs and parameters converted)
and ``triton_compile`` tests on CUDA in fp32. ``@pytest.mark.interpreter_only`` keeps a test to
the interpreter. In fp16/bf16 a result must be as close to the fp32 computation on the same
inputs as the dtype's tolerance plus twice eager's own low-precision error.
"""

from __future__ import annotations

import copy
import functools
import os
import types

# Triton fixes its mode when ``triton.language`` is first imported: under the interpreter its
# standard library's ``@triton.jit`` functions become InterpretedFunctions, and compiling a kernel
# for the GPU later in the same process fails (triton 3.6). So one pytest process runs kernels one
# way: interpreted on the CPU (the default, what CI runs), or compiled on the GPU when started with
# TRITON_INTERPRET=0 (``pytest -m gpu`` as benchmarks/gpu.sh runs it).
os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported anywhere
INTERPRETING = os.environ["TRITON_INTERPRET"] == "1"

from dataclasses import dataclass  # noqa: E402

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
LOW_PRECISION = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Target:
    """Where a test's kernels run: ``cpu`` (Triton's interpreter) or ``cuda``; with ``dtype``,
    float32 inputs and parameters are converted to it."""

    device: str
    dtype: torch.dtype | None = None

    @property
    def id(self) -> str:
        if self.device == "cpu":
            return "interp"
        return f"cuda-{str(self.dtype or torch.float32).removeprefix('torch.')}"

    @property
    def low_precision(self) -> bool:
        return self.dtype in LOW_PRECISION

    def tensor(self, x):
        if not isinstance(x, torch.Tensor) or self == INTERP:
            return x
        y = x.detach().to(self.device)
        return y.to(self.dtype) if self.dtype and y.dtype == torch.float32 else y

    def module(self, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
        if self == INTERP:
            return gm
        gm = copy.deepcopy(gm).to(self.device)
        for node in gm.graph.nodes:  # tensors the function makes itself go there too
            if node.op == "call_function" and node.target in FACTORIES:
                node.kwargs = {"device": self.device, **node.kwargs}
        gm.recompile()
        if self.dtype:
            for t in [*gm.parameters(), *gm.buffers()]:
                if t.dtype == torch.float32:
                    t.data = t.data.to(self.dtype)
        return gm


#: Factory functions a traced test function may call (they default to the CPU).
FACTORIES = {torch.ones, torch.zeros, torch.full, torch.arange, torch.empty, torch.tensor}

INTERP = Target("cpu")
CUDA_TARGETS = [Target("cuda", d) for d in (torch.float32, torch.float16, torch.bfloat16)]


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "interpreter_only: run only under TRITON_INTERPRET=1")


def pytest_generate_tests(metafunc) -> None:
    """Run each ``triton_check`` test on every target, each ``triton_compile`` test on the
    interpreter and on CUDA in fp32."""
    if "triton_target" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("interpreter_only"):
        targets = [INTERP]
    elif "triton_check" in metafunc.fixturenames:
        targets = [INTERP, *CUDA_TARGETS]
    else:
        targets = [INTERP, CUDA_TARGETS[0]]
    params = [
        pytest.param(t, id=t.id, marks=[pytest.mark.gpu] if t.device == "cuda" else [])
        for t in targets
    ]
    metafunc.parametrize("triton_target", params, indirect=True)


@pytest.fixture
def triton_target(request) -> Target:
    target = getattr(request, "param", INTERP)
    if target.device == "cuda" or request.node.get_closest_marker("gpu"):
        needs_gpu()
    elif not INTERPRETING:
        pytest.skip("runs under Triton's interpreter: a process started without TRITON_INTERPRET=0")
    return target


def needs_gpu() -> None:
    """Skip unless kernels can be compiled for a CUDA GPU in this process."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if INTERPRETING:
        pytest.skip("GPU kernels need a process started with TRITON_INTERPRET=0 (gpu.sh)")


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


class OnDevice:
    """A compiled runner on a GPU target, called with CPU tensors: moves them there and the
    results back (so a test's own CPU comparisons keep working)."""

    def __init__(self, runner, target: Target) -> None:
        self.runner = runner
        self.target = target

    def __call__(self, *args):
        out = self.runner(*(self.target.tensor(a) for a in args))
        if isinstance(out, tuple | list):
            return type(out)(o.cpu() if isinstance(o, torch.Tensor) else o for o in out)
        return out.cpu() if isinstance(out, torch.Tensor) else out

    def __getattr__(self, name: str):
        return getattr(self.runner, name)


def compile_fn(fn, *inputs, dynamic: bool = False, options=None, target: Target = INTERP):
    gm = target.module(to_graph(fn))
    example = [target.tensor(x) for x in inputs]
    example = symbolic_inputs(example) if dynamic else example
    runner = lookup_backend("triton")(gm, example, options)
    return runner if target == INTERP else OnDevice(runner, target)


def flat(out) -> list:
    return list(out) if isinstance(out, tuple | list) else [out]


def assert_close(actual, expected, atol=None, rtol=None) -> None:
    for a, e in zip(flat(actual), flat(expected), strict=True):
        if isinstance(e, torch.Tensor):
            tol = TOLERANCES.get(e.dtype, (0, 0))
            torch.testing.assert_close(
                a,
                e,
                atol=atol if atol is not None else tol[0],
                rtol=rtol if rtol is not None else tol[1],
                equal_nan=True,
            )
        else:
            assert a == e


def assert_close_low_precision(actual, expected, reference, scale: float = 1.0) -> None:
    """Each of ``actual`` (ours) is within the dtype's tolerance (times ``scale``) plus twice
    eager's own error of ``reference`` (the same graph in fp32 on the same input values). A bool
    equals eager's or the fp32 one's; an integer too, or is within one of eager's (we round
    fp16/bf16 intermediates only where they are stored, so a float converted to an int may land
    on the neighbouring integer). Dtype, shape and device are eager's."""
    for a, e, r in zip(flat(actual), flat(expected), flat(reference), strict=True):
        if not isinstance(e, torch.Tensor):
            assert a == e
            continue
        assert (a.dtype, a.shape, a.device) == (e.dtype, e.shape, e.device)
        if not e.is_floating_point():  # a float rounded another way moves an int by one
            ok = (a == e) | (a == r.to(a.dtype))
            if e.dtype != torch.bool:
                ok |= (a.long() - e.long()).abs() <= 1
        else:
            a64, e64, r64 = (t.detach().double() for t in (a, e, r))
            atol, rtol = TOLERANCES.get(e.dtype, TOLERANCES[torch.float32])
            bound = scale * (atol + rtol * r64.abs()) + 2 * (e64 - r64).abs()
            ok = ((a64 - r64).abs() <= bound) | (a64 == e64)
            ok |= a64.isnan() & (e64.isnan() | r64.isnan())
        bad = (~ok).nonzero()
        assert not len(bad), f"{len(bad)} elements off, first at {bad[0].tolist()}: " + (
            f"ours {a[tuple(bad[0])]}, eager {e[tuple(bad[0])]}, fp32 {r[tuple(bad[0])]}"
        )


def leaves_of(inputs, grad: bool) -> list:
    return [
        x.detach().clone().requires_grad_(grad and x.is_floating_point())
        if isinstance(x, torch.Tensor)
        else x
        for x in inputs
    ]


def check(
    fn,
    *inputs,
    grad: bool = False,
    atol=None,
    rtol=None,
    dynamic: bool = False,
    fallbacks: int | None = None,
    target: Target = INTERP,
):
    """Compile ``fn``, compare outputs (and input grads) with eager; return the runner.

    Every ATen graph must have been compiled (none ran eagerly); with ``fallbacks`` given, exactly
    that many nodes may have run through torch.
    """
    gm = target.module(to_graph(fn))
    inputs = [target.tensor(x) for x in inputs]
    leaves = leaves_of(inputs, grad)
    runner = compile_fn(gm, *leaves, dynamic=dynamic)
    actual = runner(*leaves)
    ref_leaves = leaves_of(inputs, grad)
    expected = gm(*ref_leaves)
    if target.low_precision:
        _check_low_precision(gm, inputs, actual, expected, leaves, ref_leaves, grad)
    else:
        assert_close(actual, expected, atol, rtol)
        if grad:
            _check_grads(actual, expected, leaves, ref_leaves, atol, rtol)
    eager = [g.reason for g in runner.graphs if not hasattr(g, "call")]
    assert not eager, f"graphs ran eagerly: {eager}"
    if fallbacks is not None:
        assert sum(runner.fallback_ops.values()) == fallbacks, dict(runner.fallback_ops)
    return runner


def _upcast(x):
    if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION:
        return x.detach().float().requires_grad_(x.requires_grad)
    return x.detach().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x


def _check_low_precision(gm, inputs, actual, expected, leaves, ref_leaves, grad) -> None:
    """Compare with ``expected`` (eager in fp16/bf16) and the fp32 computation of the graph."""
    gm32 = copy.deepcopy(gm)
    for t in [*gm32.parameters(), *gm32.buffers()]:
        if t.dtype in LOW_PRECISION:
            t.data = t.data.float()
    leaves32 = [_upcast(x) for x in leaves_of(inputs, grad)]
    reference = [
        r.to(e.dtype) if isinstance(r, torch.Tensor) and isinstance(e, torch.Tensor) else r
        for r, e in zip(flat(gm32(*leaves32)), flat(expected), strict=True)
    ]
    assert_close_low_precision(actual, expected, reference)
    if not grad:
        return
    pairs = [
        (a, e, r)
        for a, e, r in zip(flat(actual), flat(expected), reference, strict=True)
        if isinstance(e, torch.Tensor) and e.requires_grad
    ]
    gen = torch.Generator().manual_seed(0)
    cots = [torch.randn(e.shape, generator=gen).to(e.device, e.dtype) for _, e, _ in pairs]
    wrt = [i for i, x in enumerate(ref_leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
    got = torch.autograd.grad([a for a, _, _ in pairs], [leaves[i] for i in wrt], cots)
    want = torch.autograd.grad([e for _, e, _ in pairs], [ref_leaves[i] for i in wrt], cots)
    ref = torch.autograd.grad(
        [r for _, _, r in pairs], [leaves32[i] for i in wrt], cots, allow_unused=True
    )
    for g, w, r in zip(got, want, ref, strict=True):
        r = torch.zeros_like(w) if r is None else r.to(w.dtype)
        assert_close_low_precision(g, w, r, scale=10)


def _check_grads(actual, expected, leaves, ref_leaves, atol, rtol) -> None:
    """Input gradients for a random cotangent match eager's (10x the value tolerance)."""
    outs = [o for o in flat(expected) if isinstance(o, torch.Tensor) and o.requires_grad]
    gen = torch.Generator().manual_seed(0)
    cots = [torch.randn(o.shape, generator=gen).to(o.device, o.dtype) for o in outs]
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
def triton_gpu() -> None:
    """For a test that compiles kernels for the GPU itself: skips unless this process can."""
    needs_gpu()


@pytest.fixture
def triton_check(triton_target):
    return functools.partial(check, target=triton_target)


@pytest.fixture
def triton_compile(triton_target):
    return functools.partial(compile_fn, target=triton_target)


@pytest.fixture
def triton_harness():
    """This module's helpers, for tests of the harness itself."""
    return types.SimpleNamespace(
        check=check, Target=Target, assert_close_low_precision=assert_close_low_precision
    )


@pytest.fixture(autouse=True)
def triton_seed():
    torch.manual_seed(0)
