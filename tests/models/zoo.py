"""The ``transformers`` architectures of the model suite, as data: one ``Arch`` per model type,
built from its default config shrunk to a tiny size (random weights, fixed seed; no downloads).

``ARCHS`` lists them; ``build(arch)`` makes the model, ``inputs(arch, labels=...)`` its keyword
arguments (with or without ``labels``). Each ``Arch`` records bytegraph's graph and break counts
per variant (``counts``) and torch.compile's (``tc``, measured by ``benchmarks/models.py``): the
tests in ``test_transformers_models.py`` assert the first, the benchmark prints both side by side.
What runs a model (compile, compare with eager, count) is ``suite.py``; nothing here compiles.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy
import torch

#: Variants of one architecture: with or without ``labels``, inference then one training step.
VARIANTS = ("inf", "train", "inf_labels", "train_labels")

#: Attributes set on every config that has them (the shrinking).
_SHRINK: dict[str, Any] = dict(
    hidden_size=32,
    d_model=32,
    n_embd=32,
    embedding_size=32,
    num_hidden_layers=2,
    n_layer=2,
    num_layers=2,
    encoder_layers=2,
    decoder_layers=2,
    num_decoder_layers=2,
    num_attention_heads=2,
    n_head=2,
    num_heads=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    d_kv=16,
    intermediate_size=64,
    d_ff=64,
    ffn_dim=64,
    n_inner=64,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    vocab_size=128,
    max_position_embeddings=64,
    n_positions=64,
    num_local_experts=4,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=32,
    image_size=32,
    patch_size=8,
)

#: Token ids every config gets (defaults such as 32000 fall outside the shrunk vocabulary).
_TOKENS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)

Counts = tuple[int, int]  #: (graphs, breaks) on the first call of a variant


@dataclass(frozen=True)
class Arch:
    """One architecture of the suite. Counts are strings with one entry per variant, in the order
    of ``VARIANTS``: ``"1/0 1/0 2/1 2/1"`` is graphs/breaks on the first inference call, the first
    training call, and both again with ``labels``; ``retraces="0 0 1 1"`` the graphs compiled by
    later calls with the same inputs. A classification head sets ``config.problem_type`` on its
    first call with labels, so the second call takes another path, in eager too: the variant for
    it is traced at the end of the first call (``CompiledCode.follow``), whose count is ``2/0``."""

    name: str  #: the ``model_type`` (``AutoConfig.for_model`` key)
    family: str  #: decoder, moe, encoder, encdec, vision, audio, ssm
    head: str  #: the ``transformers`` model class
    inputs: str  #: the kind of inputs (a key of ``_INPUTS``)
    config: dict[str, Any] = field(default_factory=dict)  #: overrides on the shrunk config
    counts: str = "1/0 1/0 1/0 1/0"  #: bytegraph's graphs/breaks per variant
    tc: str = "1/0 1/0 1/0 1/0"  #: torch.compile's (``benchmarks/models.py``), per variant
    retraces: str = "0 0 0 0"  #: bytegraph's graphs compiled after the first call, per variant
    default: bool = False  #: part of the default test run (the rest: BYTEGRAPH_ALL_MODELS=1)
    why: str = ""  #: where bytegraph breaks more than torch.compile: the reason
    atol: float | None = None  #: for models whose compiled arithmetic may round differently

    def __post_init__(self) -> None:
        more = [v for v in VARIANTS if self.expected(v)[1] > self.tc_expected(v)[1]]
        assert not more or self.why, f"{self.name}: say why bytegraph breaks more on {more}"

    def expected(self, variant: str) -> Counts:
        return _counts(self.counts, variant)

    def tc_expected(self, variant: str) -> Counts:
        return _counts(self.tc, variant)

    def expected_retraces(self, variant: str) -> int:
        return int(self.retraces.split()[VARIANTS.index(variant)])


def _counts(text: str, variant: str) -> Counts:
    graphs, breaks = text.split()[VARIANTS.index(variant)].split("/")
    return int(graphs), int(breaks)


_BATCH, _SEQ = 2, 8


def _ids(vocab: int = 128, seq: int = _SEQ) -> torch.Tensor:
    return torch.randint(3, vocab, (_BATCH, seq))


def _mask(seq: int = _SEQ) -> torch.Tensor:
    mask = torch.ones(_BATCH, seq, dtype=torch.long)
    mask[1, -2:] = 0  # the second sequence is padded (right padding)
    return mask


def _text(labels: bool, label_kind: str) -> dict[str, Any]:
    ids = _ids()
    kwargs: dict[str, Any] = dict(input_ids=ids, attention_mask=_mask())
    if labels:
        kwargs["labels"] = ids.clone() if label_kind == "tokens" else torch.tensor([0, 1])
    return kwargs


def _seq2seq(labels: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(input_ids=_ids(), attention_mask=_mask())
    target = _ids(seq=6)
    kwargs["labels" if labels else "decoder_input_ids"] = target
    return kwargs


def _image(labels: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(pixel_values=torch.randn(_BATCH, 3, 32, 32))
    if labels:
        kwargs["labels"] = torch.tensor([0, 1])
    return kwargs


def _ctc(labels: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(input_values=torch.randn(_BATCH, 1600))
    if labels:
        target = torch.randint(3, 32, (_BATCH, 10))
        target[1, -3:] = -100  # a shorter second transcript
        kwargs["labels"] = target
    return kwargs


def _whisper(labels: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(input_features=torch.randn(_BATCH, 16, 64))
    kwargs["labels" if labels else "decoder_input_ids"] = _ids(seq=6)
    return kwargs


_INPUTS = {
    "causal_lm": lambda labels: _text(labels, "tokens"),
    "masked_lm": lambda labels: _text(labels, "tokens"),
    "seq_cls": lambda labels: _text(labels, "class"),
    "seq2seq": _seq2seq,
    "image_cls": _image,
    "ctc": _ctc,
    "whisper": _whisper,
}


def inputs(arch: Arch, labels: bool) -> dict[str, Any]:
    """Fresh keyword arguments for ``arch``, equal on every call. Called right before each call of
    the model, it also seeds Python's and NumPy's generators (wav2vec2's SpecAugment draws its masks
    with ``np.random``): eager and compiled calls see the same random numbers."""
    torch.manual_seed(1)
    random.seed(1)
    numpy.random.seed(1)
    return _INPUTS[arch.inputs](labels)


def config(arch: Arch) -> Any:
    """The default config of ``arch.name``, shrunk (``_SHRINK``), dropout off, then
    ``arch.config``."""
    import transformers

    defaults = transformers.AutoConfig.for_model(arch.name)
    values = defaults.to_dict()
    changes = {k: v for k, v in _SHRINK.items() if k in values}
    changes.update({k: v for k, v in _TOKENS.items() if hasattr(defaults, k)})
    for key, value in values.items():
        if isinstance(value, float) and any(
            p in key for p in ("dropout", "pdrop", "drop_prob", "layerdrop")
        ):
            changes[key] = 0.0  # dropout would make eager and compiled draw different masks
    changes["num_labels"] = 2
    changes.update(arch.config)
    return transformers.AutoConfig.for_model(arch.name, **changes)


def build(arch: Arch) -> torch.nn.Module:
    """The model, randomly initialised under a fixed seed (equal weights on every call)."""
    import transformers

    cfg = config(arch)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(transformers, arch.head)(cfg)


def _decoder(name: str, head: str, default: bool = False, **kw: Any) -> Arch:
    return Arch(name, "decoder", head, "causal_lm", default=default, **kw)


def _moe(name: str, head: str, default: bool = False, **kw: Any) -> Arch:
    return Arch(name, "moe", head, "causal_lm", default=default, **kw)


def _encoder(name: str, head: str, kind: str = "seq_cls", default: bool = False, **kw: Any) -> Arch:
    return Arch(name, "encoder", head, kind, default=default, **kw)


def _encdec(name: str, head: str, default: bool = False, **kw: Any) -> Arch:
    return Arch(name, "encdec", head, "seq2seq", default=default, **kw)


def _vision(name: str, head: str, default: bool = False, **kw: Any) -> Arch:
    return Arch(name, "vision", head, "image_cls", default=default, **kw)


_NO_CACHE = dict(use_cache=False)  # generate() tests the cache (test_generate.py)

ARCHS: list[Arch] = [
    # -- decoder LMs ---------------------------------------------------------------------------
    _decoder("gpt2", "GPT2LMHeadModel", default=True, config=_NO_CACHE, tc="1/0 1/0 2/1 2/1"),
    _decoder("llama", "LlamaForCausalLM", default=True, config=_NO_CACHE),
    _decoder("qwen2", "Qwen2ForCausalLM", config=_NO_CACHE),
    _decoder("qwen3", "Qwen3ForCausalLM", config=_NO_CACHE),
    _decoder("mistral", "MistralForCausalLM", config=_NO_CACHE),
    _decoder("gemma", "GemmaForCausalLM", default=True, config=_NO_CACHE),
    _decoder("gemma2", "Gemma2ForCausalLM", config=_NO_CACHE),
    _decoder("gemma3_text", "Gemma3ForCausalLM", config=_NO_CACHE),
    _decoder("phi", "PhiForCausalLM", default=True, config=_NO_CACHE),
    _decoder("phi3", "Phi3ForCausalLM", config=_NO_CACHE),
    _decoder("falcon", "FalconForCausalLM", config=_NO_CACHE),
    _decoder("gpt_neox", "GPTNeoXForCausalLM", default=True, config=_NO_CACHE),
    _decoder("opt", "OPTForCausalLM", default=True, config=_NO_CACHE),
    _decoder("bloom", "BloomForCausalLM", default=True, config=_NO_CACHE),
    _decoder("gptj", "GPTJForCausalLM", config=dict(_NO_CACHE, rotary_dim=8)),
    _decoder("codegen", "CodeGenForCausalLM", config=dict(_NO_CACHE, rotary_dim=8)),
    _decoder(
        "gpt_neo",
        "GPTNeoForCausalLM",
        config=dict(_NO_CACHE, attention_types=[[["global", "local"], 1]], window_size=4),
    ),
    _decoder("olmo2", "Olmo2ForCausalLM", config=_NO_CACHE),
    _decoder("stablelm", "StableLmForCausalLM", config=_NO_CACHE),
    _decoder("starcoder2", "Starcoder2ForCausalLM", config=_NO_CACHE),
    _decoder("cohere", "CohereForCausalLM", config=_NO_CACHE),
    _decoder("granite", "GraniteForCausalLM", config=_NO_CACHE),
    _decoder("gpt_bigcode", "GPTBigCodeForCausalLM", config=_NO_CACHE),
    _decoder("biogpt", "BioGptForCausalLM", config=_NO_CACHE),
    _decoder("xglm", "XGLMForCausalLM", config=_NO_CACHE),
    _decoder("persimmon", "PersimmonForCausalLM", config=_NO_CACHE),
    _decoder("smollm3", "SmolLM3ForCausalLM", config=_NO_CACHE),
    _decoder("glm4", "Glm4ForCausalLM", config=_NO_CACHE),
    _decoder("nemotron", "NemotronForCausalLM", config=_NO_CACHE),
    # -- mixture of experts --------------------------------------------------------------------
    _moe("mixtral", "MixtralForCausalLM", default=True, config=_NO_CACHE),
    _moe("qwen2_moe", "Qwen2MoeForCausalLM", default=True, config=_NO_CACHE),
    _moe("qwen3_moe", "Qwen3MoeForCausalLM", config=_NO_CACHE),
    _moe("olmoe", "OlmoeForCausalLM", config=_NO_CACHE),
    _moe("granitemoe", "GraniteMoeForCausalLM", config=_NO_CACHE),
    _moe("phimoe", "PhimoeForCausalLM", config=_NO_CACHE),
    # -- encoders ------------------------------------------------------------------------------
    _encoder("bert", "BertForSequenceClassification", default=True, counts="1/0 1/0 2/0 1/0"),
    _encoder("roberta", "RobertaForMaskedLM", "masked_lm", default=True),
    _encoder(
        "distilbert",
        "DistilBertForSequenceClassification",
        default=True,
        config=dict(dim=32, hidden_dim=64, n_layers=2, n_heads=2),
        counts="1/0 1/0 2/0 1/0",
    ),
    _encoder("albert", "AlbertForMaskedLM", "masked_lm", config=dict(embedding_size=16)),
    _encoder("electra", "ElectraForSequenceClassification", counts="1/0 1/0 2/0 1/0"),
    _encoder(
        "deberta",
        "DebertaForSequenceClassification",
        counts="1/0 1/0 1/0 1/0",
        tc="1/0 1/0 2/1 2/1",
    ),
    _encoder("deberta-v2", "DebertaV2ForMaskedLM", "masked_lm", default=True),
    _encoder("xlm-roberta", "XLMRobertaForSequenceClassification", counts="1/0 1/0 2/0 1/0"),
    _encoder("mpnet", "MPNetForMaskedLM", "masked_lm"),
    _encoder(
        "modernbert",
        "ModernBertForMaskedLM",
        "masked_lm",
        default=True,
        config=dict(global_attn_every_n_layers=2, local_attention=4),
    ),
    _encoder("roformer", "RoFormerForSequenceClassification", counts="1/0 1/0 2/0 1/0"),
    _encoder("megatron-bert", "MegatronBertForMaskedLM", "masked_lm"),
    # -- encoder-decoders ----------------------------------------------------------------------
    _encdec(
        "t5",
        "T5ForConditionalGeneration",
        default=True,
        config=dict(_NO_CACHE, decoder_start_token_id=0),
    ),
    _encdec("bart", "BartForConditionalGeneration", default=True, config=_NO_CACHE),
    _encdec("mbart", "MBartForConditionalGeneration", config=_NO_CACHE),
    _encdec("pegasus", "PegasusForConditionalGeneration", config=_NO_CACHE),
    _encdec("marian", "MarianMTModel", config=_NO_CACHE),
    _encdec("mt5", "MT5ForConditionalGeneration", config=dict(_NO_CACHE, decoder_start_token_id=0)),
    _encdec("blenderbot", "BlenderbotForConditionalGeneration", config=_NO_CACHE),
    _encdec("m2m_100", "M2M100ForConditionalGeneration", config=_NO_CACHE),
    Arch(
        "whisper",
        "encdec",
        "WhisperForConditionalGeneration",
        "whisper",
        default=True,
        config=dict(_NO_CACHE, num_mel_bins=16, max_source_positions=32, max_target_positions=32),
    ),
    # -- vision --------------------------------------------------------------------------------
    _vision("vit", "ViTForImageClassification", default=True, counts="1/0 1/0 2/0 1/0"),
    _vision("deit", "DeiTForImageClassification", counts="1/0 1/0 2/0 1/0"),
    _vision("dinov2", "Dinov2ForImageClassification", counts="1/0 1/0 2/0 1/0"),
    _vision("beit", "BeitForImageClassification", counts="1/0 1/0 2/0 1/0"),
    _vision(
        "swin",
        "SwinForImageClassification",
        default=True,
        config=dict(patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4),
        counts="1/0 1/0 2/0 1/0",
    ),
    _vision(
        "convnext",
        "ConvNextForImageClassification",
        default=True,
        config=dict(patch_size=4, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1]),
        counts="1/0 1/0 2/0 1/0",
    ),
    _vision(
        "resnet",
        "ResNetForImageClassification",
        config=dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic"),
        counts="1/0 1/0 2/0 1/0",
    ),
    _vision(
        "segformer",
        "SegformerForImageClassification",
        config=dict(
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[16, 32],
            patch_sizes=[7, 3],
            strides=[4, 2],
            num_attention_heads=[1, 2],
            mlp_ratios=[2, 2],
            decoder_hidden_size=32,
        ),
        counts="1/0 1/0 2/0 1/0",
    ),
    # -- audio ---------------------------------------------------------------------------------
    Arch(
        "wav2vec2",
        "audio",
        "Wav2Vec2ForCTC",
        "ctc",
        default=True,
        config=dict(
            conv_dim=(16, 16),
            conv_kernel=(10, 3),
            conv_stride=(5, 2),
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            vocab_size=32,
            ctc_zero_infinity=True,
        ),
        counts="1/0 10/6 1/2 10/8",
        tc="1/0 7/6 4/3 10/9",
    ),
    Arch(
        "hubert",
        "audio",
        "HubertForCTC",
        "ctc",
        config=dict(
            conv_dim=(16, 16),
            conv_kernel=(10, 3),
            conv_stride=(5, 2),
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            vocab_size=32,
            ctc_zero_infinity=True,
        ),
        counts="1/0 10/6 1/2 10/8",
        tc="1/0 7/6 4/3 10/9",
    ),
    # -- state-space ---------------------------------------------------------------------------
    Arch(
        "mamba",
        "ssm",
        "MambaForCausalLM",
        "causal_lm",
        default=True,
        config=dict(_NO_CACHE, state_size=8),
    ),
    Arch(
        "falcon_mamba",
        "ssm",
        "FalconMambaForCausalLM",
        "causal_lm",
        config=dict(_NO_CACHE, state_size=8),
    ),
    Arch(
        "rwkv",
        "ssm",
        "RwkvForCausalLM",
        "causal_lm",
        config=dict(_NO_CACHE, attention_hidden_size=32, context_length=64),
        counts="2/0 2/0 2/0 2/0",
    ),
]

BY_NAME = {a.name: a for a in ARCHS}
assert len(BY_NAME) == len(ARCHS), "duplicate architecture names"
