"""A graph break inside a closure resumes with that closure's own cells.

Resume functions close over their template function's cells. Two wrong results this file pins
(``sys.stdout.write("")`` breaks for both engines and writes nothing):

- Closures of one code with cells of their own (``A = make(2)``, ``B = make(3)``), each breaking
  inside: the resume function was cached by code alone, so ``B`` resumed with ``A``'s ``k``
  (``driver.resume_function`` keys it by the cells too).
- A closure made anew at each call (``def inner`` in a helper called twice, or in the ``forward``
  of two instances of a module: hyper-connections' ``add_residual_fn``) is compiled once for all
  functions of its code (``callees.py``'s shared caller, guarded by what the function is made of):
  a resume function made from the traced closure's cells gave every later closure those cells.
  Its resume functions take its cells as arguments (``break_frames.free_cells``), read from the
  closure the trace found: one resume function serves every call's closure, and identical calls
  never trace again. A closure whose cells cannot be passed (zero-argument ``super()`` reads its
  ``__class__`` cell) has its cells guarded by identity instead: made again, it traces again.
"""

from __future__ import annotations

import sys
import warnings

import pytest
import torch
from difftest import assert_same, check_breaks
from dynamo_baseline import assert_no_more_breaks
from torch import nn

import bytegraph


def _make(k):
    def inner(x):
        y = x * k
        sys.stdout.write("")
        return y + k

    return inner


A, B = _make(2), _make(3)


def _two_closures(x):
    return A(x) * 10 + B(x)


def _x():
    return (torch.ones(2),)


def test_closures_of_one_code_resume_with_their_own_cells():
    check_breaks(_two_closures, _x, graphs=5, breaks=2)
    assert_no_more_breaks(2, _two_closures, torch.ones(2))


def _layer(x, k):
    r = x * k

    def inner(b):
        sys.stdout.write("")
        return b + r

    return inner(x)


def _layers(x):
    return _layer(_layer(x, 2), 3)


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        residual = x - 1
        beta = self.lin(x).sigmoid()

        def add_residual(out):
            sys.stdout.write("")
            return out * beta + residual

        return add_residual(x * 2)


class _Blocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.one, self.two = _Block(), _Block()

    def forward(self, x):
        return self.two(self.one(x))


def _run_both(fn, *args):
    expected = fn(*args)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled = bytegraph.compile(fn, backend="eager")
        results = [compiled(*args) for _ in range(3)]
    for actual in results:
        assert_same(actual, expected)
    return [str(w.message) for w in seen]


def test_a_closure_made_at_each_call_breaking_inside():
    messages = _run_both(_layers, torch.ones(2))
    assert not any("in Python" in m for m in messages), messages


def test_closures_made_by_two_modules_forward_breaking_inside():
    torch.manual_seed(0)
    model = _Blocks()
    messages = _run_both(lambda x: model(x), torch.randn(2, 4))
    assert not any("in Python" in m for m in messages), messages


def _record_then(log):
    def record(t):
        log.append(t)
        sys.stdout.write("")
        return t * 2

    return record


LOG: list = []
RECORD = _record_then(LOG)  # made once: resumed as any function, never traced again


def _calls_the_recorder(x):
    try:
        return RECORD(x) + 1
    except ValueError:
        return x


def test_a_closure_made_once_resumes_without_tracing_again():
    check_breaks(
        _calls_the_recorder,
        _x,
        graphs=1,
        breaks=1,
        calls=3,
        setup=LOG.clear,
        observe=lambda: len(LOG),
    )


def _no_free_variables(x):
    def inner(b):
        sys.stdout.write("")
        return b + 1

    return inner(x) + inner(x * 2)


def test_a_function_made_at_each_call_without_cells_still_resumes():
    check_breaks(_no_free_variables, _x, graphs=3, breaks=2)
    assert_no_more_breaks(2, _no_free_variables, torch.ones(2))


def _helper_making_closures(x, k):
    scale = x.sum()
    count = 0

    def inner(t):
        nonlocal count
        y = t * k + scale
        sys.stdout.write("")  # the break inside the closure
        count += 1
        return y - k, count

    a, n = inner(x)
    b, n = inner(a)
    return a + b, n, count


def _breaks_then_calls_the_helper(x, k):
    y = x.sin()
    sys.stdout.write("")  # the rest runs as a resume function: the helper is called from it
    return _helper_making_closures(y, k)


@pytest.mark.parametrize("fn", [_helper_making_closures, _breaks_then_calls_the_helper])
def test_identical_calls_of_closures_made_at_each_call_never_trace_again(fn):
    """Each call makes new closures (new cells) that break inside, read cells written before the
    break and write one after it: the values are eager's, and from the second identical call on
    nothing is traced (the resumed closure's cells were guarded by identity: a trace per call)."""
    compiled = bytegraph.compile(fn, backend="eager")
    x = torch.randn(3)
    for k in (2, 2):
        assert_same(compiled(x, k), fn(x, k))
    traced = bytegraph.stats()["frames"]
    for _ in range(3):
        assert_same(compiled(x, 2), fn(x, 2))
    assert bytegraph.stats()["frames"] == traced, "identical calls traced again"
    assert_same(compiled(x, 3), fn(x, 3))  # another k: the cells' contents are guarded
