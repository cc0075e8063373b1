"""``model.generate()`` with the forward compiled (``bytegraph.compile(model)``), greedy, with
the default ``DynamicCache`` and with ``cache_implementation="static"``, for GPT-2, LLaMA, Qwen2,
Mistral, Gemma and Gemma 2 configs (tiny, random weights).

Each test asserts: the generated tokens equal eager's; no graph break in any step (torch.compile
has none either); the traces settle after the first decoding steps (prefill, the first decode step,
then one variant dynamic in the cache length: a fixed number of traces whatever the number of
tokens); and a second ``generate`` call traces nothing. ``benchmarks/generate.py`` times the decode
step against eager and torch.compile.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from models import zoo

import bytegraph
from bytegraph.explain import Recorder, Report

pytest.importorskip("transformers")

#: Gemma-style: gemma, and gemma2 (sliding-window layers beside global ones, logit soft-capping).
MODELS = ["gpt2", "llama", "qwen2", "mistral", "gemma", "gemma2"]
#: Traces per generate call: prefill, first decode step, then decode with a dynamic cache length
#: (a static cache has one size: prefill and decode).
TRACES = {"dynamic": 3, "static": 2}


def build(name: str) -> torch.nn.Module:
    arch = zoo.BY_NAME[name]
    arch = zoo.Arch(
        arch.name, arch.family, arch.head, arch.inputs, dict(arch.config, use_cache=True)
    )
    return zoo.build(arch).eval()


def generate(model, ids, cache: str, tokens: int):
    kwargs = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
    if cache == "static":
        kwargs["cache_implementation"] = "static"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)


@pytest.mark.parametrize("cache", ["dynamic", "static"])
@pytest.mark.parametrize("name", MODELS)
def test_generate_matches_eager_and_settles(name: str, cache: str) -> None:
    model = build(name)
    torch.manual_seed(3)
    ids = torch.randint(3, 128, (1, 5))
    expected = generate(model, ids, cache, tokens=10)
    bytegraph.compile(model, backend="eager")
    with Recorder() as recorder:
        tokens = generate(model, ids, cache, tokens=10)
    report = Report(recorder.records)
    assert torch.equal(tokens, expected)
    assert report.graph_break_count == 0, str(report)
    assert len(recorder.records) == TRACES[cache], report.recompiles
    with Recorder() as again:
        assert torch.equal(generate(model, ids, cache, tokens=10), expected)
    assert not again.records, Report(again.records).recompiles


def test_generate_batch_with_left_padding():
    model = build("llama")
    torch.manual_seed(4)
    ids = torch.randint(3, 128, (2, 6))
    mask = torch.ones_like(ids)
    ids[0, :2], mask[0, :2] = 0, 0  # the first prompt is two tokens shorter, padded on the left
    kwargs = dict(attention_mask=mask, max_new_tokens=8, min_new_tokens=8, do_sample=False)
    expected = model.generate(ids, **kwargs)
    bytegraph.compile(model, backend="eager")
    with Recorder() as recorder:
        tokens = model.generate(ids, **kwargs)
    assert torch.equal(tokens, expected)
    assert Report(recorder.records).graph_break_count == 0
    assert len(recorder.records) == TRACES["dynamic"]
