"""``functools.singledispatch``: the implementation for the argument's class is chosen at trace time
(its weak-keyed caches are not traced) and the registry it was read from is guarded, so that a
later ``register`` (a new class, a class registered again, a virtual subclass of an abstract class
in the registry) is seen by the next call. Counts beside torch.compile's."""

from __future__ import annotations

import abc
import collections.abc
import functools

import sympy  # noqa: F401 (see below)
import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

# A registry holding an abstract class makes the lookup depend on ``abc``'s cache token, which any
# ``register`` of a virtual subclass bumps: sympy's import does (its numbers), and torch loads it
# lazily, between the calls below unless it is loaded first.


@functools.singledispatch
def scale(value):
    return value + 1


@scale.register
def _(value: int):
    return value * 2


@scale.register
def _(value: torch.Tensor):
    return value * 3


@scale.register(collections.abc.Sequence)
def _(value):
    return len(value)


class Base:
    pass


class Derived(Base):
    pass


@functools.singledispatch
def kind(value):
    return "object"


@kind.register
def _(value: Base):
    return "base"


def _dispatches(x):
    return x + scale(3) + scale(2.5), scale(x), scale([1, 2]), scale((1,)), scale(True)


def _by_mro(x, obj):
    return x + 1, kind(obj), kind(Base()), kind(3)


def test_dispatch_on_constants_tensors_and_abstract_classes():
    check_breaks(_dispatches, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _dispatches, torch.randn(3))


def test_dispatch_follows_the_mro_of_an_argument():
    check_breaks(_by_mro, lambda: (torch.randn(3), Derived()), graphs=1, breaks=0)
    assert_no_more_breaks(0, _by_mro, torch.randn(3), Derived())


def test_dispatch_reached_through_the_dispatch_attribute():
    def fn(x):
        return x + scale.dispatch(int)(4)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _dispatch_str(x):
    return x + 1, reg("s"), reg(1.5)


@functools.singledispatch
def reg(value):
    return "default"


def test_register_after_compiling_is_seen():
    compiled, _ = compile_counted(_dispatch_str)
    x = torch.randn(3)
    assert compiled(x)[1:] == ("default", "default")
    reg.register(str, lambda value: "str")
    assert compiled(x)[1:] == _dispatch_str(x)[1:] == ("str", "default")
    reg.register(str, lambda value: "str again")  # the same class, a new function
    assert compiled(x)[1:] == _dispatch_str(x)[1:] == ("str again", "default")


class Sized(abc.ABC):
    @abc.abstractmethod
    def size(self): ...


class Plain:
    pass


@functools.singledispatch
def measure(value):
    return "plain"


@measure.register
def _(value: Sized):
    return "sized"


def _measure(x, obj):
    return x + 1, measure(obj)


def test_virtual_subclass_registered_after_compiling_is_seen():
    compiled, _ = compile_counted(_measure)
    x, obj = torch.randn(3), Plain()
    assert compiled(x, obj)[1] == "plain"
    Sized.register(Plain)
    assert compiled(x, obj)[1] == _measure(x, obj)[1] == "sized"


@functools.singledispatch
def ambiguous(value):
    return 0


@ambiguous.register(collections.abc.Sized)
def _(value):
    return 1


@ambiguous.register(collections.abc.Iterable)
def _(value):
    return 2


class SizedAndIterable:
    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())


def _ambiguous(x, obj):
    try:
        return x + ambiguous(obj), None
    except RuntimeError as e:
        return x - 1, str(e)


def test_ambiguous_dispatch_raises_as_eager():
    """The lookup raises: it is left to the traced code, which breaks where it reads the caches."""
    check_breaks(_ambiguous, lambda: (torch.randn(3), SizedAndIterable()), graphs=0, breaks=2)


# ``functools.singledispatchmethod``: on 3.13 its ``__get__`` caches the method it makes for each
# instance in a weak-keyed dict, read and filled for real at trace time (as eager fills it); before
# 3.13 ``__get__`` makes a new method each time and is traced as written.
class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @functools.singledispatchmethod
    def apply(self, value):
        return value + self.factor

    @apply.register
    def _(self, value: int):
        return value * self.factor

    @apply.register
    def _(self, value: torch.Tensor):
        return value * self.factor - 1


class Renamer:
    @functools.singledispatchmethod
    def name(self, value):
        return "default"


_SCALER = Scaler(3)


def _method_dispatches(x):
    return _SCALER.apply(x) + _SCALER.apply(4), _SCALER.apply(2.5)


def _method_of(x, obj):
    return obj.apply(x) + obj.apply(2), obj.apply


def test_singledispatchmethod_dispatches_in_the_graph():
    check_breaks(_method_dispatches, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _method_dispatches, torch.randn(3))


def test_singledispatchmethod_gives_eager_method_for_each_instance():
    compiled, counter = compile_counted(_method_of)
    x, first = torch.randn(3), Scaler(2)
    for obj in (first, Scaler(5), first):
        result, method = compiled(x, obj)
        expected, eager_method = _method_of(x, obj)
        torch.testing.assert_close(result, expected)
        assert (method is obj.apply) == (eager_method is obj.apply)  # the cached one (3.13)
        assert method(7) == eager_method(7) == 7 * obj.factor
    assert counter.frame_count == 2  # one variant per instance seen (its factor is a constant)


def test_singledispatchmethod_register_after_compiling_is_seen():
    def fn(x, obj):
        return x + 1, obj.name("s"), obj.name(1.5)

    compiled, _ = compile_counted(fn)
    x, obj = torch.randn(3), Renamer()
    assert compiled(x, obj)[1:] == ("default", "default")
    Renamer.name.register(str, lambda self, value: "str")
    assert compiled(x, obj)[1:] == fn(x, obj)[1:] == ("str", "default")
