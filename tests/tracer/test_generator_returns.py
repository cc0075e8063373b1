"""What a generator returns reaches the code that takes its items: ``next(g)`` and ``g.send(v)``
on an ended generator raise a ``StopIteration`` whose ``value`` and ``args`` are the returned
value (a tensor made in the trace included; none for None), and ``e.value`` of a
``StopIteration`` made in the trace is its first argument. Compared with eager."""

from __future__ import annotations

import torch

from tests.difftest import check, check_breaks


def returns_tensor(x):
    def gen():
        yield 1
        return x * 3

    g = gen()
    next(g)
    try:
        next(g)
    except StopIteration as e:
        return e.value, e.args


def returns_before_yield(x):
    def gen():
        return x + 1
        yield 1

    try:
        next(gen())
    except StopIteration as e:
        return e.value, e.args


def returns_none(x):
    def gen():
        yield x

    g = gen()
    next(g)
    try:
        next(g)
    except StopIteration as e:
        return e.value, e.args, x


def send_returns_tuple(x):
    def gen():
        a = yield 1
        return (x * a, 2)

    g = gen()
    next(g)
    try:
        g.send(4)
    except StopIteration as e:
        return e.value, e.args


def raised_value(x):
    try:
        raise StopIteration(x + 1, "b")
    except StopIteration as e:
        return e.value, e.args


def uncaught(x):
    def gen():
        yield 1
        return x * 2

    g = gen()
    next(g)
    return next(g)


def test_returned_tensor_is_the_value():
    check(returns_tensor, torch.randn(3))


def test_returned_before_the_first_yield():
    check(returns_before_yield, torch.randn(3))


def test_returned_none_gives_no_arguments():
    check(returns_none, torch.randn(3), graphs=0)


def test_send_into_a_generator_that_returns():
    check(send_returns_tuple, torch.randn(3))


def test_value_of_a_raised_stop_iteration():
    check(raised_value, torch.randn(3))


def test_uncaught_stop_iteration_holds_the_value():
    # the break is taken where the generator was made: its frame runs in CPython
    check_breaks(uncaught, lambda: (torch.randn(3),), graphs=0, breaks=3)
