"""Questions about a tensor that neither its fake nor the tensor guards answer for the real one:
``is_shared()``, ``is_pinned()``, ``is_inference()``, ``.is_leaf`` and ``is_set_to``. Two tensors
with the same dtype, shape, strides and ``requires_grad`` may differ in them (``share_memory_``,
a tensor made in inference mode, one made by autograd), so the compiled function is called with
one kind and then the other: a cached graph must not give the first call's answer (it did, for
each of them: torch.compile answers all of them right). An input's answer is read from the real
tensor and guarded; a tensor made or viewed in the function breaks.
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, compile_counted


def _shared():
    t = torch.ones(3)
    t.share_memory_()
    return t


def _inference():
    with torch.inference_mode():
        return torch.ones(3)


#: (query, tensors alike to the guards, which answer it differently)
KINDS = {
    "is_shared": (lambda t: t.is_shared(), [lambda: torch.ones(3), _shared]),
    "is_inference": (lambda t: t.is_inference(), [lambda: torch.ones(3), _inference]),
    "is_leaf": (
        lambda t: t.is_leaf,
        [lambda: torch.ones(3, requires_grad=True), lambda: torch.ones(3, requires_grad=True) * 2],
    ),
    "is_set_to": (lambda t: t.is_set_to(t), [lambda: torch.ones(3)]),
}


@pytest.mark.parametrize("query", KINDS)
@pytest.mark.parametrize("order", ["as listed", "reversed"])
def test_an_inputs_answer_is_the_real_tensors_on_every_call(query, order):
    ask, makers = KINDS[query]
    makers = makers if order == "as listed" else makers[::-1]

    def fn(x):
        return x * 2, ask(x)

    compiled, _ = compile_counted(fn)
    for make in makers * 2:  # each kind twice: the second call of each hits the cache
        assert_same(compiled(make()), fn(make()))


def test_a_view_of_a_shared_input_is_shared():
    def fn(x):
        return x[1:] + 1, x[1:].is_shared(), (x + 1).is_shared()

    compiled, _ = compile_counted(fn)
    for make in (lambda: torch.ones(3), _shared, lambda: torch.ones(3)):
        assert_same(compiled(make()), fn(make()))


def test_is_leaf_after_an_in_place_detach():
    def fn(x):
        y = x * 2
        x.detach_()
        return y, x.is_leaf, x.requires_grad

    compiled, _ = compile_counted(fn)
    for _ in range(2):
        made, eager = torch.ones(3, requires_grad=True) * 2, torch.ones(3, requires_grad=True) * 2
        assert_same(compiled(made), fn(eager))


def test_is_inference_of_tensors_made_from_the_inputs():
    """A view of an inference tensor is one; an operator's result outside inference mode is not:
    the graph's tensors answer from their fakes, the inputs' answers guarded."""

    def fn(x):
        return x * 2, x[:2].is_inference(), (x + 1).is_inference()

    compiled, _ = compile_counted(fn)
    for make in (lambda: torch.ones(3), _inference) * 2:
        assert_same(compiled(make()), fn(make()))
