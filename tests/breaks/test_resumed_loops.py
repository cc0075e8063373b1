"""A loop whose body breaks: the resume function continues it with the rest of the items, and its
trace reads them only as far as the loop takes them (``iterators.ResumedItemsVariable``): the
item it takes, and that at least that many are left. One variant serves every iteration but the
last (where the loop ends, the exact length), not one per number of items left, and the guards
check one item, not all the rest. Each case compares every call with eager (values, printed
output, mutated arguments) over several lengths of the sequence and counts the variants."""

from __future__ import annotations

import collections
import sys

import pytest
import torch
from difftest import assert_same, check_breaks, compile_counted


def _run(fn, lengths, make=None):
    """``fn`` compiled, called on sequences of each length in turn (each result compared with
    eager's); the compiles recorded: ``(compiles per resume function, report)``."""
    from bytegraph.explain import Recorder

    compiled, _ = compile_counted(fn)
    x = torch.randn(2, 4)
    recorder = Recorder()
    with recorder:
        for n in lengths:
            args = make(n) if make is not None else (tuple(_weights(n)),)
            expected = fn(x, *args)
            assert_same(compiled(x, *args), expected)
    report = recorder.report()
    per_resume = collections.Counter(
        r.function for r in report.records if "__resume_at_" in r.function
    )
    return per_resume, report


def layers(x, ws):
    for w in ws:
        x = torch.tanh(x @ w)
        sys.stdout.write("")  # a break in every iteration
    return x


def indexed(x, ws):
    for i in range(1, len(ws)):
        x = torch.tanh(x * i)
        print("step", i)
    return x


def pairs(x, ws, bs):
    for w, b in zip(ws, bs, strict=False):
        x = x @ w + b
        print("pair")
    return x


def counted(x, ws):
    n = 0
    for k, w in enumerate(ws):
        x = x @ w * (k + 1)
        print("k")
        n += 1
    else:
        x = x + n
    return x


def _weights(n, shape=(4, 4)):
    torch.manual_seed(n)
    return [torch.randn(shape) / 2 for _ in range(n)]


@pytest.mark.parametrize("fn", [layers, indexed, counted])
def test_one_variant_for_every_iteration_but_the_last(fn):
    """Before, one variant per number of items left (a loop of 12 hit the recompile limit of 8 in
    its first call, the rest of it run in Python). Over a tuple, a range, ``enumerate`` of a
    tuple; a list is read live (``test_a_list_appended_to_while_its_loop_runs``)."""
    per_resume, report = _run(fn, (12, 12, 5, 9, 2, 12))
    assert per_resume, report.records
    # the iterations that go on, and the last (the exact length): an int item (``range``,
    # ``enumerate``'s count) compiles once more, for its first value, before it turns symbolic
    assert max(per_resume.values()) <= (2 if fn is layers else 3), per_resume
    assert not any("fell back" in str(b) for b in report.break_reasons)


def test_the_rest_is_guarded_one_item_at_a_time():
    _, report = _run(layers, (6, 6))
    guards = "\n".join(report.guards)
    assert "len(L['__stack0']) >= 1" in guards
    assert "L['__stack0'][1]" not in guards  # the item after the one taken is not read
    assert "len(L['__stack0']) == 5" not in guards


def test_items_of_another_kind_later_in_the_rest():
    """An item the variant was not traced for (an int among tensors) fails its item's guard:
    traced again for it, right."""

    def fn(x, items):
        for item in items:
            x = x * item
            print("i")
        return x

    compiled, _ = compile_counted(fn)
    x = torch.randn(3)
    for items in ([torch.randn(3)] * 4, [torch.randn(3), 2, torch.randn(3), 3.5], [2, 3]):
        assert_same(compiled(x, list(items)), fn(x, list(items)))


def test_zip_rests():
    def make(n):
        return tuple(_weights(n)), tuple(_weights(n + 1, (4,)))

    check_breaks(pairs, lambda: (torch.randn(2, 4), *make(5)), graphs=2, breaks=2)
    per_resume, _ = _run(pairs, (5, 3, 8), make=make)
    assert max(per_resume.values()) <= 2, per_resume


def test_a_rest_that_escapes_is_what_is_left():
    """The iterator itself leaves the loop (``break`` then ``list(it)``): the items not taken,
    in order."""

    def fn(x, ws):
        it = iter(ws)
        for w in it:
            x = x @ w
            print("w")
            if x.sum() > 1e9:  # never: the loop goes on
                break
        return x, list(it)

    compiled, _ = compile_counted(fn)
    x = torch.randn(2, 4)
    for n in (4, 7):
        ws = _weights(n)
        assert_same(compiled(x, ws), fn(x, ws))


@pytest.mark.parametrize("over", ["list", "enumerate", "zip"])
def test_a_list_appended_to_while_its_loop_runs(over):
    """CPython's list iterator takes the items the loop appends (also through ``enumerate`` and
    ``zip``): the iterator goes on to the resume function as the real one over the list, not as
    a tuple of the items left at the break (which gave a wrong result)."""

    def fn(x, ws):
        if over == "list":
            loop = ws
        else:
            loop = enumerate(ws) if over == "enumerate" else zip(range(100), ws, strict=False)
        for item in loop:
            w = item if over == "list" else item[1]
            x = x @ w
            print("w")
            if len(ws) < 6:
                ws.append(w * 0.5)
        return x

    compiled, _ = compile_counted(fn)
    x = torch.randn(2, 4)
    for n in (3, 4, 3):
        ws, expected_ws = _weights(n), _weights(n)
        expected = fn(x, expected_ws)
        assert_same(compiled(x, ws), expected)
        assert_same(ws, expected_ws)
