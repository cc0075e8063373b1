"""Iterators of a deque that leave the function part way through (found by the matrix's deque
cells): the deque's tracker is a list's, and its iterators were rebuilt as a list's are, with
``__setstate__``, which a deque's iterators lack (AttributeError where eager returns). Each
iterator must come back of the deque's iterator type, at its position, for a deque made in the
function and for one passed in; compared with eager."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import assert_same

import bytegraph


def _made(x):
    d = collections.deque([1, 2, 3])
    it = iter(d)
    next(it)
    return x + 1, it


def _made_reversed(x):
    d = collections.deque([1, 2, 3])
    it = reversed(d)
    next(it)
    return x + 1, it


def _given(x, d):
    it = iter(d)
    next(it)
    back = reversed(d)
    next(back)
    return x + 1, it, back


def _given_untouched(x, d):
    return x + 1, iter(d), reversed(d)


def _given_exhausted(x, d):
    it = reversed(d)
    taken = list(it)
    return x + 1, it, taken


def _escaped(outcome):
    """The outcome with each iterator as its type and the items it has left."""
    return [(type(v), list(v)) if hasattr(v, "__next__") else v for v in outcome]


@pytest.mark.parametrize(
    "fn",
    [_made, _made_reversed, _given, _given_untouched, _given_exhausted],
    ids=lambda f: f.__name__,
)
def test_deque_iterator_leaves_the_function_at_its_position(fn):
    args = (collections.deque([1, 2, 3]),) if fn.__code__.co_argcount == 2 else ()
    eager_args = (collections.deque([1, 2, 3]),) if args else ()
    expected = _escaped(fn(torch.ones(2), *eager_args))
    actual = _escaped(bytegraph.compile(fn, backend="eager")(torch.ones(2), *args))
    assert_same(actual, expected)
    assert_same(list(args), list(eager_args))
