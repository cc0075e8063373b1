"""``t.data = value`` on an input tensor or a parameter, in the graph: the object keeps its
identity, class, ``requires_grad`` and ``.grad`` and takes ``value``'s storage, shape, dtype and
device; later reads in the call see the new data, and so does Python after it. Each case is
compared with eager (results, inputs after the call, aliasing) and its break count with
torch.compile's."""

import pytest
import torch
from difftest import assert_same, check, check_breaks
from dynamo_baseline import assert_no_more_breaks
from torch import nn

import bytegraph


def _data_of_an_input(x, y):
    x.data = y * 2
    return x + 1, x.shape, x


def test_data_of_an_input_is_replaced_in_the_graph():
    make = lambda: (torch.ones(3), torch.arange(4.0))  # noqa: E731 (another shape)
    check_breaks(_data_of_an_input, make, graphs=1, breaks=0)
    assert_no_more_breaks(0, _data_of_an_input, *make())


def _data_of_a_leaf(x, y):
    before = x * 3
    x.data = y
    return before, x * 3, x.requires_grad, x.is_leaf


def test_a_leaf_keeps_requires_grad_and_grad():
    def make():
        x = torch.ones(3, requires_grad=True)
        x.grad = torch.full((3,), 5.0)
        return x, torch.arange(3.0)

    check_breaks(_data_of_a_leaf, make, graphs=1, breaks=0)
    assert_no_more_breaks(0, _data_of_a_leaf, *make())


class _Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))


def _data_of_a_parameter(m, y):
    m.w.data = y.clone()
    return m.w * 2, type(m.w)


def test_data_of_a_parameter():
    make = lambda: (_Holder(), torch.arange(3.0))  # noqa: E731
    check_breaks(_data_of_a_parameter, make, graphs=1, breaks=0)
    assert_no_more_breaks(0, _data_of_a_parameter, *make())


class _Resets(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(2, 2))

    def forward(self, x):
        self.w.data = torch.zeros(2, 2) + x.sum()
        return x @ self.w


def test_data_of_a_parameter_in_forward_stays_after_the_call():
    compiled, eager = _Resets(), _Resets()
    compiled.w.grad, eager.w.grad = torch.ones(2, 2), torch.ones(2, 2)
    check(compiled, torch.ones(2, 2), graphs=1, breaks=0, calls=1)  # compiles it in place
    eager(torch.ones(2, 2))
    torch.testing.assert_close(compiled.w, eager.w)
    torch.testing.assert_close(compiled.w.grad, eager.w.grad)
    assert isinstance(compiled.w, nn.Parameter) and compiled.w.requires_grad
    assert_no_more_breaks(0, _Resets(), torch.ones(2, 2))


def _shares_storage(x, v):
    x.data = v
    v.add_(1)
    return x * 1


def test_the_tensor_shares_the_new_data():
    make = lambda: (torch.zeros(2), torch.arange(2.0))  # noqa: E731
    check_breaks(_shares_storage, make, graphs=1, breaks=0)
    assert_no_more_breaks(0, _shares_storage, *make())


def _data_of_another_dtype(x, y):
    x.data = y.double()
    return x + 1, x.dtype


def test_data_of_another_dtype():
    # torch.compile breaks here ("mutating .data to a new one with the same dtype" only)
    make = lambda: (torch.ones(3), torch.arange(3.0))  # noqa: E731
    check_breaks(_data_of_another_dtype, make, graphs=1, breaks=0)


def _after_the_call(x, y):
    x.data = y
    return None


def test_python_sees_the_new_data_after_the_call():
    x, y = torch.ones(3), torch.arange(5.0)
    compiled, _ = check(_after_the_call, torch.ones(3), torch.arange(5.0), calls=1)
    compiled(x, y)
    assert x.shape == (5,) and x.data_ptr() == y.data_ptr()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backends_tracing_with_aot_keep_the_assignment(backend):
    # AOTAutograd keeps only tensor operations: the node must run when the graph runs
    x, y = torch.ones(3), torch.arange(4.0)
    got = bytegraph.compile(_data_of_an_input, backend=backend)(x, y)
    x2, y2 = torch.ones(3), torch.arange(4.0)
    expected = _data_of_an_input(x2, y2)
    assert_same(got, expected)
    assert_same(x, x2)


class _Grows(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        out = self.w.sum() + x.sum()
        self.w.data = torch.ones(x.shape[0] + self.w.shape[0])
        return out


def test_later_calls_see_the_parameter_the_call_left():
    # the parameter's shape changes at every call: each call's guards see the new one
    compiled, eager = _Grows(), _Grows()
    bytegraph.compile(compiled, backend="eager")
    for _ in range(4):
        assert_same(compiled(torch.ones(2)), eager(torch.ones(2)))
        assert_same(compiled.w, eager.w)
