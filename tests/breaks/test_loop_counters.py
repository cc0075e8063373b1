"""A loop whose body breaks and reads a list at its counter (``xs[i]``, ``xs[i + 1]``): the resume
function takes the counter as a symbolic number and reads the item at it when it runs
(``LazyListVariable.item_at_symbol``), so one variant serves every iteration, not one per value
of the counter. Each case compares every call with eager (values, printed output, the list after
the call) over several lengths, counts the graphs of the first and later calls, and sets them
beside ``torch._dynamo``'s (which runs a frame whose loop breaks in Python: 0 graphs). The
counter is symbolic from the resume function's first trace (a range's item; an int the loop
advances and passes on), and a loop over a dict's keys or items resumes in one variant for every
key (the key guarded by type where the trace only prints it)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from difftest import assert_same, break_count, compile_counted
from dynamo_baseline import dynamo_breaks, dynamo_counts


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


# -- loops over a dict whose body breaks -------------------------------------------------------
#
# The resume function takes the rest of the keys (or items) as a tuple; a key it only prints is
# guarded by its type, not its value, and ``d[k]`` reads the item the call finds at that key (the
# dict's key set guarded), so one variant serves every key. torch._dynamo runs such a frame in
# Python (0 graphs).


def over_items(x, d):
    for k, v in d.items():
        x = x + v
        print(k)
    return x


def over_keys(x, d):
    for k in d:
        x = x * d[k] - 1
        print(k)
    return x


def over_keys_writing(x, d):
    for k in d:
        d[k] = d[k] + x
        x = x + 1
        print("at", k)
    return x


def _dict(keys, offset=0):
    torch.manual_seed(len(keys) + offset)
    return {k: torch.randn(3) for k in keys}


_KEYS6 = [f"k{i}" for i in range(6)]


def _run_dicts(fn, dicts, limit_warns=False):
    """``fn`` over each dict of ``dicts`` (a deep copy for eager), as ``_run`` does."""
    calls = iter(dicts)
    return _run(fn, range(len(dicts)), make=lambda _: next(calls), limit_warns=limit_warns)


@pytest.mark.parametrize("fn", [over_items, over_keys])
def test_a_dict_loop_resumes_in_one_variant_for_every_key(fn):
    """Before, each key made a variant (6 graphs for 6 keys; 10 keys reached the recompile limit
    of 8, the rest in Python)."""
    dicts = [
        _dict(_KEYS6),
        _dict(_KEYS6, 1),
        _dict([f"k{i}" for i in range(10)]),
        _dict(_KEYS6, 2),
    ]
    per_call = _run_dicts(fn, dicts)
    # the function and one resume variant; a new key set: the function again (and, reading d by
    # key, the resume variant)
    assert per_call[0] <= 2 and per_call[1] == 0 and per_call[3] == 0, per_call
    assert per_call[2] <= 2, per_call
    assert dynamo_counts(fn, torch.randn(3), _dict(_KEYS6))[0] == 0  # Dynamo: all in Python
    assert dynamo_breaks(fn, torch.randn(3), _dict(_KEYS6)) == (0, 0)


@pytest.mark.parametrize("fn", [over_items, over_keys, over_keys_writing])
def test_keys_that_change_between_calls(fn):
    """A new key, a removed one, the same keys in another order, other values (an int, another
    shape, one tensor at two keys): each call as in eager (values, printed keys, the dict after
    it). Nine key sets and value kinds: the recompile limit may be reached (then Python)."""
    t = torch.randn(3)
    dicts = [
        _dict(["a", "b", "c"]),
        _dict(["a", "b", "c", "d"]),
        _dict(["a", "c"]),
        _dict(["c", "a", "b"]),
        {"a": torch.randn(3), "b": 2.0, "c": torch.randn(3)},
        {"a": torch.randn(3), "b": torch.randn(2, 3), "c": torch.randn(1)},
        {"a": t, "b": torch.randn(3), "c": t},
        {"b": torch.randn(3), "a": torch.randn(3), "c": torch.randn(3)},
        {"x": torch.randn(3), "y": torch.randn(3), "z": torch.randn(3)},
    ]
    _run_dicts(fn, dicts, limit_warns=True)


def test_a_key_the_trace_reads_is_guarded_by_value():
    """A key the body compares or formats is read: guarded by value, one variant per key, each
    call as in eager."""

    def fn(x, d):
        for k in d:
            if k.startswith("w"):
                x = x * d[k]
            else:
                x = x + d[k]
            print(k + "!")
        return x

    _run_dicts(fn, [_dict(["w1", "b1", "w2"]), _dict(["b1", "w1", "w2"]), _dict(["w1", "b1"])])


def test_the_first_counter_value_is_symbolic():
    """A range's item, and a while loop's counter that the loop advances, are symbolic from the
    resume function's first trace: the first call compiles one resume variant for them, not one
    for the first value and another once it changed."""
    assert _run(indexed, (6,))[0] == 2  # the function, the resume function (the end included)
    assert _run(counted_while, (6,))[0] == 2
