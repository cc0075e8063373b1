"""A graph's parameters are fetched through one cached ``ParameterBlock`` per module tree (call cost
flat in the parameter count). The cache must never serve a stale parameter: every way of replacing
one is seen, including writes straight into ``module._parameters``
(``torch.func.functional_call``)."""

from __future__ import annotations

import copy
import gc
import io
import pickle
import weakref

import torch
from bytegraph.backends.debug import CompileCounter
from bytegraph.guards.epoch import WatchedDict
from bytegraph.tracer.variables.modules import ParameterBlock
from torch import nn

import bytegraph


class Net(nn.Module):
    def __init__(self, layers: int = 3):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def _compiled(layers: int = 3):
    model, counter = Net(layers), CompileCounter()
    bytegraph.compile(model, backend=counter)
    return model, counter


def _blocks(model) -> list[ParameterBlock]:
    (variant,) = bytegraph.cache_entries(model)
    cells = variant.fn.__closure__ or ()
    return [c.cell_contents for c in cells if isinstance(c.cell_contents, ParameterBlock)]


def _check(model, x):
    torch.testing.assert_close(model(x), Net.forward(model, x))


def test_parameters_come_from_one_block_fetched_once():
    model, counter = _compiled()
    x = torch.randn(2, 4)
    _check(model, x)
    (block,) = _blocks(model)
    fetched = []
    original = block.fetch
    block.fetch = lambda root: fetched.append(root) or original(root)
    for _ in range(5):
        _check(model, x)
    assert fetched == [] and counter.frame_count == 1
    assert type(model.layers[0]._parameters) is WatchedDict


def test_direct_write_into_parameters_dict_is_seen():
    model, counter = _compiled()
    x = torch.randn(2, 4)
    _check(model, x)
    model.layers[1]._parameters["weight"] = nn.Parameter(torch.randn(4, 4))  # bypasses __setattr__
    _check(model, x)
    model.layers[2]._parameters.update(bias=nn.Parameter(torch.randn(4)))
    _check(model, x)
    assert counter.frame_count == 1  # same structure: the same graph, the new parameters


def test_direct_write_into_modules_dict_is_seen():
    model, _ = _compiled()
    x = torch.randn(2, 4)
    other = nn.Linear(4, 4)  # made first: making a module moves the epoch by itself
    _check(model, x)
    model.layers._modules["0"] = other
    _check(model, x)


def test_functional_call_uses_the_given_parameters():
    model, _ = _compiled()
    x = torch.randn(2, 4)
    _check(model, x)
    params = {name: torch.randn_like(p) for name, p in model.named_parameters()}
    got = torch.func.functional_call(model, params, (x,))
    reference = copy.deepcopy(model)
    want = torch.func.functional_call(reference, params, (x,))
    torch.testing.assert_close(got, want)
    _check(model, x)  # and its own parameters again afterwards


def test_instances_sharing_a_compiled_class_forward_get_their_own_parameters():
    class Shared(Net):
        pass

    Shared.forward = bytegraph.compile(Net.forward, backend="eager")
    a, b = Shared(), Shared()
    x = torch.randn(2, 4)
    for _ in range(3):
        for m in (a, b):
            torch.testing.assert_close(m(x), Net.forward(m, x))
    assert len(bytegraph.cache_entries(Shared.forward)) == 1  # one graph serves both instances


def test_watched_models_pickle_copy_and_save_as_plain_dicts():
    model, _ = _compiled()
    x = torch.randn(2, 4)
    model(x)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model.layers[0]))):
        assert type(clone._parameters) is dict and type(clone._modules) is dict
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh = Net()
    fresh.load_state_dict(torch.load(buffer))
    torch.testing.assert_close(Net.forward(fresh, x), model(x))


def test_block_does_not_keep_a_dead_model_parameters_alive():
    compiled = bytegraph.compile(Net.forward, backend="eager")
    model = Net()
    compiled(model, torch.randn(2, 4))
    weight = weakref.ref(model.layers[0].weight)
    del model
    gc.collect()
    assert weight() is None
