"""The transformers model suite: architectures of ``zoo.py`` (tiny configs from the models' default
ones, random weights, no downloads), each with and without ``labels``, through inference and two
training steps, compared with eager on outputs (values, dtype, shape, ``requires_grad``), losses,
gradients, parameters and buffers (``suite.run_arch``).

Each test asserts bytegraph's graphs and breaks on the first inference and the first training call
as recorded in the zoo (``Arch.counts``), the graphs compiled by later identical calls
(``Arch.retraces``), no internal error and no exception eager does not raise. Where bytegraph
breaks more than torch.compile the zoo says why (``Arch.why``). ``benchmarks/models.py`` prints the
same runs beside torch.compile's.

The default run covers a representative subset per family (``Arch.default``), counted on the
stack the counts were measured on (``MEASURED_STACK``), a smoke set elsewhere; set
``BYTEGRAPH_ALL_MODELS=1`` for all of them (about 4 times as long). What the tracer needs from these
models is also covered construct by construct in ``tests/tracer/test_hf_constructs.py``.
"""

from __future__ import annotations

import os

import pytest
import torch
from bytegraph.codegen.pyversion import VERSION
from models import suite, zoo
from models.modeltest import BytegraphEngine

transformers = pytest.importorskip("transformers")

ALL = os.environ.get("BYTEGRAPH_ALL_MODELS", "") not in ("", "0")
#: The zoo's counts are measured on one stack, the Python 3.11 line of constraints.txt (torch
#: 2.13.0); another interpreter's bytecode or another torch gives other (not wrong) counts. There,
#: and to keep CI's three concurrent interpreters within budget, a few architectures are checked
#: for results and internal errors only; the counted suite runs on the measured stack.
MEASURED_STACK = VERSION == (3, 11) and torch.__version__.split("+")[0] == "2.13.0"
SMOKE = ("gpt2", "llama", "bert", "t5")
ARCHS = [a for a in zoo.ARCHS if ALL or (a.default if MEASURED_STACK else a.name in SMOKE)]


@pytest.mark.parametrize("labels", [False, True], ids=["plain", "labels"])
@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: a.name)
def test_model(arch: zoo.Arch, labels: bool) -> None:
    run = suite.run_arch(arch, labels, BytegraphEngine())
    assert run.error is None, f"compiled model raised: {run.error}"
    assert not run.wrong, "\n".join(run.wrong[:10])
    for phase in ("inf", "train"):
        variant = phase + ("_labels" if labels else "")
        p = run.phases[phase]
        assert not p.internal, p.internal
        if MEASURED_STACK:
            assert (p.graphs, p.breaks) == arch.expected(variant), (variant, p.reasons)
            assert p.retraces == arch.expected_retraces(variant), variant


def test_zoo_covers_the_families():
    families = {a.family for a in zoo.ARCHS}
    assert len(zoo.ARCHS) >= 50
    assert {"decoder", "moe", "encoder", "encdec", "vision", "audio", "ssm"} <= families
    for name in (
        "mixtral",
        "qwen2_moe",
        "t5",
        "bart",
        "whisper",
        "vit",
        "swin",
        "convnext",
        "wav2vec2",
        "mamba",
    ):
        assert name in zoo.BY_NAME
    assert families == {a.family for a in zoo.ARCHS if a.default}  # the subset has every family


def test_gpt2_cache_made_in_forward_is_rebuilt(monkeypatch):
    """``use_cache=True``: the ``DynamicCache`` the forward creates, filled layer by layer and
    returned, is traced (one graph) and rebuilt after it. Its construction's
    ``Sequence.__iter__`` over the per-layer config view is replaced by a length-bounded loop
    (the IndexError it stops on is not traced yet; see the module docstring)."""
    import bytegraph

    view = pytest.importorskip("transformers.integrations.heterogeneity.configuration_utils")

    def iterate(self):
        for i in range(len(self)):
            yield self[i]

    monkeypatch.setattr(view._PerLayerConfigView, "__iter__", iterate)
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=True,
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 100, (2, 8))
    report = bytegraph.explain(model.forward, backend="eager")(ids)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    compiled = bytegraph.compile(model.forward, backend="eager")
    with torch.no_grad():
        out, expected = compiled(ids), model(ids)
    torch.testing.assert_close(out.logits, expected.logits)
    cache, expected_cache = out.past_key_values, expected.past_key_values
    assert type(cache) is type(expected_cache) and len(cache.layers) == 2
    for layer, expected_layer in zip(cache.layers, expected_cache.layers, strict=True):
        assert type(layer) is type(expected_layer)
        torch.testing.assert_close(layer.keys, expected_layer.keys)
        torch.testing.assert_close(layer.values, expected_layer.values)
