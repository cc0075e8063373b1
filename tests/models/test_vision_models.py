"""The vision model suite, small form: a few models per family of ``vision_zoo.py``
(``VisionArch.small``: timm and torchvision CNNs, a ViT, a Swin, an MLP mixer, mobile nets, and
diffusers' UNet and VAE from tiny configs), compiled by bytegraph (backend ``eager``), inference
then one training step compared with eager on outputs (values, dtype, shape, ``requires_grad``),
gradients, parameters and buffers after an SGD step (``vision_zoo.run``).

Each test asserts that nothing is wrong, nothing raises that eager does not, no internal error, no
graph compiled again by a second identical call, and that bytegraph breaks no more than
torch.compile did (``VisionArch.tc``, measured by ``benchmarks/vision_models.py``, which runs the
whole suite beside torch.compile); where it breaks more, the zoo says why (``VisionArch.why``) and
the count it had then (``VisionArch.breaks``) bounds it, so a new break still fails.

Python 3.11 skips this module: its torch is the 2.13 CPU wheel, and PyPI's torchvision for torch
2.13 (0.28.0) is a CUDA build whose C operators do not load beside it (``import torchvision``
fails registering ``torchvision::nms``); no torchvision build matching it is on PyPI, and timm and
diffusers' models need torchvision. On 3.12 (torch 2.11, torchvision 0.26) and 3.13 (torch 2.15,
torchvision 0.29.2, whose wheel takes any torch from 2.14) the libraries are test dependencies, and
a missing one fails the import instead of skipping.
"""

from __future__ import annotations

import sys

import pytest

if sys.version_info < (3, 12):
    pytest.importorskip("torchvision", reason="no torchvision matches torch 2.13's CPU wheel")
    pytest.importorskip("timm")
    pytest.importorskip("diffusers")
else:
    import diffusers  # noqa: F401
    import timm  # noqa: F401
    import torchvision  # noqa: F401

from models import vision_zoo
from models.modeltest import BytegraphEngine

SMALL = [a for a in vision_zoo.ARCHS if a.small]


@pytest.mark.parametrize("arch", SMALL, ids=lambda a: a.name)
def test_model(arch: vision_zoo.VisionArch) -> None:
    run = vision_zoo.run(arch, BytegraphEngine())
    assert run.error is None, f"compiled model raised: {run.error}"
    assert not run.wrong, "\n".join(run.wrong[:10])
    breaks = []
    for phase in ("inf", "train"):
        p = run.phases[phase]
        assert not p.internal, p.internal
        assert p.graphs >= 1, (phase, "nothing compiled", p.reasons)
        breaks.append(p.breaks)
        reasons = "\n".join(p.reasons)
        limit = arch.breaks if arch.why else arch.tc
        assert p.breaks <= limit[len(breaks) - 1], f"{phase}: {p.breaks} breaks\n{reasons}"
    assert run.phases["inf"].retraces == 0


def test_the_small_form_covers_every_family():
    assert len(vision_zoo.ARCHS) >= 50
    assert {a.family for a in SMALL} == {a.family for a in vision_zoo.ARCHS}
    names = {a.name for a in SMALL}
    assert {"diffusers_unet", "diffusers_vae", "vit_tiny_patch16_224", "swin_tiny"} <= names
    for arch in vision_zoo.ARCHS:  # an exception is explained and bounded
        assert (arch.breaks is not None) == bool(arch.why), arch.name
