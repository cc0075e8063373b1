"""Lists reached from inputs are read lazily (``variables/containers.py``): appending
to one guards nothing of its contents, reading it guards its length and items as before."""

from __future__ import annotations

import torch
from difftest import assert_same, check_breaks, compile_counted

from bytegraph.explain import Recorder


def test_list_only_appended_to_does_not_retrace_when_it_grows():
    log = []

    def fn(x):
        log.append(x.sum())
        log.extend([x.mean(), 1])
        return x * 2

    compiled, counter = compile_counted(fn)
    with Recorder() as recorder:
        for _ in range(4):
            compiled(torch.ones(3))
    assert len(log) == 12 and log[-1] == 1
    assert_same(log[-3], torch.tensor(3.0))
    assert counter.frame_count == 1
    assert not recorder.report().recompiles


def test_reading_the_list_after_appending_sees_old_and_new_items():
    def fn(xs, x):
        xs.append(x)
        return len(xs), xs[0] + xs[-1]

    compiled, _ = compile_counted(fn)
    a, b = [torch.ones(2)], [torch.ones(2)]
    assert_same(compiled(a, torch.zeros(2)), fn(b, torch.zeros(2)))
    assert len(a) == len(b) == 2


def test_length_read_is_guarded():
    def fn(xs, x):
        xs.append(x)
        return x * len(xs)

    compiled, counter = compile_counted(fn)
    xs = []
    for i in range(3):
        assert_same(compiled(xs, torch.ones(1)), torch.ones(1) * (i + 1))
    assert counter.frame_count >= 2  # the length differs: traced again


def test_appends_before_a_graph_break_are_applied_before_the_resume():
    log = []

    def fn(x):
        log.append(x * 2)
        print("break")
        log.append(len(log))
        return x

    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=1, breaks=1, setup=log.clear, observe=lambda: list(log)
    )


def test_append_undone_when_the_callee_breaks_inside_a_try():
    log = []

    def record(t):
        log.append(t)
        print("break")
        return t

    def fn(x):
        try:
            return record(x) + 1
        except ValueError:
            return x

    check_breaks(
        fn, lambda: (torch.ones(2),), graphs=0, breaks=1, setup=log.clear, observe=lambda: len(log)
    )
