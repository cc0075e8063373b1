"""An attribute an ``nn.Module`` lacks, read in a compiled function: torch's ``__getattr__`` raises
AttributeError, which a traced ``except AttributeError``, ``hasattr`` and ``getattr(m, name,
default)`` catch without a graph break (torchdiffeq's ``_check_inputs`` probes the user's ODE
module for its callbacks that way). The module reaches the trace as an argument, as a submodule
(an attribute of the compiled module) or as a global, or is made in the trace. The absence is
guarded: once the attribute appears (a buffer, a parameter, a submodule, an instance or a class
attribute, a ``__getattr__`` of the class) the next call gives eager's result. Each test compares
results with eager, counts frames and breaks, and compares breaks with torch.compile's."""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import assert_same, break_count, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

from bytegraph.explain import Recorder


def _use(value, x):
    """What the probed attribute does to ``x``: a submodule is called, anything else scales."""
    return value(x) if isinstance(value, nn.Module) else x * value


def try_getattr(m, x):
    try:
        scale = getattr(m, "scale")  # noqa: B009 (the builtin, as torchdiffeq calls it)
    except AttributeError as e:
        return x + 1, e.name, str(e), e.obj is m
    return _use(scale, x)


def try_load_attr(m, x):
    try:
        scale = m.scale
    except AttributeError:
        return x + 3
    return _use(scale, x)


def has_attr(m, x):
    if hasattr(m, "scale"):
        return _use(m.scale, x)
    return x - 1


def getattr_default(m, x):
    scale = getattr(m, "scale", None)
    return x + 2 if scale is None else _use(scale, x)


PROBES = [try_getattr, try_load_attr, has_attr, getattr_default]


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


def _class_attribute(m):
    type(m).scale = 5.0


#: What makes ``scale`` appear between calls, applied to the probed module.
ADDITIONS = {
    "buffer": lambda m: m.register_buffer("scale", torch.full((4,), 3.0)),
    "parameter": lambda m: m.register_parameter("scale", nn.Parameter(torch.full((4,), 4.0))),
    "submodule": lambda m: setattr(m, "scale", nn.Linear(4, 4)),
    "instance attribute": lambda m: setattr(m, "scale", 2.0),
    "class attribute": _class_attribute,
    "class __getattr__": lambda m: setattr(type(m), "__getattr__", lambda self, name: 6.0),
}


def _fresh_class():
    """A class of its own for each test: the class-level additions must not leak."""
    return type("Probed", (Plain,), {})


def _run(compiled, fn, args, recorder):
    with warnings.catch_warnings(), recorder:
        warnings.simplefilter("error")  # a fallback warns: turn it into a failure
        got = compiled(*args)
    assert_same(got, fn(*args))


def _probe_before_and_after(fn, make_args, probed, add):
    """Two calls with the attribute missing, ``add`` on ``probed``, two more calls; returns
    ``(frames, breaks)``. The probes do not change the module: eager runs on the same one."""
    torch.manual_seed(0)
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(2):
        _run(compiled, fn, make_args(), recorder)
    add(probed)
    for _ in range(2):
        _run(compiled, fn, make_args(), recorder)
    return counter.frame_count, break_count(recorder.report())


@pytest.mark.parametrize("addition", list(ADDITIONS))
@pytest.mark.parametrize("fn", PROBES)
def test_an_argument(fn, addition):
    m = _fresh_class()()
    x = torch.randn(4)
    assert _probe_before_and_after(fn, lambda: (m, x), m, ADDITIONS[addition]) == (2, 0)


class Outer(nn.Module):
    def __init__(self, probe):
        super().__init__()
        self.inner = _fresh_class()()
        self.probe = probe

    def forward(self, x):
        return self.probe(self.inner, x)


@pytest.mark.parametrize("addition", list(ADDITIONS))
@pytest.mark.parametrize("fn", PROBES)
def test_a_submodule(fn, addition):
    outer = Outer(fn)
    x = torch.randn(4)
    got = _probe_before_and_after(outer, lambda: (x,), outer.inner, ADDITIONS[addition])
    assert got == (2, 0)


GLOBAL = Plain()


def _global_try(x):
    return try_getattr(GLOBAL, x)


def _global_has(x):
    return has_attr(GLOBAL, x)


def _global_default(x):
    return getattr_default(GLOBAL, x)


@pytest.mark.parametrize("addition", list(ADDITIONS))
@pytest.mark.parametrize("fn", [_global_try, _global_has, _global_default])
def test_a_global(fn, addition):
    global GLOBAL
    GLOBAL = _fresh_class()()
    x = torch.randn(4)
    assert _probe_before_and_after(fn, lambda: (x,), GLOBAL, ADDITIONS[addition]) == (2, 0)


@pytest.mark.parametrize("fn", PROBES + [_global_try, _global_has, _global_default])
def test_no_more_breaks_than_torch_compile(fn):
    global GLOBAL
    m = GLOBAL = Plain()
    args = (torch.randn(4),) if fn.__name__.startswith("_global") else (m, torch.randn(4))
    assert _probe_before_and_after(fn, lambda: args, m, lambda _: None) == (1, 0)
    assert_no_more_breaks(0, fn, *args)


