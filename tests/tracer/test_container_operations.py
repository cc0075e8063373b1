"""Operations on lists, tuples, dicts, sets and frozensets that torch.compile traces: each checked
against CPython (results, the containers after the call, the error raised) and against
``torch._dynamo.explain`` (no more breaks than torch.compile)."""

from __future__ import annotations

import collections
import copy
import functools
import operator

import pytest
import torch
from difftest import check, check_breaks
from dynamo_baseline import dynamo_counts


class Plain:
    pass


def _no_more_breaks_than_dynamo(fn, *args):
    """bytegraph: one graph, no break, results and inputs as CPython's; torch.compile, where it
    traces ``fn`` at all (some torch versions fail on these or run them in Python), no break
    either: the code is one the matrix counts as a gap while bytegraph breaks on it."""
    check(fn, *args, calls=1)
    try:
        graphs, breaks = dynamo_counts(fn, *args)
    except Exception:  # noqa: BLE001 (torch.compile's internal error on this torch)
        return
    if breaks >= 0:
        assert (graphs, breaks) == (1, 0), f"torch.compile: {graphs} graphs, {breaks} breaks"


# -- re-initialising an existing container ---------------------------------------------------------
def _reinit_list(x, xs):
    a = [x, 1, Plain]
    a.__init__()
    b = [x, 2]
    b.__init__((x + 1, 3))
    xs.__init__(xs)  # emptied first: nothing left to copy
    return a, b, xs


def _reinit_dict(x, d):
    a = {"k": x, Plain: 1}
    a.__init__({"j": x + 1}, z=2)  # an update: the old keys stay
    d.__init__([("n", x)])
    r = d.__init__()
    return a, d, r


def _reinit_set(x, s):
    a = {1, Plain}
    a.__init__((2, len))
    s.__init__(s)
    return a, s, x + 1


def _reinit_immutable(x):
    t = (x, Plain)
    f = frozenset({1, Plain})
    return t.__init__(), t.__init__(1, 2), f.__init__(), f, t, x + 1


@pytest.mark.parametrize(
    "fn, make",
    [
        (_reinit_list, lambda: (torch.ones(2), [1, "a"])),
        (_reinit_dict, lambda: (torch.ones(2), {"a": 1})),
        (_reinit_set, lambda: (torch.ones(2), {1, "a"})),
        (_reinit_immutable, lambda: (torch.ones(2),)),
    ],
)
def test_reinit_of_existing_container(fn, make):
    _no_more_breaks_than_dynamo(fn, *make())


def test_set_reinit_with_two_arguments_raises_cpythons_error():
    def fn(x):
        s = {1}
        try:
            s.__init__((1,), (2,))
        except TypeError as e:
            return x + 1, str(e), s
        return x, "", s

    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=0)


def test_tuple_getnewargs():
    def fn(x, t):
        u = (x, 1)
        return x + 1, t.__getnewargs__(), u.__getnewargs__()

    _no_more_breaks_than_dynamo(fn, torch.ones(2), (1, "a"))


def test_tuple_getnewargs_holds_the_tuple_itself():
    def fn(x, t):
        u = (x, Plain)
        return x + 1, t.__getnewargs__()[0] is t, u.__getnewargs__()[0] is u

    check(fn, torch.ones(2), (2, 3))


def test_namedtuple_keeps_its_own_getnewargs():
    pair = collections.namedtuple("pair", "a b")

    def fn(x):
        p = pair(x, 2)
        return x + 1, p.__getnewargs__(), p.__init__()

    check(fn, torch.ones(2))


# -- + and * of lists and tuples with an operand that cannot take part ----------------------------
def _catch(fn, *args):
    try:
        return fn(*args)
    except TypeError as e:
        return ("raised", str(e))


