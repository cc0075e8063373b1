"""Idioms of other libraries' code, each compared with eager (values, identity, exceptions) and
with torch.compile's break count: modules whose class defines its own ``__call__`` (GPyTorch's
kernels and likelihoods), classes whose metaclass defines ``__call__``, subclasses of ``tuple``
and ``functools.partial``, two-argument ``super``, an enum's ``__members__``, an enum class
iterated, C struct sequences (``sys.version_info``)."""

from __future__ import annotations

import enum
import functools

import numpy as np
import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

# -- modules whose class defines ``__call__`` --------------------------------------------------


class _ChainedCall(nn.Module):
    """``__call__`` that runs ``forward`` itself (GPyTorch's ``Module``), never ``nn.Module``'s."""

    def __call__(self, *inputs, **kwargs):
        return self.forward(*inputs, **kwargs) * 2


class _Kernel(_ChainedCall):
    """Fills an argument the caller left out, then chains to the base ``__call__``."""

    def __call__(self, x1, x2=None, diag=False, **params):
        if x2 is None:
            x2 = x1
        return super().__call__(x1, x2, diag=diag, **params)

    def forward(self, x1, x2, diag=False, scale=1.0):
        out = x1 * x2 * scale
        return out.sum() if diag else out


class _Likelihood(nn.Module):
    """Dispatches on its input's type before ``nn.Module.__call__`` (GPyTorch's likelihoods):
    ``forward`` must only ever see tensors."""

    def __call__(self, input, *args, **kwargs):
        if torch.is_tensor(input):
            return super().__call__(input, *args, **kwargs)
        return self.marginal(input, *args, **kwargs)

    def marginal(self, dist, shift=0.0):
        return dist.loc + shift

    def forward(self, samples, shift=0.0):
        *batch_shape, n = samples.shape
        return samples.reshape(*batch_shape, n) + shift


class _Dist:
    def __init__(self, loc):
        self.loc = loc


_KERNEL = _Kernel()
_LIKELIHOOD = _Likelihood()


def _module_calls(x):
    return (
        _KERNEL(x),
        _KERNEL(x, x + 1, diag=True),
        _KERNEL(x, scale=3.0),
        _LIKELIHOOD(x, shift=1.0),
        _LIKELIHOOD(_Dist(x), shift=2.0),
    )


def test_a_module_class_call_runs_instead_of_forward():
    check_breaks(_module_calls, lambda: (torch.randn(4),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _module_calls, torch.randn(4))


def test_super_call_of_a_module_runs_its_hooks():
    """``super().__call__(x)`` from a class's own ``__call__`` is ``nn.Module.__call__``: its
    hooks and ``forward``; a class whose ``__call__`` never reaches it runs no hook."""
    likelihood = _Likelihood()
    likelihood.register_forward_hook(lambda m, args, out: out * 10)
    chained = _Kernel()
    chained.register_forward_hook(lambda m, args, out: out * 100)

    def fn(x):
        return likelihood(x, shift=1.0), likelihood(_Dist(x)), chained(x)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0)


def _kernel_with_break(x):
    y = _BREAKING(x.cos(), scale=2.0)
    return _LIKELIHOOD(_Dist(y), shift=1.0)


class _Breaking(_Kernel):
    def forward(self, x1, x2, diag=False, scale=1.0):
        x1 = x1 + 1
        print("in forward")  # a graph break inside the inlined call
        return x1 + x2 * scale


_BREAKING = _Breaking()


def test_arguments_survive_a_break_under_a_class_call():
    """A break inside ``forward`` reached through two ``__call__`` overrides with keyword
    arguments: each frame resumes with its own arguments."""
    check_breaks(_kernel_with_break, lambda: (torch.randn(4),), graphs=2, breaks=1)
    assert_no_more_breaks(1, _kernel_with_break, torch.randn(4))


# -- classes and attributes ---------------------------------------------------------------------


class _Base:
    def scale(self, x):
        return x * 2


class _Derived(_Base):
    def scale(self, x):
        return super(_Derived, self).scale(x) + 1  # noqa: UP008 (the form of older code)


class _Leaf(_Derived):
    def scale(self, x):
        return super(_Derived, self).scale(x) - 1  # skips _Derived's


def _two_argument_super(x):
    return _Derived().scale(x), _Leaf().scale(x)


def test_two_argument_super():
    check_breaks(_two_argument_super, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _two_argument_super, torch.randn(3))


class _Config:
    def __init__(self):
        self.present = 2.0


_CONFIG = _Config()


