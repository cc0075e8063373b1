"""``{**m}`` and ``f(**m)`` of any mapping: CPython's ``dict_merge`` takes any object whose type has
``keys`` and reads ``m[k]`` for each key of ``list(m.keys())``, the same rule as ``dict(m)``; a
dict subclass is read through its storage only where its ``__iter__`` is dict's. The methods
log their calls (``LOG``, compared with eager's) to check their order;
counts beside torch.compile's."""

from __future__ import annotations

import types

import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

LOG: list = []


class Mapping:
    def __init__(self, **items):
        self.d = dict(items)

    def keys(self):
        LOG.append("keys")
        return self.d.keys()

    def __getitem__(self, key):
        LOG.append(("getitem", key))
        return self.d[key] * 10


class KeysGenerator(Mapping):
    def keys(self):
        LOG.append("keys")
        for key in self.d:
            LOG.append(("yield", key))
            yield key


class IteratesOwnWay(dict):
    """A dict subclass whose ``__iter__`` is its own: ``dict_merge`` reads ``keys()`` and
    ``__getitem__``, not the storage."""

    def __iter__(self):
        return iter(["x"])

    def keys(self):
        LOG.append("keys")
        return ["x", "y"]

    def __getitem__(self, key):
        LOG.append(("getitem", key))
        return key * 2


G_MAP = Mapping(a=1, b=2)


def keywords(**kw):
    return kw


def _star_global(x):
    merged = {**G_MAP}
    return x + merged["a"], merged


def _star_argument(x, m):
    merged = {"first": 0, **m, "last": 9}
    return x * len(merged), merged


def _call_argument(x, m):
    return x + 1, keywords(**m), keywords(z=1, **m)


def _mixed(x, m, d):
    return x + 1, {**m, **d}, keywords(**d, **m)


def _generator_keys(x, m):
    return x + 1, {**m}, keywords(**m)


def _dict_subclass(x, a):
    return x + 1, {**a}, dict(a), keywords(**a)


def _setup():
    LOG.clear()


def _observe():
    return list(LOG)


_LOGGED = {"setup": _setup, "observe": _observe}


def _check(fn, make_args):
    check_breaks(fn, make_args, graphs=1, breaks=0, **_LOGGED)
    assert_no_more_breaks(
        0,
        fn,
        *make_args(),
        baseline_missing="torch.compile of torch 2.11 runs the call in Python: an exception it "
        "observes reading a user mapping",
    )


def test_star_of_a_global_mapping():
    _check(_star_global, lambda: (torch.randn(3),))


def test_star_of_an_argument_mapping():
    _check(_star_argument, lambda: (torch.randn(3), Mapping(p=1, q=2)))


def test_call_with_a_mapping_unpacked():
    _check(_call_argument, lambda: (torch.randn(3), Mapping(p=1, q=2)))


def test_mappings_and_dicts_mixed():
    _check(_mixed, lambda: (torch.randn(3), Mapping(p=1), {"r": 2}))


def test_keys_from_a_generator_taken_first():
    _check(_generator_keys, lambda: (torch.randn(3), KeysGenerator(p=1, q=2)))


def test_dict_subclass_read_by_keys_only_with_its_own_iter():
    _check(_dict_subclass, lambda: (torch.randn(3), IteratesOwnWay(y=1)))


def _twice(x, m):
    return x + 1, keywords(**m, p=3)


def test_keyword_given_twice_raises_as_eager():
    check_breaks(_twice, lambda: (torch.randn(3), Mapping(p=1)), graphs=1, breaks=1, **_LOGGED)


def _not_a_mapping(x):
    return x + 1, {**[("a", 1)]}


def test_star_of_a_non_mapping_raises_as_eager():
    check_breaks(_not_a_mapping, lambda: (torch.randn(3),), graphs=1, breaks=1, **_LOGGED)


def _twice_from_dicts(x, a, b):
    return x + 1, keywords(**a, **b)


def test_keyword_in_two_dicts_raises_as_eager():
    check_breaks(
        _twice_from_dicts, lambda: (torch.randn(3), {"a": 1}, {"a": 2}), graphs=1, breaks=1
    )


class IntKeys:
    def keys(self):
        return [1]

    def __getitem__(self, key):
        return 5


def _int_keyword(x, m):
    try:
        keywords(**m)
    except TypeError as e:
        return x + 1, str(e)
    return x, None


def test_keywords_that_are_not_strings_raise_as_eager():
    for make in (lambda: (torch.randn(3), {1: 2}), lambda: (torch.randn(3), IntKeys())):
        check_breaks(_int_keyword, make, graphs=1, breaks=0)


def _int_keyword_uncaught(x, m):
    return x + 1, keywords(**m)


def test_keywords_that_are_not_strings_raise_uncaught_as_eager():
    for make in (lambda: (torch.randn(3), {1: 2}), lambda: (torch.randn(3), IntKeys())):
        check_breaks(_int_keyword_uncaught, make, graphs=1, breaks=1)


G_PROXIED = {"a": 1}
G_PROXY = types.MappingProxyType(G_PROXIED)
#: proxies are read from globals: the harness deep-copies arguments, which a proxy refuses
G_PROXIES = [types.MappingProxyType({"p": 2})]


def _proxy(x):
    merged = {**G_PROXY}
    return x + G_PROXY["a"], merged, keywords(**G_PROXY), dict(G_PROXY), "a" in G_PROXY


def _proxy_in_a_list(x):
    proxy = G_PROXIES[0]
    return x + len(proxy), {**proxy}, proxy.copy(), list(proxy.items())


def test_star_of_a_mappingproxy():
    _check(_proxy, lambda: (torch.randn(3),))
    _check(_proxy_in_a_list, lambda: (torch.randn(3),))


def test_mappingproxy_sees_its_dict_change_between_calls():
    compiled, _ = compile_counted(_proxy)
    x = torch.randn(3)
    compiled(x)
    G_PROXIED["a"] = 5
    G_PROXIED["b"] = 6
    try:
        result, expected = compiled(x), _proxy(x)
    finally:
        G_PROXIED.clear()
        G_PROXIED["a"] = 1
    torch.testing.assert_close(result[0], expected[0])
    assert result[1:] == expected[1:]


class Namespace:
    value = 1


G_NAMESPACE = Namespace.__dict__


def _class_namespace(x):
    Namespace.value = 2
    return x + 1, G_NAMESPACE["value"]


def test_class_namespace_proxy_sees_a_class_store():
    """A class's namespace is not read as a plain proxied dict (the class store would not reach
    what the trace read): left to Python, where the read sees the store."""
    try:
        check_breaks(
            _class_namespace,
            lambda: (torch.randn(3),),
            graphs=1,
            breaks=1,
            setup=lambda: setattr(Namespace, "value", 1),
            observe=lambda: Namespace.value,
        )
    finally:
        Namespace.value = 1
