"""A break inside a loop over an iterator that another live value shares: the loop's iterator goes
to the resume function as the same object as the local holding it (or the iterator a ``zip`` pulls
from), not as a tuple of its remaining items, which would leave the local behind. Before: the local
came back at the position of the break, a silent wrong result (``list(it)`` gave items the loop had
taken)."""

import pytest
import torch
from difftest import check_breaks
from dynamo_baseline import assert_no_more_breaks


def _loop_over_a_local_iterator_then_break(x):
    it = iter([1, 2, 3, 4])
    y = x + 1
    for a in it:
        print(a)
        y = y + a
        if a == 2:
            break
    return list(it), y


def _loop_in_a_try_block(x):
    it = iter([1, 2, 3, 4])
    y = x + 1
    try:
        for a in it:
            print(a)
            y = y + a
            if a == 2:
                break
    except ValueError:
        pass
    return list(it), y


def _zip_pulling_from_a_local_in_a_try_block(x):
    it = iter([1, 2, 3, 4])
    y = x + 1
    try:
        for a in zip(range(2), it):  # noqa: B905 (shorter on purpose)
            print(a)
            y = y + a[1]
    except ValueError:
        pass
    return list(it), y


def _enumerate_of_a_local_iterator(x):
    it = iter([3, 4, 5])
    y = x * 2
    for i, a in enumerate(it):
        print(i)
        y = y + a
        if i == 1:
            break
    return next(it), y


CASES = [
    (_loop_over_a_local_iterator_then_break, 3, 2),
    (_loop_in_a_try_block, 1, 1),
    (_zip_pulling_from_a_local_in_a_try_block, 1, 1),
    (_enumerate_of_a_local_iterator, 3, 2),
]


@pytest.mark.parametrize("fn,graphs,breaks", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_the_local_ends_where_the_loop_left_it(fn, graphs, breaks):
    check_breaks(fn, lambda: (torch.randn(3),), graphs=graphs, breaks=breaks, calls=3)
    assert_no_more_breaks(
        breaks,
        fn,
        torch.randn(3),
        baseline_missing="torch.compile runs the frame in Python: print() breaks inside a loop",
    )