def _missing_attribute(x, config):
    try:
        scale = config.scale  # an optional attribute of someone else's config object
    except AttributeError as e:
        scale = config.present if e.name == "scale" else 0.0
    return x * scale


def test_missing_attribute_caught_by_except_attributeerror():
    check_breaks(_missing_attribute, lambda: (torch.randn(3), _CONFIG), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _missing_attribute,
        torch.randn(3),
        _CONFIG,
        baseline_missing="torch.compile cannot compare the exception's name: it runs it in Python",
    )


def test_a_missing_attribute_found_later_is_read():
    """The absence is guarded: an object that has the attribute on a later call reads it."""
    compiled = check_breaks(
        _missing_attribute, lambda: (torch.randn(3), _CONFIG), graphs=1, breaks=0
    )[0]
    other = _Config()
    other.scale = 5.0
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x, other), x * 5.0)


class _LengthUnknown(tuple):
    """A tuple subclass whose ``__len__`` raises: CPython never calls it to unpack or index."""

    def __len__(self):
        raise NotImplementedError


_PAIR = _LengthUnknown((1.0, 2.0))


def _unpack_length_unknown(x):
    a, b = _PAIR
    return x + a + b, _PAIR[0]


def test_a_tuple_subclass_whose_len_raises():
    """No internal error (the tracer walked the object's items with ``len``); eager's result."""
    check_breaks(_unpack_length_unknown, lambda: (torch.randn(3),), graphs=1, breaks=2)


# -- torch's type checks ------------------------------------------------------------------------


def _type_checks(x):
    import typing

    return (
        x + 1 if torch.is_tensor(x) else x,
        torch.is_tensor([x]),
        torch.jit.isinstance(x, torch.Tensor),
        torch.jit.isinstance([x, x], typing.List[torch.Tensor]),  # noqa: UP006
        torch.jit.isinstance({"a": x}, typing.Dict[str, torch.Tensor]),  # noqa: UP006
        torch.jit.isinstance((x, 1), typing.Tuple[torch.Tensor, int]),  # noqa: UP006
        torch.jit.isinstance((x, "s"), typing.Tuple[torch.Tensor, int]),  # noqa: UP006
        torch.jit.isinstance(None, typing.Optional[typing.List[int]]),  # noqa: UP006, UP045
        torch.jit.isinstance(x, (int, torch.Tensor)),
        # the builtin classes' generic aliases (``types.GenericAlias``), made in the call
        torch.jit.isinstance([x, x], list[torch.Tensor]),
        torch.jit.isinstance({"a": x}, dict[str, int]),
        list[int] == list[int],
        repr(dict[str, tuple[int, ...]]),
    )


def test_torch_type_checks_are_decided_at_trace_time():
    check_breaks(_type_checks, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _type_checks, torch.randn(3))


def test_jit_isinstance_of_a_bare_container_raises_as_eager():
    def fn(x):
        return torch.jit.isinstance([x], list)

    check_breaks(fn, lambda: (torch.randn(3),), graphs=0, breaks=1)


def _arange_of_0d_tensors(x):
    start, end = torch.tensor(1), torch.tensor(5)
    return torch.arange(start, end) * x.sum(), torch.arange(torch.tensor(3))


def test_arange_with_0d_tensor_bounds():
    check_breaks(_arange_of_0d_tensors, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _arange_of_0d_tensors, torch.randn(3))


# -- metaclasses with ``__call__`` --------------------------------------------------------------


class _Tagging(type):
    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        obj.tag = cls.__name__.lower()
        return obj


class _Distribution(metaclass=_Tagging):
    def __init__(self, loc, scale=1.0, *, validate_args=None):
        self.loc, self.scale, self.validate_args = loc, scale, validate_args


class _Diagonal:
    def __init__(self, diag):
        self.diag = diag


class _BlockMeta(type):
    """linear_operator's idiom: the constructor returns another class's object for some inputs."""

    def __call__(cls, base, block_dim=-3):
        if cls is _Block and isinstance(base, _Diagonal):
            return _Diagonal(base.diag * 2)
        return type.__call__(cls, base, block_dim)


class _Block(metaclass=_BlockMeta):
    def __init__(self, base, block_dim=-3):
        self.base, self.block_dim = base, block_dim


def _metaclass_calls(x):
    d = _Distribution(x, scale=2.0, validate_args=False)
    b = _Block(_Diagonal(x))
    c = _Block(x, block_dim=-2)
    return d.loc * d.scale, d.tag, d.validate_args, type(b).__name__, b.diag, c.block_dim, c.base


