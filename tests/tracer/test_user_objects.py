"""Objects created during the trace (``variables/objects.py``) and attribute stores
(``store_attribute``): what is built, what escapes, what is replayed, what breaks."""

from __future__ import annotations

import dataclasses
import gc

import pytest
import torch
from difftest import assert_same, check, check_breaks, compile_counted

import bytegraph
from bytegraph.explain import Recorder


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def rewritten_locals(fn, *args) -> set[str]:
    """The local names of the rewritten code of ``fn``'s first trace (what it creates)."""
    compiled = bytegraph.compile(fn, backend="eager")
    with Recorder() as recorder:
        compiled(*args)
    event = next(r.event for r in recorder.records if r.event.fn is not None)
    return set(event.fn.__code__.co_varnames)


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y


def test_object_that_does_not_escape_is_never_built():
    def fn(x):
        return Point(x, x + 1).norm2()

    check(fn, torch.randn(3))
    assert not any(n.startswith("__bg_new") for n in rewritten_locals(fn, torch.randn(3)))


def test_returned_object_is_built_with_its_final_attributes():
    def fn(x):
        p = Point(x, 1)
        p.y = p.y + 1
        p.extra = [x * 2]
        return p

    compiled, _ = compile_counted(fn)
    x = torch.randn(3)
    out, expected = compiled(x), fn(x)
    assert type(out) is Point
    assert_same(vars(out), vars(expected))
    assert "__bg_new1" in rewritten_locals(fn, x)


def test_objects_referring_to_each_other_are_rebuilt_once():
    def fn(x):
        a, b = Point(x, None), Point(x + 1, None)
        a.y, b.y = b, a
        return a, b

    compiled, _ = compile_counted(fn)
    a, b = compiled(torch.ones(2))
    assert a.y is b and b.y is a
    assert_same(b.x, torch.ones(2) + 1)


def test_object_reachable_only_from_a_dead_local_is_not_rebuilt_at_a_break():
    def fn(x):
        p = Point(x, lambda: 1)  # a closure made in the trace cannot be rebuilt
        y = p.x * 2
        print("break")
        return y

    check_breaks(fn, randn(3), graphs=1, breaks=1)


def test_object_made_before_a_break_is_passed_to_the_resume_function():
    def fn(x):
        p = Point(x * 2, x)
        print("break")
        p.y = p.y + 1
        return p.norm2()

    check_breaks(fn, randn(3), graphs=2, breaks=1, calls=3)


def test_property_setter_of_an_existing_object_runs():
    class Box:
        def __init__(self):
            self._t = torch.zeros(3)

        @property
        def t(self):
            return self._t

        @t.setter
        def t(self, value):
            self._t = value.clamp(min=0)

    box = Box()

    def fn(x):
        box.t = x
        return box.t + 1

    check_breaks(fn, randn(3), graphs=1, breaks=0, observe=lambda: box._t.clone())


def test_property_without_setter_raises_like_eager():
    class Box:
        @property
        def t(self):
            return 1

    box = Box()

    def fn(x):
        box.t = x
        return x

    with pytest.raises(AttributeError):
        fn(torch.ones(1))
    with pytest.raises(AttributeError):
        bytegraph.compile(fn, backend="eager")(torch.ones(1))


def test_setattr_override_runs_once_and_is_replayed_raw():
    class Logged:
        def __init__(self):
            object.__setattr__(self, "log", [])

        def __setattr__(self, name, value):
            self.log.append(name)
            object.__setattr__(self, name, value)

    obj = Logged()

    def fn(x):
        obj.a = x * 2
        return obj.a + 1

    compiled, _ = compile_counted(fn)
    compiled(torch.ones(2))
    assert obj.log == ["a"]  # the override ran once: the replay used object.__setattr__
    assert_same(obj.a, torch.ones(2) * 2)


