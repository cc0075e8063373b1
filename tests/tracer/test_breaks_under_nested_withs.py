"""A graph break in a callee called inside nested ``with`` blocks, in the callee and its callers.

The callee resumes in its own code; each caller's resume function continues after its call, and
what a callee's resume code raises is raised at the caller's call, in the caller's own code
(``continuation._raise_in_caller``), whose blocks exit their contexts as eager's do. Each case is
compared with eager over calls that raise and calls that do not: results, the exception, and the
grad, inference and autocast state after every call."""

from __future__ import annotations

import contextlib

import pytest
import torch
from difftest import assert_same, assert_state_same, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph
from bytegraph.explain import Recorder


class _Tag:
    """A user context: ``__enter__``/``__exit__`` of its own, recording what ran."""

    log: list = []

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _Tag.log.append(("enter", self.name))
        return self

    def __exit__(self, *exc):
        _Tag.log.append(("exit", self.name, exc[0]))
        return False


@contextlib.contextmanager
def _generated(name):
    _Tag.log.append(("enter", name))
    try:
        yield
    finally:
        _Tag.log.append(("exit", name))


#: kind -> the contexts entered at each depth (outermost first)
KINDS = {
    "no_grad": lambda i: torch.no_grad() if i % 2 == 0 else torch.enable_grad(),
    "enable_grad": lambda i: torch.enable_grad() if i % 2 == 0 else torch.no_grad(),
    "autocast": lambda i: torch.autocast("cpu", dtype=torch.bfloat16, enabled=i % 2 == 0),
    "inference_mode": lambda i: torch.inference_mode(i % 2 == 1),
    "record_function": lambda i: torch.autograd.profiler.record_function(f"block{i}"),
    "contextmanager": lambda i: _generated(f"gen{i}"),
    "user_class": lambda i: _Tag(f"tag{i}"),
}

#: the kinds a break inside resumes under (others roll the break back to their ``with``)
REENTERABLE = {"no_grad", "enable_grad", "autocast", "inference_mode", "record_function"}


class _StateAtBreak:
    """A file whose writes (a ``print`` that breaks the graph) note the global state then."""

    def write(self, text):
        _Tag.log.append(("break", text, _state()))

    def flush(self):
        pass


_AT_BREAK = _StateAtBreak()


def _state():
    return (
        torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(),
        torch.is_autocast_enabled("cpu"),
        torch.get_autocast_dtype("cpu"),
    )


def _nested(make, depth, body):
    """``body()`` inside ``depth`` nested with blocks of ``make(i)``."""
    if depth == 0:
        return body()
    with make(depth):
        return _nested(make, depth - 1, body)


def _case(kind, depth, where):
    make = KINDS[kind]

    def deepest(x, boom):
        y = x @ x
        print("break", file=_AT_BREAK)  # the break: notes the state it runs under
        if boom:
            raise ValueError(f"boom {_state()}")
        return y + 1, _state()

    def callee(x, boom):
        if where == "callee":
            return deepest(x, boom)
        with make(9):  # the callee's callee breaks, under one more block of the callee's
            got = deepest(x, boom)
        return got[0] * 2, got[1], _state()

    def caller(x, boom):
        with make(0):
            if depth == 1:
                got = callee(x, boom)
            elif depth == 2:
                with make(1):
                    got = callee(x, boom)
            else:
                with make(1), make(2):
                    got = callee(x, boom)
            return got, _state(), (x @ x).dtype

    def fn(x, boom):
        with make(7):
            out = caller(x, boom)
        return out, _state()

    return fn


def _run(run, x, boom):
    _Tag.log.clear()
    try:
        result, error = run(x, boom), None
    except ValueError as e:
        result, error = None, str(e)
    return result, error, _state(), list(_Tag.log)


CASES = [
    (kind, depth, where)
    for kind in KINDS
    for depth in (1, 2, 3)
    for where in ("callee", "callees_callee")
]