def test_a_metaclass_call_is_inlined():
    check_breaks(_metaclass_calls, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _metaclass_calls,
        torch.randn(3),
        baseline_missing="torch.compile cannot call super().__call__ of a metaclass: Python",
    )


class _Cached(type):
    def __call__(cls, n):
        if n not in cls.cache:
            cls.cache[n] = super().__call__(n)
        return cls.cache[n]


class _Shared(metaclass=_Cached):
    cache: dict = {}

    def __init__(self, n):
        self.n = n


def test_a_metaclass_call_that_caches_instances():
    """The instance made in the trace is stored in the class's cache, as eager stores it, and is
    the same object the next call finds there."""
    _Shared.cache.clear()

    def fn(x):
        a, b = _Shared(2), _Shared(2)
        return x * a.n, a is b

    check_breaks(fn, lambda: (torch.randn(3),), graphs=1, breaks=0, setup=_Shared.cache.clear)


# -- subclasses of functools.partial ------------------------------------------------------------


class _NamedPartial(functools.partial):
    """A partial with a method of its own (keeps partial's construction and call)."""

    def describe(self):
        return self.func.__name__


def _scaled_add(a, b, scale=1.0):
    return (a + b) * scale


_STORED = _NamedPartial(_scaled_add, 1.0, scale=3.0)


def _partial_subclass_calls(x):
    made = _NamedPartial(_scaled_add, x)
    return _STORED(x), made(2.0, scale=0.5), type(made) is _NamedPartial, made.func is _scaled_add


def test_calls_through_a_partial_subclass():
    check_breaks(_partial_subclass_calls, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _partial_subclass_calls, torch.randn(3))


def test_a_partial_subclass_made_in_the_trace_is_returned_as_itself():
    def fn(x):
        return x + 1, _NamedPartial(_scaled_add, 2.0, scale=2.0)

    compiled, counter = compile_counted(fn)
    for _ in range(2):
        _, made = compiled(torch.randn(3))
        assert type(made) is _NamedPartial and made(1.0) == 6.0 and made.describe() == "_scaled_add"
    assert counter.frame_count == 1


class _Other:
    pass


class _ZeroArgument(_Base):
    def scale(self, x):
        return super().scale(x) + 1


def _super_of_a_foreign_self(x):
    # a method taken from the class and called with an object of another class: super() raises
    # TypeError in CPython; the tracer breaks there (before, it failed on its own: the class is
    # not in the object's MRO), and the try block runs in Python
    try:
        _ZeroArgument.scale(_Other(), x)
    except TypeError:
        return x - 1
    return x


def test_zero_argument_super_with_a_foreign_self():
    check_breaks(_super_of_a_foreign_self, lambda: (torch.randn(3),), graphs=0, breaks=1)


class _Factory:
    @classmethod
    def make(cls, x):
        return x + len(cls.__name__)

    @staticmethod
    def helper(x):
        return x * 3


class _SubFactory(_Factory):
    @classmethod
    def make(cls, x):
        return super().make(x) * 2 + super(_SubFactory, cls).helper(x)  # noqa: UP008


def _super_in_a_classmethod(x):
    return _SubFactory.make(x), _SubFactory().make(x)


def test_super_in_a_classmethod():
    check_breaks(_super_in_a_classmethod, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _super_in_a_classmethod, torch.randn(3))


# -- subclasses of tuple made in the compiled function ------------------------------------------


class _Shape(tuple):
    """A tuple with methods of its own."""

    def numel(self):
        total = 1
        for n in self:
            total *= n
        return total

    @property
    def rank(self):
        return len(self)


def _tuple_subclass(x):
    shape = _Shape(x.shape)
    rows, cols = shape
    shape.note = "made here"
    return (
        x.reshape(cols, rows) * shape.numel(),
        shape.rank,
        shape.index(cols),
        shape.count(rows),
        isinstance(shape, tuple),
        shape[::-1],
        shape + (1,),
        shape,
    )


def test_a_tuple_subclass_made_in_the_trace():
    """Its methods and tuple's own run in the graph; it is returned as an object of its class,
    with the attribute set on it."""
    compiled = check_breaks(_tuple_subclass, lambda: (torch.randn(2, 3),), graphs=1, breaks=0)[0]
    shape = compiled(torch.randn(2, 3))[-1]
    assert type(shape) is _Shape and shape == (2, 3) and shape.note == "made here"
    assert_no_more_breaks(0, _tuple_subclass, torch.randn(2, 3))


def _tuple_subclass_at_a_break(x):
    shape = _Shape((2, 3))
    print("break")
    return x * shape.numel(), shape


