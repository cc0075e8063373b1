"""Values a graph break makes anew at each call, taken by the resume function.

The breaking call (run in Python) or the break's own code (rebuilding what the trace made) gives
the resume function a new object at each call: a user object, a partial, a bound method, a list,
a generic alias, a closure, a generator, a ``re.Match``... The resume function guards what its
trace reads of it (its type, the parts that decide an immutable value, a function's name), never
its identity, so identical calls compile nothing more. Results are eager's; a value that differs
where the trace read it still recompiles, and ``is`` on such values is eager's.
"""

from __future__ import annotations

import collections
import functools
import re
import sys
import types

import pytest
import torch
from difftest import assert_same, check_breaks
from dynamo_baseline import assert_no_more_breaks

import bytegraph


class Q(dict):
    pass


class Obj:
    def __init__(self, v=2):
        self.v = v

    def scale(self, y):
        return y * self.v


@torch._dynamo.disable
def made(kind):
    """A new value of ``kind`` at each call, made in Python (a break in both compilers)."""
    makers = {
        "object": lambda: Obj(),
        "partial": lambda: functools.partial(torch.add, alpha=2),
        "method": lambda: Obj(3).scale,
        "list": lambda: [1, 2],
        "dict": lambda: {"a": 1},
        "tuple": lambda: (1, [2]),
        "alias": lambda: list[int],
        "union": lambda: int | None,
        "pattern": lambda: re.compile("a(b)+"),  # (the same object while re's cache holds it)
        "match": lambda: re.match("a(b)", "ab"),
        "lambda": lambda: lambda y: y - 1,
    }
    return makers[kind]()


@torch._dynamo.disable
def raiser():
    raise ValueError("bad")


def from_object(x):
    o = made("object")
    return x * o.v, type(o)


def from_partial(x):
    return made("partial")(x, x)


def from_method(x):
    return made("method")(x)


def from_list(x):
    xs = made("list")
    xs.append(3)
    return x + xs[0], xs


def from_dict(x):
    d = made("dict")
    return x + d["a"], d


def from_tuple(x):
    t = made("tuple")
    return x + t[0], t


def from_alias(x):
    a = made("alias")
    return x + len(a.__args__), a, a.__origin__


def from_union(x):
    u = made("union")
    return x + 1, u, isinstance(None, u)


def from_pattern(x):
    p = made("pattern")
    return x + 1, p.match("abb").span()


def from_match(x):
    m = made("match")
    return x + 1, m.group(1), m.span()


def from_lambda(x):
    return made("lambda")(x)


def alias_of_a_dict_subclass(x, q):
    a = type(q).__class_getitem__(int)
    return x + 1, a


def alias_of_deque(x):
    a = collections.deque.__class_getitem__(int)
    return x + len(a.__args__), a


def closure_made_before(x):
    def g(y):
        return y * 2

    print("between")
    return g(x), g.__name__, g.__qualname__


def lambda_made_before(x):
    k = 3
    g = lambda y: y + k  # noqa: E731
    print("between")
    return g(x)


def generator_made_before(x):
    g = (i for i in range(3))
    print("between")
    return x + sum(g)


def match_made_before(x):
    m = re.match("a(b)", "ab")
    print("between")
    return x + 1, m.group(1)


def printed_result(x):
    n = sys.stdout.write("")
    return x + n


def caught_exception(x):
    try:
        raiser()
    except ValueError as e:
        err = e
    print("between")
    return x + 1, str(err), err.args


#: function -> its arguments after ``x``, the graphs and the breaks of one call
KINDS = {
    from_object: ((), 1, 1),
    from_partial: ((), 1, 1),
    from_method: ((), 1, 1),
    from_list: ((), 1, 1),
    from_dict: ((), 1, 1),
    from_tuple: ((), 1, 1),
    from_alias: ((), 1, 1),
    from_union: ((), 1, 1),
    from_pattern: ((), 1, 1),
    from_match: ((), 1, 1),
    from_lambda: ((), 1, 1),
    alias_of_a_dict_subclass: ((Q(a=1),), 1, 1),
    alias_of_deque: ((), 1, 1),
    closure_made_before: ((), 1, 1),
    lambda_made_before: ((), 1, 1),
    generator_made_before: ((), 1, 1),
    match_made_before: ((), 1, 1),
    printed_result: ((), 1, 1),
    caught_exception: ((), 0, 1),  # (the handler's code runs in Python)
}


@pytest.mark.parametrize("fn", list(KINDS), ids=lambda fn: fn.__name__)
def test_identical_calls_never_recompile(fn):
    extra, graphs, breaks = KINDS[fn]
    # 5 identical calls: the graphs and breaks of the first one only, each result eager's
    check_breaks(fn, lambda: (torch.ones(2), *extra), graphs=graphs, breaks=breaks, calls=5)


