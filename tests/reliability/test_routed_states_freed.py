"""Compile states reached only through routed code die with the functions they compile.

Code that runs in plain Python (the rest of a function after a break inside a ``try`` block, a
fallback) calls user functions through a router (``codegen/route_calls.py``), whose rewritten
code holds its call sites' objects. Code objects are outside the cyclic collector's reach, so
whatever a code constant holds, and whatever holds that code, is never freed by it. Here
functions are made anew in a loop (closures, lambdas, classes, whole compiled functions), run
through routed code, and dropped: each, what it closed over, and its compile state must die,
and the compile states and graph modules alive must not grow with the number of iterations.
"""

from __future__ import annotations

import functools
import gc
import inspect
import warnings
import weakref

import pytest
import torch
from bytegraph.tracer import driver
from torch import fx

import bytegraph

#: Iterations per loop; the first ``WARM`` fill what is made once per code object.
LOOPS, WARM = 200, 10


@pytest.fixture(autouse=True)
def _no_recorders(monkeypatch):
    """The pytest plugin's per-test recorder keeps what it saw until the test ends: not here."""
    monkeypatch.setattr(driver, "LISTENERS", [])


def _collect() -> None:
    """A full collection, after CPython's own cache of the classes ``inspect.getattr_static``
    looked at (3.12 on: the last 128 method resolution orders) forgets them."""
    cached = getattr(inspect, "_shadowed_dict_from_mro_tuple", None)
    if cached is not None:
        cached.cache_clear()
    gc.collect()


def _live_states() -> tuple[int, int]:
    """(compile states, graph modules) alive after a full collection."""
    _collect()
    objects = gc.get_objects()
    states = sum(1 for obj in objects if type(obj) is driver.CompiledCode)
    graphs = sum(1 for obj in objects if isinstance(obj, fx.GraphModule))
    return states, graphs


def _helper(x):
    return x.sin() + 1


def _made(kind: str, k: int):
    """A callable of ``kind`` made anew, and what it closes over: (callable, tensor, module)."""
    w = torch.full((3,), float(k % 3))
    lin = torch.nn.Linear(3, 3)
    if kind == "closure":

        def inner(x):
            return lin(x) * w

        return inner, w, lin
    if kind == "wrapped":  # a closure with a ``__dict__`` (``__wrapped__``): compiled on its own

        def base(x):
            return lin(x) * w

        @functools.wraps(base)
        def wrapper(x):
            return base(x) - 1

        return wrapper, w, lin
    if kind == "lambda":
        return (lambda x: lin(x) + w), w, lin

    class Block(torch.nn.Module):  # a class made anew
        def __init__(self) -> None:
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return self.lin(x) * w

    return Block(), w, lin


def _calls_in_python(fn, x):
    """Calls ``fn`` from the code after a break inside a ``try`` block: plain Python, routed."""
    try:
        y = x.cos()
        bytegraph.graph_break()
        z = fn(y) + _helper(y)
    except ValueError:
        z = x
    return z


def _churn(step, loops: int) -> tuple[int, int]:
    """Runs ``step(k)`` (which returns weak references to what it made and dropped) ``loops``
    times; asserts each referent died; returns the live (states, graphs) after it."""
    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(loops):
            refs += step(k)
    _collect()
    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"{len(alive)} of {len(refs)} still alive, e.g. {alive[0]!r:.200}"
    return _live_states()


def _no_growth(step) -> None:
    before = _churn(step, WARM)
    after = _churn(step, LOOPS)
    grew = after[0] > before[0] or after[1] > before[1]
    assert not grew, f"(states, graph modules) {before} -> {after} over {LOOPS} loops"


@pytest.mark.parametrize("kind", ["closure", "lambda"])
def test_callables_made_anew_and_called_from_routed_code_are_freed(kind):
    compiled = bytegraph.compile(_calls_in_python, backend="eager")
    x = torch.randn(3)

    def step(k):
        fn, w, lin = _made(kind, k)
        torch.testing.assert_close(compiled(fn, x), _calls_in_python(fn, x))
        return [weakref.ref(fn), weakref.ref(w), weakref.ref(lin)]

    _no_growth(step)


