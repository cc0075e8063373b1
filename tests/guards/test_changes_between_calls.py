"""What a compiled function reads that can change between two calls while its arguments stay the
same objects: globals, closure cells, defaults, attributes, containers mutated in place, module
flags, tensor metadata changed in place, torch's global state. Each case calls the function
twice, changes one thing, calls it twice more, and compares every call with eager; the identical
call after the change compiles nothing new."""

from __future__ import annotations

import dataclasses
import enum
import functools

import pytest
import torch
from difftest import assert_same, compile_counted, uncompiled
from torch import nn

SCALE = 2
ACT = "relu"
CONFIG = {"eps": 1e-5, "mode": "a"}


def _set_global(name, value):
    return lambda: globals().__setitem__(name, value)


def _global_int():
    def fn(x):
        return x * SCALE, SCALE

    return fn, (torch.ones(3),), _set_global("SCALE", 2.5)


def _global_str_selects_activation():
    def fn(x):
        return torch.relu(x) if ACT == "relu" else torch.sigmoid(x)

    return fn, (torch.randn(3),), _set_global("ACT", "sigmoid")


def _config_dict_get():
    def fn(x):
        y = x * CONFIG.get("eps", 0.0)
        return (y + 1 if CONFIG["mode"] == "a" else y - 1), CONFIG.get("extra", 1)

    def change():
        CONFIG["mode"], CONFIG["extra"] = "b", 3

    return fn, (torch.ones(3),), change


def _closure_cell_rebound():
    act = torch.relu

    def fn(x):
        return act(x)

    def change():
        nonlocal act
        act = torch.tanh

    return fn, (torch.randn(3),), change


def _list_default_mutated():
    def fn(x, dims=[0]):  # noqa: B006 (the mutable default is the point)
        return x.sum(dims)

    return fn, (torch.ones(2, 3),), lambda: fn.__defaults__[0].append(1)


def _slots_attribute_deleted():
    class C:
        __slots__ = ("k",)

        def __init__(self):
            self.k = 2

    o = C()

    def fn(x, o):
        return x * getattr(o, "k", 10)

    return fn, (torch.ones(3), o), lambda: delattr(o, "k")


def _property_backing_field():
    class C:
        def __init__(self):
            self._k = 2

        @property
        def k(self):
            return self._k * 2

    o = C()

    def fn(x, o):
        return x * o.k

    return fn, (torch.ones(3), o), lambda: setattr(o, "_k", 5)


def _partial_keywords():
    def f(x, a, b=1):
        return x * a + b

    p = functools.partial(f, a=2)

    def fn(x, p):
        return p(x)

    return fn, (torch.ones(3), p), lambda: p.keywords.__setitem__("a", 5)


def _class_swapped():
    class A:
        def f(self, x):
            return x + 1

    class B:
        def f(self, x):
            return x - 1

    o = A()

    def fn(x, o):
        return o.f(x)

    return fn, (torch.ones(3), o), lambda: setattr(o, "__class__", B)


def _dataclass_field():
    @dataclasses.dataclass
    class Cfg:
        hidden: int = 4
        act: str = "relu"

    c = Cfg()

    def fn(x, c):
        y = x * c.hidden
        return torch.relu(y) if c.act == "relu" else torch.tanh(y)

    return fn, (torch.randn(3), c), lambda: setattr(c, "act", "tanh")


def _enum_member():
    class Mode(enum.Enum):
        A = 1
        B = 2

    state = [Mode.A]

    def fn(x, state):
        return x + 1 if state[0] is Mode.A else x * state[0].value

    return fn, (torch.ones(3), state), lambda: state.__setitem__(0, Mode.B)


def _dict_reordered():
    d = {"a": 1, "b": 2}

    def fn(x, d):
        return [x * v for v in d.values()], list(d)

    def change():
        d["a"] = d.pop("a")

    return fn, (torch.ones(3), d), change


def _list_item_int_to_float():
    items = [1, 2]

    def fn(x, items):
        return x * items[0] + items[1]

    return fn, (torch.ones(3), items), lambda: items.__setitem__(0, 0.5)


def _mask_to_none():
    d = {"mask": torch.ones(3)}

    def fn(x, d):
        m = d.get("mask")
        return x if m is None else x * m

    return fn, (torch.ones(3), d), lambda: d.__setitem__("mask", None)


