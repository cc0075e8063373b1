"""PYTEST_DONT_REWRITE: the cases assert as written (no rewritten asserts).

Python control flow and objects inside compiled code, compared with eager call by call.

Each case is a small function of the kind ML code is written with (generators and iterators,
``itertools``, ``try``/``with``, user classes with dunders, dataclasses and NamedTuples,
``match``, closures, globals, formatting and printing of shapes, warnings) compiled with a
counting backend and called three times with equal arguments, then once with changed ones
(``check_breaks``: results, exceptions, printed text, arguments after the call, graphs and breaks
over all calls, no fallback; equal graphs over the three equal calls means no recompile).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import operator
import sys
import warnings
from collections import abc
from typing import NamedTuple

import pytest
import torch
from difftest import check_breaks, compile_counted

#: Python 3.11: comprehensions run in frames of their own (a break raised in one leaves the caller
#: no graph), and ``dataclasses.asdict`` deep-copies each field's value (one break per tensor)
COMPREHENSION_FRAMES = sys.version_info < (3, 12)


def t(*shape):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape) / 3 - 1


# -- generators and iterators ----------------------------------------------------------------------
def gen_send_close(x):
    def acc():
        total = 0
        while True:
            v = yield total
            if v is None:
                break
            total += v

    g = acc()
    next(g)
    g.send(2)
    r = g.send(3)
    g.close()
    return x * r


def gen_yield_from(x):
    def inner(v):
        yield v + 1
        yield v * 2
        return 7

    def outer(v):
        r = yield from inner(v)
        yield v - r

    return list(outer(x))


def genexpr_partly_consumed(x):
    g = (x * i for i in range(10))
    a, b = next(g), next(g)
    return a + b, next(g)


def zip_enumerate(xs, ws):
    return [a * w * i for i, (a, w) in enumerate(zip(xs, ws, strict=False), start=1)]


def zip_strict(xs, ws):
    return [a * w for a, w in zip(xs, ws, strict=True)]


def map_filter(xs):
    ys = list(map(lambda v: v.relu(), filter(lambda v: v.shape[0] > 1, xs)))
    return ys, len(ys)


def itertools_mix(xs):
    pairs = [b - a for a, b in itertools.pairwise(xs)]
    sliced = list(itertools.islice(itertools.chain(xs, pairs), 1, None, 2))
    sums = list(itertools.accumulate(xs))
    grid = [xs[0] * i + j for i, j in itertools.product(range(2), [1, 3])]
    return pairs, sliced, sums, grid, list(itertools.accumulate([1, 2, 3], operator.mul))


def groupby_shape(xs):
    by = lambda v: v.shape[0]  # noqa: E731
    return {k: torch.cat(list(g)) for k, g in itertools.groupby(sorted(xs, key=by), key=by)}


def rows_of_a_tensor(x, y):
    return [a @ b for a, b in zip(x, y, strict=False)], [r.sum() for r in x]


# -- exceptions and context managers ---------------------------------------------------------------
def shape_mismatch_handled(x, y):
    try:
        z = x + y
    except RuntimeError:
        z, msg = x.sum() + y.sum(), "mismatch"
    else:
        msg = "ok"
    finally:
        z = z * 2
    return z, msg


class ConfigError(Exception):
    pass


def reraised_from(x, y):
    try:
        return x @ y
    except RuntimeError as e:
        raise ConfigError(f"bad shapes {tuple(x.shape)} @ {tuple(y.shape)}") from e


def finally_returns(x):
    try:
        x = x * 2
        raise ValueError("x")
    finally:
        return x + 1  # noqa: B012 (the case itself)


class Swallow:
    def __init__(self):
        self.seen = []

    def __enter__(self):
        self.seen.append("in")
        return self

    def __exit__(self, kind, value, tb):
        self.seen.append(kind.__name__ if kind else None)
        return True


def with_swallowing(x, cm):
    y = x
    with cm:
        y = x * 2
        raise ValueError("boom")
    return y, list(cm.seen)


class Record:
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("enter")
        return len(self.log)

    def __exit__(self, *exc):
        self.log.append(("exit", exc[0] is None))
        return False


def exit_stack(x, cms):
    with contextlib.ExitStack() as stack:
        for cm in cms:
            x = x + stack.enter_context(cm)
        x = x * 2
    return x


@contextlib.contextmanager
def scaled(log):
    log.append("a")
    try:
        yield 3
    finally:
        log.append("b")


def generator_context(x, log):
    with scaled(log) as s:
        x = x * s
    return x


# -- user classes ----------------------------------------------------------------------------------
class Bag:
    def __init__(self, items):
        self.items = list(items)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __bool__(self):
        return len(self.items) > 1


def bag_dunders(x, bag):
    out = x + bag[0] if bag else x
    for v in bag:
        out = out * v
    return out, len(bag), bag[-1:]


class Scale:
    def __init__(self, s):
        self.s = s
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * self.s


def callable_object(x, f):
    return f(f(x))


class Model:
    factor = 2

    def __init__(self, w):
        self._w = w

    @property
    def w(self):
        return self._w * self.factor

    @w.setter
    def w(self, v):
        self._w = v

    @classmethod
    def make(cls, n):
        return cls(torch.ones(n))

    @staticmethod
    def act(x):
        return x.tanh()


def property_classmethod_staticmethod(x, m):
    m.w = x
    return m.w + Model.act(x), Model.make(x.shape[0]).w


class A:
    def f(self, x):
        return x + 1


class B(A):
    def f(self, x):
        return super().f(x) * 2


class C(B):
    def f(self, x):
        return super().f(x) - 3


def super_chain(x):
    return C().f(x)


@dataclasses.dataclass
class TrainState:
    step: int = 0
    hist: list = dataclasses.field(default_factory=list)


def dataclass_mutated(x, st):
    st.step += 1
    st.hist.append(st.step)
    return x * st.step, dataclasses.asdict(st)


class Pair(NamedTuple):
    a: torch.Tensor
    b: int = 1


def namedtuple_ops(x):
    q = Pair(x)._replace(b=3)
    return q[0] * q.b, q._asdict()["b"], len(q), q[-1]


def abc_checks(x, m, s):
    r = x
    if isinstance(m, abc.Mapping):
        r = r + len(m)
    if isinstance(s, abc.Sequence):
        r = r * len(s)
    return r, isinstance(s, abc.MutableSequence), isinstance(x, abc.Sequence)


# -- match, unpacking, recursion, closures ---------------------------------------------------------
def match_shape(x):
    match x.shape:
        case (n,):
            return x * n
        case (b, n) if b == n:
            return x.diagonal()
        case (b, *rest):
            return x.reshape(b, -1).sum(1), len(rest)


def match_config(x, cfg):
    match cfg:
        case {"act": "relu", **rest}:
            return x.relu(), rest
        case {"act": str(name)}:
            return getattr(torch, name)(x), {}
        case _:
            return x, None


def walrus(xs):
    out = [y for v in xs if (y := v.sum()) > -100]
    if (n := len(out)) > 1:
        return out, n, y
    return out, n


def starred(x, *rest, scale=1.0, **kw):
    first, *mid, last = x.unbind(0)
    return (first + last) * scale, len(mid), len(rest), sorted(kw)


def forwarding(x, *args, **kwargs):
    return starred(x, *args, **kwargs)


def recursion(x, n):
    return x if n == 0 else recursion(x * 2, n - 1) + 1


def closures(x, n):
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        return v * count

    ys = [bump(x) for _ in range(n)]
    early = [lambda v, i=i: v + i for i in range(3)]
    late = [lambda v: v + i for i in range(3)]  # noqa: B023 (late binding, the case)
    return ys, count, [f(x) for f in early], [f(x) for f in late]


def formatted_shapes(x):
    b, n = x.shape
    s1 = f"{b:>4d}|{n:04}|{x.shape}|{tuple(x.shape)!r}|{x.dtype}|{x.shape[0] / 3:.2f}"
    s2 = "%d x %d (%s)" % (b, n, x.dtype)  # noqa: UP031 (the case)
    s3 = "{0}-{1:x}-{shape}".format(b, 255, shape=list(x.shape))  # noqa: UP032
    return x * 1, s1, s2, s3


def printed(x):
    print("start", x.shape)
    y = x * 2
    print(y)
    print("mid", f"{y.sum().item():.3f}", sep="|", end="!\n")
    return y


def asserted(x, y):
    assert x.shape == y.shape, f"shape {x.shape} vs {y.shape}"
    return x + y


def warned(x):
    if x.shape[0] > 2:
        warnings.warn(f"big input {x.shape[0]}", UserWarning, stacklevel=1)
    return x + 1


def deleted(x, d):
    del d["a"]
    y = x * 2
    z = y + 1
    del y
    return z, sorted(d)


# name: (fn, the arguments of three equal calls, those of a changed call, (graphs, breaks) after
# the equal calls, (graphs, breaks) after the changed one: graphs in all, its own breaks);
# arguments are made afresh for each call
CASES = {
    "gen_send_close": (gen_send_close, lambda: (t(3),), lambda: (t(4).double(),), (1, 0), (2, 0)),
    "gen_yield_from": (gen_yield_from, lambda: (t(3),), lambda: (t(2, 2),), (1, 0), (2, 0)),
    "genexpr_partly_consumed": (
        genexpr_partly_consumed,
        lambda: (t(3),),
        lambda: (t(2),),
        (1, 0),
        (2, 0),
    ),
    "zip_enumerate": (
        zip_enumerate,
        lambda: ([t(2), t(2), t(2)], [0.5, 1.0]),
        lambda: ([t(3)], [2.0]),
        (1, 0),
        (2, 0),
    ),
    "zip_strict_raises": (
        zip_strict,
        lambda: ([t(2), t(2)], [1.0]),
        lambda: ([t(2)], [3.0]),
        ((0, 1) if COMPREHENSION_FRAMES else (1, 1)),
        ((1, 0) if COMPREHENSION_FRAMES else (2, 0)),
    ),
    "map_filter": (map_filter, lambda: ([t(2), t(1), t(3)],), lambda: ([t(4)],), (1, 0), (2, 0)),
    "itertools_mix": (
        itertools_mix,
        lambda: ([t(2), t(2), t(2)],),
        lambda: ([t(3), t(3)],),
        (1, 0),
        (2, 0),
    ),
    "groupby_shape": (
        groupby_shape,
        lambda: ([t(2), t(3), t(2)],),
        lambda: ([t(1)],),
        (1, 0),
        (2, 0),
    ),
    "rows_of_a_tensor": (
        rows_of_a_tensor,
        lambda: (t(2, 3), t(2, 3)),
        lambda: (t(3, 3), t(3, 3)),
        (1, 0),
        (2, 0),
    ),
    "shape_mismatch_handled": (
        shape_mismatch_handled,
        lambda: (t(3), t(4)),
        lambda: (t(3), t(3)),
        (0, 1),
        (1, 0),
    ),
    "reraised_from": (
        reraised_from,
        lambda: (t(2, 3), t(3, 2)),
        lambda: (t(2, 3), t(2, 3)),
        (1, 0),
        (1, 1),
    ),
    "finally_returns": (finally_returns, lambda: (t(2),), lambda: (t(3),), (1, 1), (2, 1)),
    "with_swallowing": (
        with_swallowing,
        lambda: (t(2), Swallow()),
        lambda: (t(3), Swallow()),
        (1, 0),
        (2, 0),
    ),
    "exit_stack": (
        exit_stack,
        lambda: (t(2), [Record(), Record()]),
        lambda: (t(2), [Record()]),
        (1, 0),
        (2, 0),
    ),
    "generator_context": (
        generator_context,
        lambda: (t(2), []),
        lambda: (t(3), ["x"]),
        (1, 0),
        (2, 0),
    ),
    "bag_dunders": (
        bag_dunders,
        lambda: (t(2), Bag([t(2), t(2)])),
        lambda: (t(2), Bag([t(2)])),
        (1, 0),
        (2, 0),
    ),
    "callable_object": (
        callable_object,
        lambda: (t(2), Scale(2.0)),
        lambda: (t(2), Scale(3.0)),
        (1, 0),
        (2, 0),
    ),
    "property_classmethod_staticmethod": (
        property_classmethod_staticmethod,
        lambda: (t(2), Model(t(2))),
        lambda: (t(3), Model(t(3))),
        (1, 0),
        (2, 0),
    ),
    "super_chain": (super_chain, lambda: (t(2),), lambda: (t(3),), (1, 0), (2, 0)),
    "dataclass_mutated": (
        dataclass_mutated,
        lambda: (t(2), TrainState()),
        lambda: (t(2), TrainState(5, [1])),
        (1, 0),
        (2, 0),
    ),
    "namedtuple_ops": (namedtuple_ops, lambda: (t(2),), lambda: (t(3),), (1, 0), (2, 0)),
    "abc_checks": (
        abc_checks,
        lambda: (t(2), {"a": 1}, (1, 2)),
        lambda: (t(2), [1], [1, 2, 3]),
        (1, 0),
        (2, 0),
    ),
    "match_shape": (match_shape, lambda: (t(3),), lambda: (t(2, 3, 4),), (1, 0), (2, 0)),
    "match_config": (
        match_config,
        lambda: (t(2), {"act": "relu", "p": 1}),
        lambda: (t(2), {"act": "tanh"}),
        (1, 0),
        (2, 0),
    ),
    "walrus": (walrus, lambda: ([t(2), t(3)],), lambda: ([t(2)],), (1, 0), (2, 0)),
    "forwarding": (forwarding, lambda: (t(4, 2), 1, 2), lambda: (t(3, 2),), (1, 0), (2, 0)),
    "recursion": (recursion, lambda: (t(2), 3), lambda: (t(2), 1), (1, 0), (2, 0)),
    "closures": (closures, lambda: (t(2), 3), lambda: (t(2), 1), (1, 0), (2, 0)),
    "formatted_shapes": (formatted_shapes, lambda: (t(2, 3),), lambda: (t(5, 7),), (1, 0), (2, 0)),
    "printed": (printed, lambda: (t(4),), lambda: (t(3),), (2, 3), (5, 3)),
    "asserted": (asserted, lambda: (t(2, 2), t(2, 2)), lambda: (t(2, 2), t(2, 3)), (1, 0), (2, 1)),
    "deleted": (
        deleted,
        lambda: (t(2), {"a": 1, "b": 2}),
        lambda: (t(3), {"a": 1}),
        (1, 0),
        (2, 0),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_snippet_runs_as_eager_does(case):
    fn, first, changed, equal_calls, changed_call = CASES[case]
    graphs, breaks = equal_calls
    compiled, counter, _ = check_breaks(fn, first, graphs=graphs, breaks=breaks, calls=3)
    graphs, breaks = changed_call
    check_breaks(
        fn, changed, graphs=graphs, breaks=breaks, calls=1, compiled=compiled, counter=counter
    )


# -- iterators passed in: their position after the call --------------------------------------------
def take_two(x, it):
    a = next(it)
    for v in it:
        x = x + v
        if v > a:
            break
    return x * a


def enumerate_a_given_iterator(x, it):
    i, v = next(enumerate(it))
    return x + v + i, [x * a for a, _ in zip(it, range(2), strict=False)]


@pytest.mark.parametrize("fn", [take_two, enumerate_a_given_iterator])
def test_an_iterator_passed_in_is_left_where_eager_leaves_it(fn):
    compiled, counter = compile_counted(fn)
    for values in ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [3, 1, 4, 1, 5, 9]):
        eager_it, it = iter(values), iter(values)
        torch.testing.assert_close(compiled(t(2), it)[0], fn(t(2), eager_it)[0])
        assert list(it) == list(eager_it)
    assert counter.frame_count == 2


# -- found by the probe ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Output:
    logits: torch.Tensor
    loss: torch.Tensor | None = None
    n: int = 0


def replaced_then_asdict(x):
    out = dataclasses.replace(Output(x * 2), loss=x.sum(), n=3)
    return dataclasses.asdict(out)["n"], out.loss


class Holder:
    table = {"a": object()}

    def __init__(self, x):
        self.x = x


def class_attribute_through_dunder_class(x):
    found = Holder(x).__class__.table["a"]
    y = torch._dynamo.graph_break() or x + 1
    return found is Holder.table["a"], y


@pytest.mark.parametrize(
    "fn, graphs, breaks",
    [
        (replaced_then_asdict, 1, 2 if COMPREHENSION_FRAMES else 1),
        (class_attribute_through_dunder_class, 1, 1),
    ],
    ids=["dataclasses_replace_then_asdict", "class_attribute_live_at_a_break"],
)
def test_dunder_class_of_an_object_made_in_the_trace_is_its_class_as_traced(fn, graphs, breaks):
    """``obj.__class__`` of an object the trace made is the class it was made from, with the
    source it was reached through: what is read from it (``dataclasses.replace``'s
    ``obj.__class__(**changes)``, then ``fields()`` of the new object) can be rebuilt at a
    break, where it made the whole function run in Python."""
    check_breaks(fn, lambda: (t(3),), graphs=graphs, breaks=breaks, calls=3)


def emitted(call, sizes, action):
    """The warnings ``call`` emits over calls on tensors of ``sizes``, under the filter
    ``action`` ("always": each call's; "default": once per place, as eager's registry keeps)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter(action)
        for n in sizes:
            call(t(n))
    return [(w.category, str(w.message), w.filename, w.lineno) for w in got]


