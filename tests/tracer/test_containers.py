"""Differential tests: tuples, lists, dicts and sets: building, unpacking (starred too), indexing,
slicing, len, iteration, membership and methods."""

from __future__ import annotations

import collections

import torch
from difftest import check

Point = collections.namedtuple("Point", ["x", "y"])


def test_build_and_return_tuple():
    def fn(x, y):
        return (x + 1, y * 2, 3)

    check(fn, torch.randn(2), torch.randn(2))


def test_build_and_return_list():
    def fn(x):
        return [x, x + 1, "a"]

    check(fn, torch.randn(2))


def test_build_and_return_dict():
    def fn(x):
        return {"a": x + 1, "b": x * 2, 3: None}

    check(fn, torch.randn(2))


def test_build_set_of_constants():
    def fn(x):
        s = {1, 2, 3}
        return x * len(s)

    check(fn, torch.randn(2))


def test_tuple_unpack():
    def fn(pair):
        a, b = pair
        return a - b

    check(fn, (torch.randn(3), torch.randn(3)))


def test_list_unpack():
    def fn(xs):
        a, b, c = xs
        return a + b + c

    check(fn, [torch.randn(2), torch.randn(2), torch.randn(2)])


def test_starred_unpack_middle():
    def fn(xs):
        first, *middle, last = xs
        return first + last, len(middle), middle

    check(fn, [torch.randn(2) for _ in range(5)])


def test_starred_unpack_first():
    def fn(xs):
        *rest, last = xs
        return rest, last * 2

    check(fn, (torch.randn(2), torch.randn(2), torch.randn(2)))


def test_nested_unpack():
    def fn(data):
        (a, b), c = data
        return a * b + c

    check(fn, ((torch.randn(2), torch.randn(2)), torch.randn(2)))


def test_swap_via_tuple_assignment():
    def fn(a, b):
        a, b = b, a
        return a - b

    check(fn, torch.randn(2), torch.randn(2))


def test_rotate_three_values():
    def fn(a, b, c):
        a, b, c = c, a, b
        return a * 1, b * 2, c * 3

    check(fn, torch.randn(2), torch.randn(2), torch.randn(2))


def test_index_tuple_and_negative_index():
    def fn(t):
        return t[0] + t[-1]

    check(fn, (torch.randn(2), torch.randn(2), torch.randn(2)))


def test_slice_list():
    def fn(xs):
        ys = xs[1:3]
        zs = xs[::2]
        return ys, zs, xs[-2:], ys[0] + zs[-1]

    check(fn, [torch.randn(1) * i for i in range(5)])


def test_slice_tuple_with_constants():
    def fn(x):
        t = (1, 2, 3, 4, 5)
        return x * sum(t[1:4]) + t[-1]

    check(fn, torch.randn(2))


def test_len_of_containers():
    def fn(x, xs, d):
        return x * (len(xs) + len(d) + len((1, 2)) + len("abc"))

    check(fn, torch.randn(2), [1, 2, 3], {"a": 1})


def test_iterate_list_of_tensors():
    def fn(xs):
        total = 0
        for t in xs:
            total = total + t
        return total

    check(fn, [torch.randn(3) for _ in range(4)])


def test_in_operator_on_constants():
    def fn(x, name):
        if name in ("relu", "gelu"):
            return torch.relu(x)
        return x

    check(fn, torch.randn(4), "relu")


def test_not_in_dict():
    def fn(x, cfg):
        if "scale" not in cfg:
            return x
        return x * cfg["scale"]

    check(fn, torch.randn(4), {"scale": 3.0})


def test_in_list_of_ints():
    def fn(x):
        xs = [1, 2, 3]
        return x + (2 in xs) + (5 in xs)

    check(fn, torch.randn(2))


def test_in_set():
    def fn(x):
        allowed = {"a", "b"}
        return x * ("a" in allowed)

    check(fn, torch.randn(2))


