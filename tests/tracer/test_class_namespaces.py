"""A class's namespace read as a mapping: ``vars(Cfg)``, ``Cfg.__dict__`` and a proxy of it kept in
a global (``NS = Cfg.__dict__``), read by key, ``get``, ``in``, iterated, its items filtered,
beside a tensor operation. The proxy is read-only: the trace reads the values it shows, guarded
(a class attribute changed, added or deleted between calls traces again), and refuses a store to
the class around the read in one trace (the pending store would not be in the namespace read).
Counts beside torch.compile's (``assert_no_more_breaks``).
"""

from __future__ import annotations

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


class Cfg:
    x = 1
    scale = 2.0
    name = "n"


NS = Cfg.__dict__


def _vars_item(t):
    return t * vars(Cfg)["x"]


def _dict_item(t):
    return t + Cfg.__dict__["x"]


def _dict_get(t):
    return t + Cfg.__dict__.get("x", 0) + Cfg.__dict__.get("y", 0)


def _contains(t):
    return t + 1, "x" in Cfg.__dict__, "y" in Cfg.__dict__


def _names_filtered(t):
    return t + 1, [k for k in list(Cfg.__dict__) if not k.startswith("__")]


def _items_iterated(t):
    out = t
    for k, v in vars(Cfg).items():
        if not k.startswith("__") and isinstance(v, (int, float)):
            out = out * v
    return out


def _global_proxy(t):
    return t + NS["x"], len([k for k in NS if not k.startswith("_")]), NS.get("y")


def _global_proxy_items(t):
    public = {k: v for k, v in NS.items() if not k.startswith("_")}
    return t * public.get("scale", 1.0), public, "y" in NS


READS = [
    _vars_item,
    _dict_item,
    _dict_get,
    _contains,
    _names_filtered,
    _items_iterated,
    _global_proxy,
    _global_proxy_items,
]


@pytest.mark.parametrize("fn", READS)
def test_class_namespace_read(fn):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        fn,
        torch.randn(3),
        baseline_missing="torch 2.11's Dynamo runs the call in Python (a mappingproxy's method)",
    )


@pytest.mark.parametrize("fn", READS)
def test_class_changed_between_calls_traces_again(fn):
    compiled, counter = compile_counted(fn)
    t = torch.randn(3)
    try:
        assert_same(compiled(t), fn(t))
        Cfg.x = 2  # a value changed
        assert_same(compiled(t), fn(t))
        Cfg.y = 1  # a name added
        assert_same(compiled(t), fn(t))
        del Cfg.y
        Cfg.x = 1
        assert_same(compiled(t), fn(t))
    finally:
        Cfg.x = 1
        if "y" in vars(Cfg):
            del Cfg.y
    assert counter.frame_count == 3  # the two changes each traced; the restored class hits


def _store_after_reading_the_global_proxy(t):
    before = NS["x"]
    Cfg.x = before + 1
    return t * before, NS["x"], Cfg.x


def _read_after_a_store(t):
    Cfg.x = 5
    return t + NS["x"], vars(Cfg)["x"]


def _reset_cfg():
    Cfg.x = 1


@pytest.mark.parametrize("fn", [_store_after_reading_the_global_proxy, _read_after_a_store])
def test_store_to_the_class_around_a_namespace_read(fn):
    # the store is pending until the graph ran: the namespace read beside it goes to Python
    try:
        check_breaks(
            fn,
            lambda: (torch.randn(3),),
            graphs=1,
            breaks=1,
            setup=_reset_cfg,
            observe=lambda: dict(vars(Cfg)),
        )
    finally:
        _reset_cfg()
