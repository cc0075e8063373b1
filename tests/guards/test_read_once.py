"""The dispatcher reads each chain of attribute and item reads that several guards start with
once (``cache._read_once``): the first reading, in a condition every entry tests first and
evaluates whole, binds a local the later conditions read. Guards of deep module trees (einops
layers' recipes, many levels down) made the guard function the largest cost of a call."""

from __future__ import annotations

import torch
from bytegraph.guards import kinds
from bytegraph.guards.cache import FunctionCache, Variant, _read_once
from bytegraph.guards.sources import AttrSource, LocalSource
from difftest import assert_same, compile_counted
from torch import nn

import bytegraph


def _once(*conditions: str, roots=("self",)) -> list[str]:
    ((conds, _),) = _read_once([(list(conditions), 0)], list(roots))
    return conds


def test_a_chain_several_conditions_read_is_bound_at_its_first_reading():
    got = _once(
        "type(self.a.b.c) is ___int",
        "self.a.b.c == 3",
        "self.a.b.d == 4",
    )
    assert got == [
        "type((___read_1 := (___read_0 := self.a.b).c)) is ___int",
        "___read_1 == 3",
        "___read_0.d == 4",
    ]
    env = {"___int": int, "self": _obj()}
    code = compile(" and ".join(got), "<t>", "eval")
    assert eval(code, env) is True


def _obj():
    class Plain:
        pass

    o, o.a = Plain(), Plain()
    o.a.b = Plain()
    o.a.b.c, o.a.b.d = 3, 4
    return o


def test_strings_and_skipped_parts_are_left_as_they_are():
    got = _once(
        "self.a.x == 'self.a.x'",  # the constant keeps its text
        "___check(self.a) or self.a.y == 1",  # may skip its right side: binds nothing
        "0 <= self.a.z < self.a.n",  # a chained comparison: binds nothing
        "self.a.items() == ()",  # a call: the method is read anew
    )
    assert got[0] == "(___read_0 := self.a).x == 'self.a.x'"
    assert got[1] == "___check(___read_0) or ___read_0.y == 1"
    assert got[2] == "0 <= ___read_0.z < ___read_0.n"
    assert got[3] == "___read_0.items() == ()"


def test_only_the_conditions_every_entry_tests_first_bind():
    items = [(["self.a.x == 1", "self.b.y == 1", "self.b.z == 1"], 0)]
    items.append((["self.a.x == 1", "self.b.y == 2", "self.b.z == 2"], 1))
    (first, _), (second, _) = _read_once(items, ["self"])
    assert first[0] == second[0] == "self.a.x == 1"  # read once only: nothing to bind
    assert "self.b.y == 1" in first and "self.b.y == 2" in second  # told apart per entry


class Leaf(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.table = {"scale": scale, "shift": 1}


class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(nn.Sequential(Leaf(2.0), Leaf(3.0)))

    def forward(self, x):
        for leaf in self.inner[0]:
            x = x * leaf.table["scale"] + leaf.table["shift"]
        return x


def test_a_deep_tree_reads_each_chain_once_and_still_sees_changes():
    model = Tree()
    compiled, counter = compile_counted(model)
    x = torch.randn(3)
    assert_same(compiled(x), model(x))
    source = bytegraph.guard_source(compiled.forward)
    assert "___read_" in source
    traced = counter.frame_count
    assert_same(compiled(x), model(x))
    assert counter.frame_count == traced  # the bound reads pass as the plain ones did
    model.inner[0][1].table["scale"] = 5.0  # a value deep in the tree: the guards see it
    assert_same(compiled(x), model(x))
    assert counter.frame_count > traced


def test_the_readable_guards_and_why_keep_the_plain_text():
    cache = FunctionCache("f", {}, {}, ("self",))
    a = AttrSource(AttrSource(LocalSource("self"), "a"), "b")
    guards = cache.new_guard_set(
        [kinds.TYPE_MATCH(AttrSource(a, "c"), int), kinds.EQUALS_MATCH(AttrSource(a, "c"), 3)]
    )
    cache.add(Variant(guards, lambda self: "entry 0"))
    obj = _obj()
    assert cache.guard_fn(obj) is not None
    assert "___read_" in cache.guard_source and "___read_" not in guards.source
    obj.a.b.c = 4
    assert cache.guard_fn(obj) is None
    assert "== 3" in str(cache.why({"self": obj}))


def test_the_locals_never_shadow_a_name_the_conditions_read():
    """A closure value may be named ``___read_0`` (a function called ``read_0``): the locals skip
    the names the dispatcher reads."""
    items = [(["self.a.x == ___read_0", "self.a.y == 1"], 0)]
    ((conds, _),) = _read_once(items, ["self"], {"self", "___read_0"})
    assert conds == ["(___read_1 := self.a).x == ___read_0", "___read_1.y == 1"]


def read_0(x):
    return x


def test_a_function_named_like_a_local_is_still_checked():
    def fn(x, box):
        return read_0(x) * box.a.b + box.a.c

    compiled, counter = compile_counted(fn)
    box = _obj()
    box.a.b, box.a.c = 2, 3
    x = torch.randn(3)
    assert_same(compiled(x, box), fn(x, box))
    traced = counter.frame_count
    assert_same(compiled(x, box), fn(x, box))
    assert counter.frame_count == traced


def _handler(k):
    def handle(x):
        return x + k

    return handle


#: a registry keyed by classes: its values are guarded by position (``[*d.values()][i]``)
REGISTRY = {type(f"K{i}", (), {}): _handler(i) for i in range(40)}
REGISTRY[int], REGISTRY[float] = _handler(100), _handler(200)


def _dispatches(x):
    return REGISTRY[int](x) * REGISTRY.get(float)(x)


def test_a_dicts_values_read_by_position_are_listed_once():
    compiled, counter = compile_counted(_dispatches)
    x = torch.ones(2)
    assert_same(compiled(x), _dispatches(x))
    source = bytegraph.guard_source(compiled)
    assert source.count(".values()]") == 1, source  # once, bound to a local the others read
    assert "___values_0[41] is" in source
    assert_same(compiled(x), _dispatches(x))
    assert counter.frame_count == 1
    old = REGISTRY[float]
    try:  # a value changed after the list is bound: the guard still sees it
        REGISTRY[float] = _handler(300)
        assert_same(compiled(x), _dispatches(x))
        assert counter.frame_count == 2
    finally:
        REGISTRY[float] = old


def test_keys_equal_but_not_the_same_objects_still_match():
    """``same_keys`` tests identity first, then equality of constants: a tuple key made again
    keeps the entry, another key does not."""
    assert kinds.same_keys({(1, "a"): 0, int: 1}, ((1, "a"), int))
    assert kinds.same_keys({tuple([1, "a"]): 0, int: 1}, ((1, "a"), int))
    assert not kinds.same_keys({(1, "b"): 0, int: 1}, ((1, "a"), int))
    assert not kinds.same_keys({(1, "a"): 0, float: 1}, ((1, "a"), int))


def test_conditions_analysed_under_other_roots_are_read_as_their_own():
    """What a condition's chains are is remembered for the process, per text and roots: the
    same text in a dispatcher whose parameters are other names reads none of them."""
    conditions = ("type(self.a.b) is ___int", "self.a.b == 3")
    assert _once(*conditions) == ["type((___read_0 := self.a.b)) is ___int", "___read_0 == 3"]
    assert _once(*conditions, roots=("other",)) == list(conditions)
    assert _once(*conditions) == ["type((___read_0 := self.a.b)) is ___int", "___read_0 == 3"]
