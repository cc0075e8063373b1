"""A loop whose body breaks and reads a list at its counter (``xs[i]``, ``xs[i + 1]``): the resume
function takes the counter as a symbolic number and reads the item at it when it runs
(``LazyListVariable.item_at_symbol``), so one variant serves every iteration, not one per value
of the counter. Each case compares every call with eager (values, printed output, the list after
the call) over several lengths, counts the graphs of the first and later calls, and sets them
beside ``torch._dynamo``'s (which runs a frame whose loop breaks in Python: 0 graphs)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from difftest import assert_same, break_count, compile_counted
from dynamo_baseline import dynamo_breaks


def indexed(x, xs):
    y = x
    for i in range(len(xs)):
        y = y + xs[i]
        print(i)
    return y


def next_item(x, xs):
    for i in range(len(xs) - 1):
        x = x * xs[i + 1] - xs[i]
        print("step")
    return x


def counted_while(x, xs):
    i = 0
    n = len(xs)
    while i < n:
        x = x + xs[i]
        print(i)
        i += 1
    return x


def from_the_end(x, xs):
    for i in range(1, len(xs) + 1):
        x = x + xs[-i] * i
        print("back")
    return x


def _items(n, offset=0):
    torch.manual_seed(n + offset)
    return [torch.randn(3) for _ in range(n)]


def _run(fn, lengths, make=_items, limit_warns=False):
    """``fn`` compiled and called on lists of each length (results, printed text and the list
    after the call compared with eager's); the graphs each call compiled. A fallback or the
    recompile limit fails it, unless ``limit_warns``."""
    from bytegraph.explain import Recorder

    compiled, counter = compile_counted(fn)
    recorder, per_call = Recorder(), []
    for n in lengths:
        x, xs = torch.randn(3), make(n)
        eager_xs = copy.deepcopy(xs)
        before = counter.frame_count
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("ignore" if limit_warns else "error")
            actual, printed = _captured(compiled, x, xs)
        expected, eager_printed = _captured(fn, x, eager_xs)
        assert_same(actual, expected)
        assert printed == eager_printed
        assert_same(xs, eager_xs)
        per_call.append(counter.frame_count - before)
    break_count(recorder.report())  # nothing fell back
    return per_call


def _captured(fn, *args):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        result = fn(*args)
    return result, out.getvalue()


@pytest.mark.parametrize("fn", [indexed, next_item, counted_while, from_the_end])
def test_one_variant_serves_every_position(fn):
    """Before, each iteration compiled the resume function again for the counter's value (a list
    of 12 reached the recompile limit of 8 in its first call, the rest of it in Python)."""
    per_call = _run(fn, (12, 12, 5, 9, 12))
    # the first call: the function, the resume function for the first counter seen, then with
    # the counter symbolic, and where the loop ends; later calls compile for new lengths only
    assert per_call[0] <= 4, per_call
    assert per_call[1] == 0 and per_call[-1] == 0, per_call
    assert sum(per_call) <= 10, per_call
    assert dynamo_breaks(fn, torch.randn(3), _items(12)) == (0, 0)  # Dynamo: all in Python


def test_items_of_other_kinds_and_aliases():
    """The item at the counter is guarded as an input where it is read: an int among tensors, a
    tensor of another shape, the same tensor at two positions, each gives eager's result."""
    t = torch.randn(3)

    def make(n):
        items = _items(n)
        if n == 6:
            items[3] = 2
        if n == 7:
            items[4] = torch.randn(2, 3)
        if n == 8:
            items[5] = items[2] = t
        return items

    _run(indexed, (5, 6, 7, 8, 5))


def test_a_list_the_body_changes():
    """The body writes into the list at the counter, appends to it, or pops from it: the list is
    then read as a whole (its items trackers), each change as in eager. A store at the counter,
    or a length that changes each iteration, still makes a variant per iteration (up to the
    recompile limit)."""

    def writes(x, xs):
        for i in range(len(xs)):
            x = x + xs[i]
            xs[i] = x * 2
            print(i)
        return x, xs[0]

    def appends(x, xs):
        i = 0
        while i < len(xs) and i < 8:
            xs.append(xs[i] * 0.5)
            x = x + xs[i]
            print(i)
            i += 1
        return x

    def popped(x, xs):
        for i in range(len(xs) // 2):
            x = x + xs[i]
            print(xs.pop())
        return x

    for fn in (writes, appends, popped):
        _run(fn, (4, 6, 4), limit_warns=True)


def test_an_index_past_the_end_raises_as_in_eager():
    def fn(x, xs, k):
        for i in range(k):
            x = x + xs[i]
            print(i)
        return x

    compiled, _ = compile_counted(fn)
    for k, n in ((3, 3), (4, 3), (5, 5), (6, 5)):
        xs = _items(n)
        try:
            expected = fn(torch.ones(3), xs, k)
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e)):
                compiled(torch.ones(3), xs, k)
        else:
            assert_same(compiled(torch.ones(3), xs, k), expected)
