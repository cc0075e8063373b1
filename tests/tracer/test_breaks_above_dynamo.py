"""Code that torch.compile traces and bytegraph once broke on: user-class protocols (number
conversions, iterators), each compared with eager (results, errors, arguments after the call) and
its break count with torch.compile's on the same code."""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import check, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks


def ones():
    return (torch.ones(3),)


# -- int() / float(): __int__, __float__, __index__ -----------------------------------------------


class Num:
    def __init__(self, v):
        self.v = v

    def __int__(self):
        return int(self.v) + 1

    def __float__(self):
        return self.v + 0.25


class Index:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v * 2


class HalfNum(Num):  # __int__ inherited, __float__ its own
    def __float__(self):
        return self.v / 2


class IndexAndInt(Index):  # __int__ wins over __index__ in int(); float() takes __index__
    def __int__(self):
        return -self.v


def conversions(n, x):
    return x * float(n), int(n), x + int(n), float(n) == int(n)


@pytest.mark.parametrize("make", [Num, Index, HalfNum, IndexAndInt])
def test_int_and_float_of_an_object_call_its_methods(make):
    for v in (3, 4):
        check(conversions, make(v), torch.ones(3), graphs=1, breaks=0)
    assert_no_more_breaks(0, conversions, make(3), torch.ones(3))


class Wrong:
    def __init__(self, value):
        self.value = value

    def __int__(self):
        return self.value

    def __float__(self):
        return self.value

    def __index__(self):
        return self.value


def converted_or_error(n, x):
    out = []
    for kind in (int, float):
        try:
            out.append(kind(n))
        except TypeError as e:
            out.append(str(e))
    return x + 1, out


@pytest.mark.parametrize("value", ["7", 2.5, 3, None], ids=repr)
def test_a_conversion_returning_another_type_raises_cpythons_error(value):
    # __int__ returning a float, a str or None, __float__ returning an int: TypeError each
    check(converted_or_error, Wrong(value), torch.ones(3), graphs=1, breaks=0)


def test_a_conversion_returning_a_tensor_raises_cpythons_error():
    check(converted_or_error, Wrong(torch.ones(())), torch.ones(3), graphs=1, breaks=0)


def test_a_conversion_returning_a_subclass_warns_at_each_call():
    # int() of an object whose __int__ returns a bool: CPython's DeprecationWarning at run time
    compiled, _ = compile_counted(converted_or_error)
    seen = []
    for fn in (converted_or_error, compiled, compiled):
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            _, out = fn(Wrong(True), torch.ones(3))
        seen.append((out, [(w.category, str(w.message)) for w in warned]))
    assert seen[0][0] == [1, "Wrong.__float__ returned non-float (type bool)"]
    assert seen[0][1] and seen[1] == seen[0] and seen[2] == seen[0]


def test_float_of_an_index_made_of_a_tensor_value():
    def fn(x):
        return x * float(Index(x.shape[0])), int(Index(len(x)))

    check(fn, torch.ones(3), graphs=1, breaks=0)
    check_breaks(fn, lambda: (torch.ones(4),), graphs=1, breaks=0)
