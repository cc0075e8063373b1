"""Module idioms of everyday model code: ``next(self.parameters())`` to probe the dtype
or device (``parameters()`` is a generator: one ``next`` takes the first), ``name in
self.module_dict``.

torch.compile's counts are taken first, on a fresh module: once bytegraph has compiled a module,
Dynamo traces into bytegraph's module hooks and counts more breaks."""

from __future__ import annotations

import copy

import pytest
import torch
from difftest import assert_same, break_count, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts
from torch import nn

from bytegraph.explain import Recorder


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2).double()

    def forward(self, x):
        p = next(self.parameters())
        it = self.b.parameters()
        w, bias = next(it), next(it)
        rest = list(it)  # exhausted: the generator is one pass
        return self.a(x.to(p.dtype)), w.dtype, bias.shape, rest, next(iter([]), None)


def test_next_of_parameters_takes_the_first():
    x = torch.randn(2, 4)
    assert dynamo_counts(Probe(), x) == (1, 0)
    m = Probe()
    check_breaks(m, lambda: (x,), graphs=1, breaks=0)


class Named(Probe):
    def forward(self, x):
        name, p = next(self.named_parameters())
        child = next(self.children())
        return x + p.sum(), name, child.out_features, len(list(self.modules()))


def test_next_of_other_member_generators():
    x = torch.randn(4)
    assert dynamo_counts(Named(), x) == (1, 0)
    m = Named()
    check_breaks(m, lambda: (x,), graphs=1, breaks=0)


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 2)})

    def forward(self, x, names):
        return [self.heads[n](x) if n in self.heads else None for n in names], "box" in self.heads


def test_in_on_a_module_dict():
    x = torch.randn(2, 4)
    names = ["cls", "mask", "box"]
    assert dynamo_counts(Heads(), x, names) == (1, 0)
    m = Heads()
    check_breaks(m, lambda: (x, names), graphs=1, breaks=0)


def test_in_on_a_module_dict_sees_a_new_key():
    m = Heads()
    x = torch.randn(2, 4)

    def add_mask():
        m.heads["mask"] = nn.Linear(4, 1)

    calls = [lambda: (x, ["cls", "mask"]), lambda: (add_mask(), (x, ["cls", "mask"]))[1]]
    # the keys of the ModuleDict are guarded: adding one recompiles
    check_breaks(m, calls[0], graphs=2, breaks=0, calls=calls)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.s = 2.0

    def forward(self, x):
        return self.lin(x) * self.s


class Stacked(nn.Module):
    """A container made in ``forward`` from the module's own layers (gMLP's
    ``nn.Sequential(*layers)(x)``), and from a layer and a module made there."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Scaled(), Scaled()])

    def forward(self, x):
        seq = nn.Sequential(*self.layers)
        tail = nn.ModuleList([self.layers[1], nn.ReLU()])
        y = seq(x)
        for m in tail:
            y = m(y)
        return y, len(seq), seq[0] is self.layers[0], type(tail).__name__


def test_a_container_built_in_forward_from_the_modules_layers():
    x = torch.randn(2, 4)
    assert dynamo_counts(Stacked(), x) == (1, 0)
    m = Stacked()
    compiled, counter, _ = check_breaks(m, lambda: (x,), graphs=1, breaks=0, calls=2)
    # what the layers hold is read through the container, and guarded where the trace found them
    m.layers[0].s = 3.0
    m.layers[1] = Scaled()
    check_breaks(m, lambda: (x,), graphs=2, breaks=0, compiled=compiled, counter=counter)


class Rewired(nn.Module):
    """A ``ModuleDict`` written in ``forward``: a child taken out and put back last, one put in
    from another attribute, one replaced by a module made there."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.d = nn.ModuleDict({"a": self.first, "b": nn.ReLU()})
        self.spare = nn.Tanh()

    def forward(self, x):
        self.d["c"] = self.spare
        del self.d["a"]
        self.d["b"] = nn.Sigmoid()
        for m in self.d.values():
            x = m(x)
        seen = list(self.d), len(self.d), "a" in self.d, hasattr(self.d, "a")
        self.d["a"] = self.first
        return x, seen


class Refused(Rewired):
    """What ``ModuleDict`` refuses: a missing key deleted, an attribute's name as a key;
    ``self.d.a`` once ``a`` is deleted."""

    def forward(self, x):
        del self.d["a"]
        errors = []
        try:
            del self.d["zz"]
        except KeyError as e:
            errors.append(repr(e))
        try:
            self.d["training"] = nn.ReLU()
        except KeyError as e:
            errors.append(repr(e))
        try:
            errors.append(self.d.a)
        except AttributeError as e:
            errors.append(repr(e))
        self.d["a"] = self.first
        return x + 1, errors, getattr(self.d, "zz", None)


def _children(model):
    """Each child of ``model.d`` in order: its name, class and which attribute of ``model`` it
    is (None for a module made in ``forward``)."""
    attrs = {id(v): k for k, v in vars(model)["_modules"].items() if k != "d"}
    return [(n, type(c), attrs.get(id(c))) for n, c in model.d._modules.items()]


