"""Python's builtin types under the tracer, in the style of PyTorch's own tracer tests
(``test/dynamo/test_functions.py``, ``test_misc.py``): dicts and their views, lists, sets, tuples,
strings, ranges, iterators (``map``/``zip``/``filter``/``enumerate``, itertools) that keep their
position and escape the trace, functools and operator, comprehensions, generators, closures,
``*args``/``**kwargs``, exceptions raised and caught, recursion, numpy interop, dtype and device
values, ``x.new(...)`` and ``torch.jit.annotate``.

Values that escape the call (iterators, views, closures) are stored in a ``box`` the case observes
after the call: ``observe`` consumes or calls them, so their position and liveness are compared.
"""

from __future__ import annotations

import bisect
import collections
import functools
import heapq
import itertools
import math
import operator

import numpy as np
import torch
from corpus.harness import Setup, case


def _t(*shape):
    return lambda: (torch.randn(*shape),)


def _t2(*shape):
    return lambda: (torch.randn(*shape), torch.randn(*shape))


def _drain(box):
    """What an escaped iterator still yields, taken once per call (the box is emptied, so every call
    starts from the same state)."""
    return lambda: [list(box.pop())] if box else []


# -- dicts and their views -------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_values_view_sees_insertions():
    def fn(x):
        d = {"a": x}
        values = d.values()
        d["b"] = x * 2
        return sum(values), len(values)

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_items_view_sees_deletion():
    def fn(x):
        d = {"a": x, "b": x + 1, "c": x + 2}
        items = d.items()
        del d["b"]
        return [k for k, _ in items], sum(v for _, v in items)

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_keys_view_escapes():
    box = []

    def fn(x):
        d = {"a": 1, "b": 2}
        keys = d.keys()
        box.append((d, keys))
        return x + len(keys)

    def observe():
        d, keys = box.pop()
        d["z"] = 0
        return list(keys)

    return Setup(fn, _t(2), observe=observe)


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_view_set_operations():
    def fn(x):
        d = {"a": 1, "b": 2, "c": 3}
        e = {"b": 0, "d": 0}
        both = d.keys() & e.keys()
        either = d.keys() | e.keys()
        only = d.keys() - e.keys()
        return x + len(both), sorted(either), sorted(only), ("a", 1) in d.items()

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_update_with_keywords():
    def fn(x):
        d = {"a": x}
        d.update(b=x + 1, c=2)
        return d["b"] * d["c"], list(d)

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_update_with_pairs():
    def fn(x):
        d = {"a": x}
        d.update([("b", x * 3), ("c", 1)])
        d.update({"a": x - 1}, d=4)
        return d

    return Setup(fn, _t(3))