def _module_eval():
    class M(nn.Module):
        def forward(self, x):
            return x * 2 if self.training else x

    m = M()
    return m, (torch.ones(3),), m.eval


def _submodule_replaced():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    return m, (torch.randn(3),), lambda: m.__setitem__(1, nn.Tanh())


def _parameter_frozen():
    m = nn.Linear(3, 3)
    return m, (torch.randn(3),), lambda: m.weight.requires_grad_(False)


def _forward_hook_added():
    m = nn.Linear(3, 3)
    return m, (torch.randn(3),), lambda: m.register_forward_hook(lambda mod, i, o: o * 10)


def _requires_grad_in_place():
    x = torch.ones(3)

    def fn(x):
        return x * 3 if x.requires_grad else x * 2

    return fn, (x,), lambda: x.requires_grad_(True)


def _transposed_in_place():
    x = torch.arange(6.0).reshape(2, 3)

    def fn(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1)

    return fn, (x,), x.t_


def _grad_attached():
    x = torch.ones(3, requires_grad=True)

    def fn(x):
        return x.grad * 2 if x.grad is not None else x.detach()

    return fn, (x,), lambda: setattr(x, "grad", torch.full((3,), 4.0))


def _storage_offset_moved():
    base = torch.arange(10.0)
    x = base[:5]

    def fn(x):
        return x * 2, x.storage_offset(), x[1:].storage_offset()

    return fn, (x,), lambda: x.set_(base.untyped_storage(), 3, (5,), (1,))


def _conjugate_bit():
    z = torch.tensor([1 + 2j, 3 - 1j])
    state = [z]

    def fn(state):
        x = state[0]
        return x * 2, x.is_conj(), x.conj().is_conj()

    return fn, (state,), lambda: state.__setitem__(0, z.conj())


def _negative_bit():
    z = torch.tensor([1 + 2j, 3 - 1j])
    state = [z.imag]

    def fn(state):
        x = state[0]
        return x + 1, x.is_neg()

    return fn, (state,), lambda: state.__setitem__(0, z.conj().imag)


def _view_given():
    base = torch.arange(4.0)
    state = [torch.ones(3)]

    def fn(state):
        x = state[0]
        return x + 1, x._is_view(), x.contiguous()._is_view(), x.view(-1)._is_view()

    return fn, (state,), lambda: state.__setitem__(0, base[:3])


def _default_dtype():
    def fn(x):
        return torch.zeros(3) + x, torch.get_default_dtype()

    return fn, (torch.ones(3, dtype=torch.float64),), lambda: torch.set_default_dtype(torch.float64)


CASES = {
    f.__name__[1:]: f
    for f in (
        _global_int,
        _global_str_selects_activation,
        _config_dict_get,
        _closure_cell_rebound,
        _list_default_mutated,
        _slots_attribute_deleted,
        _property_backing_field,
        _partial_keywords,
        _class_swapped,
        _dataclass_field,
        _enum_member,
        _dict_reordered,
        _list_item_int_to_float,
        _mask_to_none,
        _module_eval,
        _submodule_replaced,
        _parameter_frozen,
        _forward_hook_added,
        _requires_grad_in_place,
        _transposed_in_place,
        _grad_attached,
        _storage_offset_moved,
        _conjugate_bit,
        _negative_bit,
        _view_given,
        _default_dtype,
    )
}


@pytest.fixture(autouse=True)
def _put_back_globals():
    saved = SCALE, ACT, dict(CONFIG), torch.get_default_dtype()
    yield
    globals()["SCALE"], globals()["ACT"] = saved[:2]
    CONFIG.clear()
    CONFIG.update(saved[2])
    torch.set_default_dtype(saved[3])


@pytest.mark.parametrize("case", CASES)
def test_a_change_between_calls_is_seen(case):
    fn, args, change = CASES[case]()
    compiled, counter = compile_counted(fn)
    eager = uncompiled(fn)
    graphs = []
    for call in range(4):
        if call == 2:
            change()
        assert_same(compiled(*args), eager(*args))
        graphs.append(counter.frame_count)
    assert graphs[1] == graphs[0] and graphs[3] == graphs[2], graphs
