"""A ``torch.fx.GraphModule`` held by a module (e3nn compiles its tensor products this way):
calling it goes through its class's ``_WrappedCall`` (torch.fx's Python code, inlined like a
user's, then ``nn.Module.__call__`` and the generated ``forward``). Before, the ``_WrappedCall``
object was taken for a torch function: 1 break."""

import torch
from difftest import check
from dynamo_baseline import dynamo_counts


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, scale=2.0):
        return self.lin(x).sin() * scale + x.shape[0]


class _Holds(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.g = torch.fx.symbolic_trace(_Inner())
        self.gs = torch.nn.ModuleList([torch.fx.symbolic_trace(_Inner()) for _ in range(2)])

    def forward(self, x):
        y = self.g(x) + 1
        for g in self.gs:
            y = g(y, scale=0.5)
        return y


def test_a_graph_module_held_by_a_module_is_traced():
    torch.manual_seed(0)
    model = _Holds()
    x = torch.randn(4, 3)
    check(model, x)
    assert dynamo_counts(model, x) == (1, 0)


def test_a_graph_module_called_directly_with_grad():
    torch.manual_seed(0)
    g = torch.fx.symbolic_trace(_Inner())

    def fn(x):
        return g(x).sum()

    x = torch.randn(4, 3, requires_grad=True)
    check(fn, x)
    assert dynamo_counts(fn, x) == (1, 0)
