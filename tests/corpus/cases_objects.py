"""Objects: user classes, dataclasses, namedtuples, enums and ``nn.Module``s created inside the
compiled function; property setters, ``__setattr__`` overrides and descriptors on existing objects;
objects escaping the trace (returned, stored in a global or an attribute); objects made before a
graph break and used after it; hooks and callees mutating objects reached through closures."""

from __future__ import annotations

import collections
import dataclasses
import enum
import typing

import torch
from corpus.harness import Setup, case

#: Where ``object_stored_in_global`` leaves its object (read back by ``observe``).
_last_point = None

BREAK_BOTH = (
    "the print breaks both compilers; torch.compile's explain lists it as a break reason but "
    "counts 0 breaks (an object made in the frame is live there)"
)
LIST_LENGTH = (
    "the result depends on the list's length, which grows on every call (torch.compile: the same)"
)


# -- plain classes made in the function ----------------------------------------------------------
@case("objects", graphs=1, breaks=0, tc_breaks=0)
def plain_class_init_and_method():
    class Scaler:
        def __init__(self, factor, shift=1.0):
            self.factor = factor
            self.shift = shift

        def apply(self, x):
            return x * self.factor + self.shift

    def fn(x):
        s = Scaler(3.0)
        return s.apply(x)

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def method_mutates_own_attribute():
    class Counter:
        def __init__(self):
            self.count = 0
            self.total = None

        def add(self, t):
            self.count += 1
            self.total = t if self.total is None else self.total + t

    def fn(x):
        c = Counter()
        for i in range(3):
            c.add(x * i)
        return c.total / c.count

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def property_getter_and_setter_on_new_object():
    class Box:
        def __init__(self, t):
            self._t = t

        @property
        def t(self):
            return self._t * 2

        @t.setter
        def t(self, value):
            self._t = value.clamp(min=0)

    def fn(x):
        b = Box(x)
        b.t = x - 0.5
        return b.t

    return Setup(fn, lambda: (torch.randn(6),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def slots_class_made_in_function():
    class Pair:
        __slots__ = ("a", "b")

        def __init__(self, a, b):
            self.a = a
            self.b = b

        def total(self):
            return self.a + self.b

    def fn(x):
        p = Pair(x, x * 2)
        p.b = p.b + 1
        return p.total()

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def class_attribute_read_and_shadowed():
    class Config:
        scale = 2.0
        name = "cfg"

        def __init__(self, override):
            if override:
                self.scale = 5.0

    def fn(x):
        a, b = Config(False), Config(True)
        return x * a.scale + x * b.scale, a.name

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def inheritance_with_super_init():
    class Base:
        def __init__(self, x):
            self.x = x

        def value(self):
            return self.x

    class Child(Base):
        def __init__(self, x, k):
            super().__init__(x)
            self.k = k

        def value(self):
            return super().value() * self.k

    def fn(x):
        return Child(x, 3).value()

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def classmethod_factory_and_isinstance():
    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y

        @classmethod
        def from_tensor(cls, t):
            return cls(t[0], t[1])

    class Point3(Point):
        pass

    def fn(x):
        p = Point3.from_tensor(x)
        return p.x + p.y, isinstance(p, Point), type(p) is Point3

    return Setup(fn, lambda: (torch.randn(2, 3),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def callable_object_and_dunder_add():
    class Affine:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return x * self.w

        def __add__(self, other):
            return Affine(self.w + other.w)

    def fn(x):
        f = Affine(2.0) + Affine(0.5)
        return f(x)

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def object_passed_to_function_and_mutated():
    class State:
        def __init__(self):
            self.items = []

    def push(state, t):
        state.items.append(t)
        state.last = t

    def fn(x):
        s = State()
        push(s, x)
        push(s, x + 1)
        return torch.stack(s.items).sum() + s.last

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def setattr_override_on_new_object():
    class Recorder:
        def __init__(self):
            object.__setattr__(self, "log", [])

        def __setattr__(self, name, value):
            self.log.append(name)
            object.__setattr__(self, name, value * 2)

    def fn(x):
        r = Recorder()
        r.a = x
        r.b = x + 1
        return r.a + r.b, list(r.log)

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def identity_of_new_objects():
    class Node:
        def __init__(self, t):
            self.t = t

    def fn(x):
        a, b = Node(x), Node(x)
        c = a
        return (a is c, a is b, a is not b), a.t + b.t

    return Setup(fn, lambda: (torch.randn(4),))


# -- dataclasses, namedtuples, enums -------------------------------------------------------------
@case("objects", graphs=1, breaks=0, tc_breaks=0)
def frozen_dataclass_made_in_function():
    @dataclasses.dataclass(frozen=True)
    class Spec:
        scale: float
        shift: float = 1.0

    def fn(x):
        s = Spec(2.0)
        return x * s.scale + s.shift

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def dataclass_default_factory():
    @dataclasses.dataclass
    class Bag:
        items: list = dataclasses.field(default_factory=list)
        meta: dict = dataclasses.field(default_factory=dict)

    def fn(x):
        b = Bag()
        b.items.append(x)
        b.items.append(x * 2)
        b.meta["n"] = len(b.items)
        return sum(b.items) * b.meta["n"]

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def dataclass_post_init():
    @dataclasses.dataclass
    class Scaled:
        x: torch.Tensor
        factor: float = 2.0

        def __post_init__(self):
            self.y = self.x * self.factor

    def fn(x):
        s = Scaled(x, factor=3.0)
        return s.y + s.x

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def dataclass_returned_from_function():
    @dataclasses.dataclass
    class Output:
        logits: torch.Tensor
        loss: torch.Tensor | None = None

    def fn(x):
        logits = x * 2
        return Output(logits, logits.sum())

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def typing_namedtuple_with_defaults():
    class Result(typing.NamedTuple):
        value: torch.Tensor
        scale: float = 2.0

    def fn(x):
        r = Result(x)
        r2 = r._replace(scale=4.0)
        return r.value * r.scale + r2.value * r2.scale, r2

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def namedtuple_subclass_instance_attribute():
    class Pair(collections.namedtuple("Pair", ["a", "b"])):
        def total(self):
            return self.a + self.b

    def fn(x):
        p = Pair(x, x + 1)
        p.note = 3
        return p.total() * p.note, p

    return Setup(fn, lambda: (torch.randn(4),))


class Mode(enum.Enum):
    """Module level: every world of ``enum_members`` must see the same members."""

    SUM = 1
    MEAN = 2


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def enum_members():
    def fn(x, mode):
        if mode is Mode.SUM:
            return x.sum(), mode.name
        return x.mean() * Mode(2).value, mode.name

    return Setup(fn, lambda: (torch.randn(4), Mode.MEAN))


# -- nn.Modules built in forward -----------------------------------------------------------------
@case("objects", graphs=1, breaks=0, tc_breaks=0)
def relu_and_dropout_made_in_forward():
    def fn(x):
        act = torch.nn.ReLU()
        drop = torch.nn.Dropout(p=0.0)
        return drop(act(x))

    return Setup(fn, lambda: (torch.randn(4, 4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def loss_with_arguments_made_in_forward():
    def fn(logits, labels):
        loss = torch.nn.CrossEntropyLoss(ignore_index=-100, reduction="sum")
        mse = torch.nn.MSELoss()
        return loss(logits, labels) + mse(logits, torch.zeros_like(logits))

    return Setup(fn, lambda: (torch.randn(4, 5), torch.tensor([0, -100, 4, 2])))


@case("objects", graphs=1, breaks=0, tc_breaks=1)
def linear_with_fresh_parameters_in_forward():
    def fn(x):
        lin = torch.nn.Linear(4, 3)
        return lin(x)

    return Setup(fn, lambda: (torch.randn(2, 4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def user_module_made_in_forward():
    class Scale(torch.nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k

        def forward(self, x):
            return x * self.k

    def fn(x):
        return Scale(3.0)(x) + 1

    return Setup(fn, lambda: (torch.randn(4),))


# -- objects escaping the trace --------------------------------------------------------------------
@case("objects", graphs=1, breaks=0, tc_breaks=0)
def object_returned():
    class Holder:
        def __init__(self, t):
            self.t = t
            self.n = 1

    def fn(x):
        h = Holder(x * 2)
        h.n += 1
        return h

    return Setup(fn, lambda: (torch.randn(4),))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def object_stored_in_global():
    class Holder:
        def __init__(self, t):
            self.t = t

    def fn(x):
        global _last_point
        _last_point = Holder(x + 1)
        return x * 2

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: _last_point)


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def object_stored_on_existing_object():
    class Holder:
        def __init__(self, t):
            self.t = t

    class Owner:
        pass

    owner = Owner()

    def fn(x):
        owner.child = Holder(x * 3)
        owner.child.extra = [x]
        return x + 1

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: owner)


@case(
    "objects",
    graphs=1,
    breaks=0,
    tc_breaks=0,
    retraces=3,
    why=LIST_LENGTH,
)
def object_appended_to_existing_list():
    class Item:
        def __init__(self, t):
            self.t = t

    registry = []

    def fn(x):
        registry.append(Item(x.sum()))
        return x * len(registry)

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: list(registry))


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def object_cycle_escapes():
    class Node:
        def __init__(self, t):
            self.t = t
            self.peer = None

    def fn(x):
        a, b = Node(x), Node(x + 1)
        a.peer, b.peer = b, a
        return a

    return Setup(fn, lambda: (torch.randn(4),), observe=None)


# -- objects made before a graph break -------------------------------------------------------------
@case(
    "objects",
    graphs=2,
    breaks=1,
    tc_breaks=1,
    why=BREAK_BOTH,
)
def object_made_before_a_break():
    class Acc:
        def __init__(self, t):
            self.t = t

        def add(self, u):
            self.t = self.t + u

    def fn(x):
        acc = Acc(x)
        acc.add(x)
        print(end="")  # a graph break for both compilers
        acc.add(1)
        return acc.t

    return Setup(fn, lambda: (torch.randn(4),))


@case(
    "objects",
    graphs=2,
    breaks=1,
    tc_breaks=1,
    why=BREAK_BOTH,
)
def module_made_before_a_break():
    def fn(logits, labels):
        loss_fct = torch.nn.CrossEntropyLoss()
        logits = logits * 2
        print(end="")  # a graph break for both compilers
        return loss_fct(logits, labels)

    return Setup(fn, lambda: (torch.randn(4, 5), torch.tensor([0, 1, 4, 2])))


@case(
    "objects",
    graphs=2,
    breaks=1,
    tc_breaks=1,
    why=BREAK_BOTH,
)
def bound_method_of_new_object_across_a_break():
    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return x * self.k

    def fn(x):
        f = Scaler(2.0).apply
        y = f(x)
        print(end="")  # a graph break for both compilers
        return f(y)

    return Setup(fn, lambda: (torch.randn(4),))


# -- writes with semantics on existing objects -----------------------------------------------------
@case("objects", graphs=1, breaks=0, tc_breaks=0)
def setattr_builtin_runs_property_setter():
    class Box:
        def __init__(self):
            self._t = torch.zeros(3)

        @property
        def t(self):
            return self._t

        @t.setter
        def t(self, value):
            self._t = value.clamp(max=0)

    box = Box()

    def fn(x):
        setattr(box, "t", x)  # noqa: B010 (the setattr builtin is what this case tests)
        return box.t * 2

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: box)


@case(
    "objects",
    graphs=1,
    breaks=0,
    tc_breaks=0,
)
def setattr_override_on_existing_object():
    class Tracked:
        def __init__(self):
            object.__setattr__(self, "writes", 0)

        def __setattr__(self, name, value):
            object.__setattr__(self, "writes", self.writes + 1)
            object.__setattr__(self, name, value)

    obj = Tracked()

    def fn(x):
        obj.value = x * 2
        return obj.value + obj.writes

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: obj)


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def data_descriptor_set_on_existing_object():
    class Positive:
        def __set_name__(self, owner, name):
            self.name = "_" + name

        def __get__(self, obj, owner=None):
            return getattr(obj, self.name)

        def __set__(self, obj, value):
            setattr(obj, self.name, value.abs())

    class Model:
        weight = Positive()

        def __init__(self):
            self._weight = torch.ones(3)

    m = Model()

    def fn(x):
        m.weight = x
        return m.weight + 1

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: m)


@case(
    "objects",
    graphs=1,
    breaks=0,
    tc_breaks=0,
)
def class_attribute_store_on_existing_class():
    class Registry:
        calls = 0

    def fn(x):
        Registry.calls = Registry.calls + 1
        return x * Registry.calls

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: Registry.calls)


# -- hooks and callees mutating objects reached through closures -----------------------------------
@case(
    "objects",
    graphs=1,
    breaks=0,
    tc_breaks=0,
)
def forward_pre_hook_counts_in_closure_object():
    class Stats:
        def __init__(self):
            self.calls = 0

    stats = Stats()
    lin = torch.nn.Linear(3, 3)

    def pre_hook(mod, args):
        stats.calls += 1
        return (args[0] * 2,)

    lin.register_forward_pre_hook(pre_hook)

    def fn(x):
        return lin(x)

    return Setup(fn, lambda: (torch.randn(2, 3),), observe=lambda: stats)


@case("objects", graphs=1, breaks=0, tc_breaks=0)
def callee_appends_to_closure_list():
    log = []

    def record(t):
        log.append(t.shape[0])
        return t

    def fn(x):
        return record(x) * 2

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: list(log))


@case(
    "objects",
    graphs=1,
    breaks=0,
    tc_breaks=0,
)
def closure_made_in_trace_mutates_outer_object():
    class Acc:
        def __init__(self):
            self.n = 0

    acc = Acc()

    def fn(x):
        def bump(k):
            acc.n += k

        bump(1)
        bump(2)
        return x * 2

    return Setup(fn, lambda: (torch.randn(3),), observe=lambda: acc)
