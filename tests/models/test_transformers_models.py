"""GPT-2 and BERT from ``transformers``, built from tiny configs with random weights (no downloads).

Each compiles to one graph with no break (``check_model(..., breaks=0)``) and matches eager in
inference and in training steps. What this needs from the tracer is covered construct by construct in
``tests/tracer/test_hf_constructs.py``: ``self.config.*`` reads (``PreTrainedConfig.__getattribute__``,
allowlisted), ``ModelOutput`` creation and return, ``func.__code__.co_varnames``, ``import`` inside
functions, ``torch.compiler.is_compiling()``, ``super().get`` on a ``dict`` subclass, ``in`` on a
``Mapping``, ``inspect.signature``.

GPT-2 runs with ``use_cache=False``: with the cache on, the forward creates a ``DynamicCache`` (a user
object with a deep class hierarchy), which the tracer cannot create yet (a graph break at
``DynamicCache(config=self.config)``).
"""

from __future__ import annotations

import pytest
import torch
from models.modeltest import check_model

transformers = pytest.importorskip("transformers")


def test_gpt2():
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
                                     bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, use_cache=False)
    check_model(transformers.GPT2LMHeadModel(config), torch.randint(0, 100, (2, 8)), breaks=0)


def test_bert():
    config = transformers.BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
                                     intermediate_size=64, vocab_size=100, max_position_embeddings=64,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    check_model(transformers.BertModel(config), torch.randint(0, 100, (2, 8)), breaks=0)