@pytest.mark.parametrize("action", ["always", "default"])
def test_warnings_are_emitted_as_eager_emits_them(action):
    compiled, counter = compile_counted(warned)
    sizes = [3, 3, 3, 1, 4]
    assert emitted(compiled, sizes, action) == emitted(warned, sizes, action)
    assert counter.frame_count == 3


class Config:
    """Attributes kept in a dict of the instance dict, read by ``__getattr__`` through
    ``self.__dict__`` (so that ``__setattr__`` and ``__getattr__`` do not recurse)."""

    def __init__(self, **values):
        self.__dict__["_values"] = dict(values)

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self.__dict__["_values"][name] = value


def config_read(x, cfg):
    return x * cfg.scale + getattr(cfg, "hidden", 4), hasattr(cfg, "dropout")


def config_written(x, cfg):
    cfg.scale = cfg.scale * 2
    cfg.seen = x.shape[0]
    return x * cfg.scale, cfg.__dict__["_values"]["seen"]


@pytest.mark.parametrize("fn", [config_read, config_written])
def test_getattr_reading_the_instance_dict_is_traced(fn):
    """``self.__dict__`` read inside ``__getattr__`` cannot raise AttributeError (the generic
    instance dict): the hook is inlined where it broke at each read."""
    check_breaks(fn, lambda: (t(2), Config(scale=2.0)), graphs=1, breaks=0, calls=3)


