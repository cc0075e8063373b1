"""Differential tests for the constructs ``transformers`` models (GPT-2, BERT) need, one at a time:
config reads through ``PreTrainedConfig.__getattribute__`` (allowlisted) and their guards,
``ModelOutput`` creation/attribute access/return, ``func.__code__.co_varnames``, ``import`` inside a
function, ``torch.compiler.is_compiling()``, ``super().get`` on a ``dict`` subclass, ``in`` on a
``Mapping``, ``inspect.signature``, ``obj.__class__``, missing module attributes."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass

import pytest
import torch
from difftest import assert_same, check, compile_counted
from torch import nn

transformers = pytest.importorskip("transformers")
ModelOutput = transformers.utils.ModelOutput


def tiny_config(**kwargs):
    return transformers.GPT2Config(
        n_layer=1,
        n_embd=8,
        n_head=2,
        vocab_size=10,
        n_positions=8,
        bos_token_id=0,
        eos_token_id=0,
        **kwargs,
    )


def test_config_attribute_and_alias_read():
    config = tiny_config()  # ``hidden_size`` is an alias of ``n_embd`` (``attribute_map``)

    def fn(x):
        return x * config.hidden_size + (1 if config.use_cache else 0) + config.layer_norm_epsilon

    check(fn, torch.randn(3))


def test_config_change_is_guarded():
    config = tiny_config(use_cache=True)

    def fn(x):
        return x + 1 if config.use_cache else x - 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    config.use_cache = False
    assert_same(compiled(x), fn(x))
    config.n_embd = 16  # an unrelated field: no recompile
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2


def test_config_getattr_default_for_missing_attribute():
    config = tiny_config()

    def fn(x):
        return x * getattr(config, "not_a_field", 3)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    config.not_a_field = 5  # the absence was guarded
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2


@dataclass
class TinyOutput(ModelOutput):
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    extra: tuple | None = None


def test_model_output_create_read_and_return():
    def fn(x):
        out = TinyOutput(logits=x * 2, hidden=None, extra=(x + 1,))
        assert out.hidden is None and "hidden" not in out
        made = TinyOutput(logits=out.logits + out[0], hidden=out["extra"][0])
        return made, out.to_tuple(), len(out)

    check(fn, torch.randn(3))


def test_model_output_setitem_keeps_key_order():
    def fn(x):
        out = TinyOutput(x * 2)
        out["extra"] = (x,)
        out["hidden"] = x + 1  # a field before ``extra``, set after it: keys keep insertion order
        return out, out.hidden, list(out.keys())

    check(fn, torch.randn(3))


def test_code_co_varnames_of_a_function():
    def target(self, a, use_cache=None):
        return a

    def fn(x):
        index = (
            target.__code__.co_varnames.index("use_cache")
            if "use_cache" in target.__code__.co_varnames
            else -1
        )
        return x + index

    check(fn, torch.randn(3))


def test_import_inside_function():
    def fn(x):
        import math

        import torch.nn.functional as F
        from torch import relu

        return relu(F.silu(x)) * math.pi

    check(fn, torch.randn(3))


def test_is_compiling_is_true_in_the_trace():
    def fn(x):
        return x + 1 if torch.compiler.is_compiling() else x - 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x + 1)  # as under torch.compile
    assert counter.frame_count == 1


class Registry(dict):
    def get(self, key):
        return super().get(str(key)) or {}


REGISTRY = Registry(a={"k": 2})


def test_super_get_on_dict_subclass():
    def fn(x):
        return x * REGISTRY.get("a").get("k", 0) + len(REGISTRY.get("missing"))

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    REGISTRY["missing"] = {"z": 1}  # the absent key was guarded
    assert_same(compiled(x), fn(x))
    del REGISTRY["missing"]
    assert counter.frame_count == 2


class Interface(Mapping):
    _global = {"sdpa": 2, "eager": 1}

    def __getitem__(self, key):
        return self._global[key]

    def __iter__(self):
        return iter(self._global)

    def __len__(self):
        return len(self._global)


INTERFACE = Interface()


def test_in_on_mapping_uses_its_contains():
    def fn(x):
        return x * INTERFACE.get("sdpa", 0) if "sdpa" in INTERFACE else x

    check(fn, torch.randn(3))


def test_inspect_signature_parameter_count():
    class Layer(nn.Module):
        def chunk(self, a):
            return a * 2

        def forward(self, x):
            n = len(inspect.signature(self.chunk).parameters)
            return self.chunk(x) + n

    check(Layer(), torch.randn(3))


def test_class_attribute_of_a_module():
    class Layer(nn.Module):
        def forward(self, x):
            return x + len(str(self.__class__)) + len(self.__class__.__name__)

    check(Layer(), torch.randn(3))


def test_missing_module_attribute_with_default_does_not_recompile():
    class Layer(nn.Module):
        def forward(self, x):
            return x * getattr(self, "groups", 1)

    model = Layer()
    compiled, counter = compile_counted(model)
    x = torch.randn(3)
    for train in (True, False, True):
        model.train(train)
        assert_same(compiled(x), x)
    model.groups = 4  # the absence was guarded
    assert_same(compiled(x), x * 4)
    assert counter.frame_count == 2
