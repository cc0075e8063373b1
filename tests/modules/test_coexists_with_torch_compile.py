"""Importing bytegraph patches ``nn.Module`` methods (module-tree epochs): torch.compile must still
trace modules built and changed in the functions it compiles, with the breaks it has without us."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch_compile_idioms
from bytegraph.guards.epoch import EPOCH
from torch import nn

import bytegraph  # installs the patches under test


def test_torch_compile_builds_modules_in_the_function():
    def fn(x):
        lin = nn.Linear(4, 4)
        return lin(x).sum() + nn.CrossEntropyLoss()(x, torch.tensor([0, 1]))

    x = torch.randn(2, 4)
    explained = torch._dynamo.explain(fn)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch.manual_seed(0)
    expected = fn(x)
    torch.manual_seed(0)
    assert torch.equal(torch.compile(fn, backend="eager")(x), expected)


class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        return self.lin(x) * self.calls


def test_torch_compile_replays_module_attribute_stores():
    module = _Counter()
    compiled = torch.compile(module, backend="eager")
    x = torch.randn(2, 4)
    out = compiled(x)
    assert module.calls == 1
    assert torch.equal(out, module.lin(x))
    assert torch._dynamo.explain(_Counter())(x).graph_break_count == 0


# -- torch.compile's module idioms after bytegraph has compiled code calling the modules --------
# bytegraph's patches (``EPOCH`` bumps on module writes, watched member dicts, registration hooks)
# are hidden from Dynamo: on each idiom of ``tests/torch_compile_idioms.py`` torch.compile
# compiles the same graphs, with the same breaks and no more recompiles, as in a process without
# bytegraph (measured there, once). Before, Dynamo traced the patches: ``m.eval()``/``m.train()``
# and ``.to()`` recompiled on every call (3 graphs in 3 calls), buffer updates broke once,
# ``register_buffer`` 3 times, and a guard on ``OBSERVED``'s internals could raise IndexError.


@pytest.fixture(scope="module")
def without_bytegraph():
    script = Path(torch_compile_idioms.__file__)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", list(torch_compile_idioms.CASES))
def test_torch_compile_module_idioms_as_without_bytegraph(name, without_bytegraph):
    measured = torch_compile_idioms.measure(name, after_bytegraph=True)
    assert measured["same_as_eager"]
    assert measured == without_bytegraph[name]


def test_bytegraph_still_replays_the_bumps_of_calls_it_traces():
    """The hidden wrappers fold to torch's method under any tracer that folds
    ``is_dynamo_compiling()`` to True, bytegraph's included: bytegraph traces their bumps instead,
    so a change made by a traced call (``ModuleList.insert``, inlined) still moves ``EPOCH``, and
    another compiled function's module-tree check runs again instead of trusting a stale tree."""
    layers = nn.ModuleList([nn.ReLU()])

    def first(x):
        return layers[0](x)

    def prepend(x):
        layers.insert(0, nn.Identity())
        return x * 2

    x = -torch.ones(2)
    compiled_first = bytegraph.compile(first, backend="eager")
    for _ in range(2):  # the second call checks the tree (and watches its modules from then on)
        assert torch.equal(compiled_first(x), torch.zeros(2))
    before = EPOCH[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the insert breaks the graph (a weak reference made)
        bytegraph.compile(prepend, backend="eager")(x)
    assert EPOCH[0] > before
    assert isinstance(layers[0], nn.Identity)
    assert torch.equal(compiled_first(x), x)


def test_bytegraph_replays_the_bumps_of_a_wrapper_it_compiles_on_its_own():
    """``nn.Module.__setattr__(m, ...)`` called explicitly breaks inside the wrapper (its
    ``OBSERVED`` check makes a weak reference): the wrapper is then compiled as a frame of its own,
    where ``is_dynamo_compiling()`` must still be False, so its bumps run as in eager."""
    lin = nn.Linear(2, 2)
    bytegraph.compile(lambda x: lin(x), backend="eager")(torch.ones(2))  # now observed

    def store(x):
        nn.Module.__setattr__(lin, "scale", 2.0)
        return lin(x) * lin.scale

    compiled = bytegraph.compile(store, backend="eager")
    for _ in range(2):
        vars(lin).pop("scale", None)
        before = EPOCH[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert torch.equal(compiled(torch.ones(2)), lin(torch.ones(2)) * 2.0)
        assert EPOCH[0] > before