def test_getattr_reading_the_instance_dict_sees_changes_between_calls():
    compiled, _ = compile_counted(config_read)
    cfg = Config(scale=2.0)
    changes = [("scale", 3.0), ("hidden", 7), ("dropout", 0.1), ("scale", 3.0)]
    for name, value in changes:
        cfg.__dict__["_values"][name] = value
        got, expected = compiled(t(2), cfg), config_read(t(2), cfg)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1] == expected[1]
    cfg.__dict__["_values"] = {"scale": 9.0}
    got, expected = compiled(t(2), cfg), config_read(t(2), cfg)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1]


STEPS = 0
SEEN: list = []


def count_step():
    global STEPS
    STEPS += 1
    return STEPS


def global_store_in_a_nested_function(x):
    def log(v):
        global SEEN
        SEEN = [*SEEN, v.shape[0]]
        return len(SEEN)

    return x * log(x) + count_step(), STEPS, list(SEEN)


def global_store_in_a_callee_then_a_break(x):
    n = count_step()
    y = torch._dynamo.graph_break() or x * n
    return y + count_step(), STEPS


def global_store_in_a_generator(x):
    def steps(k):
        for _ in range(k):
            yield count_step()

    return [x * s for s in steps(2)], STEPS


def global_store_then_an_exception(x):
    try:
        count_step()
        raise KeyError("stop")
    except KeyError:
        return x + STEPS


def reset_globals():
    global STEPS, SEEN
    STEPS, SEEN = 0, []


@pytest.mark.parametrize(
    "fn, graphs, breaks",
    [
        (global_store_in_a_nested_function, 1, 0),
        (global_store_in_a_callee_then_a_break, 1, 1),
        (global_store_in_a_generator, 1, 0),
        (global_store_then_an_exception, 1, 0),
    ],
    ids=["nested_function", "callee_then_a_break", "generator", "then_an_exception"],
)
def test_a_global_stored_by_an_inlined_function_of_the_module(fn, graphs, breaks):
    """``global`` stores in functions the trace inlines, of the compiled function's module: pending
    stores read back and replayed, as at its top level, where each broke before."""
    check_breaks(
        fn,
        lambda: (t(2),),
        graphs=graphs,
        breaks=breaks,
        calls=3,
        setup=reset_globals,
        observe=lambda: (STEPS, list(SEEN)),
    )
