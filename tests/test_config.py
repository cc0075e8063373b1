"""``bytegraph.config``: ``patch`` as context manager and decorator, and ``torch._dynamo.config``
values honoured (those bytegraph has) or warned about once (the others)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch._dynamo
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer.exc import BytegraphError

import bytegraph
from bytegraph import dynamo_config


def add_n(x, n):
    return x + n


def run_with_ints(fn, count):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(count):
            fn(torch.ones(1), n)


def test_patch_as_context_manager_restores():
    before = bytegraph.config.recompile_limit
    with bytegraph.config.patch(recompile_limit=2):
        assert bytegraph.config.recompile_limit == 2
        with bytegraph.config.patch("recompile_limit", 3):
            assert bytegraph.config.recompile_limit == 3
        assert bytegraph.config.recompile_limit == 2
    assert bytegraph.config.recompile_limit == before


def test_patch_as_decorator_and_with_a_dict():
    @bytegraph.config.patch({"error_on_recompile": True})
    def inside():
        return bytegraph.config.error_on_recompile

    assert inside() is True
    assert bytegraph.config.error_on_recompile is False


def test_patch_restores_after_an_exception():
    with pytest.raises(KeyError), bytegraph.config.patch(recompile_limit=1):
        raise KeyError
    assert bytegraph.config.recompile_limit == bytegraph.config.DEFAULTS["recompile_limit"]


def test_patch_of_an_unknown_setting_lists_the_settings():
    with pytest.raises(AttributeError, match="recompile_limit"):
        bytegraph.config.patch(recompile_limt=2)


def test_recompile_limit_is_read_at_each_miss():
    counter = CompileCounter()
    fn = bytegraph.compile(add_n, backend=counter, dynamic=False)
    with bytegraph.config.patch(recompile_limit=3):
        run_with_ints(fn, 6)
    assert counter.frame_count == 3


def test_error_on_recompile():
    fn = bytegraph.compile(add_n, dynamic=False)
    fn(torch.ones(1), 1)
    with bytegraph.config.patch(error_on_recompile=True), pytest.raises(BytegraphError):
        fn(torch.ones(1), 2)


def test_assume_static_by_default_false_traces_sizes_symbolically_at_once():
    counter = CompileCounter()
    fn = bytegraph.compile(lambda x: x * 2, backend=counter)
    with bytegraph.config.patch(assume_static_by_default=False):
        fn(torch.ones(3))
        fn(torch.ones(5))
    assert counter.frame_count == 1


def test_automatic_dynamic_shapes_false_recompiles_each_size():
    counter = CompileCounter()
    with bytegraph.config.patch(automatic_dynamic_shapes=False):
        fn = bytegraph.compile(lambda x: x * 2, backend=counter)
        for n in (2, 3, 4):
            fn(torch.ones(n))
    assert counter.frame_count == 3


def test_torch_recompile_limit_is_honoured():
    counter = CompileCounter()
    fn = bytegraph.compile(add_n, backend=counter, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=2):
        run_with_ints(fn, 5)
    assert counter.frame_count == 2


def test_torch_cache_size_limit_alias_is_honoured():
    counter = CompileCounter()
    fn = bytegraph.compile(add_n, backend=counter, dynamic=False)
    with torch._dynamo.config.patch(cache_size_limit=3):
        run_with_ints(fn, 5)
    assert counter.frame_count == 3


def test_our_setting_wins_over_torchs():
    counter = CompileCounter()
    fn = bytegraph.compile(add_n, backend=counter, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=2), bytegraph.config.patch(recompile_limit=4):
        run_with_ints(fn, 6)
    assert counter.frame_count == 4


def test_torch_error_on_recompile_is_honoured():
    fn = bytegraph.compile(add_n, dynamic=False)
    fn(torch.ones(1), 1)
    with torch._dynamo.config.patch(error_on_recompile=True), pytest.raises(BytegraphError):
        fn(torch.ones(1), 2)


def test_torch_setting_without_an_equivalent_is_warned_about_once(monkeypatch):
    monkeypatch.setattr(dynamo_config, "_warned", set())
    monkeypatch.setattr(dynamo_config, "_last_read", None)  # a read before this test's
    fn = bytegraph.compile(add_n, dynamic=False)
    with torch._dynamo.config.patch(optimize_ddp=False):
        with pytest.warns(UserWarning, match=r"torch._dynamo.config.optimize_ddp = False"):
            fn(torch.ones(1), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(torch.ones(1), 2)


def test_torch_settings_bytegraph_already_follows_are_not_warned_about(monkeypatch):
    monkeypatch.setattr(dynamo_config, "_warned", set())
    monkeypatch.setattr(dynamo_config, "_last_read", None)  # a read before this test's
    fn = bytegraph.compile(add_n, dynamic=False)
    with torch._dynamo.config.patch(capture_scalar_outputs=True, suppress_errors=True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(torch.ones(1), 1)
