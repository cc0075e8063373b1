import torch
from difftest import check


def test_add_relu_graph():
    def fn(x, y):
        return torch.relu(x) + y

    check(fn, torch.randn(4), torch.randn(4))


def test_constant_return_has_no_graph():
    def fn(x, n):
        return n * 2 + 1

    check(fn, torch.randn(2), 3, graphs=0)