def test_breaks_no_more_than_torch_compile():
    for fn in (from_alias, from_union, from_match, from_object):
        assert_no_more_breaks(1, fn, torch.ones(2))


def test_the_resume_function_gives_back_the_object_made():
    kept = []

    @torch._dynamo.disable
    def make(n):
        kept.append(list[int] if n else dict[str, int])
        return kept[-1]

    def fn(x, n):
        a = make(n)
        return x + 1, a

    compiled = bytegraph.compile(fn, backend="eager")
    for n in (1, 1, 0, 1):
        assert compiled(torch.ones(1), n)[1] is kept[-1]


ALIASES = [
    lambda: list[int],
    lambda: dict[str, int],
    lambda: list[str],
    lambda: list[int | None],
    lambda: tuple[int, ...],
    lambda: tuple[()],
    lambda: int | str,
    lambda: str | int,
]


def test_a_different_alias_at_the_break_is_read_as_itself():
    @torch._dynamo.disable
    def make(k):
        return ALIASES[k]()

    def fn(x, k):
        a = make(k)
        return x + len(a.__args__), a.__args__, repr(a), a == list[int]

    calls = [lambda k=k: (torch.ones(2), k) for k in [0, 1, 0, 2, 3, 4, 5, 6, 7, 6, 0]]
    # one resume graph per distinct alias (8), none for the repeated ones; ``k`` is a number
    # specialised once, then symbolic: the first part compiles twice
    check_breaks(fn, None, graphs=8, breaks=2, calls=calls)


def test_is_on_aliases_is_eagers():
    def fn(x, a, b):
        return x + 1, a is b, a == b

    shared = list[int]
    compiled = bytegraph.compile(fn, backend="eager")
    for a, b in [
        (shared, shared),
        (shared, list[int]),
        (shared, shared),
        (list[int], list[int]),
        (dict[str, int], list[int]),
        (shared, shared),
    ]:
        assert_same(compiled(torch.ones(1), a, b), fn(torch.ones(1), a, b))


def test_a_different_match_at_the_break_is_read_as_itself():
    @torch._dynamo.disable
    def make(text):
        return re.match("a(b*)(c)?", text)

    def fn(x, text):
        m = make(text)
        return x + len(m.group(1)), m.groups(), m.span(), m.lastindex

    texts = ["ab", "ab", "abb", "abc", "ab"]
    calls = [lambda t=t: (torch.ones(2), t) for t in texts]
    check_breaks(fn, None, graphs=3, breaks=3, calls=calls)  # one per text


def test_a_renamed_closure_is_read_with_its_name():
    def fn(x, name):
        def g(y):
            return y * 2

        g.__name__ = name
        print("between")
        return g(x), g.__name__

    calls = [lambda n=n: (torch.ones(2), n) for n in ["a", "a", "b", "a"]]
    check_breaks(fn, None, graphs=2, breaks=2, calls=calls)  # one per name


@pytest.mark.parametrize("kind", ["list", "dict", "set", "proxy"])
def test_is_of_two_containers_given_is_eagers(kind):
    shared = {"a": 1}
    make = {
        "list": lambda: [1],
        "dict": lambda: {"a": 1},
        "set": lambda: {1},
        "proxy": lambda: types.MappingProxyType(shared),
    }[kind]

    def fn(x, a, b):
        return x + 1, a is b, a is not b

    compiled = bytegraph.compile(fn, backend="eager")
    one = make()
    for a, b in [(one, make()), (one, one), (make(), make()), (one, one)]:
        assert_same(compiled(torch.ones(1), a, b), fn(torch.ones(1), a, b))


def test_a_mapping_proxy_made_anew_is_guarded_by_its_mapping():
    shared, other = {"a": 1, "b": 2}, {"a": 5}

    @torch._dynamo.disable
    def make(d):
        return types.MappingProxyType(d)

    def fn(x, d):
        p = make(d)
        return x + p["a"], len(p), list(p)

    # a new proxy of one dict at each call: one resume graph; another dict's proxy: one more
    # (the first part only passes the dict on: compiled once)
    calls = [lambda d=d: (torch.ones(2), d) for d in [shared] * 4 + [other, shared]]
    check_breaks(fn, None, graphs=2, breaks=1, calls=calls)


@pytest.mark.parametrize(
    "make",
    [
        lambda: "".join(["ab", "cd"]),
        lambda: float("1.5"),
        lambda: list[int],
        lambda: re.match("a", "ab"),
    ],
    ids=["str", "float", "alias", "match"],
)
def test_id_of_a_value_given_is_the_calls_own(make):
    def fn(x, a):
        return x + 1, id(a)

    compiled = bytegraph.compile(fn, backend="eager")
    for _ in range(3):  # an equal value, another object, at each call
        a = make()
        assert compiled(torch.ones(1), a)[1] == id(a)