@pytest.mark.parametrize("cls", [Rewired, Refused])
def test_module_dict_written_in_forward(cls):
    x = torch.randn(2, 4)
    missing = "torch 2.11's Dynamo fails on a ModuleDict key deleted in the forward (KeyError)"
    assert_no_more_breaks(0, cls(), x, baseline_missing=missing if cls is Refused else "")
    model = cls()
    eager = copy.deepcopy(model)
    compiled, counter = compile_counted(model)
    recorder = Recorder()
    for _ in range(3):
        with recorder:
            actual = compiled(x)
        expected = eager(x)
        assert_same(actual, expected)
        assert _children(model) == _children(eager)
        assert model.d["a"] is model.first
    # the first call leaves the keys in another order, which the guards see: one trace more
    assert (counter.frame_count, break_count(recorder.report())) == (2, 0)


class Relayered(nn.Module):
    """``ModuleList`` and ``Sequential`` items written in ``forward`` (``layers[i] = m``: its
    ``len``, then ``setattr``), then used in the same call and the next: a child put in from
    another attribute, one made there, an index out of range."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Tanh()])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.spare = nn.Linear(4, 4)

    def forward(self, x):
        first = self.layers[0]
        self.layers[0] = self.spare
        self.layers[-1] = nn.Sigmoid()
        self.seq[1] = nn.Softsign()
        for m in self.layers:
            x = m(x)
        errors = []
        try:
            self.layers[5] = nn.ReLU()
        except IndexError as e:
            errors.append(repr(e))
        self.spare = first
        y = self.seq(x)
        return y, len(self.layers), self.layers[0] is first, errors


def _layers(model):
    """Each child of ``model.layers`` and ``model.seq`` in order: name, class and which
    attribute of ``model`` it is (None for a module made in ``forward``)."""
    attrs = {id(v): k for k, v in vars(model)["_modules"].items()}
    return [
        (n, type(c), attrs.get(id(c)))
        for owner in (model.layers, model.seq)
        for n, c in owner._modules.items()
    ]


def test_module_list_items_written_in_forward():
    x = torch.randn(2, 4)
    assert_no_more_breaks(0, Relayered(), x)
    model = Relayered()
    eager = copy.deepcopy(model)
    compiled, counter = compile_counted(model)
    recorder = Recorder()
    for _ in range(3):
        with recorder:
            actual = compiled(x)
        expected = eager(x)
        assert_same(actual, expected)
        assert _layers(model) == _layers(eager)
        assert [n for n, _ in model.named_parameters()] == [n for n, _ in eager.named_parameters()]
    assert break_count(recorder.report()) == 0


class ShadowedThenFiled(nn.Module):
    """``layers[0] = m`` after the forward wrote the same name into ``vars(layers)``:
    ``nn.Module.__setattr__`` takes the key out of ``__dict__`` as it files the module."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])

    def forward(self, x):
        vars(self.layers)["0"] = 1.0
        self.layers[0] = nn.Sigmoid()
        return self.layers[0](x), "0" in vars(self.layers)


def test_module_list_item_written_over_a_dict_key():
    model = ShadowedThenFiled()
    eager = copy.deepcopy(model)
    compiled, _ = compile_counted(model)
    x = torch.randn(2, 4)
    for _ in range(2):
        assert_same(compiled(x), eager(x))
        assert vars(model.layers).keys() == vars(eager.layers).keys()
        assert _layers_of(model.layers) == _layers_of(eager.layers)


def _layers_of(container):
    return [(n, type(c)) for n, c in container._modules.items()]


class Inserted(nn.Module):
    """``insert`` into a ``ModuleList`` and a ``Sequential`` in ``forward`` (torch's containers'
    methods, wrapped by bytegraph to note the change of structure), ``ModuleDict.clear``."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.d = nn.ModuleDict({"a": nn.Tanh(), "b": nn.ReLU()})
        self.spare = nn.Linear(4, 4)

    def forward(self, x):
        self.layers.insert(0, self.spare)
        self.seq.insert(1, nn.Sigmoid())
        self.d.clear()
        self.d["c"] = nn.Softsign()
        for m in self.layers:
            x = m(x)
        return self.seq(x), len(self.layers), list(self.d)


def test_container_inserts_in_forward():
    x = torch.randn(2, 4)
    assert_no_more_breaks(0, Inserted(), x)
    model = Inserted()
    eager = copy.deepcopy(model)
    compiled, _ = compile_counted(model)
    recorder = Recorder()
    for _ in range(3):
        with recorder:
            actual = compiled(x)
        assert_same(actual, eager(x))
        for owner in ("layers", "seq", "d"):
            got, expected = getattr(model, owner), getattr(eager, owner)
            assert _layers_of(got) == _layers_of(expected)
        spares = [m is model.spare for m in model.layers]
        assert spares == [m is eager.spare for m in eager.layers]
    assert break_count(recorder.report()) == 0
