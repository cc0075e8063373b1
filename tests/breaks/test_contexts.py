"""Context managers across graph breaks, exceptions and fallbacks: the code between graphs, resume
functions and the caller see exactly eager's torch global state; graphs leave the state as they
found it; identical calls hit the cache (the contexts a resume function receives are guarded by
key)."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from bytegraph.backends.debug import CompileCounter
from corpus.harness import global_state
from difftest import assert_same, check_breaks, compile_counted

import bytegraph


def square():
    return (torch.randn(4, 4),)


def leaf():
    return (torch.randn(4, requires_grad=True),)


def run_both(fn, *args, backend=None, calls=3):
    """Compare results and global state after each call eager vs compiled; return the counter."""
    counter = CompileCounter(backend)
    compiled = bytegraph.compile(fn, backend=counter)
    for _ in range(calls):
        for_eager = [
            a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
            for a in args
        ]
        expected, expected_state = _outcome(fn, for_eager)
        actual, actual_state = _outcome(compiled, list(args))
        assert actual_state == expected_state
        if isinstance(expected, BaseException):
            assert type(actual) is type(expected) and str(actual) == str(expected)
        else:
            assert_same(actual, expected)
    return counter, compiled


def _outcome(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a fallback to Python warns
        try:
            result = fn(*args)
        except (IndexError, ValueError, RuntimeError) as e:
            result = e
    return result, global_state()


def test_break_inside_autocast_sees_autocast_and_hits_cache():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            print(torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
            z = y @ x
        return z, z.float() @ x

    # printed output is compared too; 2 graphs over 3 calls: the resume function hits its cache
    check_breaks(fn, square, graphs=2, breaks=1, calls=3)


def test_each_graph_leaves_the_state_it_found():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
            y = x @ x
            print("break")
            z = y @ x
        return z

    counter, _ = run_both(fn, torch.randn(4, 4, requires_grad=True), calls=1)
    first = [n.target.__name__ for n in counter.graphs[0].graph.nodes if n.op == "call_function"]
    assert first[:2] == ["enter_autocast", "_set_grad_enabled"]
    assert first[-2:] == ["exit_autocast", "_set_grad_enabled"]  # open contexts left at the end


def test_resume_guards_the_contexts_it_receives_by_key():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            print("break")
            y = y @ y  # tensor work in the resume function: it is compiled, with guards
        return y

    compiled, _ = compile_counted(fn)
    report = bytegraph.explain(fn)(torch.randn(4, 4))
    compiled(torch.randn(4, 4))
    guards = "\n".join(str(report).splitlines())
    # the context's key (a tuple) compared as the trace read it (``EQUALS_MATCH`` of a tuple:
    # ``_same_key``), not the object's identity
    assert "___same_key(L['__stack0'].key, " in guards and "L['__stack0'] is" not in guards


def test_exception_raised_by_breaking_call_inside_autocast():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            y.numpy() + "x"  # breaks, then raises TypeError in Python
        return y

    compiled, _ = compile_counted(fn)
    for f in (fn, compiled):
        with pytest.raises(TypeError):
            f(torch.randn(4, 4))
        assert not torch.is_autocast_enabled("cpu")


def test_exception_inside_a_graph_restores_the_state():
    def fn(x, i):
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.inference_mode():
            y = x @ x
            z = y[i]  # out of range: raises inside the graph
        return z

    run_both(fn, torch.randn(4, 4), torch.tensor([1]), calls=1)
    run_both(fn, torch.randn(4, 4), torch.tensor([7]))


def test_exception_inside_a_resume_graph_leaves_the_contexts_it_received():
    def fn(x, i):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
        with torch.autocast("cpu", dtype=torch.bfloat16):
            print("break")
            z = y[i]  # raises in the resume function's graph
        return z

    run_both(fn, torch.randn(4, 4), torch.tensor([1]), calls=1)
    run_both(fn, torch.randn(4, 4), torch.tensor([9]))


def test_exception_in_block_caught_outside():
    def fn(x):
        try:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                y = x @ x
                raise ValueError("inside")
        except ValueError:
            y = x + 1
        return y, torch.is_grad_enabled()

    run_both(fn, torch.randn(4, 4, requires_grad=True))


def test_fallback_after_entering_a_context_restores_the_state():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x

            # a closure made in the trace that refers to itself, live at the break: the rewritten
            # code cannot make it again (a fallback)
            def f(n=1):
                return y if n == 0 else f(n - 1)

            print(f is not None)
            y = y + 0
        return y, f() @ f()

    compiled, _ = compile_counted(fn)
    torch.manual_seed(0)  # each run draws its input from the same RNG state: compared after
    with pytest.warns(UserWarning, match="running .* in Python"):
        out = compiled(torch.randn(4, 4))
    assert out[0].dtype == out[1].dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    after_compiled = global_state()
    torch.manual_seed(0)
    assert after_compiled == _outcome(fn, [torch.randn(4, 4)])[1]


def test_break_inside_inference_mode_then_grad_outside():
    def fn(x):
        with torch.inference_mode():
            y = x * 2
            print("inference", torch.is_inference_mode_enabled(), torch.is_grad_enabled())
            z = y + 1
        return z, x * 3, torch.is_grad_enabled()

    counter, _ = run_both(fn, torch.randn(4, requires_grad=True))
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_break_inside_no_grad_with_aot_backends(backend):
    from bytegraph.backends.registry import lookup_backend

    def fn(x):
        with torch.no_grad():
            y = x * 2
            print("no grad", torch.is_grad_enabled())
            z = y + x  # no grad
        return z, z * x  # grad again: the resume graph must record it

    run_both(fn, torch.randn(4, requires_grad=True), backend=lookup_backend(backend), calls=2)


def test_direct_state_change_inside_a_block_split_by_a_break():
    def fn(x):
        with torch.no_grad():
            torch.set_grad_enabled(True)  # inside the block: its exit restores the outer mode
            print("grad", torch.is_grad_enabled())
            y = x * 2
        return y, torch.is_grad_enabled()

    # the resume function cannot leave and enter no_grad again (grad is on inside): runs in Python
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = bytegraph.compile(fn, backend="eager")
        for _ in range(2):
            x = torch.randn(3, requires_grad=True)
            assert_same(compiled(x), fn(x))
            assert torch.is_grad_enabled()


def test_set_grad_enabled_call_persists_after_the_call():
    def fn(x):
        y = x * 2
        torch.set_grad_enabled(False)
        return y, x * 3

    compiled, _ = compile_counted(fn)
    try:
        x = torch.randn(3, requires_grad=True)
        expected = fn(x)
        assert not torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        assert_same(compiled(x), expected)
        assert not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)


def test_break_in_generator_context_is_taken_at_its_with():
    log = []

    @contextlib.contextmanager
    def scope(tag):
        log.append(f"enter {tag}")
        try:
            yield tag
        finally:
            log.append(f"exit {tag}")

    def fn(x):
        del log[:]
        y = x + 1
        with scope("a") as tag:
            print(tag)
            y = y * 2
        return y

    check_breaks(
        fn, lambda: (torch.randn(3),), graphs=1, breaks=1, calls=3, observe=lambda: list(log)
    )


def test_user_context_object_keeps_its_real_exit_across_a_break():
    class Counter:
        def __init__(self):
            self.open = 0

        def __enter__(self):
            self.open += 1
            return self

        def __exit__(self, *exc):
            self.open -= 1
            return False

    counter = Counter()

    def fn(x):
        with counter:
            y = x + counter.open
            print("open", counter.open)
            y = y * 2
        return y

    # ``Counter.open`` is a number the call advances, symbolic from the first trace (9587a86):
    # ``__exit__`` (on 3.13 called as a frame of its own after the break) records number
    # arithmetic only, which Python computes: no graph, the frame left to Python
    check_breaks(
        fn, lambda: (torch.randn(3),), graphs=1, breaks=1, calls=3, observe=lambda: counter.open
    )


def test_torch_function_mode_block_runs_in_python():
    from torch.overrides import TorchFunctionMode

    class Double(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out * 2 if func is torch.add else out

    mode = Double()

    def fn(x):
        with mode:
            y = torch.add(x, 1)
        return y

    check_breaks(fn, lambda: (torch.randn(3),), graphs=0, breaks=1, calls=2)


def test_device_context_left_open_at_a_break():
    def fn(x):
        with torch.device("meta"):
            a = torch.ones(2)
            print("default", torch.get_default_device())
            b = torch.zeros(2)
        return x + 1, a.device, b.device, torch.ones(1).device

    run_both(fn, torch.randn(2))


def test_set_grad_enabled_decorator_switches_on_each_call():
    prev = torch.is_grad_enabled()
    try:

        @torch.set_grad_enabled(False)  # switches grad off here already (torch's semantics)
        def inner(x):
            return x * 2

        torch.set_grad_enabled(True)

        def fn(x):
            return inner(x), x + 1, torch.is_grad_enabled()

        run_both(fn, torch.randn(3, requires_grad=True))
    finally:
        torch.set_grad_enabled(prev)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_run_time_state_nodes_run_with_aot_backends(backend):
    from bytegraph.backends.registry import lookup_backend

    def fn(x):
        torch.set_default_dtype(torch.float64)
        y = torch.ones(4) + x.long() * 1.5  # float64 from the default dtype
        torch.set_default_dtype(torch.float32)
        with torch.random.fork_rng():
            z = torch.rand(4)
        return y, z, torch.rand(4)

    def seeded(f):
        def run(x):
            torch.manual_seed(0)
            return f(x)

        return run

    expected = seeded(fn)(torch.ones(4))
    compiled = bytegraph.compile(fn, backend=lookup_backend(backend))
    assert_same(seeded(compiled)(torch.ones(4)), expected)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_cuda_autocast_with_a_break_inside(dtype, backend):
    from bytegraph.backends.registry import lookup_backend

    def fn(x, w):
        with torch.autocast("cuda", dtype=dtype):
            y = torch.nn.functional.linear(x, w)
            print("autocast", torch.get_autocast_dtype("cuda"))
            z = y @ w
        return y, z, z.float().sum()

    args = (torch.randn(8, 8, device="cuda"), torch.randn(8, 8, device="cuda"))
    expected = fn(*args)
    compiled = bytegraph.compile(fn, backend=lookup_backend(backend))
    for _ in range(2):
        actual = compiled(*args)
        for a, e in zip(actual, expected, strict=True):
            assert a.dtype == e.dtype
            torch.testing.assert_close(a, e, atol=1e-2, rtol=1e-2)
        assert not torch.is_autocast_enabled("cuda")


def test_data_dependent_branch_inside_autocast():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            if y.sum() > 0:  # decided in Python, inside the block
                z = y @ x
            else:
                z = y @ y
        return z, z.float() + 1

    run_both(fn, torch.randn(4, 4))
    run_both(fn, -torch.ones(4, 4))


def test_set_grad_enabled_block_left_open_at_a_break():
    def fn(x, mode):
        with torch.set_grad_enabled(mode):
            y = x * 2
            print("grad", torch.is_grad_enabled())
            z = y * x
        return z, x * 3

    run_both(fn, torch.randn(3, requires_grad=True), False)
    run_both(fn, torch.randn(3, requires_grad=True), True)


def test_generator_context_yielding_a_tensor():
    @contextlib.contextmanager
    def doubled(t):
        with torch.no_grad():
            yield t * 2

    def fn(x):
        with doubled(x) as d:
            y = d + x
        return y, d

    run_both(fn, torch.randn(3, requires_grad=True))


def test_generator_context_failing_before_its_yield():
    @contextlib.contextmanager
    def checked(t):
        if t.sum() > 100:  # data-dependent: decided in Python
            raise ValueError("too big")
        yield t

    def fn(x):
        with checked(x) as t:
            y = t + 1
        return y

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(compiled(torch.ones(3)), fn(torch.ones(3)))
        with pytest.raises(ValueError, match="too big"):
            compiled(torch.full((3,), 50.0))
    assert torch.is_grad_enabled()


class _Synced(torch.nn.Module):
    """A ``@contextmanager`` method (torchmetrics' ``Metric.sync_context``): the generator
    function gets the object as ``self``, and changes its attributes around the block."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.entered = []

    @contextlib.contextmanager
    def synced(self, scale: float, *, tag: str = "t"):
        self.depth += 1
        self.entered.append(tag)
        try:
            yield scale * 2
        finally:
            self.depth -= 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with self.synced(3.0, tag="fwd") as k:
            y = x * k + self.depth
        return y + self.depth


def _plain_object_context(s, x):
    with s.ctx(x) as d:
        y = d + s.n
    return y, s.n


class _PlainSynced:
    def __init__(self) -> None:
        self.n = 0

    @contextlib.contextmanager
    def ctx(self, t):
        self.n += 1
        yield t * 2
        self.n += 10


@pytest.mark.parametrize("make", [_Synced, _PlainSynced], ids=["module", "object"])
def test_a_contextmanager_method(make):
    from dynamo_baseline import assert_no_more_breaks

    def call(obj, x):
        return obj(x) if isinstance(obj, torch.nn.Module) else _plain_object_context(obj, x)

    check_breaks(call, lambda: (make(), torch.randn(3)), graphs=1, breaks=0, calls=3)
    assert_no_more_breaks(0, call, make(), torch.randn(3))


def _made_then_entered_after_a_break(s, x):
    cm = s.ctx(x)
    bytegraph.graph_break()
    with cm as d:
        y = d + s.n
    return y, s.n


def test_a_contextmanager_method_made_before_a_break():
    """The context made before the break is made again for the resume function, bound to its
    object (its generator function runs once, at the ``with``, as in eager); entering a real
    ``_GeneratorContextManager`` there breaks."""
    check_breaks(
        _made_then_entered_after_a_break,
        lambda: (_PlainSynced(), torch.randn(3)),
        graphs=0,
        breaks=2,
        calls=2,
    )
