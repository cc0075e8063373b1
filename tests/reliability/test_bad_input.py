"""Unusual things handed to ``bytegraph.compile``: each gets a correct result (compiled or a clean
fallback) or a clear error naming what is unsupported, never a crash or a hang."""

from __future__ import annotations

import asyncio
import dis
import functools
import sys
import warnings

import pytest
import torch
from bytegraph.tracer import translator
from bytegraph.tracer.exc import BytegraphError

import bytegraph
from bytegraph.explain import Recorder

pytestmark = pytest.mark.heavy  # minutes of work: run first (tests/conftest.py)


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


async def async_fn(x):
    return x + 1


async def async_gen(x):
    yield x + 1
    yield x * 3


def gen(x):
    yield x + 1
    yield x * 3


class Thing:
    def __call__(self, x):
        return x + 2

    @staticmethod
    def static(x):
        return x * 3

    @classmethod
    def klass(cls, x):
        return x * 4

    @property
    def prop(self):
        return 1


def test_async_function_returns_a_working_coroutine():
    compiled = _quiet(bytegraph.compile, async_fn)
    torch.testing.assert_close(asyncio.run(compiled(torch.ones(2))), torch.full((2,), 2.0))


def test_async_generator_and_generator_run_like_eager():
    async def consume(agen):
        return [v async for v in agen]

    x = torch.ones(2)
    compiled_agen = _quiet(bytegraph.compile, async_gen)
    torch.testing.assert_close(
        asyncio.run(consume(compiled_agen(x))), asyncio.run(consume(async_gen(x)))
    )
    compiled_gen = _quiet(bytegraph.compile, gen)
    torch.testing.assert_close(list(compiled_gen(x)), list(gen(x)))


def test_coroutine_function_under_fullgraph_is_a_clear_error():
    with pytest.raises(BytegraphError, match="coroutine"):
        bytegraph.compile(async_fn, fullgraph=True)


@pytest.mark.parametrize(
    "obj",
    [len, torch.relu, Thing, Thing.__dict__["static"], Thing.prop],
    ids=["builtin", "c_function", "class", "staticmethod_object", "property"],
)
def test_non_function_is_a_clear_type_error(obj):
    with pytest.raises(TypeError, match="expects a Python function"):
        bytegraph.compile(obj)


def test_coroutine_object_is_a_clear_type_error():
    coro = async_fn(torch.ones(1))
    with pytest.raises(TypeError, match="coroutine"):
        bytegraph.compile(coro)
    coro.close()


def test_partial_callable_instance_static_and_class_methods():
    x = torch.ones(2)
    cases = [
        (functools.partial(lambda a, x: x * a, 2), x * 2),
        (Thing(), x + 2),
        (Thing.static, x * 3),
        (Thing.klass, x * 4),
    ]
    for fn, expected in cases:
        compiled = bytegraph.compile(fn)
        for _ in range(2):
            torch.testing.assert_close(compiled(x), expected)


def test_double_decoration_is_the_same_function():
    compiled = bytegraph.compile(lambda x: x - 1)
    assert bytegraph.compile(compiled) is compiled


def recurse(n, x):
    return x if n == 0 else recurse(n - 1, x + 1)


@pytest.mark.parametrize("depth", [50, 2_000])
def test_recursion(depth, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "recurse", bytegraph.compile(recurse))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * depth))
    try:
        result = _quiet(recurse, depth, torch.zeros(1))
    finally:
        sys.setrecursionlimit(old)
    torch.testing.assert_close(result, torch.full((1,), float(depth)))


def _make(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


def test_300_arguments():
    fn = _make(
        "def many(" + ", ".join(f"a{i}" for i in range(300)) + "):\n    return a0 * 2 + a299\n",
        "many",
    )
    args = [torch.full((1,), float(i)) for i in range(300)]
    compiled = bytegraph.compile(fn)
    torch.testing.assert_close(compiled(*args), fn(*args))


def _huge_function():
    body = "".join(f"    x = x + {i % 7}\n" for i in range(20_000))
    return _make(f"def big(x):\n{body}    return x\n", "big")


def _traces_and_fallbacks(compiled, x):
    recorder = Recorder()
    with recorder:
        result = _quiet(compiled, x)
    fell_back = [r.kind for r in recorder.report().break_reasons if r.fell_back]
    return result, len(recorder.records), fell_back


@pytest.mark.parametrize("bails_out", [False, True], ids=["compiles", "bails_out"])
def test_huge_function_compiles_or_bails_out_with_bounded_work(bails_out, monkeypatch):
    # The work is bounded, not timed: the straight-line trace steps each instruction once (the
    # instruction limit is set to the function's length), or stops at the limit and the call runs
    # in Python; either way the next call does not trace again.
    fn = _huge_function()
    length = len(list(dis.get_instructions(fn)))
    monkeypatch.setattr(translator, "MAX_TRACE_INSTRUCTIONS", 1000 if bails_out else length)
    compiled = bytegraph.compile(fn)
    result, traces, fell_back = _traces_and_fallbacks(compiled, torch.ones(1))
    torch.testing.assert_close(result, fn(torch.ones(1)))
    assert traces == 1
    assert fell_back == (["too_large"] if bails_out else [])
    result, traces, fell_back = _traces_and_fallbacks(compiled, torch.ones(1))
    torch.testing.assert_close(result, fn(torch.ones(1)))
    assert traces == 0 and fell_back == []


def test_settrace_active():
    lines = []

    def tracer(frame, event, arg):
        lines.append(event)
        return tracer

    compiled = bytegraph.compile(lambda x: torch.relu(x) * 2)
    x = torch.randn(4)
    sys.settrace(tracer)
    try:
        result = compiled(x)
    finally:
        sys.settrace(None)
    torch.testing.assert_close(result, torch.relu(x) * 2)
    assert lines


def test_code_replaced_after_decoration():
    def fn(x):
        return x + 1

    def other(x):
        return x * 10

    compiled = bytegraph.compile(fn)
    x = torch.ones(2)
    torch.testing.assert_close(compiled(x), x + 1)
    fn.__code__ = other.__code__
    torch.testing.assert_close(_quiet(compiled, x), fn(x))
