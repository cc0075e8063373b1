"""The vision architectures of the model suite, as data: timm and torchvision image models from
their default configs (random weights, ``pretrained=False``, fixed seed, no downloads) at a small
input size, and diffusers' ``UNet2DConditionModel`` and ``AutoencoderKL`` from tiny configs (issue
20).

``ARCHS`` lists them; ``build(arch)`` makes the model, ``inputs(arch)`` its positional and keyword
arguments; ``run(arch, engine)`` compiles it with a ``suite.Engine`` and compares inference and one
training step with an eager copy. ``benchmarks/vision_models.py`` prints every run beside
torch.compile's, ``test_vision_models.py`` checks the ``small`` ones. Nothing here imports bytegraph
(the torch.compile side runs in a process without it: see ``suite.py``).
"""

from __future__ import annotations

import copy
import signal
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from models.suite import (
    ArchRun,
    Engine,
    _phase,
    differences,
    first_tensor,
    note_compiled,
    speedup,
    state_differences,
)
from torch import nn


@dataclass(frozen=True)
class VisionArch:
    """One model of the suite. ``tc`` is torch.compile's graph breaks on the first inference and
    the first training call (measured by ``benchmarks/vision_models.py``; 0 but for an LSTM);
    where bytegraph breaks more, ``why`` says why and ``breaks`` records bytegraph's count then
    (inference, training), so that a new break still fails the test."""

    name: str  #: the suite's name (``tv_`` prefix: torchvision, ``diffusers_``: diffusers)
    family: str  #: cnn, vit, hier (hierarchical or hybrid transformers), mlp, mobile, diffusion
    make: Callable[[], nn.Module]
    size: int = 64  #: image side in pixels (batch 2, 3 channels)
    small: bool = False  #: in the CI subset (``test_vision_models.py``, ``--small``)
    tc: tuple[int, int] = (0, 0)  #: torch.compile's breaks (inference, training)
    why: str = ""  #: where bytegraph breaks more than torch.compile: the reason
    breaks: tuple[int, int] | None = None  #: with ``why``: bytegraph's breaks (inference, training)
    atol: float | None = None  #: tolerance for values (None: torch.testing's default)
    inputs: Callable[[int], tuple[tuple, dict]] | None = None  #: (args, kwargs) if not an image


def _timm(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False, **kwargs)

    return make


def _tv(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import torchvision

        return torchvision.models.get_model(name, weights=None, **kwargs)

    return make


def _unet() -> nn.Module:
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=16,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=32,
    )


def _unet_inputs(size: int) -> tuple[tuple, dict]:
    sample = torch.randn(2, 4, size, size)
    return (sample, torch.tensor([10, 500])), {"encoder_hidden_states": torch.randn(2, 7, 32)}


def _vae() -> nn.Module:
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(32, 64),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=32,
        sample_size=32,
    )


def _vae_inputs(size: int) -> tuple[tuple, dict]:
    # sample_posterior=False: the mode of the latent distribution, no random draw
    return (torch.randn(2, 3, size, size),), {}


