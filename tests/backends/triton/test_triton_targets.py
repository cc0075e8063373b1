"""The test harness's low-precision comparison (what ``pytest -m gpu`` uses in fp16/bf16),
checked on CPU: ``check`` with fp32 inputs and parameters converted to bf16/fp16, run under the
interpreter, passes on right results and catches a wrong one."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

pytestmark = pytest.mark.interpreter_only


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_check_passes_forward_and_backward(dtype, triton_harness):
    target = triton_harness.Target("cpu", dtype)
    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.GELU())

    def fn(x, w):
        y = torch.softmax(x @ w, -1)
        return y, y.argmax(-1), (y * 100).to(torch.int32), y.cumsum(-1)

    triton_harness.check(fn, torch.randn(4, 8), torch.randn(8, 6), grad=True, target=target)
    runner = triton_harness.check(
        torch.fx.symbolic_trace(model), torch.randn(3, 8), grad=True, target=target
    )
    assert ".to(tl.float32)" in runner.source  # bf16/fp16 loads, computed in fp32


def test_low_precision_comparison_catches_a_wrong_element(triton_harness):
    ref = torch.randn(64)
    eager = ref.bfloat16()
    ours = eager.clone()
    triton_harness.assert_close_low_precision(ours, eager, eager.float().bfloat16())
    ours[7] += 0.25
    with pytest.raises(AssertionError, match="1 elements off, first at \\[7\\]"):
        triton_harness.assert_close_low_precision(ours, eager, ref.bfloat16())
    triton_harness.assert_close_low_precision(
        torch.tensor([3, 1]), torch.tensor([2, 1]), torch.tensor([2, 1])
    )
    with pytest.raises(AssertionError):
        triton_harness.assert_close_low_precision(
            torch.tensor([4, 1]), torch.tensor([2, 1]), torch.tensor([2, 1])
        )
    with pytest.raises(AssertionError):
        flags = torch.tensor([True, False])
        triton_harness.assert_close_low_precision(~flags, flags, flags)