@pytest.mark.parametrize("kind", ["wrapped", "class"])
def test_callables_made_anew_die_with_the_caller_whose_code_routes_them(kind):
    """A function made anew with a ``__dict__`` is compiled on its own, and a module of a class
    made anew is called through the compiled caller of its ``forward``'s code, while the
    caller's compile state lives (at most the recompile limit of them per code; the caller's
    own variants may guard the class, as many): none is kept past the caller, and the live
    states do not grow with the number of callables."""
    x = torch.randn(3)
    limit = bytegraph.config.recompile_limit
    compiled = bytegraph.compile(_calls_in_python, backend="eager")
    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(LOOPS):
            fn, w, lin = _made(kind, k)
            torch.testing.assert_close(compiled(fn, x), _calls_in_python(fn, x))
            refs.append((weakref.ref(fn), weakref.ref(w), weakref.ref(lin)))
            del fn, w, lin
            if k == WARM:
                warm = _live_states()
    _collect()
    assert sum(any(ref() is not None for ref in made) for made in refs) <= limit
    after = _live_states()
    assert after[0] <= warm[0] and after[1] <= warm[1], (warm, after)
    del compiled
    _collect()
    assert all(ref() is None for made in refs for ref in made)


def _make_outer(k: int):
    w = torch.full((3,), float(k % 3))
    lin = torch.nn.Linear(3, 3)

    def inner(x):
        return lin(x) * w

    def outer(x):
        try:
            y = x.cos()
            bytegraph.graph_break()  # the rest runs in Python, its calls routed
            z = inner(y) + _helper(y)
        except ValueError:
            z = x
        return z

    return outer, inner, w, lin


def test_compiled_functions_made_anew_whose_rest_runs_routed_are_freed():
    x = torch.randn(3)

    def step(k):
        outer, inner, w, lin = _make_outer(k)
        compiled = bytegraph.compile(outer, backend="eager")
        for _ in range(2):
            torch.testing.assert_close(compiled(x), outer(x))
        state = bytegraph.state_of(compiled)
        return [weakref.ref(o) for o in (outer, inner, w, lin, compiled, state)]

    _no_growth(step)


def _falls_back(fn, x):
    tags = {1, 2}  # its trace fails here (``broken_build_set``): all of it runs in Python
    return fn(x) * len(tags) + _helper(x)


@pytest.fixture
def broken_build_set(monkeypatch):
    """The BUILD_SET handler raises as a bug would: a function with a set display falls back."""
    from bytegraph.tracer import opcodes

    def broken(tx, inst):
        raise KeyError("bug inside bytegraph")

    monkeypatch.setitem(opcodes.HANDLERS, "BUILD_SET", broken)


def test_functions_made_anew_falling_back_and_their_callees_are_freed(broken_build_set):
    x = torch.randn(3)

    def step(k):
        fn, w, lin = _made("closure", k)

        def falls_back(x):
            return _falls_back(fn, x)

        compiled = bytegraph.compile(falls_back, backend="eager")
        for _ in range(2):
            torch.testing.assert_close(compiled(x), _falls_back(fn, x))
        state = bytegraph.state_of(compiled)
        return [weakref.ref(o) for o in (fn, w, lin, falls_back, compiled, state)]

    _no_growth(step)


def test_compiled_closures_with_breaks_are_freed():
    """The decorator on a closure made anew, whose break makes resume functions: no growth."""
    x = torch.randn(3)

    def step(k):
        w = torch.full((3,), float(k % 3))

        def fn(x):
            y = x * w
            bytegraph.graph_break()
            return y + _helper(x)

        compiled = bytegraph.compile(fn, backend="eager")
        for _ in range(2):
            torch.testing.assert_close(compiled(x), fn(x))
        state = bytegraph.state_of(compiled)
        return [weakref.ref(o) for o in (fn, w, compiled, state)]

    _no_growth(step)
