"""The transformers model suite: architectures of ``zoo.py`` (tiny configs from the models' default
ones, random weights, no downloads), each with and without ``labels``, through inference and two
training steps, compared with eager on outputs (values, dtype, shape, ``requires_grad``), losses,
gradients, parameters and buffers (``suite.run_arch``).

Each test asserts bytegraph's graphs and breaks on the first inference and the first training call
as recorded in the zoo (``Arch.counts``), the graphs compiled by later identical calls
(``Arch.retraces``), no internal error and no exception eager does not raise. Where bytegraph
breaks more than torch.compile the zoo says why (``Arch.why``). ``benchmarks/models.py`` prints the
same runs beside torch.compile's.

The default run covers a representative subset per family (``Arch.default``); set
``BYTEGRAPH_ALL_MODELS=1`` for all of them (about 4 times as long). What the tracer needs from these
models is also covered construct by construct in ``tests/tracer/test_hf_constructs.py``.
"""

from __future__ import annotations

import os

import pytest
from models import suite, zoo
from models.modeltest import BytegraphEngine

pytest.importorskip("transformers")

ALL = os.environ.get("BYTEGRAPH_ALL_MODELS", "") not in ("", "0")
ARCHS = [a for a in zoo.ARCHS if ALL or a.default]


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
