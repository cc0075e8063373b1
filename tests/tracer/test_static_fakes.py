"""``tracer/fakes/static_fakes.py`` makes a fake only for a plain input, and that fake is the one
``from_tensor`` makes: same sizes, strides, storage offset and size, dtype, device, autograd state,
parameter mark; anything else (views, shared or larger storages, offsets, ``.grad``, inference
tensors, 0-d and empty tensors, non-leaves, subclasses) is left to ``from_tensor``. A trace gives
the same tensor one fake, and two inputs sharing a storage fakes that share one."""

from __future__ import annotations

import torch
from bytegraph.tracer.fakes import static_fakes
from torch._subclasses.fake_tensor import FakeTensorMode


def _described(fake: torch.Tensor) -> tuple:
    return (
        type(fake).__name__,
        tuple(fake.shape),
        fake.stride(),
        fake.storage_offset(),
        fake.untyped_storage().nbytes(),
        fake.dtype,
        fake.device,
        fake.requires_grad,
        fake.is_leaf,
        fake.grad_fn is None,
        isinstance(fake, torch.nn.Parameter),
        fake.is_contiguous(),
    )


def _plain_inputs() -> list[torch.Tensor]:
    return [
        torch.randn(3, 4),
        torch.randn(2, 3, 4, dtype=torch.float64),
        torch.randint(0, 5, (7,)),
        torch.zeros(4, 1, 3, dtype=torch.bfloat16),
        torch.empty_strided((3, 4), (1, 3)),  # dense, column-major
        torch.empty_strided((2, 2), (4, 1)),  # gaps, in a storage that ends where it does
        torch.empty_strided((2, 3), (0, 1)),  # overlapping, likewise
        torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last),
        torch.randn(3, 4, requires_grad=True),
        torch.nn.Parameter(torch.randn(5, 2)),
        torch.nn.Parameter(torch.randn(5), requires_grad=False),
        torch.rand(3) > 0.5,
    ]


def _other_inputs() -> list[torch.Tensor]:
    base = torch.randn(4, 6)
    shared = torch.randn(6)
    with_grad = torch.randn(3, requires_grad=True)
    with_grad.grad = torch.ones(3)
    with torch.inference_mode():
        inference = torch.randn(3)
    grown = torch.randn(10)
    grown.resize_(4)  # a storage larger than the tensor
    return [
        base.t(),  # a view
        base[1:],  # a view at an offset
        shared,  # its storage is shared with the next tensor
        shared.view(2, 3),
        with_grad,
        inference,
        torch.tensor(2.0),  # 0-d: from_tensor remembers its value
        torch.empty(0, 3),
        torch.randn(3, requires_grad=True) * 2,  # not a leaf
        grown,
    ]


def test_plain_inputs_get_the_fake_from_tensor_makes():
    for value in _plain_inputs():
        fresh = static_fakes.fresh_fake(FakeTensorMode(), value)
        assert fresh is not None, value.shape
        want = FakeTensorMode().from_tensor(value, static_shapes=True)
        assert _described(fresh) == _described(want)
        assert fresh.fake_mode is not None and fresh.fake_device == value.device


def test_other_inputs_are_left_to_from_tensor():
    for value in _other_inputs():
        assert static_fakes.fresh_fake(FakeTensorMode(), value) is None, (
            tuple(value.shape),
            value.stride(),
        )
    assert static_fakes.fresh_fake(FakeTensorMode(), torch.sparse_coo_tensor([[0]], [1.0])) is None


def test_a_trace_gives_one_tensor_one_fake_and_shared_storage_stays_shared():
    import bytegraph

    seen = []

    def f(a, b, c):
        seen.append(torch.compiler.is_compiling())
        c.add_(1)  # c shares a's storage: the write shows through a
        return a + b, a * 2

    x = torch.zeros(4)
    y = torch.ones(4)
    out = bytegraph.compile(f, backend="eager")(x, x, x.view(4))
    want_x = torch.zeros(4)
    want = f(want_x, want_x, want_x.view(4))
    assert all(torch.equal(o, w) for o, w in zip(out, want, strict=True)) and torch.equal(x, want_x)
    out = bytegraph.compile(f, backend="eager")(y, torch.ones(4), torch.zeros(4))
    assert torch.equal(out[0], torch.full((4,), 2.0)) and torch.equal(y, torch.ones(4))