def test_tensor_identity_in_list():
    def fn(x, y):
        xs = [x]
        return x * 2 if x in xs else y

    check(fn, torch.randn(2), torch.randn(2))


def test_list_append_extend_insert_pop():
    def fn(x):
        xs = [x]
        xs.append(x + 1)
        xs.extend([x + 2, x + 3])
        xs.insert(0, x - 1)
        last = xs.pop()
        first = xs.pop(0)
        return xs, last, first

    check(fn, torch.randn(2))


def test_list_remove_reverse_clear_copy():
    def fn(x):
        xs = [1, 2, 3, 2]
        xs.remove(2)
        xs.reverse()
        ys = xs.copy()
        xs.clear()
        return x * len(ys), ys, xs

    check(fn, torch.randn(2))


def test_list_sort_constants():
    def fn(x):
        xs = [3, 1, 2]
        xs.sort()
        ys = [3, 1, 2]
        ys.sort(reverse=True)
        return x + xs[0], ys

    check(fn, torch.randn(2))


def test_list_index_and_count():
    def fn(x):
        xs = ["a", "b", "a"]
        return x * xs.index("b") + xs.count("a")

    check(fn, torch.randn(2))


def test_tuple_index_and_count():
    def fn(x):
        t = (4, 5, 4)
        return x * t.index(5) + t.count(4)

    check(fn, torch.randn(2))


def test_list_setitem_and_delitem():
    def fn(x):
        xs = [x, x, x]
        xs[1] = x * 2
        del xs[0]
        return xs

    check(fn, torch.randn(2))


def test_list_slice_assignment():
    def fn(x):
        xs = [1, 2, 3, 4]
        xs[1:3] = [x, x * 2]
        return xs

    check(fn, torch.randn(2))


def test_list_concat_and_repeat():
    def fn(x):
        a = [x] + [x + 1]
        b = [0] * 3
        c = (1,) + (2, 3)
        return a, b, c

    check(fn, torch.randn(2))


def test_list_inplace_concat():
    def fn(x):
        xs = [x]
        xs += [x * 2]
        return xs

    check(fn, torch.randn(2))


def test_dict_get_and_default():
    def fn(x, d):
        return x * d.get("a", 1) + d.get("missing", 5)

    check(fn, torch.randn(2), {"a": 2})


def test_dict_items_keys_values():
    def fn(d):
        out = {}
        for k, v in d.items():
            out[k] = v * 2
        keys = list(d.keys())
        total = sum(d.values())
        return out, keys, total

    check(fn, {"a": torch.randn(2), "b": torch.randn(2)})


def test_dict_iteration_over_keys():
    def fn(d):
        acc = []
        for k in d:
            acc.append(d[k] + 1)
        return acc

    check(fn, {"x": torch.randn(2), "y": torch.randn(2)})


def test_dict_update_pop_setdefault():
    def fn(x):
        d = {"a": x}
        d.update({"b": x + 1})
        d.setdefault("c", x + 2)
        d.setdefault("a", x * 100)
        popped = d.pop("b")
        return d, popped

    check(fn, torch.randn(2))


def test_dict_del_and_copy():
    def fn(x):
        d = {"a": x, "b": x * 2}
        e = d.copy()
        del d["a"]
        return d, e

    check(fn, torch.randn(2))


def test_dict_merge_unpacking():
    def fn(x):
        a = {"a": x}
        b = {"b": x + 1}
        return {**a, **b, "c": 3}

    check(fn, torch.randn(2))


def test_dict_constructor_kwargs_and_pairs():
    def fn(x):
        d = dict(a=x, b=2)
        e = dict([("k", x + 1)])
        return d, e

    check(fn, torch.randn(2))


def test_dict_with_int_keys():
    def fn(x):
        d = {i: x * i for i in range(3)}
        return d[2] - d[1]

    check(fn, torch.randn(2))


def test_set_methods():
    def fn(x):
        s = set()
        s.add(1)
        s.update([2, 3])
        s.discard(3)
        return x * len(s)

    check(fn, torch.randn(2))