A = VisionArch
ARCHS: list[VisionArch] = [
    # -- CNNs ----------------------------------------------------------------------------------
    A("resnet18", "cnn", _timm("resnet18"), small=True),
    A("resnet50", "cnn", _timm("resnet50")),
    A("tv_resnet18", "cnn", _tv("resnet18"), small=True),
    A("resnext26ts", "cnn", _timm("resnext26ts")),
    A("seresnext26d_32x4d", "cnn", _timm("seresnext26d_32x4d")),
    A("ecaresnet26t", "cnn", _timm("ecaresnet26t")),
    A("skresnet18", "cnn", _timm("skresnet18")),
    A("resnest14d", "cnn", _timm("resnest14d")),
    A("convnext_atto", "cnn", _timm("convnext_atto"), small=True),
    A("tv_convnext_tiny", "cnn", _tv("convnext_tiny")),
    A("efficientnet_b0", "cnn", _timm("efficientnet_b0")),
    A("tv_efficientnet_b0", "cnn", _tv("efficientnet_b0"), small=True),
    A("mixnet_s", "cnn", _timm("mixnet_s")),
    A("regnetx_002", "cnn", _timm("regnetx_002")),
    A("tv_regnet_y_400mf", "cnn", _tv("regnet_y_400mf")),
    A("densenet121", "cnn", _timm("densenet121")),
    A("dpn68", "cnn", _timm("dpn68")),
    A("dla34", "cnn", _timm("dla34")),
    A("cspresnet50", "cnn", _timm("cspresnet50")),
    A("ese_vovnet19b_dw", "cnn", _timm("ese_vovnet19b_dw")),
    A("hrnet_w18_small", "cnn", _timm("hrnet_w18_small")),
    A("nf_resnet26", "cnn", _timm("nf_resnet26")),
    A("repvgg_a0", "cnn", _timm("repvgg_a0")),
    A("rexnet_100", "cnn", _timm("rexnet_100")),
    A("botnet26t_256", "cnn", _timm("botnet26t_256", img_size=64)),
    A("xception41", "cnn", _timm("xception41")),
    A("tv_googlenet", "cnn", _tv("googlenet", aux_logits=False, init_weights=True)),
    A("tv_shufflenet_v2_x0_5", "cnn", _tv("shufflenet_v2_x0_5")),
    A("tv_squeezenet1_0", "cnn", _tv("squeezenet1_0")),
    # -- ViTs ----------------------------------------------------------------------------------
    A("vit_tiny_patch16_224", "vit", _timm("vit_tiny_patch16_224", img_size=64), small=True),
    A("deit_tiny_distilled", "vit", _timm("deit_tiny_distilled_patch16_224", img_size=64)),
    A("deit3_small_patch16_224", "vit", _timm("deit3_small_patch16_224", img_size=64)),
    A("beit_base_patch16_224", "vit", _timm("beit_base_patch16_224", img_size=64)),
    A("eva02_tiny_patch14_224", "vit", _timm("eva02_tiny_patch14_224", img_size=56), size=56),
    A("cait_xxs24_224", "vit", _timm("cait_xxs24_224", img_size=64)),
    A("xcit_nano_12_p16_224", "vit", _timm("xcit_nano_12_p16_224", img_size=64)),
    A("pit_ti_224", "vit", _timm("pit_ti_224", img_size=64)),
    A("tv_vit_b_16", "vit", _tv("vit_b_16", image_size=64)),
    # -- hierarchical and hybrid transformers --------------------------------------------------
    A("swin_tiny", "hier", _timm("swin_tiny_patch4_window7_224", img_size=56), size=56, small=True),
    A("swinv2_cr_tiny_224", "hier", _timm("swinv2_cr_tiny_224", img_size=64)),
    A("tv_swin_t", "hier", _tv("swin_t")),
    A("pvt_v2_b0", "hier", _timm("pvt_v2_b0")),
    A("coat_lite_tiny", "hier", _timm("coat_lite_tiny", img_size=64)),
    A("levit_128s", "hier", _timm("levit_128s", img_size=64)),
    A("maxvit_nano_rw_256", "hier", _timm("maxvit_nano_rw_256", img_size=64)),
    A("coatnet_nano_rw_224", "hier", _timm("coatnet_nano_rw_224", img_size=64)),
    A("twins_svt_small", "hier", _timm("twins_svt_small", img_size=64)),
    A("poolformer_s12", "hier", _timm("poolformer_s12")),
    A("convit_tiny", "hier", _timm("convit_tiny", img_size=64)),
    A("edgenext_xx_small", "hier", _timm("edgenext_xx_small")),
    A("tiny_vit_5m_224", "hier", _timm("tiny_vit_5m_224"), size=224),
    A("davit_tiny", "hier", _timm("davit_tiny")),
    # nn.LSTM: torch.compile breaks at every LSTM call (bytegraph runs it in the graph)
    A("sequencer2d_s", "hier", _timm("sequencer2d_s"), tc=(12, 13)),
    # -- MLP mixers ----------------------------------------------------------------------------
    A("mixer_s16_224", "mlp", _timm("mixer_s16_224", img_size=64), small=True),
    A("resmlp_12_224", "mlp", _timm("resmlp_12_224", img_size=64)),
    A("gmlp_ti16_224", "mlp", _timm("gmlp_ti16_224", img_size=64)),
    # -- mobile nets ---------------------------------------------------------------------------
    A("mobilenetv3_small_100", "mobile", _timm("mobilenetv3_small_100"), small=True),
    A("tv_mobilenet_v3_small", "mobile", _tv("mobilenet_v3_small")),
    A("mobilenetv4_conv_small", "mobile", _timm("mobilenetv4_conv_small")),
    A("ghostnet_100", "mobile", _timm("ghostnet_100")),
    A("lcnet_050", "mobile", _timm("lcnet_050")),
    A("mobilevit_xxs", "mobile", _timm("mobilevit_xxs"), small=True),
    A("mobilevitv2_050", "mobile", _timm("mobilevitv2_050")),
    A("efficientformer_l1", "mobile", _timm("efficientformer_l1"), size=224),
    A("efficientformerv2_s0", "mobile", _timm("efficientformerv2_s0", img_size=64)),
    A("mobileone_s0", "mobile", _timm("mobileone_s0")),
    A("fastvit_t8", "mobile", _timm("fastvit_t8")),
    A("efficientvit_b0", "mobile", _timm("efficientvit_b0")),
    # -- diffusion -----------------------------------------------------------------------------
    A("diffusers_unet", "diffusion", _unet, size=16, inputs=_unet_inputs, small=True),
    A("diffusers_vae", "diffusion", _vae, size=32, inputs=_vae_inputs, small=True),
]
BY_NAME = {a.name: a for a in ARCHS}
assert len(BY_NAME) == len(ARCHS)