def test_a_tuple_subclass_live_at_a_break():
    compiled = check_breaks(
        _tuple_subclass_at_a_break, lambda: (torch.randn(3),), graphs=1, breaks=1
    )[0]
    assert type(compiled(torch.randn(3))[1]) is _Shape


def _given_tuple_subclass(x, shape):
    rows, cols = shape
    return x.reshape(cols, rows) * shape.numel(), shape.rank, shape[1], shape


def test_a_tuple_subclass_given_to_the_function():
    """Read as a tuple of its items (guarded by type and length), its methods inlined; it comes
    back as the caller's own object."""
    shape = _Shape((2, 3))
    compiled = check_breaks(
        _given_tuple_subclass, lambda: (torch.randn(6), shape), graphs=1, breaks=0
    )[0]
    assert compiled(torch.randn(6), shape)[-1] is shape
    x = torch.randn(24)
    torch.testing.assert_close(compiled(x, _Shape((4, 6)))[0], x.reshape(6, 4) * 24)
    assert_no_more_breaks(0, _given_tuple_subclass, torch.randn(6), shape)


# -- an enum's members --------------------------------------------------------------------------


class _Act(enum.Enum):
    RELU = "relu"
    GELU = "gelu"
    ALIAS = "relu"  # an alias: in __members__, not in iteration over the class


def _enum_members(x):
    out = x
    for name, member in _Act.__members__.items():
        out = out + len(name) * (member is _Act.RELU)
    return (
        out,
        list(_Act.__members__),
        "GELU" in _Act.__members__,
        _Act.__members__["ALIAS"] is _Act.RELU,
        len(_Act.__members__),
        [m.value for m in _Act.__members__.values()],
    )


def test_iterating_an_enums_members():
    check_breaks(_enum_members, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _enum_members,
        torch.randn(3),
        baseline_missing="torch 2.11's Dynamo raises inside Enum.__members__ (runs it in Python)",
    )


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class _Bits(enum.Flag):
    R = 1
    W = 2


def _enum_classes_iterated(x):
    out = x
    for level in _Level:  # the class itself: its members in order, aliases left out
        out = out * level
    return (
        out,
        [m.name for m in _Act],
        list(reversed(_Act)),
        len(_Act),
        _Act.GELU in _Act,
        sorted(_Level, reverse=True),
        list(_Bits),
        dict(zip(_Level, _Act, strict=True)),
    )


def test_iterating_an_enum_class():
    check_breaks(_enum_classes_iterated, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _enum_classes_iterated,
        torch.randn(3),
        baseline_missing="torch 2.11's Dynamo fails inside EnumType.__iter__ (runs it in Python)",
    )


# -- NumPy over tensors -------------------------------------------------------------------------


def _numpy_of_tensors(x):
    shared = np.asarray(x)  # x's own memory, as x.numpy()
    copied = np.array(x)  # a copy
    shared[0] = 10.0
    copied[1] = 20.0
    return (
        x + 1,
        np.ones_like(shared, dtype=np.float32),
        np.full_like(copied, 3, dtype=np.int64),
        np.zeros_like(shared, dtype="float64"),
    )


def test_numpy_arrays_of_tensors():
    """``np.asarray(t)`` shares the tensor's memory (a write through it changes ``t``),
    ``np.array(t)`` copies; NumPy dtypes given to the ``*_like`` functions."""
    check_breaks(_numpy_of_tensors, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(0, _numpy_of_tensors, torch.randn(3))


def test_numpy_asarray_of_a_tensor_requiring_grad_raises_as_eager():
    def fn(x):
        return np.asarray(x * 2)

    check_breaks(fn, lambda: (torch.randn(3, requires_grad=True),), graphs=1, breaks=1)


# -- C struct sequences (``sys.version_info``) ---------------------------------------------------


def _struct_sequences(x):
    import sys

    scale = 2 if sys.version_info >= (3, 10) else 3  # the commonest version check in libraries
    return (
        x * scale,
        sys.version_info[:2],
        sys.version_info.major,
        tuple(sys.version_info) == sys.version_info,
        sys.float_info.epsilon,
        sys.flags.optimize,
        max(sys.version_info[:3], (3, 9, 0)),
    )


def test_struct_sequences_read_from_modules():
    # ``sys.version_info`` cannot be made anew, so folding a comparison with it needs the real
    # one (the whole function ran in Python, an internal error of the tracer)
    check_breaks(_struct_sequences, lambda: (torch.randn(3),), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        _struct_sequences,
        torch.randn(3),
        baseline_missing="torch 2.11's Dynamo raises on sys.version_info (runs it in Python)",
    )
