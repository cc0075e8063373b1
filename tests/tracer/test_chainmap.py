"""``collections.ChainMap``, a global, an argument and one made in the function: its Python methods
are inlined, and those it inherits from ``collections.abc`` (``keys`` making a ``KeysView``) read
``_collections_abc``'s globals, which that module files under ``collections.abc``
(``__name__``) but imports as ``_collections_abc``: guarded through the module's import name.
Counts beside torch.compile's."""

from __future__ import annotations

import collections

import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks

G_CHAIN = collections.ChainMap({"a": 1}, {"b": 2, "a": 5})


def _global_reads(x):
    return x + len(dict(G_CHAIN)), {**G_CHAIN}, list(G_CHAIN), len(G_CHAIN), G_CHAIN["a"]


def _argument_reads(x, chain):
    return x * chain["b"], dict(chain), "b" in chain, sorted(chain.keys()), list(chain.items())


def _made_here(x):
    chain = collections.ChainMap({"a": 1}, {"b": 2, "a": 5})
    chain["c"] = 3  # stored in the first map
    child = chain.new_child({"d": 4})
    return x + child["a"] + len(child), dict(child), chain.maps, {**child}


def _writes_global(x):
    G_CHAIN["w"] = x.shape[0]
    return x + G_CHAIN["w"], dict(G_CHAIN)


def _check(fn, make_args, **kwargs):
    check_breaks(fn, make_args, graphs=1, breaks=0, **kwargs)
    assert_no_more_breaks(0, fn, *make_args())


def test_global_chainmap_read():
    _check(_global_reads, lambda: (torch.randn(3),))


def test_chainmap_argument_read():
    _check(_argument_reads, lambda: (torch.randn(3), collections.ChainMap({"b": 7}, {"e": 1})))


def test_chainmap_made_in_the_function():
    _check(_made_here, lambda: (torch.randn(3),))


def _reset_global():
    G_CHAIN.maps[:] = [{"a": 1}, {"b": 2, "a": 5}]


def test_global_chainmap_written():
    _check(
        _writes_global,
        lambda: (torch.randn(3),),
        setup=_reset_global,
        observe=lambda: [dict(m) for m in G_CHAIN.maps],
    )


def test_global_chainmap_changed_between_calls():
    """A key added to one of the maps after compiling is seen by the next call."""
    from difftest import compile_counted

    compiled, _ = compile_counted(_global_reads)
    x = torch.randn(3)
    _reset_global()
    first = compiled(x)
    G_CHAIN.maps[1]["z"] = 9
    try:
        second, expected = compiled(x), _global_reads(x)
    finally:
        _reset_global()
    assert first[1] == {"b": 2, "a": 1}
    assert second[1] == expected[1] == {"b": 2, "a": 1, "z": 9}
    torch.testing.assert_close(second[0], expected[0])