@pytest.mark.parametrize(
    "other", [True, 2.5, None, "ab", len, Plain, torch.float32, torch.device("cpu"), {1: 2}]
)
def test_sequence_operator_error_is_cpythons(other):
    def fn(x, xs, other):
        t = (x, 1)
        return (
            x + 1,
            _catch(lambda: xs + other),
            _catch(lambda: other + xs),
            _catch(lambda: t * other),
            _catch(lambda: other * xs),
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"], other)


def test_sequence_operator_asks_a_user_class_first():
    class Radd:
        def __radd__(self, other):
            return ("radd", len(other))

    def fn(x, xs, obj):
        return x + 1, xs + obj

    check(fn, torch.ones(2), [1, 2], Radd())


# -- extending a list by something that is not iterable --------------------------------------------
@pytest.mark.parametrize("other", [True, 7, len, Plain(), torch.float32])
def test_extend_by_non_iterable_raises_cpythons_error(other):
    def fn(x, xs, other):
        ys = [x]
        r1 = _catch(lambda: xs.extend(other))
        try:
            ys += other
        except TypeError as e:
            r2 = str(e)
        return x + 1, r1, r2, xs, ys

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"], other)


# -- operator.concat and operator.iconcat ----------------------------------------------------------
def test_operator_concat_of_sequences():
    def fn(x, xs):
        joined = operator.concat(xs, [x])
        extended = operator.iconcat(xs, (x, 2))  # a list takes any iterable, in place
        tuples = operator.iconcat((x,), (1,))  # a tuple makes a new one
        text = operator.concat("ab", "c")
        return x + 1, joined, extended is xs, tuples, text, xs

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"])


@pytest.mark.parametrize("other", [(1,), 7, len, {1: 2}])
def test_operator_concat_error_is_cpythons(other):
    """(torch.compile fails with an internal error on these.)"""

    def fn(x, xs, other):
        return (
            x + 1,
            _catch(operator.concat, xs, other),
            _catch(operator.concat, (x,), other),
            _catch(operator.concat, other, xs),
        )

    check(fn, torch.ones(2), [1, "a"], other)


# -- collections' Python containers ---------------------------------------------------------------
def test_user_dict_and_chain_map_with_any_key():
    key = Plain()

    def fn(x, d):
        u = collections.UserDict(d)
        u[key] = x
        chained = collections.ChainMap({len: 3}, {key: 4}, d)
        return x + 1, u[key], u["a"], chained[len], chained[key], chained["a"], len(u)

    _no_more_breaks_than_dynamo(fn, torch.ones(2), {"a": 1})


def test_user_dict_with_tensor_key():
    def fn(x, t):
        u = collections.UserDict({t: 1})
        return x + 1, u[t]

    check(fn, torch.ones(2), torch.zeros(1))


def test_str_and_repr_of_user_objects():
    class Text:
        def __str__(self):
            return "text"

    class Shown:
        def __repr__(self):
            return "shown"

    class Wrong:
        def __str__(self):
            return 3

    def fn(x, v):
        try:
            wrong = str(Wrong())
        except TypeError as e:
            wrong = str(e)
        return (
            x + 1,
            str(collections.UserString(v)),
            str(Text()),
            repr(Shown()),
            str(Shown()),
            wrong,
        )

    for v in (True, 2.5, "ab", len, torch.float32):
        _no_more_breaks_than_dynamo(fn, torch.ones(2), v)


# -- functools.cache / lru_cache wrappers made in the trace ----------------------------------------
def test_cache_made_in_the_trace():
    def fn(x, log):
        def costly(v, scale=1):
            log.append(v)
            return [v, scale]

        cached = functools.cache(costly)
        first = cached(1)
        hit = cached(1)  # the same result object, costly not run
        other = cached(True)  # a one-int key is the int, True's is a tuple: a miss in CPython
        keyed = cached(1, scale=2)
        texts = str(functools.cache(str)(2.5))
        return x + 1, first is hit, first is other, keyed, cached(len), texts, log

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [])


def test_lru_cache_maxsize_and_typed():
    def fn(x, log):
        def costly(v):
            log.append(v)
            return v * 2

        two = functools.lru_cache(maxsize=2)(costly)
        for v in (1, 2, 1, 3, 2, 1):  # 2 is dropped when 3 comes, 1 stays recently used
            two(v)
        typed = functools.lru_cache(typed=True)(costly)
        typed(1), typed(1.0), typed(1)
        uncached = functools.lru_cache(0)(costly)
        uncached(5), uncached(5)
        bare = functools.lru_cache(costly)
        bare(7), bare(7)
        return x + 1, log

    check(fn, torch.ones(2), [], calls=1)


