"""The dispatcher checks the tensors a function takes in one C call (``kinds.tensor_checker``,
torch's ``TensorGuards``) and falls back to the ``TENSOR_MATCH`` parts where that call says no.
The call is stricter than the parts (dispatch keys, exact strides), never looser: the same calls
hit and miss as with the parts alone. Each case compiles on one tensor, then calls with another
and compares the entries made (and the result) with what the parts decide."""

from __future__ import annotations

import pytest
import torch
from bytegraph.guards.kinds import checked_in_c, tensor_checker
from difftest import assert_same

import bytegraph


class Sub(torch.Tensor):
    pass


def _inference(shape):
    with torch.inference_mode():
        return torch.randn(shape)


# (what the entry was traced on, what is passed next, whether it reuses the entry)
CASES = {
    "same metadata": (lambda: torch.randn(2, 3), lambda: torch.randn(2, 3), True),
    "inference tensor": (lambda: torch.randn(2, 3), lambda: _inference((2, 3)), True),
    "view, same strides": (lambda: torch.randn(2, 3), lambda: torch.randn(4, 3)[:2], True),
    "other shape": (lambda: torch.randn(2, 3), lambda: torch.randn(3, 3), False),
    "transposed": (lambda: torch.randn(3, 2).t(), lambda: torch.randn(2, 3), False),
    "requires grad": (lambda: torch.randn(2, 3), lambda: torch.randn(2, 3).requires_grad_(), False),
    "dtype": (lambda: torch.randn(2, 3), lambda: torch.randn(2, 3).double(), False),
    "subclass": (lambda: torch.randn(2, 3), lambda: torch.randn(2, 3).as_subclass(Sub), False),
    "parameter": (
        lambda: torch.nn.Parameter(torch.randn(2, 3)),
        lambda: torch.randn(2, 3, requires_grad=True),
        False,
    ),
    "size-1 dimension, other stride": (
        lambda: torch.randn(2, 1),
        lambda: torch.randn(1, 2).t(),
        False,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_second_tensor_hits_exactly_where_the_parts_say(case):
    first, second, reuses = CASES[case]

    def fn(x):
        return x * 2

    compiled = bytegraph.compile(fn, dynamic=False)
    x = first()
    assert_same(compiled(x), fn(x))
    y = second()
    assert_same(compiled(y), fn(y))
    entries = bytegraph.cache_entries(compiled)
    assert len(entries) == (1 if reuses else 2), [e.reason for e in entries]
    assert (bytegraph.why(compiled, y).selected is entries[0]) == reuses  # the parts' answer


def test_the_checker_is_stricter_than_the_parts_never_looser():
    """Where the checker says yes, every part holds, across the tensors above and more."""
    tensors = [make() for first, second, _ in CASES.values() for make in (first, second)]
    tensors += [torch.randn(2, 3).conj(), torch.zeros(()), torch.randn(0, 3), torch.randn(6)[::2]]
    for traced in tensors:
        compiled = bytegraph.compile(lambda x: x + 1, dynamic=False)
        compiled(traced)
        why = bytegraph.why  # judges by the parts, one by one
        (entry,) = bytegraph.cache_entries(compiled)
        (guard,) = [g for g in entry.guards.guards if g.kind.name == "TENSOR_MATCH"]
        if not checked_in_c(guard.arg):
            continue
        checker = tensor_checker((guard.arg,))
        for other in tensors:
            if checker.check(other):
                assert why(compiled, other).selected is entry


def test_the_checkers_examples_are_made_where_no_mode_sees_them():
    """A torch function mode or a dispatch mode active while a checker is made sees nothing of
    its example tensors (a user's mode would run; a fake mode would make fake ones): they are made
    with the modes taken off, and the checker passes the tensors it describes once they are."""
    from bytegraph.guards.guard import TensorSpec
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    spec = TensorSpec(torch.Tensor, torch.float64, torch.device("cpu"), True, (5, 17), (17, 1))
    x = torch.randn(5, 17, dtype=torch.float64, requires_grad=True)
    with Functions(), Dispatch():
        checker = tensor_checker((spec,))
    assert seen == []
    assert checker.check(x)
    assert not checker.check(x.detach())


def test_a_checker_made_in_inference_mode_passes_calls_made_in_it():
    def fn(x):
        return x.cos()

    compiled = bytegraph.compile(fn, dynamic=False)
    with torch.inference_mode():
        x = torch.randn(3, 4)
        assert_same(compiled(x), fn(x))
        (entry,) = bytegraph.cache_entries(compiled)
        (guard,) = [g for g in entry.guards.guards if g.kind.name == "TENSOR_MATCH"]
        assert tensor_checker((guard.arg,)).check(x)
        assert_same(compiled(x), fn(x))
    assert len(bytegraph.cache_entries(compiled)) == 1


def test_variants_told_apart_by_their_tensors_keep_the_shared_parts():
    """Variants of one shape each: a checker per variant would test every variant's tensors in
    full before the one that matches; the parts let the dispatcher test what the variants share
    once and then one shape per variant."""

    def fn(x):
        return x * 2

    compiled = bytegraph.compile(fn, dynamic=False)
    for n in (2, 3, 4):
        x = torch.randn(n)
        assert_same(compiled(x), fn(x))
    source = bytegraph.guard_source(compiled)
    assert ".check(x)" not in source  # no tensor checker (the global state has its own)
    assert source.count("x.dtype is") == 1, source
    assert all(f"x.shape == ({n},)" in source for n in (2, 3, 4))
    assert len(bytegraph.cache_entries(compiled)) == 3
