"""Lists under the tracer behave as in CPython (random operation sequences, see
``tests/conformance.py``): mutation methods, slices, errors for bad indices and missing items,
aliasing, a live iterator and ``reversed`` over a list that keeps changing, an input list changed
in place."""

from __future__ import annotations

from conformance import Op, check_conformance

INDICES = ["0", "1", "-1", "2", "5", "-7"]
VALUES = ["0", "1", "3", "x", "x * 2", "'s'"]
SLICES = ["1:3", ":2", "::2", "1:", "-2:", "::-1", "3:1"]

OPS = [
    Op("xs.append({v})"),
    Op("inp.append({v})"),
    Op("xs.extend([{v}, {v2}])"),
    Op("xs.extend(range({n}))"),
    Op("xs.extend(map(lambda t: t, ({v}, {v2})))"),
    Op("xs.insert({i}, {v})"),
    Op("xs.pop()", value=True, raises=True),
    Op("xs.pop({i})", value=True, raises=True),
    Op("nums.remove({n})", raises=True),
    Op("nums.index({n})", value=True, raises=True),
    Op("nums.count({n})", value=True),
    Op("xs.reverse()"),
    Op("nums.sort(reverse={b})"),
    Op("nums.sort(key=lambda v: -v)"),
    Op("xs[{i}]", value=True, raises=True),
    Op("xs[{i}] = {v}", raises=True),
    Op("del xs[{i}]", raises=True),
    Op("xs[{s}]", value=True),
    Op("xs[{s}] = [{v}, {v2}]", raises=True),
    Op("del xs[{s}]"),
    Op("xs += [{v}]"),
    Op("nums *= 2"),
    Op("nums + [{n}]", value=True),
    Op("len(xs)", value=True),
    Op("{n} in nums", value=True),
    Op("nums == [1, 2, 3]", value=True),
    Op("nums < [2]", value=True),
    Op("xs.copy()", value=True),
    Op("alias.append({v})"),
    Op("alias = xs"),
    Op("xs = list(xs)"),
    Op("nums.clear()"),
    Op("it = iter(xs)"),
    Op("next(it, 'end')", value=True),
    Op("rev = reversed(nums)"),
    Op("next(rev, 'end')", value=True),
    Op("list(enumerate(nums))", value=True),
    Op("sorted(nums)", value=True),
    Op("sum(nums) + max(nums, default=0)", value=True),
    Op("a, *b = xs or [0]", raises=True),
]


def _fill(rng):
    return {
        "i": rng.choice(INDICES),
        "v": rng.choice(VALUES),
        "v2": rng.choice(VALUES),
        "n": rng.randint(0, 4),
        "s": rng.choice(SLICES),
        "b": rng.choice([True, False]),
    }


SETUP = """
xs = [1, x, 2]
nums = [3, 1, 2]
alias = xs
it = iter(xs)
rev = reversed(nums)
"""


def test_list_operations_match_cpython():
    check_conformance(
        OPS,
        _fill,
        setup=SETUP,
        finals="xs, nums, alias, alias is xs, it, rev",
        make_input=lambda: [1, "two"],
        seed=3,
    )
