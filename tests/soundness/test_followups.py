"""Soundness cases that do not fit the mutate-once table: several successive values (automatic
dynamic), state the compiled function changes itself between calls (``nonlocal``, ``global``), and
torch global state entered as a context manager. Every call is compared with eager."""

from __future__ import annotations

import warnings

import torch
from difftest import assert_same, compile_counted

import bytegraph

N = 2
STEP = 0


def run_same(compiled, fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(compiled(*args), fn(*args))


def traces(compiled) -> int:
    return len(bytegraph.state_of(compiled).events)


def add_n(x):
    return x + N


def test_int_global_third_value_reuses_the_symbolic_entry():
    """Automatic dynamic: the first change recompiles with ``N`` symbolic, later values need
    nothing."""
    global N
    compiled, _ = compile_counted(add_n)
    try:
        for value in (2, 5, 7, 11):
            N = value
            run_same(compiled, add_n, torch.arange(3.0))
    finally:
        N = 2
    assert traces(compiled) == 2
    assert bytegraph.cache_entries(compiled)[1].reason == "entry 0: G['N'] == 2"


def test_int_global_static_recompiles_for_every_value():
    global N
    compiled, _ = compile_counted(add_n, dynamic=False)
    try:
        for value in (2, 5, 7, 5, 2):
            N = value
            run_same(compiled, add_n, torch.arange(3.0))
    finally:
        N = 2
    assert traces(compiled) == 3


def make_counter():
    count = 0

    def fn(x):
        nonlocal count
        count += 1
        return x * count

    return fn


def test_nonlocal_changed_by_the_function_itself():
    """Each call stores a new ``count``: the second trace makes it symbolic, then no more
    recompiles."""
    eager, fn = make_counter(), make_counter()
    compiled, _ = compile_counted(fn)
    for _ in range(4):
        run_same(compiled, eager, torch.arange(3.0))
    assert fn.__closure__[0].cell_contents == eager.__closure__[0].cell_contents == 4
    assert traces(compiled) == 2


def step(x):
    global STEP
    STEP += 1
    return x * STEP


def test_global_changed_by_the_function_itself():
    global STEP
    compiled, _ = compile_counted(step)
    results = []
    for _ in range(4):
        results.append(compiled(torch.arange(3.0)))
    STEP = 0
    for result in results:
        assert_same(result, step(torch.arange(3.0)))
    assert traces(compiled) == 2


def test_nonlocal_changed_by_the_function_itself_static():
    eager, fn = make_counter(), make_counter()
    compiled, _ = compile_counted(fn, dynamic=False)
    for _ in range(3):
        run_same(compiled, eager, torch.arange(3.0))
    assert traces(compiled) == 3


def ones_like_default(x):
    return torch.ones(3) + x.sum()


def test_default_device_context_manager_recompiles():
    """``with torch.device('meta'):`` is a torch function mode, guarded like
    ``set_default_device``."""
    compiled, _ = compile_counted(ones_like_default)
    x = torch.arange(3.0)
    run_same(compiled, ones_like_default, x)
    with torch.device("meta"):
        expected, actual = ones_like_default(x), compiled(x)
    assert actual.is_meta and expected.is_meta and actual.shape == expected.shape
    run_same(compiled, ones_like_default, x)
    assert traces(compiled) == 2
    assert (
        bytegraph.cache_entries(compiled)[1].reason == "entry 0: ___len_torch_function_stack() == 0"
    )
