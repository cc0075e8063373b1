"""``walk`` visits every tracker reachable from live values once, and ends on any real container a
tracker's field holds: one that contains itself, or a deep chain of shared tuples."""

from __future__ import annotations

import dataclasses

from bytegraph.tracer.variables.base import VariableTracker, walk


@dataclasses.dataclass(eq=False)
class _Holder(VariableTracker):
    """A tracker with one field holding whatever the test puts there (a user's value)."""

    held: object = None


def test_a_self_containing_container_in_a_field_is_walked_once():
    looped: list = []
    looped.append(looped)
    namespace: dict = {}
    namespace["self"] = namespace
    inner = _Holder(held=1)
    outer = _Holder(held=[looped, namespace, inner, (inner,)])
    assert list(walk([outer])) == [outer, inner]


def test_shared_tuples_are_walked_in_linear_time():
    leaf = _Holder(held=None)
    chain: tuple = (leaf,)
    for _ in range(200):  # 2**200 paths, 200 distinct tuples
        chain = (chain, chain)
    assert list(walk(_Holder(held=chain)))[1:] == [leaf]
