"""Differential tests for the constructs ``transformers`` models (GPT-2, BERT) need, one at a time:
config reads through ``PreTrainedConfig.__getattribute__`` (allowlisted) and their guards,
``ModelOutput`` creation/attribute access/return, ``func.__code__.co_varnames``, ``import`` inside a
function, ``torch.compiler.is_compiling()``, ``super().get`` on a ``dict`` subclass, ``in`` on a
``Mapping``, ``inspect.signature``, ``obj.__class__``, missing module attributes."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping
from dataclasses import dataclass

import pytest
import torch
from difftest import assert_same, check, compile_counted
from torch import nn

import bytegraph

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


def test_os_environ_read_is_guarded_per_key(monkeypatch):
    # ``transformers``' SDPA attention reads ``os.environ.get("TRANSFORMERS_SDPA_FORCE_GQA", "0")``
    monkeypatch.delenv("BYTEGRAPH_TEST_FLAG", raising=False)

    def fn(x):
        if os.environ.get("BYTEGRAPH_TEST_FLAG", "0") == "1":
            x = x + 1
        if "BYTEGRAPH_TEST_FLAG" in os.environ:
            x = x * 2
        return x - int(os.getenv("BYTEGRAPH_TEST_FLAG", "5"))

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    monkeypatch.setenv("UNRELATED_VARIABLE_FOR_THE_TEST", "1")  # other keys are not guarded
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 1
    monkeypatch.setenv("BYTEGRAPH_TEST_FLAG", "1")
    assert_same(compiled(x), fn(x))
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2
    assert bytegraph.explain(fn)(x).graph_break_count == 0


def test_dict_with_bytes_keys_read_by_key():
    table = {b"a": 2, ("t", 1): 3}

    def fn(x):
        return x * table[b"a"] + table.get(b"missing", 1) + (b"a" in table)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    table[b"a"] = 5
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2


def test_lru_cache_call_with_constant_arguments_runs_once():
    # ``is_torch_greater_or_equal("2.9.0")`` in transformers: memoized, called with constants
    calls = []

    @functools.lru_cache
    def at_least(version):
        calls.append(version)
        return version >= 2

    def fn(x):
        return x + 1 if at_least(3) else x - 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for _ in range(3):
        assert_same(compiled(x), x + 1)
    assert_same(fn(x), x + 1)
    assert calls == [3]  # once, like eager: the trace made the first (real) call
    assert counter.frame_count == 1


def test_warning_once_is_emitted_once_without_a_break():
    # GPT-2 with labels: ``logger.warning_once(...)`` (an lru_cache'd method of ``Logger``)
    messages = []

    class Logger:
        @functools.lru_cache(None)  # noqa: B019 (the construct under test)
        def warning_once(self, msg):
            messages.append(msg)

    logger = Logger()

    def fn(x, kind):
        logger.warning_once(f"`loss_type={kind}` is unrecognized")
        return x * 2

    x = torch.randn(3)
    assert bytegraph.explain(fn)(x, None).graph_break_count == 0
    compiled, _ = compile_counted(fn)
    for _ in range(3):
        assert_same(compiled(x, None), x * 2)
    assert messages == ["`loss_type=None` is unrecognized"]


def test_lru_cache_with_a_mutable_result_is_the_cached_list():
    # its body is traced (no break); the list escaping is the cached one, and a change to it in
    # the trace breaks there (eager changes the cached list)
    @functools.lru_cache
    def table():
        return [1, 2]

    def fn(x):
        return x * table()[0], table()

    def grows(x):
        table().append(3)
        return x * len(table())

    compiled, _ = compile_counted(fn)
    x = torch.randn(3)
    out, cached = compiled(x)
    assert_same(out, fn(x)[0])
    assert cached is table()
    assert bytegraph.explain(fn)(x).graph_break_count == 0
    report = bytegraph.explain(grows)(x)
    # the append, then ``len(table())``: the cached list is no longer what the body makes
    assert [r.kind for r in report.break_reasons] == ["memoized_call", "memoized_call"]
    assert table() == [1, 2, 3]
    assert_same(bytegraph.compile(grows)(x), x * 4)
    assert table() == [1, 2, 3, 3]


def test_super_getitem_in_an_overriding_dict_subclass():
    # transformers' ``ACT2FN`` (``ClassInstantier``): ``__getitem__`` calls ``super().__getitem__``;
    # the guard on the item read must use dict's lookup, never run the override
    made = []

    class Instantier(dict):
        def __getitem__(self, key):
            made.append(key)
            return super().__getitem__(key) * 2

    table = Instantier(scale=3)

    def fn(x):
        return x * table["scale"]

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), x * 6)
    assert made == ["scale"]  # the override ran once (replayed), not in guards
    made.clear()
    assert "selected: entry 0" in str(bytegraph.why(compiled, x))
    assert made == []  # evaluating the guards did not run it
    dict.__setitem__(table, "scale", 4)
    assert_same(compiled(x), x * 8)
    assert counter.frame_count == 2


def test_config_attribute_store_is_replayed():
    # ``self.config.problem_type = "single_label_classification"`` in classification heads: the
    # strict dataclass ``__setattr__`` validates, then the store is replayed after the graph
    config, eager_config = tiny_config(), tiny_config()

    def fn(x, cfg):
        if cfg.problem_type is None:
            cfg.problem_type = "single_label_classification"
        return x + (1 if cfg.problem_type == "single_label_classification" else 2)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    for _ in range(3):
        assert_same(compiled(x, config), fn(x, eager_config))
        assert config.problem_type == eager_config.problem_type
    assert counter.frame_count == 2  # the second call sees the stored value (eager too)
    assert bytegraph.explain(fn)(x, tiny_config()).graph_break_count == 0


def test_config_attribute_store_of_an_invalid_value_raises_at_the_store():
    config = tiny_config()

    def fn(x):
        y = x + 1
        config.use_cache = "yes"  # the field's validator rejects a str
        return y

    compiled, _ = compile_counted(fn)
    with pytest.raises(Exception, match="use_cache") as compiled_error:
        compiled(torch.randn(3))
    with pytest.raises(Exception, match="use_cache") as eager_error:
        fn(torch.randn(3))
    assert type(compiled_error.value) is type(eager_error.value)


def test_slot_attribute_and_none_key_reads():
    # huggingface_hub's strict validators read ``dataclasses.Field.name`` (a ``__slots__`` entry)
    # and look types up in a dict keyed by classes with ``.get(typing.get_origin(str))`` (None)
    class Slotted:
        __slots__ = ("name", "scale")

        def __init__(self):
            self.name, self.scale = "w", 3

    obj = Slotted()
    table = {list: 1, None: 4}

    def fn(x):
        return x * obj.scale + table.get(None, 0) + len(obj.name)

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    obj.scale = 5
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2
    assert bytegraph.explain(fn)(x).graph_break_count == 0


def _guard_text(compiled) -> str:
    return compiled.__bytegraph__.cache.guard_source


def test_config_reads_are_guarded_past_its_getattribute_hooks():
    """A config's attributes are guarded with ``object.__getattribute__`` (C), its hooks guarded
    to stay those functions and the name to stay no alias; a change of any of these is seen."""
    config = tiny_config(use_cache=True)

    def fn(x):
        return x * config.n_positions if config.use_cache else x + 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    text = _guard_text(compiled)
    assert "object.__getattribute__" in text and ".use_cache" not in text
    config.use_cache = False  # the value read
    assert_same(compiled(x), fn(x))
    assert counter.frame_count == 2
    cls = type(config)
    aliases = cls.attribute_map
    cls.attribute_map = {**aliases, "n_positions": "n_embd"}  # the name read becomes an alias
    config.use_cache = True
    try:
        assert_same(compiled(x), fn(x))
        assert counter.frame_count == 3
    finally:
        cls.attribute_map = aliases
    hook = transformers.PreTrainedConfig.__getattribute__

    def shouting(self, key):  # a hook patched in: what guards read past must be the same one
        value = hook(self, key)
        return 7 if key == "n_positions" else value

    transformers.PreTrainedConfig.__getattribute__ = shouting
    try:
        assert_same(compiled(x), fn(x))
    finally:
        transformers.PreTrainedConfig.__getattribute__ = hook
    assert_same(compiled(x), fn(x))


def test_a_config_attribute_missing_is_guarded_past_its_hooks():
    """``hasattr(config, name)`` false: guarded as the generic lookup misses it (no key of the
    instance dict, no class attribute, no ``__getattr__``, the name no alias), and each of those
    appearing is seen."""
    config = tiny_config()

    def fn(x):
        return x * 2 if hasattr(config, "extra_scale") else x + 1

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert_same(compiled(x), fn(x))
    assert "___hasattr" not in _guard_text(compiled)
    cls = type(config)
    cls.extra_scale = 2  # on the class
    try:
        assert_same(compiled(x), fn(x))
    finally:
        del cls.extra_scale
    traced = counter.frame_count
    assert_same(compiled(x), fn(x))  # absent again: the first variant
    assert counter.frame_count == traced
    aliases = cls.attribute_map
    cls.attribute_map = {**aliases, "extra_scale": "n_embd"}  # an alias of a field it has
    try:
        assert_same(compiled(x), fn(x))
    finally:
        cls.attribute_map = aliases
    config.extra_scale = 3  # on the instance
    assert_same(compiled(x), fn(x))
