"""A non-contiguous input whose strides change between calls (same shape, dtype and device): what
the trace read from the layout (``is_contiguous()``, ``stride()``, whether ``view`` applies, the
strides of an elementwise result) must not be reused for the new layout. Compared with eager on
each call."""

from __future__ import annotations

import torch
from difftest import assert_same, compile_counted


def _layout_dependent(x):
    if x.is_contiguous():
        flat = x.view(-1)
    else:
        flat = x.reshape(-1) + 100
    return flat * 2, x.stride(), x.is_contiguous(), x.t().is_contiguous()


def _elementwise(x):
    return torch.relu(x) + 1


def _intermediate_layout(x):
    y = torch.relu(x) * 2 + x  # its layout comes from the trace's shape rules, read as constants
    return y, y.stride(), y.is_contiguous(), y.t().is_contiguous()


def _layouts():
    """The same shape (4, 6) in four layouts: contiguous, transposed, a column slice, expanded."""
    base = torch.arange(48.0) - 20
    return [
        base[:24].reshape(4, 6),
        base[:24].reshape(6, 4).t(),
        base.reshape(4, 12)[:, ::2],
        base[:6].expand(4, 6),
    ]


def _check_each_layout(fn):
    compiled, counter = compile_counted(fn)
    for _ in range(2):
        for x in _layouts():
            actual, expected = compiled(x), fn(x)
            assert_same(actual, expected)
            first, eager_first = (
                (actual[0], expected[0])
                if isinstance(actual, tuple)
                else (
                    actual,
                    expected,
                )
            )
            assert first.stride() == eager_first.stride(), (x.stride(), first.stride())
    return counter


def test_a_branch_on_the_layout_follows_the_strides_of_each_call():
    _check_each_layout(_layout_dependent)


def test_an_elementwise_result_has_the_layout_of_each_input():
    _check_each_layout(_elementwise)


def test_the_layout_of_an_intermediate_read_in_the_trace_is_eager_s():
    _check_each_layout(_intermediate_layout)
