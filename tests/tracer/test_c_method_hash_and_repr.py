"""``hash()``, ``repr()`` and ``==`` of C methods bound to their objects (``xs.append``,
``d.get``, ``t.add``, ``(1).__eq__``) and of C methods themselves (``torch.Tensor.add``).

CPython's ``meth_hash`` mixes the object's address with the method's, its repr prints the
address, and ``==`` compares the objects by identity and the methods. Where the object is a real
one the trace holds by identity (a global container, its identity guarded) both are computed at
trace time; where it has no address yet (a tensor given to the call, a list made in it) the hash
is a number known only as what it is the hash of: two reads of the same method of the same
object hash alike, and given back it is computed by the rewritten code. The tests compare the
values with eager's (the very objects' hashes), and the breaks with torch.compile's."""

from __future__ import annotations

import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph

TABLE = {"a": 1}
OTHER = {"a": 1}
ITEMS = [1, 2]
SEEN = {1}


def _of_global_containers(x):
    return x + 1, [
        hash(TABLE.get),
        hash(ITEMS.append) == hash(ITEMS.append),
        repr(TABLE.get),
        str(ITEMS.append),
        repr(SEEN.add),
        TABLE.get == TABLE.get,
        TABLE.get == OTHER.get,
        TABLE.get != OTHER.get,
        hash(torch.Tensor.add) == hash(torch.Tensor.add),
        repr(torch.Tensor.add),
        hash((1).__eq__) == hash((1).__eq__),
        hash("ab".upper),
    ]


def test_hash_and_repr_of_methods_of_global_containers_are_cpythons():
    """Computed at trace time on the real containers (their identity guarded): the values are
    eager's exactly, with no break (they broke)."""
    check_breaks(_of_global_containers, lambda: (torch.ones(2),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _of_global_containers, torch.ones(2))


def _hash_of_table_get(x):
    return x + 1, hash(TABLE.get), repr(TABLE.get)


def test_another_container_under_the_global_name_recompiles():
    global TABLE
    compiled, counter = compile_counted(_hash_of_table_get)
    saved = TABLE
    try:
        for table in (TABLE, TABLE, {"b": 2}):
            TABLE = table
            assert compiled(torch.ones(2))[1:] == (hash(table.get), repr(table.get))
    finally:
        TABLE = saved
    assert counter.frame_count == 2


def _of_objects_with_no_address(x):
    y = x * 2
    made = [y]
    return (
        y,
        [
            hash(x.add),
            hash(y.add) == hash(y.add),
            hash(made.append) != hash(made.append),
            hash(made.append),
        ],
        made,
    )


def test_hash_of_a_method_of_an_object_with_no_address_is_made_after_the_graph():
    """``hash(x.add)`` of the tensor given, of one the graph makes, of a list made in the trace:
    equal to itself in the trace, and given back the hash of that very object's method."""
    compiled, counter = compile_counted(_of_objects_with_no_address)
    for _ in range(2):
        x = torch.randn(3)
        y, (of_x, same, differs, of_list), made = compiled(x)
        torch.testing.assert_close(y, x * 2)
        assert (of_x, same, differs, of_list) == (hash(x.add), True, False, hash(made.append))
        assert made[0] is y
    assert counter.frame_count == 1
    report = bytegraph.explain(_of_objects_with_no_address)(torch.randn(3))
    assert report.graph_break_count == 0, report.break_reasons
    assert_no_more_breaks(0, _of_objects_with_no_address, torch.randn(3))


def _repr_of_a_tensor_method(x):
    return x + 1, repr(x.add).split(" at ")[0]


def _repr_of_a_new_list_method(x):
    return x + 1, repr([].append).split(" at ")[0]


def _hashes_of_two_objects(x, y):
    return x + 1, hash(x.add) == hash(y.add)


def test_what_needs_an_unguarded_address_breaks():
    """Left to Python, one break each (torch.compile: none): the repr of a method of a tensor
    given to the call (guarding the tensor's identity would recompile for each new tensor) or of
    a list made in the call (no address until the rewritten code makes it); and whether two
    different objects' method hashes are equal (an object freed between the two hashes may give
    its address to the next: ``hash([].append) == hash([].append)`` is True in CPython)."""
    check_breaks(_repr_of_a_tensor_method, lambda: (torch.ones(2),), graphs=1, breaks=1)
    check_breaks(_repr_of_a_new_list_method, lambda: (torch.ones(2),), graphs=1, breaks=1)
    pair = lambda: (torch.ones(2), torch.ones(2))  # noqa: E731
    check_breaks(_hashes_of_two_objects, pair, graphs=1, breaks=1)
