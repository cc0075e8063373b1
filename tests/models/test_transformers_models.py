"""GPT-2 and BERT from ``transformers``, built from tiny configs with random weights (no downloads).

Each compiles to one graph with no break (``check_model(..., breaks=0)``) and matches eager in
inference and in training steps. What this needs from the tracer is covered construct by construct
in ``tests/tracer/test_hf_constructs.py``: ``self.config.*`` reads
(``PreTrainedConfig.__getattribute__``, allowlisted), ``ModelOutput`` creation and return,
``func.__code__.co_varnames``, ``import`` inside functions, ``torch.compiler.is_compiling()``,
``super().get`` on a ``dict`` subclass, ``in`` on a ``Mapping``, ``inspect.signature``.

GPT-2 runs with ``use_cache=False``: with the cache on, the forward creates a ``DynamicCache``,
whose construction iterates the config's per-layer view with ``Sequence.__iter__``, which stops on
an ``IndexError`` raised and caught (not traced yet: a graph break there). With that iteration
replaced, the whole forward is one graph and the returned cache is rebuilt with its layers.
"""

from __future__ import annotations

import pytest
import torch
from models.modeltest import check_model

transformers = pytest.importorskip("transformers")


def test_gpt2():
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
        use_cache=False,
    )
    check_model(transformers.GPT2LMHeadModel(config), torch.randint(0, 100, (2, 8)), breaks=0)


def test_bert():
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    check_model(transformers.BertModel(config), torch.randint(0, 100, (2, 8)), breaks=0)


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