def test_set_operators_on_constants():
    def fn(x):
        a = frozenset({1, 2, 3})
        b = frozenset({2, 3, 4})
        return x * len(a & b) + len(a | b)

    check(fn, torch.randn(2))


def test_build_list_with_starred():
    def fn(xs):
        return [*xs, xs[0] * 2]

    check(fn, (torch.randn(2), torch.randn(2)))


def test_build_tuple_with_starred():
    def fn(x, rest):
        return (x + 1, *rest)

    check(fn, torch.randn(2), [torch.randn(2), 3])


def test_build_set_with_starred():
    def fn(x):
        a = [1, 2]
        return x * len({*a, 3})

    check(fn, torch.randn(2))


def test_namedtuple_input_fields():
    def fn(p):
        return p.x * p.y, p[0]

    check(fn, Point(torch.randn(2), torch.randn(2)))


def test_namedtuple_constructed_in_function():
    def fn(x):
        p = Point(x, y=x + 1)
        return p

    check(fn, torch.randn(2))


def test_namedtuple_unpack():
    def fn(p):
        a, b = p
        return a - b

    check(fn, Point(torch.randn(2), torch.randn(2)))


def test_tuple_of_size_from_shape():
    def fn(x):
        h, w = x.shape
        return x.reshape(w, h)

    check(fn, torch.randn(2, 3))


def test_nested_list_of_tuples_input():
    def fn(pairs):
        return [a * b for a, b in pairs]

    check(fn, [(torch.randn(2), torch.randn(2)), (torch.randn(2), torch.randn(2))])


def test_truthiness_of_empty_containers():
    def fn(x, xs):
        if xs:
            return x + 1
        if not []:
            return x - 1
        return x

    check(fn, torch.randn(2), [])


def test_tuple_comparison_folded():
    def fn(x):
        return x * ((1, 2) < (1, 3))

    check(fn, torch.randn(2))


def test_list_returned_contains_input_tensor():
    def fn(x):
        return [x, x * 2]

    compiled, _ = check(fn, torch.randn(2))
    x = torch.randn(2)
    out = compiled(x)
    assert out[0] is x


PointZ = collections.namedtuple("PointZ", ["x", "y", "z"], defaults=(0.5,))


def test_namedtuple_defaults_replace_asdict():
    def fn(t):
        p = PointZ(t, t + 1)
        q = p._replace(z=t * 3)
        return q, p.z, q._asdict(), p._fields

    check(fn, torch.randn(2))


def test_sequence_concat_result_types():
    def fn(t):
        p = Point(t, t + 1)
        joined = p + (3,)
        size = t.shape + (1,)
        return joined, size, 2 * [t], (t,) * 2, t.view(size)

    check(fn, torch.randn(2))


def test_compare_constant_lists_and_dicts():
    def fn(x, xs, d):
        return x * (xs == [1, 2]) + (d != {"a": 1}) + ([1] < [2])

    check(fn, torch.randn(2), [1, 2], {"a": 1})


class _KeysMapping:
    """A mapping by ``keys()`` and ``[k]`` (its iteration gives the keys, which ``dict()`` never
    uses on a value that has ``keys``)."""

    def __init__(self):
        self.data = {"ab": 1, "cd": 2}

    def keys(self):
        return list(self.data)

    def __getitem__(self, key):
        return self.data[key] * 10

    def __iter__(self):
        return iter(self.data)


def test_dict_of_a_mapping_reads_keys_and_items():
    def fn(x, m):
        updated = {"z": 0}
        updated.update(m)
        return x + 1, dict(m), updated, dict(m, ef=3)

    check(fn, torch.ones(2), _KeysMapping())


def test_dict_of_pairs_of_another_length_raises_cpythons_error():
    def fn(x, pairs):
        try:
            return x + 1, dict(pairs)
        except ValueError as e:
            return x - 1, str(e)

    check(fn, torch.ones(2), [(1, 2), (3, 4, 5)])
    check(fn, torch.ones(2), [(1, 2), "ab"])
