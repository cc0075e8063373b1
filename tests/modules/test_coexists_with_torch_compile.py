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


def test_dynamo_converts_no_bookkeeping_frame_where_its_code_runs_in_python():
    """Where code torch.compile runs executes ``m.x = v`` in Python (here a frame Dynamo skips; a
    graph break does the same), Dynamo's frame hook converted the frames of bytegraph's bump, its
    ``OBSERVED`` lookup and its same-value check, and of the death callbacks of its weak references
    the collector ran meanwhile: it traced bytegraph's tables, and crashed building one that a death
    callback changed meanwhile (``dictionary changed size during iteration``, a CI run). Now the
    hook converts only the wrappers it is meant to see (they fold to torch's method) and the
    entries of compiled functions (torch.compile traces the user's function through them; each has
    a code object of its own: entries sharing one ran Dynamo's code over another entry's globals,
    ``NameError``), and the bumps still run: bytegraph's compiled code sees the change."""
    import gc

    import torch._dynamo.convert_frame as convert_frame
    from bytegraph.guards.epoch import HIDDEN_WRAPPERS

    module = nn.Linear(4, 4)
    read = bytegraph.compile(lambda x: module(x) * getattr(module, "tag", 1.0), backend="eager")
    x = torch.randn(2, 4)
    for _ in range(2):  # the second call checks the tree: ``module`` is observed from then on
        read(x)

    @torch._dynamo.decorators.skip
    def retag(m, tag):
        m.tag = tag
        m.register_buffer("seen", torch.zeros(1))
        for _ in range(3):  # modules observed and dropped: their death callbacks run here
            dropped = nn.Linear(1, 1)
            bytegraph.compile(lambda y, d=dropped: d(y), backend="eager")(torch.ones(1))
            del dropped
            gc.collect()

    def fn(x, m):
        retag(m, 3.0)
        return x + 1

    torch._dynamo.reset()
    before = EPOCH[0]
    torch.compile(fn, backend="eager")(x, module)
    assert EPOCH[0] > before and module.tag == 3.0 and hasattr(module, "seen")
    assert torch.equal(read(x), module(x) * 3.0)
    root = Path(bytegraph.__file__).resolve().parents[1]
    packages = tuple(str(root / name) for name in ("bytegraph", "tracer", "guards", "codegen"))
    converted = {ref() for ref in convert_frame.input_codes.seen} - {None}
    ours = {
        code.co_name
        for code in converted
        if code.co_filename.startswith((*packages, str(root / "backends"), "<bytegraph"))
    }
    assert ours <= {"___entry"} | {code.co_name for code in HIDDEN_WRAPPERS}, ours


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