@case("python", graphs=0, breaks=0, tc_breaks=0)
def dict_fromkeys():
    def fn(x):
        d = dict.fromkeys(["a", "b", "c"], 0)
        d["b"] = x
        e = dict.fromkeys("xy")
        return d, e

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_setdefault_and_get():
    def fn(x):
        d = {}
        d.setdefault("a", []).append(x)
        d.setdefault("a", []).append(x * 2)
        return d.get("a"), d.get("missing", 5), d.get("nothing")

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_pop_popitem_and_del():
    def fn(x):
        d = {"a": x, "b": x + 1, "c": x + 2}
        first = d.pop("a")
        missing = d.pop("zz", None)
        last = d.popitem()
        return first, missing, last, d

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_merge_operators():
    def fn(x):
        a = {"a": x, "b": 1}
        b = {"b": 2, "c": x * 2}
        merged = a | b
        a |= {"z": 3}
        return merged, a

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_reversed_and_order():
    def fn(x):
        d = {"c": 3, "a": 1, "b": 2}
        d["a"] = 10
        return list(reversed(d)), x * d["a"], list(d.values())

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_comprehension_over_items():
    def fn(x):
        params = {"w": x, "b": x + 1}
        doubled = {f"{k}_2": v * 2 for k, v in params.items() if k != "b"}
        return doubled, {k: i for i, k in enumerate(params)}

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_values_updated_in_loop():
    def fn(x):
        d = {"a": x, "b": x * 2}
        for k in d:
            d[k] = d[k] + 1
        return d

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_input_mutated():
    def fn(d):
        d["sum"] = d["a"] + d["b"]
        d.pop("b")
        return len(d)

    return Setup(fn, lambda: ({"a": torch.randn(2), "b": torch.randn(2)},))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_sorted_items_by_key():
    def fn(x):
        d = {"b": x, "a": x + 1, "c": x - 1}
        return [v for _, v in sorted(d.items(), key=lambda kv: kv[0])]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def defaultdict_of_lists():
    def fn(x):
        groups = collections.defaultdict(list)
        for i, row in enumerate(x):
            groups[i % 2].append(row)
        return {k: torch.stack(v) for k, v in groups.items()}

    return Setup(fn, _t(4, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def ordered_dict_move_to_end():
    def fn(x):
        d = collections.OrderedDict(a=x, b=x + 1)
        d["c"] = x + 2
        d.move_to_end("a")
        return list(d.keys()), d["a"] * 2

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_keyed_by_ints_and_tuples():
    def fn(x):
        d = {(0, 1): x, 2: x * 2}
        d[(1, 0)] = d[(0, 1)] + d[2]
        return d[(1, 0)], (0, 1) in d, len(d)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_copy_is_independent():
    def fn(x):
        d = {"a": x}
        e = d.copy()
        e["b"] = x + 1
        f = dict(d, c=3)
        return len(d), len(e), f

    return Setup(fn, _t(2))


# -- lists -----------------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_slice_assign_and_delete():
    def fn(x):
        xs = [x, x + 1, x + 2, x + 3]
        xs[1:3] = [x * 10]
        del xs[0]
        xs[::2] = [x - 1]
        return xs

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_sort_with_key():
    def fn(x):
        pairs = [(3, x), (1, x + 1), (2, x + 2)]
        pairs.sort(key=lambda p: p[0], reverse=True)
        return [t for _, t in pairs]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_insert_remove_index_count():
    def fn(x):
        xs = [1, 2, 3, 2]
        xs.insert(1, 7)
        xs.remove(2)
        return x * xs.index(3) + xs.count(2), xs

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_inplace_mul_and_add():
    def fn(x):
        xs = [x]
        xs *= 3
        xs += [x * 2]
        ys = [0] * 2 + [1]
        return sum(xs), ys

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_pop_in_while_loop():
    def fn(x):
        stack = [x, x * 2, x * 3]
        total = 0
        while stack:
            total = total + stack.pop()
        return total

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_iterator_escapes():
    box = []

    def fn(x):
        xs = [1, 2, 3, 4]
        it = iter(xs)
        first = next(it)
        box.append(it)
        return x + first

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_alias_sees_mutation():
    def fn(x):
        xs = [x]
        alias = xs
        copy = list(xs)
        alias.append(x * 2)
        return len(xs), len(copy), xs is alias

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_star_unpacking():
    def fn(x):
        first, *middle, last = [x, x + 1, x + 2, x + 3]
        return first + last, len(middle), [*middle, first]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_input_mutated():
    def fn(xs):
        xs.append(xs[0] * 2)
        xs.reverse()
        return len(xs)

    return Setup(fn, lambda: ([torch.randn(2), torch.randn(2)],))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def list_reversed_iterator_and_comparisons():
    def fn(x):
        xs = [1, 2, 3]
        rev = reversed(xs)
        first = next(rev)
        return x * first, list(rev), [1, 2] < [1, 3], xs == [1, 2, 3]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def nested_list_comprehension():
    def fn(x):
        grid = [[x * i + j for j in range(2)] for i in range(3)]
        flat = [v for row in grid for v in row if v is not None]
        return torch.stack(flat).sum(0)

    return Setup(fn, _t(2))


# -- sets, tuples, strings -----------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def set_algebra():
    def fn(x):
        a, b = {1, 2, 3}, {2, 3, 4}
        return (
            x + len(a & b),
            sorted(a | b),
            sorted(a - b),
            sorted(a ^ b),
            a.isdisjoint({9}),
            {2}.issubset(a),
            sorted(a.union([7])),
            sorted(a.intersection(b, {3})),
        )

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def set_mutations():
    def fn(x):
        s = {1, 2}
        s.add(3)
        s.discard(1)
        s.remove(2)
        s.update({5, 6})
        s -= {6}
        s |= {8}
        return x * len(s), sorted(s), 5 in s

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def set_comprehension_and_frozenset():
    def fn(x):
        dims = {d % 3 for d in range(7)}
        frozen = frozenset(["a", "b"])
        return x.sum(dim=tuple(sorted(d for d in dims if d < x.dim()))), "a" in frozen

    return Setup(fn, _t(2, 3, 4))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def tuple_methods_and_slicing():
    def fn(x):
        t = (1, 2, 3, 2)
        u = t + (4,)
        return x * t.count(2) + t.index(3), u[1:4], u[::-1], t * 2, max(t)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def namedtuple_replace_and_asdict():
    Point = collections.namedtuple("Point", ["x", "y"])

    def fn(a):
        p = Point(a, a + 1)
        q = p._replace(y=a * 3)
        return q.x + q.y, list(q._asdict()), p[0] is a, Point._fields

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def string_methods():
    def fn(x):
        name = "layer.0.weight"
        parts = name.split(".")
        key = "_".join(parts).upper()
        ok = name.startswith("layer") and name.endswith("weight")
        return x * len(parts), key, ok, name.replace("0", "1"), "%s-%d" % ("a", 3)  # noqa: UP031 (the behaviour under test)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def fstrings_of_shapes():
    def fn(x):
        tag = f"{x.shape[0]}x{x.shape[1]}:{x.dtype}"
        return x + len(tag), tag, f"{3.14159:.2f}", "{}-{}".format(*x.shape)

    return Setup(fn, _t(2, 3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def str_join_of_map():
    def fn(x):
        sizes = "x".join(map(str, x.shape))
        return x.sum(), sizes, ",".join(reversed(["a", "b"]))

    return Setup(fn, _t(2, 3))


# -- range ---------------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_slicing_and_queries():
    def fn(x):
        r = range(2, 20, 3)
        sub = r[1:4]
        return x * len(r) + sub[0], list(sub), 8 in r, r.index(11), list(reversed(range(3)))

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_iterator_escapes():
    box = []

    def fn(x):
        it = iter(range(4))
        next(it)
        box.append(it)
        return x + 1

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_from_tensor_size():
    def fn(x):
        out = x
        for i in range(x.size(0) - 1, -1, -1):
            out = out + x[i]
        return out

    return Setup(fn, _t(3, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_iterator_shared_by_two_loops():
    def fn(x):
        it = iter(range(6))
        acc = x
        for i in it:
            if i == 2:
                break
            acc = acc + i
        for j in it:
            acc = acc * j
        return acc

    return Setup(fn, _t(2))


# -- builtin iterators ---------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def zip_iterator_escapes():
    box = []

    def fn(x):
        z = zip([1, 2, 3], "abc")  # noqa: B905 (the behaviour under test)
        first = next(z)
        box.append(z)
        return x * first[0]

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def map_iterator_escapes():
    box = []

    def fn(x):
        m = map(lambda v: v * 2, [1, 2, 3])
        first = next(m)
        box.append(m)
        return x + first

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def enumerate_iterator_escapes():
    box = []

    def fn(x):
        e = enumerate(["a", "b", "c"], start=5)
        next(e)
        box.append(e)
        return x + 1

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def filter_and_map_pipeline():
    def fn(x):
        xs = [x * i for i in range(5)]
        kept = filter(lambda t: t is not xs[0], xs)
        doubled = list(map(lambda t: t * 2, kept))
        odd = list(filter(None, [0, 1, 2, 0]))
        return sum(doubled), odd

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def next_with_default_and_iter_exhaustion():
    def fn(x):
        it = iter([x])
        a = next(it)
        b = next(it, None)
        return a + 1, b is None, list(it)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def zip_of_map_and_enumerate():
    def fn(x, y):
        out = []
        for (i, a), b in zip(enumerate([x, y]), map(torch.neg, [y, x])):  # noqa: B905 (the behaviour under test)
            out.append(a * i + b)
        return out

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def zip_strict_and_unzip():
    def fn(x):
        pairs = list(zip([1, 2], [x, x * 2], strict=True))
        nums, tensors = zip(*pairs)  # noqa: B905 (the behaviour under test)
        return nums, sum(tensors)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def builtins_on_constants():
    def fn(x):
        q, r = divmod(17, 5)
        vals = [3, -1, 2]
        return (
            x * q + r,
            abs(-2.5),
            round(2.567, 2),
            pow(2, 5),
            min(vals),
            max(vals, key=abs),
            sorted(vals, reverse=True),
            any(v < 0 for v in vals),
            all(v < 5 for v in vals),
            sum(vals, 10),
        )

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def isinstance_type_callable_getattr():
    def fn(x):
        items = [x, 1, "a", None, (1,)]
        kinds = [type(i).__name__ for i in items]
        tensors = [i for i in items if isinstance(i, torch.Tensor)]
        numbers = [i for i in items if isinstance(i, (int, float))]
        return (
            tensors[0] * 2,
            kinds,
            numbers,
            callable(fn),
            getattr(x, "missing", 7),
            hasattr(x, "shape"),
        )

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=2)
def min_max_of_tensor_list_by_key():
    def fn(x):
        ts = [x[:1], x, x[:2]]
        longest = max(ts, key=len)
        shortest = min(ts, key=lambda t: t.shape[0])
        return longest * 2, shortest

    return Setup(fn, _t(3))


# -- itertools -----------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_chain():
    def fn(x, y):
        return sum(itertools.chain([x, y], (x * 2,), [y]))

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_chain_from_iterable():
    def fn(x):
        nested = [[x, x + 1], [x * 2], []]
        flat = list(itertools.chain.from_iterable(nested))
        return torch.stack(flat), len(flat)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_product_and_combinations():
    def fn(x):
        out = x
        for i, j in itertools.product(range(2), repeat=2):
            out = out + i * j
        pairs = list(itertools.combinations([1, 2, 3], 2))
        perms = list(itertools.permutations("ab"))
        return out, pairs, perms

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_accumulate():
    def fn(x):
        running = list(itertools.accumulate([x, x * 2, x * 3]))
        products = list(itertools.accumulate([1, 2, 3, 4], operator.mul, initial=1))
        return running[-1], products

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_islice_count_repeat():
    def fn(x):
        head = list(itertools.islice(itertools.count(5, 2), 3))
        reps = list(itertools.repeat(x, 3))
        tail = list(itertools.islice("abcdef", 1, None, 2))
        return sum(reps) * head[-1], head, tail

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_zip_longest_and_pairwise():
    def fn(x):
        longest = list(itertools.zip_longest([1, 2, 3], "ab", fillvalue="-"))
        steps = [b - a for a, b in itertools.pairwise([1, 4, 9, 16])]
        return x * steps[-1], longest

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_groupby():
    def fn(x):
        words = ["apple", "avocado", "banana", "blueberry", "cherry"]
        groups = {k: len(list(g)) for k, g in itertools.groupby(words, key=lambda w: w[0])}
        return x * groups["b"], groups

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_cycle_takewhile_dropwhile_starmap():
    def fn(x):
        cyc = list(itertools.islice(itertools.cycle([1, 2]), 5))
        small = list(itertools.takewhile(lambda v: v < 3, [1, 2, 3, 1]))
        rest = list(itertools.dropwhile(lambda v: v < 3, [1, 2, 3, 1]))
        powers = list(itertools.starmap(pow, [(2, 3), (3, 2)]))
        return x + sum(cyc), small, rest, powers

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_count_escapes():
    box = []

    def fn(x):
        counter = itertools.count(3)
        first = next(counter)
        box.append(itertools.islice(counter, 2))
        return x * first

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_tee_and_compress():
    def fn(x):
        a, b = itertools.tee([1, 2, 3])
        next(a)
        kept = list(itertools.compress("abcd", [1, 0, 1, 0]))
        return x + sum(a) + sum(b), kept

    return Setup(fn, _t(2))


# -- functools and operator ------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def functools_reduce():
    def fn(x, y):
        total = functools.reduce(operator.add, [x, y, x * y])
        prod = functools.reduce(lambda a, b: a * b, [1, 2, 3], 10)
        return total, prod

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def functools_partial_made_in_function():
    def scale(t, factor, bias=0):
        return t * factor + bias

    def fn(x):
        double = functools.partial(scale, factor=2)
        shift = functools.partial(scale, x, 3)
        return double(x), shift(bias=1), double.keywords

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def functools_partial_escapes():
    box = []

    def fn(x):
        box.append(functools.partial(torch.add, alpha=2))
        return x + 1

    def observe():
        return box.pop()(torch.ones(2), torch.ones(2))

    return Setup(fn, _t(2), observe=observe)


@case("python", graphs=1, breaks=0, tc_breaks=0)
def functools_lru_cache_function():
    @functools.cache
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def fn(x):
        return x * fib(10)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def functools_wraps_decorator():
    def logged(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs) + 1

        return wrapper

    @logged
    def inner(t, k=2):
        return t * k

    def fn(x):
        return inner(x, k=3), inner.__name__

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=2)
def functools_cmp_to_key():
    def compare(a, b):
        return (a[0] > b[0]) - (a[0] < b[0])

    def fn(x):
        pairs = [(2, x), (1, x * 2), (3, x * 3)]
        ordered = sorted(pairs, key=functools.cmp_to_key(compare))
        return [t for _, t in ordered]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def operator_getters():
    def fn(x):
        rows = [(1, x), (0, x * 2)]
        second = operator.itemgetter(1)
        firsts = list(map(operator.itemgetter(0), rows))
        shape = operator.attrgetter("shape")(x)
        summed = operator.methodcaller("sum", 0)(x)
        return second(rows[0]), firsts, shape, summed

    return Setup(fn, _t(2, 3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def operator_functions_in_map():
    def fn(x, y):
        prods = list(map(operator.mul, [x, y], [y, x]))
        return operator.add(*prods), operator.neg(x), operator.getitem([x, y], 1), operator.truth(0)

    return Setup(fn, _t2(2))


# -- generators ----------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_expression_sum():
    def fn(x):
        return sum(x * i for i in range(4)), tuple(i * i for i in range(3))

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_function_consumed():
    def pairs(t):
        for i in range(3):
            yield i, t * i

    def fn(x):
        return dict(pairs(x)), [p[0] for p in pairs(x)]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_yield_from():
    def inner(t):
        yield t
        yield t + 1

    def outer(t):
        yield from inner(t)
        yield from [t * 10]

    def fn(x):
        return list(outer(x))

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_stopped_early_with_side_effects():
    def fn(x):
        seen = []

        def gen():
            for i in range(10):
                seen.append(i)
                yield x * i

        total = x
        for v in gen():
            if len(seen) == 3:
                break
            total = total + v
        return total, seen

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_escapes():
    box = []

    def gen(n):
        yield from range(n)

    def fn(x):
        g = gen(4)
        next(g)
        box.append(g)
        return x + 1

    return Setup(fn, _t(2), observe=_drain(box))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_pipeline():
    def numbers(n):
        yield from range(n)

    def squares(it):
        for v in it:
            yield v * v

    def fn(x):
        return x * sum(squares(numbers(4))), max(squares(numbers(3)))

    return Setup(fn, _t(2))


# -- closures ------------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def closure_nonlocal_counter():
    def fn(x):
        count = 0

        def bump(t):
            nonlocal count
            count += 1
            return t * count

        return bump(x) + bump(x), count

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def closure_escapes():
    box = []

    def fn(x):
        scale = 3

        def mul(t):
            return t * scale

        box.append(mul)
        return mul(x)

    return Setup(fn, _t(2), observe=lambda: box.pop()(torch.ones(2)))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def closure_over_tensor_escapes():
    box = []

    def fn(x):
        y = x * 2

        def add_y(t):
            return t + y

        box.append(add_y)
        return y

    return Setup(fn, _t(2), observe=lambda: box.pop()(torch.ones(2)))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def lambdas_in_loop_late_binding():
    def fn(x):
        late = [lambda t: t * i for i in range(3)]  # noqa: B023 (the behaviour under test)
        bound = [lambda t, i=i: t * i for i in range(3)]
        return [f(x) for f in late], [f(x) for f in bound]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def closure_appends_to_outer_list():
    log = []

    def fn(x):
        def record(t):
            log.append(t.shape[0])
            return t + 1

        return record(record(x))

    def observe():
        seen = list(log)
        log.clear()
        return seen

    return Setup(fn, _t(2), observe=observe)


@case("python", graphs=1, breaks=0, tc_breaks=0)
def nested_closures_three_levels():
    def fn(x):
        a = 1

        def middle():
            b = 2

            def inner(t):
                return t * a + b

            return inner

        return middle()(x)

    return Setup(fn, _t(2))


# -- *args, **kwargs -----------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def args_kwargs_forwarding():
    def inner(a, b=1, *rest, scale=1.0, **extra):
        return (a + b + sum(rest)) * scale, sorted(extra)

    def outer(*args, **kwargs):
        return inner(*args, **kwargs)

    def fn(x):
        return outer(x, 2, 3, 4, scale=0.5, tag="t", other=None)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=2)
def kwargs_dict_iteration():
    def combine(**parts):
        return sum(v * i for i, (_, v) in enumerate(sorted(parts.items())))

    def fn(x, y):
        opts = {"b": y, "a": x}
        return combine(**opts, c=x + y)

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def keyword_only_and_positional_only():
    def f(a, /, b, *, c=3):
        return a * b + c

    def fn(x):
        return f(x, 2), f(x, b=x, c=0)

    return Setup(fn, _t(2))


# -- exceptions raised and caught ----------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def key_error_caught():
    def fn(x):
        d = {"a": x}
        try:
            v = d["b"]
        except KeyError:
            v = x * 2
        return v + 1

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def raise_and_catch_value_error():
    def check(t, n):
        if n > 2:
            raise ValueError("too big")
        return t * n

    def fn(x):
        out = []
        for n in range(4):
            try:
                out.append(check(x, n))
            except ValueError as e:
                out.append(x - len(e.args[0]))
        return out

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def try_finally_runs():
    def fn(x):
        log = []
        try:
            y = x + 1
            log.append("body")
        finally:
            log.append("finally")
        return y, log

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def stop_iteration_caught():
    def fn(x):
        it = iter([x])
        out = next(it)
        try:
            next(it)
        except StopIteration:
            out = out * 3
        return out

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def exception_subclass_caught_by_base():
    class MyError(RuntimeError):
        pass

    def risky(t):
        raise MyError("boom")

    def fn(x):
        try:
            return risky(x)
        except RuntimeError as e:
            return x + 1, isinstance(e, MyError), str(e)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def index_error_caught_in_loop():
    def fn(x):
        xs = [x, x * 2]
        total = 0
        for i in range(4):
            try:
                total = total + xs[i]
            except IndexError:
                total = total - 1
        return total

    return Setup(fn, _t(2))


# -- recursion -----------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def recursive_flatten():
    def flatten(obj):
        if isinstance(obj, torch.Tensor):
            return [obj]
        if isinstance(obj, dict):
            return [t for v in obj.values() for t in flatten(v)]
        return [t for v in obj for t in flatten(v)]

    def fn(x):
        tree = {"a": [x, (x + 1, {"b": x * 2})], "c": x - 1}
        return torch.stack(flatten(tree)).sum(0)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def recursive_factorial_and_map_structure():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def apply(f, obj):
        if isinstance(obj, (list, tuple)):
            return type(obj)(apply(f, o) for o in obj)
        return f(obj)

    def fn(x):
        return apply(lambda t: t * fact(4), [x, (x, x + 1)])

    return Setup(fn, _t(2))


# -- math, dtypes, devices -----------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def math_on_shapes():
    def fn(x):
        scale = 1.0 / math.sqrt(x.shape[-1])
        n = math.prod(x.shape)
        return x * scale + math.log(n), math.ceil(n / 4), math.isclose(scale, 0.5)

    return Setup(fn, _t(2, 4))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dtype_values_and_queries():
    def fn(x):
        eps = torch.finfo(x.dtype).eps
        big = torch.iinfo(torch.int32).max
        promoted = torch.promote_types(x.dtype, torch.float64)
        return (
            x + eps,
            big,
            promoted,
            x.dtype.is_floating_point,
            x.is_floating_point(),
            x.dtype == torch.float32,
            x.to(promoted).dtype,
            torch.get_default_dtype(),
            x.dtype.itemsize,
        )

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dtype_picked_from_dict():
    dtypes = {"half": torch.float16, "double": torch.float64}

    def fn(x, name="double"):
        dt = dtypes[name]
        y = x.to(dt)
        return y, y.dtype, str(dt), dt.is_complex

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def device_values():
    def fn(x):
        dev = torch.device("cpu")
        same = x.device == dev
        return x.to(dev) + 1, same, x.device.type, str(x.device), dev.index

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def tensor_new_with_size():
    def fn(x):
        a = x.new(2, 3).zero_()
        b = x.new([1.0, 2.0])
        c = x.new_zeros(x.shape)
        d = x.new_full((2,), 7)
        e = x.new_tensor([3, 4])
        return a, b, c + 1, d, e

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def jit_annotate_list():
    def fn(x):
        out = torch.jit.annotate(list[torch.Tensor], [])
        out.append(x)
        n = torch.jit.annotate(int, 3)
        return torch.jit.annotate(torch.Tensor, out[0] * n)

    return Setup(fn, _t(2))


# -- numpy interop -------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_roundtrip():
    def fn(x):
        a = x.numpy()
        b = np.sin(a) * 2 + 1
        return torch.from_numpy(b)

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_reductions_and_shapes():
    def fn(x):
        a = x.numpy()
        return torch.as_tensor(a.sum(axis=0)), a.shape, a.ndim, torch.tensor(np.mean(a))

    return Setup(fn, _t(3, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_array_returned():
    def fn(x):
        a = (x * 2).numpy()
        return np.exp(a), np.maximum(a, 0)

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_input_array():
    def fn(a):
        b = np.clip(a, -0.5, 0.5)
        return b * 2, b.dtype

    return Setup(fn, lambda: (np.random.default_rng(0).standard_normal(4),))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_constants_in_tensor_code():
    def fn(x):
        return x * np.pi + np.float32(2.0), np.int64(3) * 2, np.prod([2, 3])

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_float64_and_complex128_scalars_in_tensor_code():
    """``np.float64``/``np.complex128`` are subclasses of ``float``/``complex`` that the graph's
    code cannot name (a normalizing-flow library's ``-0.5 * d * np.log(2 * np.pi) - sum``
    raised ``NameError: np`` in the compiled graph)."""

    def fn(x):
        log_z = -0.5 * x.shape[-1] * np.log(2 * np.pi)
        return log_z - x.sum(-1), x * np.complex128(1 + 2j), torch.clamp(x, min=np.float64(0.1))

    return Setup(fn, _t(2, 3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_matmul_and_transpose():
    def fn(x):
        a = x.numpy()
        b = a @ a.T
        return torch.from_numpy(np.ascontiguousarray(b)), np.dot(a[0], a[1])

    return Setup(fn, _t(2, 3))


# -- collections -----------------------------------------------------------------------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def deque_operations():
    def fn(x):
        dq = collections.deque([x, x + 1], maxlen=3)
        dq.append(x + 2)
        dq.appendleft(x - 1)
        last = dq.pop()
        first = dq.popleft()
        dq.extend([x * 5])
        return last - first, len(dq), list(dq)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=1)
def counter_most_common():
    def fn(x):
        c = collections.Counter("abracadabra")
        return x * c["a"], c.most_common(2)

    return Setup(fn, _t(2))


# -- globals -------------------------------------------------------------------------------------
_REGISTRY: list = []
_COUNTS = {"calls": 0}


@case("python", graphs=1, breaks=0, tc_breaks=0)
def global_list_and_dict_mutated():
    def fn(x):
        _REGISTRY.append(x.shape[0])
        _COUNTS["calls"] += 1
        return x * _COUNTS["calls"]

    def observe():
        seen = list(_REGISTRY), dict(_COUNTS)
        _REGISTRY.clear()
        _COUNTS["calls"] = 0
        return seen

    def setup():
        _REGISTRY.clear()
        _COUNTS["calls"] = 0
        return Setup(fn, _t(2), observe=observe)

    return setup()


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_meshgrid_where_astype():
    def fn(x, y):
        r1, r2 = np.meshgrid(x.numpy(), y.numpy())
        w = np.where(r1 > 0, r1, 0.0).astype(np.float64)
        return torch.from_numpy(r1 + r2), torch.from_numpy(w.reshape(-1))

    return Setup(fn, lambda: (torch.randn(3), torch.randn(2)))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_array_mutated_in_place():
    def fn(x):
        a = x.numpy()
        a += 1
        a[0] = 0.0
        return x * 2, a.sum()

    return Setup(fn, lambda: (torch.randn(3),))


# -- a second batch, in the style of test_functions.py's make_test functions ---------------------
@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_constructors():
    def fn(a, b):
        d1 = dict(x=a, y=b)
        d2 = dict([("x", a), ("y", b * 2)])
        d3 = dict(zip(["p", "q"], [a, b]))  # noqa: B905 (the behaviour under test)
        d4 = dict(d1, **d3)
        return d1["x"] + d2["y"] + d3["q"], sorted(d4)

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def defaultdict_factories():
    def fn(x):
        counts = collections.defaultdict(int)
        nested = collections.defaultdict(lambda: [x])
        for k in "abca":
            counts[k] += 1
        nested["z"].append(x * 2)
        return x * counts["a"], len(nested["z"]), counts.default_factory is int, dict(counts)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def partial_of_torch_functions():
    def fn(x, y):
        add_alpha = functools.partial(torch.add, alpha=2)
        clamp = functools.partial(torch.clamp, min=-0.5)
        mm = functools.partial(torch.matmul, x)
        return add_alpha(x, y), clamp(x, max=0.5), mm(y.T)

    return Setup(fn, _t2(2, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def range_as_input():
    def fn(x, r):
        total = x
        for i in r:
            total = total + i
        return total, len(r), r[-1], r[1:].start

    return Setup(fn, lambda: (torch.randn(2), range(1, 7, 2)))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def len_of_misc_iterables():
    def fn(x):
        d = {"a": 1, "b": 2}
        return x * (len(range(3, 9)) + len(d.keys()) + len(d.items()) + len("abc") + len({1, 2}))

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def callable_checks():
    def fn(x):
        return (
            x + 1,
            callable(lambda: 1),
            callable(torch.add),
            callable(len),
            callable(3),
            callable(x),
            callable(torch.nn.Linear),
        )

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def number_conversions_and_operator_module():
    def fn(x):
        n = int("12") + int(3.7) + operator.index(4)
        f = float("1.5") + float(2)
        b = bool([]) or operator.truth(5)
        bits = (6 & 3) | (1 << 3) ^ 2
        return x * n + f, b, bits, operator.pos(-2), abs(-3), divmod(-7, 2), ~5

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def math_functions_on_python_numbers():
    def fn(x):
        vals = [math.floor(2.7), math.ceil(2.1), math.sqrt(16.0), math.log2(8)]
        flags = [math.isinf(float("inf")), math.isnan(float("nan")), math.isfinite(1.0)]
        return x * sum(vals) + math.pi, flags, math.gcd(12, 18), math.copysign(2, -1)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def assert_statements():
    def fn(x, n=3):
        assert n > 0, "n must be positive"
        assert isinstance(x, torch.Tensor)
        try:
            assert n > 5, f"n={n} too small"
        except AssertionError as e:
            return x + len(str(e))
        return x

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def tensor_predicates():
    def fn(x):
        return (
            x + 1,
            torch.is_tensor(x),
            torch.is_floating_point(x),
            torch.is_complex(x),
            x.is_sparse,
            x.is_quantized,
            x.get_device(),
            x.type(),
            x.type(torch.float64).dtype,
            x.element_size(),
            torch.finfo(torch.float16).max,
            x.is_contiguous(memory_format=torch.contiguous_format),
        )

    return Setup(fn, _t(2, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def tensors_in_tuples_lists_and_sets():
    def fn(x, y):
        pair = (x, y)
        found = x in pair and y in [y, x]
        index = [x, y].index(x)
        seen = {"x": x, "pair": pair}
        return x * index + y, found, len(seen), pair.index(x)

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def star_unpacking_in_displays_and_calls():
    def combine(*parts, scale=1, **named):
        return sum(parts) * scale + sum(named.values())

    def fn(x, y):
        args = [x, y]
        extra = {"scale": 2}
        merged = {**{"a": x}, "b": y, **{"c": x * y}}
        both = [*args, *(x + 1,)]
        return combine(*args, **extra), combine(*both, **merged), {*"ab", *"bc"} == set("abc")

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def nested_closure_mutation():
    def fn(x):
        state = {"calls": 0}
        total = [x]

        def outer():
            def inner(t):
                state["calls"] += 1
                total.append(t * state["calls"])
                return t

            return inner

        f = outer()
        f(x)
        f(x + 1)
        return sum(total), state["calls"]

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def closure_cell_rebound_after_escape():
    box = []

    def fn(x):
        scale = 2

        def get():
            return x * scale

        box.append(get)
        scale = 5  # the escaped closure sees the cell's final value
        return get()

    return Setup(fn, _t(2), observe=lambda: box.pop()())


@case("python", graphs=1, breaks=0, tc_breaks=0)
def generator_return_value_and_send_none():
    def inner(t):
        yield t
        return t * 10

    def outer(t):
        result = yield from inner(t)
        yield result

    def fn(x):
        g = outer(x)
        first = next(g)
        second = g.send(None)
        return first + second

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def any_all_short_circuit_with_side_effects():
    def fn(x):
        seen = []

        def check(v):
            seen.append(v)
            return v > 1

        return x * any(check(v) for v in range(5)), all(check(v) for v in [3, 0, 5]), seen

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def try_except_else_finally_order():
    def fn(x):
        log = []
        for n in (1, 0):
            try:
                v = 10 // n
            except ZeroDivisionError:
                log.append("except")
                v = -1
            else:
                log.append("else")
            finally:
                log.append("finally")
            x = x + v
        return x, log

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def raise_from_and_custom_exception_args():
    class ShapeError(ValueError):
        pass

    def check(t):
        try:
            return {"rows": t.shape[0]}["cols"]
        except KeyError as e:
            raise ShapeError("missing", t.dim()) from e

    def fn(x):
        try:
            check(x)
        except ShapeError as e:
            return x * e.args[1], type(e.__cause__).__name__, e.args[0]
        return x

    return Setup(fn, _t(2, 3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def mutual_recursion_with_accumulator():
    def is_even(n, acc):
        acc.append(n)
        return True if n == 0 else is_odd(n - 1, acc)

    def is_odd(n, acc):
        acc.append(n)
        return False if n == 0 else is_even(n - 1, acc)

    def fn(x):
        acc = []
        return x * is_even(6, acc), acc

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def itertools_infinite_count_and_repeat_with_break():
    def fn(x):
        out = x
        for i in itertools.count(2, 3):
            if i > 10:
                break
            out = out + i
        for j, r in zip(range(3), itertools.repeat(x)):
            out = out + r * j
        return out

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=2)
def itertools_product_of_tensors_and_combinations_with_replacement():
    def fn(x, y):
        pairs = [a * b for a, b in itertools.product([x, y], repeat=2)]
        combos = list(itertools.combinations_with_replacement("ab", 2))
        return torch.stack(pairs).sum(0), combos

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def zip_and_map_returned():
    def fn(a, b):
        return list(map(lambda t: t + 1, [a, b])), list(zip([a, b], ["p", "q"]))  # noqa: B905 (the behaviour under test)

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def operator_on_module_attributes():
    lin = torch.nn.Linear(3, 2)

    def fn(x):
        weight = operator.attrgetter("weight")(lin)
        bias_shape = operator.attrgetter("bias.shape")(lin)
        return x @ weight.T, bias_shape

    return Setup(fn, _t(4, 3))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def numpy_arange_and_array_constants():
    def fn(x):
        idx = np.arange(3)
        w = np.array([1.0, 2.0, 3.0], dtype=np.float32)
        return x * torch.from_numpy(w) + torch.from_numpy(idx), idx.dtype

    return Setup(fn, _t(3))


@case(
    "python",
    graphs=1,
    breaks=1,
    tc_breaks=1,
    retraces=1,
    why="float() of a NumPy scalar reads the data into Python (a captured scalar, issue 11 point "
    "4, is another helper's); the resumed code is specialised on the value read",
)
def numpy_reduction_scalars_in_python():
    def fn(x):
        a = x.numpy()
        m = np.max(a)
        return x - torch.tensor(m), float(np.mean(a)) > -10

    return Setup(fn, _t(4))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def fstrings_of_devices_and_formats():
    def fn(x):
        name = f"{x.device}:{x.dtype}:{x.ndim}d:{x.numel():04d}:{1 / 3:.3f}"
        return x.sum(), name, "{:>6}|{:<4}|".format("a", 7), "%-5s|%03d" % ("z", 9)  # noqa: UP031 (the behaviour under test)

    return Setup(fn, _t(2, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def set_of_tensors_by_identity():
    def fn(x, y):
        s = {x, y}
        s.add(x)
        return len(s), x in s, sum(t.sum() for t in [x, y] if t in s)

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def dict_keyed_by_tensors():
    def fn(x, y):
        cache = {x: "first", y: "second"}
        cache[x] = "again"
        return cache[x], cache.get(y), len(cache), x * 2

    return Setup(fn, _t2(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def lambda_defaults_and_keyword_calls():
    def fn(x):
        f = lambda t, k=2, *, b=1: t * k + b  # noqa: E731
        return f(x), f(x, 3), f(x, b=0), f(t=x, k=-1)

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def enumerate_reversed_sorted_zip_chain():
    def fn(x):
        rows = list(x.unbind(0))
        ordered = [r for _, r in sorted(enumerate(rows), key=lambda p: -p[0])]
        paired = [a - b for a, b in zip(reversed(rows), rows)]  # noqa: B905 (the behaviour under test)
        return torch.stack(ordered), torch.stack(paired), list(reversed(range(len(rows))))

    return Setup(fn, _t(3, 2))


@case("python", graphs=1, breaks=0, tc_breaks=0)
def heapq_of_tuples_with_tensors():
    def fn(x):
        heap = []
        for v in [5, 1, 4, 2]:
            heapq.heappush(heap, (v, x * v))
        smallest = heapq.heappop(heap)
        top = heapq.nsmallest(2, [3, 1, 2])
        return smallest[1], [v for v, _ in heap], top

    return Setup(fn, _t(3))


@case("python", graphs=1, breaks=0, tc_breaks=3)
def bisect_into_sorted_list():
    def fn(x):
        bounds = [1, 3, 5, 7]
        pos = bisect.bisect_left(bounds, 4) + bisect.bisect(bounds, 5)
        bisect.insort(bounds, 4)
        return x * pos, bounds

    return Setup(fn, _t(2))


@case("python", graphs=1, breaks=0, tc_breaks=1)
def tuple_comparisons_and_pow():
    def fn(x):
        a, b = (1, x), (2, x)
        ordered = a < b and (1, 2) <= (1, 2, 0) and [3] > [2, 9]
        return pow(x, 2) + pow(2, 3), ordered, (1, "a") == (1, "a"), max((2, "b"), (2, "a"))

    return Setup(fn, _t(2))


@case("python", graphs=2, breaks=1, tc_breaks=1)
def closure_cell_written_after_a_break():
    # the frame and the closure share the cell across the break (resume cell_args)
    def fn(x):
        n = 0

        def inc():
            nonlocal n
            n += 1
            return n

        y = x + inc()
        print("counted", n)
        return y * inc(), n

    return Setup(fn, lambda: (torch.randn(3),))
