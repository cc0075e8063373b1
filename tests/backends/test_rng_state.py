"""The CPU generator's state after each compiled call and after each backward equals eager's, byte
for byte, on every backend, on the first call (which compiles) and on later ones.

Inductor draws its own random numbers unless ``fallback_random`` is set (as in torch.compile), so it
is checked with that option: then its draws are eager's."""

from __future__ import annotations

import pytest
import torch

import bytegraph

BACKENDS = [
    ("eager", {}),
    ("aot_eager", {}),
    ("inductor", {"options": {"fallback_random": True}}),
]


def noise_then_loss(x):
    y = x * 1.5 + torch.randn(4) * 0.3
    return y.sin().sum()


def noise_scales_input(x):  # the backward needs the draw itself
    return (x * torch.rand(4)).cos().sum()


def discarded_draw(x):  # eager advances the generator for a draw nothing uses
    torch.rand(3)
    return (x * 2).exp().sum()


def dropout_loss(x):
    return torch.nn.functional.dropout(x.tanh(), p=0.5, training=True).sum()


class NoisyBackward(torch.autograd.Function):
    """A function whose backward draws: the draw belongs to the backward alone."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        torch.rand(2)  # discarded, but it advances the generator in eager
        return g * 2 + torch.randn(g.shape) * 0.01


def draw_in_backward(x):
    return NoisyBackward.apply(x.exp()).sin().sum()


def _trace(fn, calls=3):
    """Each call's (state after forward, state after backward, loss, gradient)."""
    torch.manual_seed(0)
    x = torch.randn(4, requires_grad=True)
    seen = []
    for _ in range(calls):
        x.grad = None
        loss = fn(x)
        after_forward = torch.get_rng_state().numpy().tobytes()
        loss.backward()
        after_backward = torch.get_rng_state().numpy().tobytes()
        seen.append((after_forward, after_backward, loss.detach(), x.grad.clone()))
    return seen


@pytest.mark.parametrize(
    "fn", [noise_then_loss, noise_scales_input, discarded_draw, dropout_loss, draw_in_backward]
)
@pytest.mark.parametrize(("backend", "kwargs"), BACKENDS, ids=[b for b, _ in BACKENDS])
def test_rng_state_after_forward_and_backward_equals_eager(request, fn, backend, kwargs):
    if backend == "inductor" and fn is draw_in_backward:
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="Inductor's partition also draws a backward's random numbers in the "
                "forward (torch.compile's inductor too, with fallback_random)",
            )
        )
    expected = _trace(fn)
    bytegraph.reset()
    actual = _trace(bytegraph.compile(fn, backend=backend, fullgraph=True, **kwargs))
    for call, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a[0] == e[0], f"call {call}: RNG state after the forward differs from eager's"
        assert a[1] == e[1], f"call {call}: RNG state after the backward differs from eager's"
        torch.testing.assert_close(a[2], e[2])
        torch.testing.assert_close(a[3], e[3])
