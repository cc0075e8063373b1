"""``transformers`` ``ModelOutput`` objects given to a compiled function (a loss function's
``outputs``, a training step's helper): read as the dict-and-dataclass they are, their keys guarded
and values read with ``dict.__getitem__``, a field without a key read as its attribute, a
subclass's property inlined; stores to them break. And one object, however often the rewritten
code needs one made in the trace: a store to it at a break reaches the object the code goes on
with. Counts beside torch.compile's."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

outputs = pytest.importorskip("transformers.modeling_outputs")
CausalLMOutput = outputs.CausalLMOutput


@dataclass
class WithProperty(CausalLMOutput):
    extra: torch.Tensor | None = None

    @property
    def doubled(self):
        return self.logits * 2


def _reads(out, t):
    return (
        out.logits * 2 + t,
        out["logits"].sum(),
        len(out),
        list(out.keys()),
        out.loss is None,
        out[0].shape,
        out.to_tuple()[0],
        "loss" in out,
        out.get("loss"),
        list(out.items())[0][0],
        isinstance(out, dict),
        type(out).__name__,
    )


def _loss(out, labels):
    return torch.nn.functional.cross_entropy(out.logits, labels)


def test_an_output_read_in_a_loss_function():
    check_breaks(
        _loss,
        lambda: (CausalLMOutput(logits=torch.randn(4, 5)), torch.tensor([0, 1, 2, 3])),
        graphs=1,
        breaks=0,
    )
    assert_no_more_breaks(0, _loss, CausalLMOutput(logits=torch.randn(4, 5)), torch.arange(4))


def test_an_output_read_as_dict_and_dataclass():
    check_breaks(
        _reads,
        lambda: (CausalLMOutput(logits=torch.randn(2, 3)), torch.ones(3)),
        graphs=1,
        breaks=0,
    )
    assert_no_more_breaks(0, _reads, CausalLMOutput(logits=torch.randn(2, 3)), torch.ones(3))


def test_other_keys_on_the_next_call_are_seen():
    with_loss = CausalLMOutput(logits=torch.randn(2, 3), loss=torch.tensor(2.0))
    calls = [
        lambda: (CausalLMOutput(logits=torch.randn(2, 3)), torch.ones(3)),
        lambda: (with_loss, torch.ones(3)),
    ]
    check_breaks(_reads, None, graphs=2, breaks=0, calls=calls)


def _field_attribute(out, t):
    return out.loss + t  # set as an attribute only: ModelOutput adds no key for it


def test_a_field_set_without_its_key():
    def make():
        out = CausalLMOutput(logits=torch.randn(2))
        out.loss = torch.ones(2) * 5
        return out, torch.ones(2)

    check_breaks(_field_attribute, make, graphs=1, breaks=0)


def _property(out, t):
    return out.doubled + t, out.extra


def test_a_subclass_property():
    check_breaks(
        _property, lambda: (WithProperty(logits=torch.randn(2)), torch.ones(2)), graphs=1, breaks=0
    )


def _store(out, t):
    out["loss"] = t.sum()  # ModelOutput.__setitem__: runs in Python
    return out.loss + 1, len(out)


def test_a_store_to_a_given_output_breaks_and_is_done():
    check_breaks(
        _store, lambda: (CausalLMOutput(logits=torch.randn(2)), torch.ones(2)), graphs=2, breaks=1
    )


def _made_then_stored(t):
    out = CausalLMOutput(logits=t)
    out.logits = t * 3  # a break: the store must reach the object the code goes on with
    return out.logits + 1, out["logits"]


def test_an_output_made_in_the_trace_is_one_object_at_a_break():
    check_breaks(_made_then_stored, lambda: (torch.ones(2),), graphs=2, breaks=1)
