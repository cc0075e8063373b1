"""The corpus harness itself: a compiled run that leaves torch's RNG state other than eager's is a
difference, even where the two states' bytes add up to the same sum."""

from __future__ import annotations

import torch
from corpus import harness


def _state_with_two_bytes_swapped():
    state = torch.random.get_rng_state()
    i = next(i for i in range(8, len(state) - 1) if state[i] != state[i + 1])
    swapped = state.clone()
    swapped[i], swapped[i + 1] = state[i + 1].item(), state[i].item()
    assert swapped.sum() == state.sum() and not torch.equal(swapped, state)
    return state, swapped


def test_rng_states_with_the_same_byte_sum_differ():
    state, swapped = _state_with_two_bytes_swapped()
    try:
        expected = harness.global_state()
        torch.random.set_rng_state(swapped)
        actual = harness.global_state()
    finally:
        torch.random.set_rng_state(state)
    diff = harness._diff(actual, expected, "state", None)
    assert diff is not None and "rng" in diff
    assert harness._diff(harness.global_state(), expected, "state", None) is None


def test_a_compiled_run_that_draws_once_more_differs_from_eager():
    def fn(x):
        return x + torch.rand(()).item() * 0

    eager = harness.Run([harness.Observation(state=_after(fn))])
    drawing_twice = harness.Run(
        [harness.Observation(state=_after(lambda x: (torch.rand(2), fn(x))[1]))]
    )
    assert any("rng" in d for d in harness.differences(drawing_twice, eager))


def _after(fn):
    torch.manual_seed(0)
    fn(torch.ones(2))
    return harness.global_state()