@pytest.mark.parametrize("kind,depth,where", CASES)
def test_break_under_nested_withs(kind, depth, where):
    fn = _case(kind, depth, where)
    targets: list[str] = []

    def backend(gm, example_inputs):
        targets.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    compiled, counter = compile_counted(fn)
    counter.backend = backend
    recorder = Recorder()
    for boom in (False, True, False, True, False):
        x = torch.randn(3, 3, requires_grad=True)
        expected = _run(fn, x, boom)
        with recorder:
            got = _run(compiled, x, boom)
        assert got[1:] == expected[1:]
        assert_same(got[0], expected[0])
    assert _state() == (True, False, False, torch.bfloat16)
    report = recorder.report()
    assert not any(b.fell_back for b in report.break_reasons), report
    if kind in REENTERABLE:  # the callee resumes after the break: ``y + 1`` is in a graph
        assert any("add" in t for t in targets), (targets, report)
    frames = counter.frame_count
    for boom in (False, True):
        _run(compiled, torch.randn(3, 3, requires_grad=True), boom)
    assert counter.frame_count == frames  # identical calls compile nothing more


@pytest.mark.parametrize("kind", sorted(REENTERABLE))
def test_break_counts_against_torch_compile(kind):
    fn = _case(kind, 2, "callees_callee")
    recorder = Recorder()
    with recorder:
        bytegraph.compile(fn, backend="eager")(torch.randn(3, 3), False)
    breaks = recorder.report().graph_break_count
    assert_no_more_breaks(breaks, fn, torch.randn(3, 3), False)


def _handled_by_the_caller(handler):
    log = []

    def deepest(x, boom):
        y = x.cos()
        print("break")
        if boom:
            raise ValueError("boom")
        return y.sin()

    def callee(x, boom):
        with torch.no_grad(), torch.enable_grad():
            return deepest(x, boom) * 2

    def fn(x, boom):
        if handler == "except":
            try:
                with torch.no_grad():
                    out = callee(x, boom)
            except ValueError as e:
                log.append((str(e), _state()))
                out = x
            finally:
                log.append(("finally", _state()))
        elif handler == "suppress":
            with torch.no_grad(), contextlib.suppress(ValueError):
                out = x - 1
                out = callee(x, boom)
        else:  # a user context whose ``__exit__`` swallows it, inside a grad-mode block
            with torch.enable_grad(), _Swallow(log), torch.no_grad():
                out = x - 1
                out = callee(x, boom)
        return out * 3, _state(), list(log)

    return fn, log


class _Swallow:
    """A user context whose ``__exit__`` swallows a ``ValueError``, noting the state it sees."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append(("enter", _state()))

    def __exit__(self, kind, exc, tb):
        self.log.append(("exit", kind, _state()))
        return kind is ValueError


@pytest.mark.parametrize("handler", ["except", "suppress", "user_swallows"])
def test_the_callers_handler_sees_what_the_callee_raises(handler):
    """``try``/``except``/``finally`` and a swallowing exit around the call: the exception the
    callee's resume code raises goes through the caller's own handlers, which go on as eager's."""
    fn, log = _handled_by_the_caller(handler)
    compiled, counter = compile_counted(fn)
    for boom in (False, True, True, False):
        x = torch.randn(3, requires_grad=True)
        log.clear()
        expected = fn(x, boom)
        log.clear()
        got = compiled(x, boom)
        assert_same(got, expected)
        assert _state() == (True, False, False, torch.bfloat16)
    frames = counter.frame_count
    compiled(torch.randn(3, requires_grad=True), True)
    assert counter.frame_count == frames


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 (compared with eager's)
        return None, (type(e), str(e))


def _optimizer(kind, foreach):
    make = {
        "asgd": lambda ps: torch.optim.ASGD(ps, lr=0.01, t0=1, foreach=foreach),
        "radam": lambda ps: torch.optim.RAdam(ps, lr=0.01, foreach=foreach),
        "adamax": lambda ps: torch.optim.Adamax(ps, lr=0.01, foreach=foreach),
        "adafactor": lambda ps: torch.optim.Adafactor(ps, lr=0.01, foreach=foreach),
    }[kind]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    return model, make(model.parameters())


OPTIMIZERS = [
    (kind, foreach)
    for kind in ("asgd", "radam", "adamax", "adafactor")
    for foreach in (False, True)
    if kind != "adafactor" or hasattr(torch.optim, "Adafactor")
]


@pytest.mark.parametrize("kind,foreach", OPTIMIZERS, ids=lambda v: str(v))
def test_optimizer_steps_match_eager(kind, foreach):
    """torch.optim's steps break under their profiler block and ``_use_grad``'s grad mode:
    params, grads, state and the grad mode after each of 3 training steps are eager's."""
    worlds = [_optimizer(kind, foreach) for _ in range(2)]

    def train(model, opt):
        def step(x):
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            return loss, torch.is_grad_enabled()

        return step

    eager, compiled = train(*worlds[0]), bytegraph.compile(train(*worlds[1]), backend="eager")
    for i in range(3):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(i))
        expected = _outcome(eager, x)  # (torch 2.11's foreach Adafactor raises: so must we)
        got = _outcome(compiled, x)
        assert got[1] == expected[1]
        assert_same(got[0], expected[0])
        assert_state_same(worlds[1][0], worlds[0][0])
        assert_state_same(worlds[1][1], worlds[0][1])
        assert _state() == (True, False, False, torch.bfloat16)


