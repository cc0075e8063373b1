"""A deque's own rules where its tracker (a list's) took a list's (found by the matrix's deque
cells): ``d[1:2]`` gave a deque where CPython raises TypeError (a deque takes no slices); the
messages of ``d[k]``, ``d.remove(x)`` and ``hash(d)`` were a list's; ``d.rotate(k)`` with a
key that is no integer was an internal error (the call ran in Python). Each on a deque made in
the function, one passed in and a global one, compared with eager."""

from __future__ import annotations

import collections

import pytest
import torch
from difftest import assert_same

import bytegraph
from bytegraph.explain import Recorder

G_D = collections.deque([1, 2, 3])


def _subscript(d, k):
    return d[k]


def _remove(d, k):
    return d.remove(k)


def _rotate(d, k):
    return d.rotate(k)


def _hash(d, k):
    return hash(d)


def _cell(op):
    def cell(x, d, k):
        made = collections.deque([1, 2, 3])
        out = []
        for target in (made, d, G_D):
            try:
                out.append(op(target, k))
            except (TypeError, IndexError, ValueError) as e:
                out.append((type(e).__name__, str(e)))
        return x + 1, out, made

    return cell


@pytest.mark.parametrize("op", [_subscript, _remove, _rotate, _hash], ids=lambda f: f.__name__)
@pytest.mark.parametrize("key", [slice(1, 2), None, 2.5, 7, -1, "ab"], ids=repr)
def test_deque_rule_is_cpythons(op, key):
    fn = _cell(op)
    given, eager_given = collections.deque([1, 2, 3]), collections.deque([1, 2, 3])
    before = collections.deque(G_D)
    expected = fn(torch.ones(2), eager_given, key)
    G_D.clear()
    G_D.extend(before)
    with Recorder() as recorder:
        actual = bytegraph.compile(fn, backend="eager")(torch.ones(2), given, key)
    after = collections.deque(G_D)
    G_D.clear()
    G_D.extend(before)
    assert_same(actual, expected)
    assert_same(given, eager_given)
    assert after == before or op is _rotate
    reasons = [str(r) for r in recorder.report().break_reasons]
    assert not [r for r in reasons if "internal_error" in r], reasons