def test_data_descriptor_set_and_get_are_inlined():
    class Doubled:
        def __set_name__(self, owner, name):
            self.slot = "_" + name

        def __get__(self, obj, owner=None):
            return getattr(obj, self.slot) * 2

        def __set__(self, obj, value):
            setattr(obj, self.slot, value + 1)

    class Holder:
        w = Doubled()

    h = Holder()

    def fn(x):
        h.w = x
        return h.w

    check_breaks(fn, randn(3), graphs=1, breaks=0, observe=lambda: h._w.clone())


def test_store_outside_slots_raises_like_eager():
    class Slotted:
        __slots__ = ("a",)

    obj = Slotted()

    def fn(x):
        obj.b = x
        return x

    with pytest.raises(AttributeError):
        bytegraph.compile(fn, backend="eager")(torch.ones(1))


def test_frozen_dataclass_assignment_raises_like_eager():
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int = 1

    def fn(x):
        f = Frozen()
        f.a = 2
        return x

    with pytest.raises(dataclasses.FrozenInstanceError):
        bytegraph.compile(fn, backend="eager")(torch.ones(1))


def test_class_with_finalizer_is_not_built_in_the_trace():
    deleted = []

    class Finalized:
        def __del__(self):
            deleted.append(1)

    def fn(x):
        Finalized()
        return x + 1

    # (a trace keeps what it saw alive until the next garbage collection: count after one)
    check_breaks(
        fn, randn(2), graphs=1, breaks=1, setup=deleted.clear, observe=lambda: _collected(deleted)
    )


def _collected(deleted: list) -> int:
    gc.collect()
    return len(deleted)


def test_fresh_module_after_random_ops_breaks_to_keep_the_random_order():
    def fn(x):
        y = torch.nn.functional.dropout(x, 0.5)
        return torch.nn.Linear(3, 2)(y)

    compiled, _ = compile_counted(fn)
    with Recorder() as recorder:
        x = torch.randn(4, 3)
        torch.manual_seed(0)
        expected = fn(x)
        torch.manual_seed(0)
        assert_same(compiled(x), expected)
    assert [r.kind for r in recorder.report().break_reasons] == ["rng_order"]


def test_fresh_module_attribute_store_is_replayed_on_the_runtime_module():
    def fn(x):
        loss = torch.nn.MSELoss()
        loss.reduction = "sum"
        return loss(x, torch.zeros_like(x)), loss

    compiled, _ = compile_counted(fn)
    out, module = compiled(torch.ones(3))
    assert_same(out, torch.tensor(3.0))
    assert module.reduction == "sum"


def test_forward_hook_mutating_its_closure_is_replayed():
    seen = []
    lin = torch.nn.Linear(2, 2)
    lin.register_forward_hook(lambda mod, args, out: seen.append(out.shape[0]))

    def fn(x):
        return lin(x)

    compiled, _ = compile_counted(fn)
    compiled(torch.randn(3, 2))
    compiled(torch.randn(3, 2))
    assert seen == [3, 3]


def test_enum_lookup_by_value_is_folded():
    import enum

    class Color(enum.Enum):
        RED = 1

    def fn(x):
        return x * Color(1).value

    check(fn, torch.ones(2))