#: torchdiffeq's callback names (``torchdiffeq._impl.misc._all_callback_names``).
CALLBACKS = ("callback_step", "callback_accept_step", "callback_reject_step")


def _null_callback(*args, **kwargs):
    pass


class Perturbed(nn.Module):
    """torchdiffeq's ``_PerturbFunc``: the user's function, wrapped (made in the trace)."""

    def __init__(self, base):
        super().__init__()
        self.base_func = base

    def forward(self, t, y):
        return self.base_func(t, y)


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, t, y):
        return torch.tanh(self.lin(y)) * t


#: The steps ``FieldWithCallback.callback_step`` saw, compiled and eager.
STEPS = []


class FieldWithCallback(Field):
    def callback_step(self, t0, y0, dt):
        STEPS.append(dt)


def check_inputs(func, y0, t):
    """torchdiffeq's ``_check_inputs`` callback probing, then one Euler step."""
    original_func = func
    func = Perturbed(func)
    for callback_name in CALLBACKS:
        try:
            callback = getattr(original_func, callback_name)
        except AttributeError:
            setattr(func, callback_name, _null_callback)
        else:
            setattr(func, callback_name, callback)
    func.callback_step(t, y0, 0.1)
    return y0 + 0.1 * func(t, y0)


@pytest.mark.parametrize("cls", [Field, FieldWithCallback])
def test_torchdiffeq_callback_probing(cls):
    torch.manual_seed(0)
    field = cls()
    y0, t = torch.randn(4), torch.tensor(0.5)
    compiled, counter = compile_counted(check_inputs)
    recorder = Recorder()
    for _ in range(2):
        _run(compiled, check_inputs, (field, y0, t), recorder)
    breaks = break_count(recorder.report())
    assert (counter.frame_count, breaks) == (1, 0)
    assert STEPS == ([0.1] * 4 if cls is FieldWithCallback else [])
    STEPS.clear()
    assert_no_more_breaks(breaks, check_inputs, field, y0, t)


class Magic(nn.Module):
    """Its own ``__getattr__`` answers ``magic`` and leaves every other name to torch's."""

    def __getattr__(self, name):
        if name == "magic":
            return 5.0
        return super().__getattr__(name)


def _magic(m, x):
    try:
        found = m.magic
    except AttributeError:
        found = -1.0
    return x + found, hasattr(m, "magic"), getattr(m, "nope", 7.0), hasattr(m, "nope")


def test_a_class_getattr_answers():
    m, x = Magic(), torch.randn(4)
    assert _probe_before_and_after(_magic, lambda: (m, x), m, lambda _: None) == (1, 0)
    assert_no_more_breaks(0, _magic, m, x)


class Holder(nn.Module):
    def __init__(self, with_scale):
        super().__init__()
        if with_scale:
            self.scale = 2.0


def _made_in_the_trace(x, with_scale):
    m = Holder(with_scale)
    return try_getattr(m, x)[0], has_attr(m, x), getattr_default(m, x)


@pytest.mark.parametrize("with_scale", [False, True])
def test_a_module_made_in_the_trace(with_scale):
    x = torch.randn(4)
    args = (x, with_scale)
    assert _probe_before_and_after(_made_in_the_trace, lambda: args, None, lambda _: None) == (
        1,
        0,
    )
    assert_no_more_breaks(0, _made_in_the_trace, *args)


class Intercepting(nn.Module):
    """Its ``__getattr__`` answers ``lin`` before torch's finds the submodule of that name."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __getattr__(self, name):
        if name == "lin":
            return nn.Identity()
        return super().__getattr__(name)


class Delegating(nn.Module):
    """PEFT's ``LoraModel``: torch's lookup first, then the wrapped model's attributes."""

    def __init__(self):
        super().__init__()
        self.model = Plain()
        self.register_buffer("shift", torch.ones(4))

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "model":
                raise
            return getattr(self.model, name)

    def forward(self, x):
        extra = self.scale if hasattr(self, "scale") else 0.0
        return self.lin(x) + self.shift + self.model.lin.bias * extra


def _members(m, x):
    return m.lin(x) * 2, getattr(m, "scale", None)


@pytest.mark.parametrize("cls", [Intercepting, Delegating])
def test_a_class_getattr_decides_before_the_member_tables(cls):
    """Members are reached through the class's ``__getattr__``, which runs before torch's reads
    the tables: what it answers is eager's, parameters keep their gradients."""
    m, x = cls(), torch.randn(4)
    assert _probe_before_and_after(_members, lambda: (m, x), m, lambda _: None) == (1, 0)
    assert_no_more_breaks(0, _members, m, x)


def test_a_delegating_module_compiled():
    torch.manual_seed(0)
    m, x = Delegating(), torch.randn(4)
    assert _probe_before_and_after(m, lambda: (x,), m.model, ADDITIONS["instance attribute"]) == (
        2,
        0,
    )
    m.model.scale = torch.tensor(3.0)  # the forward's ``self.scale``, delegated, is a tensor now
    compiled, counter = compile_counted(m)
    compiled(x).sum().backward()
    got = m.model.lin.weight.grad.clone()
    m.zero_grad()
    m(x).sum().backward()
    torch.testing.assert_close(got, m.model.lin.weight.grad)
    assert_no_more_breaks(0, m, x)
