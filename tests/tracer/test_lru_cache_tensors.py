"""A ``functools.lru_cache`` wrapper called with tensors: its function is traced (the
cache left aside), with a notice, as torch.compile does (1 graph, 0 breaks, and a warning). Before,
the call broke ("not a constant")."""

import functools

import pytest
import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import dynamo_counts


@functools.lru_cache
def _double(t):
    return t * 2


def _calls_cached_with_a_tensor(x):
    return _double(x) + 1


@functools.cache
def _scaled(t, k):
    return t * k


def _calls_cache_with_a_tensor_and_a_constant(x):
    return _scaled(x + 1, 3).sum()


@pytest.mark.parametrize(
    "fn", [_calls_cached_with_a_tensor, _calls_cache_with_a_tensor_and_a_constant]
)
def test_an_lru_cache_wrapper_called_with_a_tensor_is_traced(fn):
    compiled, counter = compile_counted(fn)
    with pytest.warns(UserWarning, match="lru_cache wrapper called with tensors"):
        torch.testing.assert_close(compiled(torch.ones(3)), fn(torch.ones(3)))
    # the notice is once per wrapper; the same graph serves later calls
    check_breaks(
        fn, lambda: (torch.randn(3),), graphs=1, breaks=0, compiled=compiled, counter=counter
    )
    assert dynamo_counts(fn, torch.randn(3)) == (1, 0)


class _Cfg:
    @functools.lru_cache  # noqa: B019 (a method cached on its instance, as libraries do)
    def scale(self, t):
        return t * 3


_CFG = _Cfg()


def _method_cached(x):
    return _CFG.scale(x) - 1


def test_an_lru_cache_method_called_with_a_tensor_is_traced():
    compiled, counter = compile_counted(_method_cached)
    with pytest.warns(UserWarning, match="lru_cache wrapper called with tensors"):
        torch.testing.assert_close(compiled(torch.ones(3)), _method_cached(torch.ones(3)))
    check_breaks(
        _method_cached,
        lambda: (torch.randn(3),),
        graphs=1,
        breaks=0,
        compiled=compiled,
        counter=counter,
    )