class Scale(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(x) * self.k


def test_user_module_made_in_forward_is_traced():
    def fn(x):
        return Scale(3.0)(x) + 1

    check(fn, torch.randn(4))


def test_user_module_that_escapes_is_a_real_module():
    def fn(x):
        m = Scale(2.0)
        return m(x), m

    compiled, _ = compile_counted(fn)
    out, module = compiled(torch.ones(2))
    assert_same(out, torch.ones(2) * 2)
    assert type(module) is Scale and module.k == 2.0
    assert isinstance(module._modules["act"], torch.nn.ReLU)  # filed by nn.Module.__setattr__


def test_user_module_without_super_init_is_not_traced():
    class NoInit(torch.nn.Module):
        def __init__(self):
            self.k = 2  # nn.Module.__init__ never runs: eager fails when the module is called

        def forward(self, x):
            return x * self.k

    def fn(x):
        return NoInit()(x)

    with pytest.raises(AttributeError):
        fn(torch.ones(1))
    with pytest.raises(AttributeError):
        bytegraph.compile(fn, backend="eager")(torch.ones(1))


def test_members_of_a_user_module_made_in_forward_break():
    def fn(x):
        m = Scale(2.0)
        return len(list(m.children())) * x

    # children() runs in Python (the blank module's tables miss the pending submodule); the
    # generator it returns breaks again in the resume function
    check_breaks(fn, randn(2), graphs=1, breaks=2)


def test_class_attributes_of_objects_made_in_the_trace_are_guarded():
    class Config:
        scale = 2.0

        def apply(self, x):
            return x * self.scale

    def fn(x):
        return Config().apply(x)

    compiled, _ = compile_counted(fn)
    assert_same(compiled(torch.ones(2)), torch.ones(2) * 2)
    Config.scale = 5.0
    assert_same(compiled(torch.ones(2)), torch.ones(2) * 5)
    Config.apply = lambda self, x: x - self.scale
    assert_same(compiled(torch.ones(2)), torch.ones(2) - 5)


def test_class_attributes_of_modules_made_in_the_trace_are_guarded():
    class Shift(torch.nn.Module):
        offset = 1.0

        def forward(self, x):
            return x + self.offset

    def fn(x):
        return Shift()(x)

    compiled, _ = compile_counted(fn)
    assert_same(compiled(torch.ones(2)), torch.ones(2) + 1)
    Shift.offset = 3.0
    assert_same(compiled(torch.ones(2)), torch.ones(2) + 3)
    Shift.forward = lambda self, x: x * self.offset
    assert_same(compiled(torch.ones(2)), torch.ones(2) * 3)


class Family:
    pass


class FirstChild(Family):
    pass


def _subclasses_listed(x):
    children = Family.__subclasses__()
    children.append(int)  # a new list each call
    return x + 1, children, Family.__subclasses__()


def test_subclasses_is_a_new_list_guarded_by_the_classes_alive():
    compiled, counter = compile_counted(_subclasses_listed)
    assert_same(compiled(torch.ones(2)), _subclasses_listed(torch.ones(2)))

    class SecondChild(Family):  # read again at the next call: a recompile
        pass

    assert_same(compiled(torch.ones(2)), _subclasses_listed(torch.ones(2)))
    assert counter.frame_count == 2


# -- a class's namespace: ``cls.__dict__``, CPython's read-only proxy, read at trace time ---------
class Namespaced:
    """doc"""

    scale = 2

    def method(self):
        return self.scale


READS = {
    "type": lambda d: type(d),
    "len": lambda d: len(d),
    "in": lambda d: ("scale" in d, "nope" in d),
    "getitem": lambda d: d["scale"],
    "get": lambda d: (d.get("scale"), d.get("nope", 5), d.get("method") is Namespaced.method),
    "iter": lambda d: (list(d), type(iter(d)), tuple(reversed(d))),
    "views": lambda d: (sorted(d.keys()), [k for k, _ in d.items()], len(d.values())),
    "dict": lambda d: dict(d) == dict(vars(Namespaced)),
    "copy": lambda d: (type(d.copy()), d.copy() == dict(d)),
    "truth": lambda d: bool(d),
    "missing": lambda d: d["nope"],
    "assign": lambda d: d.__setitem__("scale", 3),
    "missing_attribute": lambda d: d.nope,
}


@pytest.mark.parametrize("read", list(READS.values()), ids=list(READS))
def test_reads_of_a_class_namespace(read):
    def fn(x, cls):
        try:
            return x * cls.scale, read(cls.__dict__)
        except (KeyError, TypeError, AttributeError) as e:
            return x + 1, (type(e), str(e))

    check(fn, torch.ones(2), Namespaced)
    assert "scale" in vars(Namespaced) and Namespaced.scale == 2  # never written


def test_a_class_namespace_follows_the_class():
    """A class attribute added or changed between calls: the guards see it (a new trace)."""

    def fn(x, cls):
        return x + 1, sorted(cls.__dict__), cls.__dict__["value"]

    compiled, _ = compile_counted(fn)
    cls = type("Changing", (), {"value": 1})
    assert compiled(torch.ones(2), cls)[1:] == fn(torch.ones(2), cls)[1:]
    cls.value = 2
    assert compiled(torch.ones(2), cls)[1:] == fn(torch.ones(2), cls)[1:]
    cls.added = 3
    assert compiled(torch.ones(2), cls)[1:] == fn(torch.ones(2), cls)[1:]


def test_a_store_to_a_class_after_reading_its_namespace_breaks():
    """The namespace the trace read would be stale after the store: the store runs in Python."""

    def fn(x, cls):
        n = len(cls.__dict__)
        cls.extra = 1
        return x + 1, n

    compiled, _ = compile_counted(fn)
    with Recorder() as recorder:
        for _ in range(2):  # a new class each call: a new trace, whose store breaks again
            compiled_cls, eager_cls = type("Fresh", (), {}), type("Fresh", (), {})
            assert compiled(torch.ones(2), compiled_cls)[1:] == fn(torch.ones(2), eager_cls)[1:]
            assert sorted(vars(compiled_cls)) == sorted(vars(eager_cls))
    assert {r.kind for r in recorder.report().break_reasons} == {"store_attr"}


def test_update_wrapper_of_a_class():
    """``functools.update_wrapper(wrapper, cls)`` copies the class's namespace into the wrapper's
    ``__dict__``."""
    import functools

    from dynamo_baseline import assert_no_more_breaks

    def fn(x, cls):
        w = functools.update_wrapper(lambda: 0, cls)
        return x + 1, w.__wrapped__ is cls, w.__name__, w.__doc__, w.scale, w.method

    check(fn, torch.ones(2), Namespaced)
    assert_no_more_breaks(0, fn, torch.ones(2), Namespaced)


# -- a class's namespace live at a graph break: ``type(self)`` is read through ``self`` (guarded),
# so the namespace is the class's wherever it is read; the proxy itself, live at the break, is made
# again by the resume function as ``vars(cls)`` (``made_in_resume``)
class Scales:
    scale = 2
    shift = 3

    def scaled(self, x):
        for name, value in type(self).__dict__.items():
            if name == "shift":
                print("at", name)  # a break inside the loop over the namespace
            if isinstance(value, int):
                x = x * value
        return x

    def kept(self, x):
        namespace = type(self).__dict__
        print("break")  # the proxy is live here
        return x * namespace["scale"], sorted(namespace), type(namespace), len(namespace)


#: torch.compile runs these calls in Python ("Failed to trace builtin operator")
_NO_GRAPH = "torch.compile compiles no graph of the call"


def _namespace_iterated(x, obj):
    return obj.scaled(x)


def _namespace_kept(x, obj):
    return obj.kept(x)


def test_class_namespace_iterated_across_a_break():
    from dynamo_baseline import assert_no_more_breaks

    check_breaks(_namespace_iterated, lambda: (torch.ones(2), Scales()), graphs=2, breaks=1)
    assert_no_more_breaks(
        1, _namespace_iterated, torch.ones(2), Scales(), baseline_missing=_NO_GRAPH
    )


def test_class_namespace_live_at_a_break():
    from dynamo_baseline import assert_no_more_breaks

    check_breaks(_namespace_kept, lambda: (torch.ones(2), Scales()), graphs=1, breaks=1)
    assert_no_more_breaks(1, _namespace_kept, torch.ones(2), Scales(), baseline_missing=_NO_GRAPH)
