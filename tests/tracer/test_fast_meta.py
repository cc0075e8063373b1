"""The short way through the fake mode (``tracer/fakes/fast_meta.py``): for each listed operator, on
contiguous, transposed, offset and broadcast inputs of several dtypes, the result must be the one
the fake mode gives by its own path (and the eager result's metadata): same shape, strides, storage
offset, dtype, device, and the same aliasing of the inputs. Anything the short way does not model
must go back to the mode."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from bytegraph.tracer import effects
from bytegraph.tracer.fakes import fast_meta
from torch._subclasses import fake_tensor as fake_tensor_module
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(1, 5, shape, dtype=dtype)
    return torch.randn(shape).to(dtype)


def _transposed(*shape: int) -> torch.Tensor:
    return _t(*reversed(shape)).transpose(0, -1)  # same shape, not contiguous


def _channels_last(*shape: int) -> torch.Tensor:
    return _t(*shape).to(memory_format=torch.channels_last)


def _offset(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return _t(shape[0] + 2, *shape[1:], dtype=dtype)[2:]  # a view at a storage offset


#: operator -> argument builders (each returns ``(args, kwargs)`` of real tensors)
CASES: dict[object, list[Callable[[], tuple[tuple, dict]]]] = {
    aten.view.default: [
        lambda: ((_t(2, 3, 4), [6, 4]), {}),
        lambda: ((_offset(2, 3, 4), [2, 12]), {}),
        lambda: ((_t(4, 6), [-1]), {}),
    ],
    aten._unsafe_view.default: [lambda: ((_t(2, 3, 4), [6, 4]), {})],
    aten.slice.Tensor: [
        lambda: ((_t(4, 8), 1, 0, 4), {}),
        lambda: ((_transposed(4, 8), 0, 1, 3, 2), {}),
        lambda: ((_t(4, 8), -1, 4, 9223372036854775807), {}),
    ],
    aten.select.int: [lambda: ((_t(3, 4), 1, -1), {}), lambda: ((_offset(3, 4), 0, 1), {})],
    aten.transpose.int: [lambda: ((_t(2, 3, 4), 1, 2), {}), lambda: ((_offset(2, 3), 0, 1), {})],
    aten.t.default: [lambda: ((_t(3, 4),), {}), lambda: ((_transposed(3, 4),), {})],
    aten.unsqueeze.default: [lambda: ((_t(3, 4), 1), {}), lambda: ((_transposed(3, 4), -1), {})],
    aten.squeeze.dim: [lambda: ((_t(3, 1, 4), 1), {})],
    aten.squeeze.dims: [lambda: ((_t(1, 3, 1), [0, 2]), {})],
    aten.expand.default: [lambda: ((_t(3, 1), [3, 5]), {}), lambda: ((_t(4), [2, 3, 4]), {})],
    aten.permute.default: [lambda: ((_t(2, 3, 4), [2, 0, 1]), {})],
    aten.alias.default: [lambda: ((_t(2, 3),), {})],
    aten.detach.default: [
        lambda: ((_t(2, 3).requires_grad_(),), {}),
        lambda: ((_transposed(2, 3),), {}),
    ],
    aten.split.Tensor: [lambda: ((_t(5, 4), 2), {}), lambda: ((_transposed(4, 6), 4, 1), {})],
    aten.split_with_sizes.default: [lambda: ((_t(6, 4), [1, 2, 3]), {})],
    aten.unbind.int: [lambda: ((_t(3, 4), 1), {})],
    aten.as_strided.default: [
        lambda: ((_t(4, 6), [3, 2], [1, 3]), {}),
        lambda: ((_offset(4, 6), [2, 2], [6, 1], 3), {}),
    ],
    aten._scaled_dot_product_flash_attention_for_cpu.default: [
        lambda: ((_t(1, 4, 8, 16), _t(1, 4, 8, 16), _t(1, 4, 8, 16)), {}),
        lambda: ((_t(2, 2, 5, 8), _t(2, 2, 7, 8), _t(2, 2, 7, 8), 0.0, True), {"scale": 0.5}),
        lambda: (
            (_t(1, 2, 4, 8), _t(1, 2, 6, 8), _t(1, 2, 6, 8)),
            {"attn_mask": _t(1, 1, 4, 6)},  # the public function turns a bool mask to this
        ),
        lambda: (
            (_t(1, 2, 4, 8, dtype=torch.bfloat16),) * 3,
            {"attn_mask": _t(4, 4, dtype=torch.bfloat16)},
        ),
    ],
    aten.cat.default: [
        lambda: (([_t(2, 3), _t(4, 3)],), {}),
        lambda: (([_transposed(2, 3), _t(2, 5)], 1), {}),
        lambda: (([_t(2, 3), _t(2, 3, dtype=torch.bfloat16)], -1), {}),
    ],
    aten.clone.default: [
        lambda: ((_transposed(3, 4),), {}),
        lambda: ((_transposed(3, 4),), {"memory_format": torch.contiguous_format}),
    ],
    aten._to_copy.default: [
        lambda: ((_t(3, 4),), {"dtype": torch.bfloat16}),
        lambda: ((_transposed(3, 4),), {"dtype": torch.float64}),
    ],
    aten.mean.dim: [
        lambda: ((_t(2, 3, 4), [-1], True), {}),
        lambda: ((_transposed(3, 4), [0]), {}),
        lambda: ((_t(2, 3, dtype=torch.bfloat16), [1]), {"dtype": torch.float32}),
    ],
    aten.sum.dim_IntList: [
        lambda: ((_t(2, 3, 4), [0, 2]), {}),
        lambda: ((_t(2, 3), [1], True), {}),
    ],
    aten.amax.default: [lambda: ((_t(2, 3, 4), [1]), {})],
    aten._softmax.default: [lambda: ((_t(2, 5), -1, False), {})],
    aten._log_softmax.default: [lambda: ((_transposed(2, 5), 0, False), {})],
    aten.mm.default: [lambda: ((_t(3, 4), _transposed(4, 5)), {})],
    aten.bmm.default: [lambda: ((_t(2, 3, 4), _t(2, 4, 5)), {})],
    aten.addmm.default: [
        lambda: ((_t(5), _t(3, 4), _t(4, 5)), {}),
        lambda: ((_t(3, 5), _transposed(3, 4), _t(4, 5)), {"beta": 0.5}),
        lambda: ((_transposed(3, 5), _t(3, 4), _t(4, 5)), {}),
    ],
    aten.native_layer_norm.default: [
        lambda: ((_t(2, 3, 8), [8], _t(8), _t(8), 1e-5), {}),
        lambda: ((_t(2, 3, 8), [3, 8], None, None, 1e-6), {}),
        lambda: ((_transposed(2, 3, 8), [8], _t(8), None, 1e-5), {}),
    ],
    aten.embedding.default: [
        lambda: ((_t(10, 4), _t(2, 3, dtype=torch.int64)), {}),
        lambda: ((_transposed(10, 4), _t(5, dtype=torch.int32)), {}),
        lambda: ((_t(10, 4, dtype=torch.bfloat16), _t(dtype=torch.int64)), {}),
    ],
    aten.where.self: [lambda: ((_t(3, 1, dtype=torch.bool), _t(3, 4), _t(4)), {})],
    aten.pow.Tensor_Scalar: [
        lambda: ((_t(3, 4), 2), {}),
        lambda: ((_t(3, dtype=torch.int64), 0.5), {}),
    ],
    aten.gelu.default: [lambda: ((_t(3, 4),), {"approximate": "tanh"})],
}

BINARY = [
    aten.add.Tensor,
    aten.sub.Tensor,
    aten.mul.Tensor,
    aten.div.Tensor,
    aten.pow.Tensor_Tensor,
    aten.maximum.default,
    aten.minimum.default,
    aten.eq.Tensor,
    aten.ne.Tensor,
    aten.lt.Tensor,
    aten.le.Tensor,
    aten.gt.Tensor,
    aten.ge.Tensor,
]
for _op in BINARY:
    CASES[_op] = [
        lambda: ((_t(2, 3, 4), _t(3, 4)), {}),  # broadcast
        lambda: ((_transposed(3, 4), _t(3, 4)), {}),  # mixed layouts
        lambda: ((_t(3, 4), _t(3, 4, dtype=torch.bfloat16)), {}),  # promotion
        lambda: ((_t(3, 4, dtype=torch.int64), _offset(3, 4)), {}),
        lambda: ((_channels_last(2, 3, 4, 5), _channels_last(2, 3, 4, 5)), {}),
        lambda: ((_channels_last(2, 3, 4, 5), _t(2, 3, 4, 5)), {}),  # layouts disagree
        lambda: ((_t(), _t(3)), {}),  # a 0-dim tensor
        lambda: ((_t(0, 3), _t(3)), {}),  # empty
    ]
for _op in (aten.bitwise_and.Tensor, aten.bitwise_or.Tensor):
    CASES[_op] = [lambda: ((_t(3, 4, dtype=torch.bool), _t(4, dtype=torch.bool)), {})]
for _op in (aten.eq.Scalar, aten.ne.Scalar, aten.lt.Scalar, aten.le.Scalar, aten.gt.Scalar):
    CASES[_op] = [lambda: ((_transposed(3, 4), 0.5), {})]
CASES[aten.ge.Scalar] = [lambda: ((_t(3, 4, dtype=torch.int64), 2), {})]
UNARY = [
    aten.neg.default,
    aten.abs.default,
    aten.reciprocal.default,
    aten.rsqrt.default,
    aten.sqrt.default,
    aten.exp.default,
    aten.log.default,
    aten.sin.default,
    aten.cos.default,
    aten.tanh.default,
    aten.sigmoid.default,
    aten.silu.default,
    aten.relu.default,
]
for _op in UNARY:
    CASES.setdefault(_op, []).extend(
        [
            lambda: ((_transposed(3, 4),), {}),
            lambda: ((_offset(2, 3, dtype=torch.bfloat16),), {}),
            lambda: ((_channels_last(2, 3, 4, 5),), {}),
        ]
    )
CASES.setdefault(aten.gelu.default, []).append(lambda: ((_transposed(3, 4),), {}))
CASES[aten.logical_not.default] = [lambda: ((_t(3, 4, dtype=torch.bool),), {})]


def test_every_listed_operator_has_cases():
    assert set(fast_meta.FAST_OPS) <= set(CASES), set(fast_meta.FAST_OPS) - set(CASES)


def test_no_listed_operator_has_an_effect():
    """The short way skips the effect probe: it may only list operators the probe ignores."""
    assert [op for op in fast_meta.FAST_OPS if effects.op_effect(op) is not None] == []


def _describe(out, inputs: list[torch.Tensor]) -> list[tuple]:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    storages = [t.untyped_storage()._cdata for t in inputs]
    return [
        (
            type(o).__name__,
            tuple(o.shape),
            o.stride(),
            o.storage_offset(),
            o.dtype,
            o.device,
            o.requires_grad,
            o._is_view(),
            [o.untyped_storage()._cdata == s for s in storages],
        )
        for o in outs
    ]


def _flat_tensors(args: tuple) -> list[torch.Tensor]:
    flat = []
    for a in args:
        for item in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(item, torch.Tensor):
                flat.append(item)
    return flat


def _fake(mode: FakeTensorMode, value):
    if isinstance(value, torch.Tensor):
        return mode.from_tensor(value, static_shapes=True)
    if isinstance(value, (list, tuple)):
        return type(value)(_fake(mode, v) for v in value)
    return value


@pytest.mark.parametrize(
    "op, build",
    [(op, build) for op, builds in CASES.items() for build in builds],
    ids=lambda v: str(v) if isinstance(v, torch._ops.OpOverload) else "",
)
def test_same_result_as_the_fake_mode(op, build):
    """Through the dispatcher (autograd's view tracking included), the output graph's mode, which
    takes the short way, and a plain fake mode give the same result."""
    torch.manual_seed(0)
    args, kwargs = build()
    results = []
    for mode in (effects.ProbedFakeTensorMode(shape_env=ShapeEnv()), FakeTensorMode()):
        fake_args = _fake(mode, args)
        fake_kwargs = {k: _fake(mode, v) for k, v in kwargs.items()}
        inputs = _flat_tensors((*fake_args, *fake_kwargs.values()))
        with mode:
            results.append(_describe(op(*fake_args, **fake_kwargs), inputs))
        if isinstance(mode, effects.ProbedFakeTensorMode):  # and it did take the short way
            taken = fast_meta.run(mode, op, fake_args, fake_kwargs)
            assert taken is not fast_meta.NOT_FAST, op
    fast, slow = results
    assert fast == slow
    eager = _describe(op(*args, **kwargs), _flat_tensors((*args, *kwargs.values())))
    assert [d[1:5] for d in fast] == [d[1:5] for d in eager]  # shape, strides, offset, dtype


@pytest.mark.parametrize(
    "op, build",
    [
        (aten.mul.Tensor, lambda p: (p, p.detach())),
        (aten.view.default, lambda p: (p, [-1])),
        (aten.mm.default, lambda p: (p, p.t())),
        (aten.cat.default, lambda p: ([p, p],)),
    ],
    ids=["mul", "view", "mm", "cat"],  # stable names: test workers must collect the same ids
)
def test_autograd_sees_the_same_result(op, build):
    """Inputs that require grad: the dispatcher's autograd layer wraps what the short way returns
    as it wraps the mode's own result (grad_fn, leaf-ness, view tracking)."""
    results = []
    for mode in (effects.ProbedFakeTensorMode(shape_env=ShapeEnv()), FakeTensorMode()):
        param = mode.from_tensor(torch.nn.Parameter(torch.randn(3, 3)), static_shapes=True)
        with mode, torch.enable_grad():
            out = op(*build(param))
        results.append((out.requires_grad, out.is_leaf, type(out.grad_fn).__name__, out._is_view()))
    assert results[0] == results[1]
    assert results[0][0]  # the result requires grad


def test_views_alias_their_input():
    mode = effects.ProbedFakeTensorMode()
    x = mode.from_tensor(torch.randn(4, 6))
    with mode:
        out = x.view(24)
    assert out._base is x and out.untyped_storage()._cdata == x.untyped_storage()._cdata
    assert isinstance(out, FakeTensor) and out.fake_mode is mode


def test_what_it_does_not_model_goes_to_the_mode():
    mode = FakeTensorMode(shape_env=ShapeEnv())
    x = mode.from_tensor(torch.randn(3, 4), static_shapes=True)
    other = FakeTensorMode().from_tensor(torch.randn(3, 4))
    symbolic = mode.from_tensor(torch.randn(3, 4))  # dynamic sizes under a shape env
    cuda = FakeTensor(mode, torch.empty(3, 4, device="meta"), torch.device("cuda", 0))
    real = torch.randn(3, 4)
    value = torch.tensor([1.0, 2.0])  # a small tensor whose values the mode tracks
    constant = FakeTensor(mode, torch.empty(2, device="meta"), value.device, constant=value)
    not_fast = [
        (aten.nonzero.default, (x,), {}),  # not listed: data-dependent
        (aten.mul.Tensor, (x, other), {}),  # another mode's tensor
        (aten.mul.Tensor, (x, real), {}),  # a real tensor
        (aten.mul.Tensor, (x, cuda), {}),  # mixed devices
        (aten.mul.Tensor, (symbolic, symbolic), {}),  # shape guards to record
        (aten.mul.Tensor, (constant, constant), {}),  # a constant the mode folds
        (aten._to_copy.default, (x,), {"device": torch.device("cpu")}),  # moves the output
        (aten.view.default, (x, [5, 5]), {}),  # invalid: the mode's own error
    ]
    for op, args, kwargs in not_fast:
        assert fast_meta.run(mode, op, args, kwargs) is fast_meta.NOT_FAST, (op, args)


def test_metadata_queries_answered_as_the_mode_answers_them():
    """A fake tensor's device, sizes, strides and offset, asked through the dispatcher under the
    output graph's mode (the C++ argument parser asks the device at most calls), are the plain
    mode's answers: a CUDA fake's device, a transposed view's strides, an offset; inside a kernel
    (``in_kernel_invocation``) the device is ``meta``."""
    queries = [
        torch.ops.prim.device.default,
        aten.size.default,
        aten.stride.default,
        aten.storage_offset.default,
    ]
    answers = []
    for mode in (effects.ProbedFakeTensorMode(shape_env=ShapeEnv()), FakeTensorMode()):
        x = mode.from_tensor(_offset(3, 4).t(), static_shapes=True)
        cuda = FakeTensor(mode, torch.empty(2, 5, device="meta"), torch.device("cuda", 0))
        with mode:
            asked = [q(t) for q in queries for t in (x, cuda)]
        probed = isinstance(mode, effects.ProbedFakeTensorMode)
        dispatch = mode.__torch_dispatch__ if probed else mode.dispatch  # (its own, not Dynamo's)
        with fake_tensor_module.in_kernel_invocation_manager(mode):
            asked.append(dispatch(torch.ops.prim.device.default, [FakeTensor], (x,)))
        answers.append(asked)
        if probed:  # the short way answers them
            assert fast_meta.run(mode, torch.ops.prim.device.default, (cuda,), {}) == cuda.device
    assert answers[0] == answers[1]
    assert answers[0][:2] == [torch.device("cpu"), torch.device("cuda", 0)]
    assert answers[0][-1] == torch.device("meta")
