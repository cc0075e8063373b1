"""A module's ``__dict__`` written with a parameter, a submodule or a tensor (``m.__dict__[k] = v``,
``vars(m)[k] = v``), and names that are both a key of ``__dict__`` and a member (in
``_parameters``, ``_buffers`` or ``_modules``): CPython's attribute lookup finds the instance
``__dict__`` first, ``nn.Module.__getattr__`` (the member tables) only where it fails. Each test
compares the outputs, the module's ``__dict__`` (keys in order, values), its member tables and
``state_dict`` with eager's after every call, and the breaks with torch.compile's."""

from __future__ import annotations

import copy

import pytest
import torch
from difftest import assert_same, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

import bytegraph


class Shadowed(nn.Module):
    """A submodule, a buffer ``bb``, and a parameter ``shadow`` hidden by a tensor of the same
    name written into ``__dict__``."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("bb", torch.ones(4))
        self.shadow = nn.Parameter(torch.ones(4))
        self.__dict__["shadow"] = torch.full((4,), 5.0)


def _state(model):
    """``__dict__`` (keys in order; a module by its type, a parameter marked), the member tables'
    keys and values, and the ``state_dict`` keys."""

    def show(value):
        if isinstance(value, nn.Module):
            return type(value)
        if isinstance(value, torch.Tensor):
            return (type(value), value.tolist())
        return value

    members = [
        (name, {k: show(v) for k, v in vars(model)[name].items()})
        for name in ("_parameters", "_buffers", "_modules")
    ]
    own = [(k, show(v)) for k, v in vars(model).items() if not k.startswith("_")]
    return repr(own), repr(members), list(model.state_dict())


def stores_a_new_parameter(m, x):
    m.__dict__["w"] = nn.Parameter(torch.ones(4))  # a plain key: __setattr__ would file it
    return m.lin(x) * m.w


def stores_a_new_parameter_through_vars(m, x):
    vars(m)["w"] = nn.Parameter(torch.ones(4))
    return m.lin(x) * m.w, "w" in m._parameters


def stores_an_existing_parameter(m, x):
    m.__dict__["w"] = m.lin.weight
    return m.lin(x) + m.w.sum(), sorted(m.__dict__)[-1]


def stores_a_submodule(m, x):
    m.__dict__["act"] = nn.ReLU()
    return m.act(m.lin(x)), "act" in m._modules


def shadows_a_submodule(m, x):
    m.__dict__["lin"] = nn.Identity()  # hides _modules['lin']
    return m.lin(x)


def shadows_a_buffer(m, x):
    m.__dict__["bb"] = x.sum(0)
    return m.lin(x) * m.bb + m._buffers["bb"]


def reads_a_shadowed_parameter(m, x):
    return m.lin(x) * m.shadow + m.__dict__["shadow"], m._parameters["shadow"].sum()


def unshadows_a_parameter(m, x):
    y = m.lin(x) * m.shadow
    m.__dict__.pop("shadow", None)  # the parameter again
    return y + m.shadow


def shadows_after_reading(m, x):
    y = m.lin(x) * m.bb
    vars(m).update(bb=x.mean(0))
    return y * m.bb


WRITES = [
    (stores_a_new_parameter, "the Parameter made in the trace"),
    (stores_a_new_parameter_through_vars, "the Parameter made in the trace"),
    (stores_an_existing_parameter, ""),
    (stores_a_submodule, ""),
    (shadows_a_submodule, ""),
    (shadows_a_buffer, ""),
    (reads_a_shadowed_parameter, ""),
    (unshadows_a_parameter, ""),
    (shadows_after_reading, ""),
]


@pytest.mark.parametrize("fn, reason", WRITES, ids=[fn.__name__ for fn, _ in WRITES])
def test_dict_writes_and_shadowed_members_are_eager(fn, reason):
    """Outputs and module state as eager's; breaks: one where the trace makes an
    ``nn.Parameter`` (``reason``: torch.compile breaks there too), else none."""
    torch.manual_seed(0)
    model = Shadowed()
    reference = copy.deepcopy(model)
    fresh = copy.deepcopy(model)
    compiled, counter = compile_counted(fn)
    x = torch.randn(2, 4)
    for _ in range(3):
        assert_same(compiled(model, x), fn(reference, x))
        assert _state(model) == _state(reference)
    expected = 1 if reason else 0
    report = bytegraph.explain(fn)(copy.deepcopy(fresh), x)
    assert report.graph_break_count == expected, report.break_reasons
    assert_no_more_breaks(
        expected,
        fn,
        copy.deepcopy(fresh),
        x,
        baseline_missing="torch 2.11's Dynamo runs a method of the module's __dict__ in Python",
    )


def stores_to_a_shadowed_buffer(m, x):
    m.bb = x.sum(0)  # __setattr__ files it in _buffers; __dict__['bb'] still hides it
    return m.lin(x) * m.bb


def shadows_then_stores(m, x):
    m.__dict__["bb"] = x.mean(0)
    m.bb = x.sum(0)  # into _buffers, still hidden
    return m.lin(x) * m.bb


@pytest.mark.parametrize("fn", [stores_to_a_shadowed_buffer, shadows_then_stores])
def test_a_store_to_a_member_hidden_by_the_dict_breaks_and_is_eager(fn):
    """``nn.Module.__setattr__`` writes the member table and leaves the key that hides it: not
    modelled, the store breaks."""
    torch.manual_seed(0)
    model = Shadowed()
    model.__dict__["bb"] = torch.full((4,), 3.0)
    reference = copy.deepcopy(model)
    compiled, _ = compile_counted(fn)
    x = torch.randn(2, 4)
    for _ in range(2):
        assert_same(compiled(model, x), fn(reference, x))
        assert _state(model) == _state(reference)
    assert bytegraph.explain(fn)(copy.deepcopy(reference), x).graph_break_count == 1