# -- a break only because side effects wait ------------------------------------------------------


class _Collector:
    """A global set before a ``try``/``finally`` and reset in it (transformers' output capture,
    ``CompileableContextVar``): Python side effects that wait for the graph."""

    def __init__(self):
        self.value, self.compiling = None, False

    def set(self, value):
        self.value, self.compiling = value, True


_COLLECTOR = _Collector()


class _StaticCache:
    """transformers' ``StaticLayer.update``: an in-place add on an input, then ``index_copy_``
    into two buffers too large to copy before each call, in a ``try`` block."""

    def __init__(self, length):
        self.keys = torch.zeros(1, 2, 64, 64)
        self.values = torch.zeros(1, 2, length, 64)
        self.filled = torch.zeros((), dtype=torch.long)

    def update(self, k, v):
        position = torch.arange(k.shape[-2]) + self.filled
        self.filled.add_(k.shape[-2])
        try:
            self.keys.index_copy_(2, position, k)
            self.values.index_copy_(2, position, v)
        except NotImplementedError:
            self.keys[:, :, position] = k
            self.values[:, :, position] = v
        return self.keys, self.values


def _attend(cache, k, v):
    keys, values = cache.update(k, v)
    return keys.sum() + values.sum()


def _forward(cache, k, v):
    _COLLECTOR.set([])
    try:
        out = _attend(cache, k * 2, v)
    finally:
        _COLLECTOR.set(None)
    return out + 1, _COLLECTOR.value, _COLLECTOR.compiling


def test_a_callee_writing_inputs_in_a_try_block_while_effects_wait():
    """``index_copy_`` may raise on its index after ``add_`` and the first ``index_copy_`` wrote
    inputs, while the collector's stores wait: the graph would lose them if it raised there.
    The break is taken at the caller's call in its ``try`` block (the stores happen first, the
    callee compiles on its own with none waiting), not at ``index_copy_``: no break, as
    torch.compile; a call whose index is out of range raises as eager's, the ``finally`` run."""
    compiled = bytegraph.compile(_forward, backend="eager")
    recorder = Recorder()
    for length, start in ((64, 0), (64, 5), (8, 6), (64, 2)):
        k = torch.randn(1, 2, 3, 64, generator=torch.Generator().manual_seed(start))
        v = torch.randn(1, 2, 3, 64, generator=torch.Generator().manual_seed(start + 1))
        outcomes, caches = [], []
        for run in (_forward, compiled):
            cache = _StaticCache(length)
            cache.filled.fill_(start)
            _COLLECTOR.value, _COLLECTOR.compiling = "before", False
            with recorder if run is compiled else contextlib.nullcontext():
                outcomes.append(_outcome(run, cache, k, v))
            outcomes.append((_COLLECTOR.value, _COLLECTOR.compiling))
            caches.append(cache)
        assert outcomes[1] == outcomes[3] == (None, True)
        assert outcomes[0][1] == outcomes[2][1]  # the same exception, or none
        assert_same(outcomes[2][0], outcomes[0][0])
        assert_state_same(caches[1], caches[0])
    breaks = recorder.report().graph_break_count
    assert breaks == 0, recorder.report().break_reasons
    assert_no_more_breaks(breaks, _forward, _StaticCache(64), k, v)