def test_cache_with_tensor_arguments_keys_them_by_identity():
    def fn(x, y):
        cached = functools.cache(lambda t: t + 1)
        return cached(x) is cached(x), cached(y) is cached(x)

    check(fn, torch.ones(2), torch.ones(2))


# -- operators of builtin containers no rule combines ----------------------------------------------
@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.sub, operator.xor])
def test_set_operator_with_a_dict_raises_cpythons_error(op):
    def fn(x, d):
        f = frozenset({0})
        return x + 1, _catch(op, f, d), _catch(op, d, f), _catch(op, {1}, d)

    _no_more_breaks_than_dynamo(fn, torch.ones(2), {"a": 1})


def test_sequence_operator_with_a_tuple_subclass():
    pair = collections.namedtuple("pair", "a b")

    def fn(x, xs, size):
        p = pair(1, 2)
        return x + 1, _catch(lambda: xs + p), _catch(lambda: xs * size), _catch(lambda: p * xs)

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"], torch.Size([2, 3]))


# -- copy.deepcopy of builtin containers -----------------------------------------------------------
def test_deepcopy_of_containers_keeps_sharing_and_atomic_values():
    def fn(x, d):
        inner = [1, "a"]
        shared = [inner, inner, (inner,), (2, len, torch.float32), frozenset({3}), {4}, Plain, None]
        copied = copy.deepcopy(shared)
        deep = copy.deepcopy(d)
        return (
            x + 1,
            copied,
            copied[0] is copied[1],
            copied[0] is inner,
            copied[2][0] is copied[0],
            copied[3] is shared[3],  # a tuple of atomic values is itself
            copied[4] is shared[4],  # a frozenset is rebuilt
            deep,
            deep["k"] is d["k"],
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), {"k": [1, {2: "b"}], 3.5: (True, b"x")})


def test_deepcopy_of_slices_makes_new_slices_of_copied_parts():
    def fn(x, s, t):
        copied = copy.deepcopy({"a": s, "b": [s, t]})
        return (
            x + 1,
            copied,
            copied["a"] is copied["b"][0],  # shared: copied once
            copied["a"] is s,  # a new slice, as CPython's reduction makes
            copied["b"][1].start is t.start,  # its list part copied too
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), slice(1, 3), slice([1], None, 2))


class _OwnDeepcopy:
    """An object with its own ``__deepcopy__``, which takes CPython's id-keyed memo."""

    def __deepcopy__(self, memo):
        return _OwnDeepcopy()


def test_deepcopy_of_other_values_runs_in_python():
    def fn(x, p):
        copied = copy.deepcopy([p, p])
        return x + 1, copied[0] is copied[1], copied[0] is p, type(copied[0])

    _, _, report = check_breaks(fn, lambda: (torch.ones(2), _OwnDeepcopy()), graphs=1, breaks=1)
    assert "copy.deepcopy" in str(report.break_reasons[0])


# -- a list or tuple indexed by a value that is no index -------------------------------------------
@pytest.mark.parametrize("key", [Plain(), len, Plain.__init__, torch.float32])
def test_index_that_is_no_integer_raises_cpythons_error(key):
    def fn(x, xs, key):
        t = (x, 1)

        def assign():
            xs[key] = 1

        def delete():
            del xs[key]

        return (
            x + 1,
            _catch(lambda: xs[key]),
            _catch(lambda: t[key]),
            _catch(assign),
            _catch(delete),
            xs,
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"], key)


@pytest.mark.parametrize("key", [Plain(), len, 2.5])
def test_list_method_index_that_is_no_integer_raises_cpythons_error(key):
    """(torch.compile fails with an internal error on these.)"""

    def fn(x, xs, key):
        return (
            x + 1,
            _catch(lambda: xs.insert(key, 1)),
            _catch(lambda: xs.pop(key)),
            _catch(lambda: xs.__imul__(key)),
            xs,
        )

    check(fn, torch.ones(2), [1, "a"], key)


def test_slice_assigned_a_non_iterable_raises_cpythons_error():
    def fn(x, xs):
        def assign(index, value):
            xs[index] = value

        return (
            x + 1,
            _catch(assign, slice(0, 1), len),
            _catch(assign, slice(0, 2, 2), 3),
            xs,
        )

    _no_more_breaks_than_dynamo(fn, torch.ones(2), [1, "a"])