def build(arch: VisionArch) -> nn.Module:
    torch.manual_seed(0)
    return arch.make()


def inputs(arch: VisionArch) -> tuple[tuple, dict]:
    """Fresh inputs, the same on every call."""
    torch.manual_seed(1)
    if arch.inputs is not None:
        return arch.inputs(arch.size)
    return (torch.randn(2, 3, arch.size, arch.size),), {}


class ModelTimeout(BaseException):
    """A model ran past its time (a BaseException: no ``except Exception`` on the way catches
    it)."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise ``ModelTimeout`` in the main thread after ``seconds`` (0: no limit)."""
    if not seconds:
        yield
        return

    def fire(signum, frame):
        raise ModelTimeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run(arch: VisionArch, engine: Engine, time_calls: int = 0, limit_s: int = 0) -> ArchRun:
    """Inference (eval, ``no_grad``, two calls) then one training step (train mode, SGD) of
    ``build(arch)`` compiled by ``engine``, each compared with an eager copy: outputs (values,
    dtype, shape, ``requires_grad``), every gradient, every parameter and buffer after the step.
    Random draws (dropout, stochastic depth) start from the same seed in both. With
    ``time_calls``, also the steady-state speedup over eager (``speedup``: that many calls each)."""
    result = ArchRun()
    try:
        with time_limit(limit_s):
            built = build(arch)  # both copies: see ``suite.state_differences``
            model, reference = copy.deepcopy(built), copy.deepcopy(built)
            with engine.active():
                compiled = engine.compile(model)
                note_compiled(model, reference)
                try:
                    _infer(arch, engine, compiled, (model, reference), result)
                    _train(arch, engine, compiled, (model, reference), result)
                    if time_calls and not result.wrong:
                        result.speedup = _speedup(arch, compiled, reference, time_calls)
                except Exception as e:  # noqa: BLE001 (eager ran the same call without error)
                    result.error = f"{type(e).__name__}: {e}"
    except ModelTimeout as e:
        result.error = f"timeout: {e}"
    return result


def _call(fn: Callable[..., Any], arch: VisionArch) -> Any:
    args, kwargs = inputs(arch)
    torch.manual_seed(2)  # the same random draws in the model for both
    return fn(*args, **kwargs)


def _infer(arch, engine, compiled, models, result: ArchRun) -> None:
    model, reference = models
    compiled.eval()
    reference.eval()
    with torch.no_grad():
        expected = _call(reference, arch)
        out, phase = _phase(engine, lambda: _call(compiled, arch))
        result.wrong += differences(out, expected, "inference output", arch.atol)
        engine.start()
        expected = _call(reference, arch)
        again = _call(compiled, arch)
        phase.retraces = engine.counts().graphs
        result.wrong += differences(again, expected, "inference output (2nd call)", arch.atol)
    result.wrong += state_differences(model, reference, "after inference", arch.atol)
    result.phases["inf"] = phase


def _loss(out: Any) -> torch.Tensor:
    return first_tensor(out).float().square().mean()


def _train(arch, engine, compiled, models, result: ArchRun) -> None:
    model, reference = models
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in models]
    compiled.train()
    reference.train()
    expected = _call(reference, arch)
    _loss(expected).backward()

    def step():
        out = _call(compiled, arch)
        _loss(out).backward()
        return out

    out, phase = _phase(engine, step)
    result.phases["train"] = phase
    result.wrong += differences(out, expected, "training output", arch.atol)
    pairs = zip(model.named_parameters(), reference.named_parameters(), strict=True)
    for (name, p), (_, q) in pairs:
        result.wrong += differences(p.grad, q.grad, f"grad {name}", arch.atol or 1e-5)
    for opt in opts:
        opt.step()
    pairs = zip(model.named_parameters(), reference.named_parameters(), strict=True)
    for (name, p), (_, q) in pairs:
        result.wrong += differences(p, q, f"parameter {name} after the step", arch.atol)
    result.wrong += state_differences(model, reference, "after the step", arch.atol)


def _speedup(arch, compiled, reference, calls: int) -> float:
    args, kwargs = inputs(arch)
    pair = (compiled, reference)
    return speedup(
        lambda: reference(*args, **kwargs), lambda: compiled(*args, **kwargs), pair, calls
    )


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return statistics.geometric_mean(values)
