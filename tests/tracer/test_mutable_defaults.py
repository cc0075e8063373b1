"""A module's ``forward`` with a mutable default (x-transformers' ``embed_ids=dict()``): the method
of a module reached from an input has no source (its class is trusted), so the default was a
constant of the trace and reading its contents broke (const_guard). It is read through
``forward.__defaults__`` now: guarded there, and changed there by the replay."""

import torch
from difftest import check, compile_counted
from dynamo_baseline import dynamo_counts

import bytegraph


class _Reads(torch.nn.Module):
    def forward(self, x, extra=dict(), *, scale=dict(a=2.0)):  # noqa: B006 (the construct)
        for name, value in extra.items():
            x = x + value * len(name)
        return x * scale["a"]


class _Grows(torch.nn.Module):
    def forward(self, x, seen=[]):  # noqa: B006 (the construct)
        seen.append(1)
        return x * len(seen)


class _Outer(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) + 1


def test_a_dict_default_read_in_forward():
    model = _Outer(_Reads())
    x = torch.randn(3)
    compiled = check(model, x)[0]
    assert dynamo_counts(model, x) == (1, 0)
    _Reads.forward.__defaults__[0]["ab"] = 3.0  # changes what eager reads: the guard sees it
    torch.testing.assert_close(compiled(x), model(x))
    _Reads.forward.__kwdefaults__["scale"]["a"] = -1.0
    torch.testing.assert_close(compiled(x), model(x))


def test_a_list_default_appended_in_forward_grows_as_in_eager():
    model = _Outer(_Grows())
    x = torch.ones(2)
    seen = _Grows.forward.__defaults__[0]
    compiled, counter = compile_counted(model)
    torch.testing.assert_close(compiled(x), x * 1 + 1)
    torch.testing.assert_close(model(x), x * 2 + 1)
    torch.testing.assert_close(compiled(x), x * 3 + 1)
    assert seen == [1, 1, 1]
    report = bytegraph.explain(model)(x)
    assert seen == [1, 1, 1, 1]
    assert report.graph_break_count == 0
    assert dynamo_counts(model, x)[1] == 0
