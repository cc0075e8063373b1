"""Compiled functions shared by threads: 8 threads call them with thread-specific shapes (cache hits
and recompiles) under ``sys.setswitchinterval(1e-6)``, while one thread calls ``bytegraph.reset()``
and one drops objects guarded by identity. Every result is checked; a deadline catches deadlocks.

CI runs the full 8 x 10,000 calls (about 70 s here); ``python tests/reliability/test_threads.py``
runs the same as a script.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
import warnings

import torch

import bytegraph

THREADS, CALLS, FULL_CALLS, DEADLINE_S = 8, 10_000, 10_000, 240.0


def scale(x, k):
    return x * k + 1


def shared(x, n):
    return scale(x, 2).sum() + n


def with_callback(x, g):
    return g(x) * 3


def run_threads(threads: int = THREADS, calls: int = CALLS, deadline_s: float = DEADLINE_S) -> dict:
    """Run the scenario; returns counters. Raises AssertionError on a wrong result, an exception or
    a missed deadline."""
    compiled_shared = bytegraph.compile(shared)
    compiled_cb = bytegraph.compile(with_callback)
    errors: list[BaseException] = []
    stop = threading.Event()
    done = {"calls": 0, "resets": 0, "dropped": 0}

    def worker(tid: int) -> None:
        try:
            for i in range(calls):
                x = torch.full((tid % 4 + 1, 2), float(i % 7))
                n = tid if i % 3 else i % 5  # thread-specific ints, sometimes shared ones
                got = compiled_shared(x, n)
                expected = shared(x, n)
                if not torch.equal(got, expected):
                    raise AssertionError(f"thread {tid} call {i}: {got} != {expected}")
            done["calls"] += calls
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def resetter() -> None:
        try:
            while not stop.is_set():
                bytegraph.reset()
                done["resets"] += 1
                time.sleep(0.005)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def dropper() -> None:
        try:
            i = 0
            while not stop.is_set():
                k = float(i % 3)
                g = (lambda c: lambda t: t + c)(k)  # a new function each time: guarded by identity
                x = torch.ones(2)
                got = compiled_cb(x, g)
                if not torch.equal(got, with_callback(x, g)):
                    raise AssertionError(f"dropper call {i}: wrong result")
                del g
                done["dropped"] += 1
                i += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # the recompile limit may be hit: it warns, runs eagerly
            workers = [
                threading.Thread(target=worker, args=(t,), daemon=True) for t in range(threads)
            ]
            extra = [
                threading.Thread(target=resetter, daemon=True),
                threading.Thread(target=dropper, daemon=True),
            ]
            for t in workers + extra:
                t.start()
            end = time.monotonic() + deadline_s
            for t in workers:
                t.join(max(0.0, end - time.monotonic()))
            stop.set()
            for t in extra:
                t.join(max(1.0, end - time.monotonic()))
    finally:
        sys.setswitchinterval(old)
    alive = [t.name for t in workers + extra if t.is_alive()]
    assert not alive, f"deadlock: threads {alive} still running after {deadline_s}s"
    assert not errors, f"{len(errors)} errors, first: {errors[0]!r}"
    assert done["calls"] == threads * calls
    return done


def test_threads_share_compiled_functions():
    done = run_threads()
    assert done["resets"] > 0 and done["dropped"] > 0


def test_compiles_of_one_function_are_serialised():
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow_backend(gm, example_inputs):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return gm.forward

    compiled = bytegraph.compile(lambda x: x * 2, backend=slow_backend)
    threads = [threading.Thread(target=compiled, args=(torch.ones(k + 1),)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert peak[0] == 1


def test_lookup_does_not_wait_for_another_functions_compile():
    """Cache lookups never wait; compiles of different functions wait for each other, one process-
    wide lock as torch.compile has (``process.COMPILE_LOCK``: torch's lazy imports and fake mode are
    not safe from two threads at once)."""
    started, release = threading.Event(), threading.Event()

    def blocking_backend(gm, example_inputs):
        started.set()
        release.wait(30)
        return gm.forward

    slow = bytegraph.compile(lambda x: x + 1, backend=blocking_backend)
    fast = bytegraph.compile(lambda x: x - 1)
    fast(torch.ones(2))  # warm
    t = threading.Thread(target=slow, args=(torch.ones(2),))
    t.start()
    other = threading.Thread(target=fast, args=(torch.ones(3),))  # a new shape: a compile
    try:
        assert started.wait(30)
        begin = time.monotonic()
        for _ in range(100):
            torch.testing.assert_close(fast(torch.ones(2)), torch.zeros(2))
        assert time.monotonic() - begin < 10
        other.start()
        other.join(0.5)
        assert other.is_alive(), "a compile of another function ran beside the blocked one"
        assert t.is_alive()  # the slow compile is still blocked
    finally:
        release.set()
        t.join(30)
        if other.ident is not None:
            other.join(30)
    assert len(bytegraph.cache_entries(fast)) == 2  # it compiled once the slow one was done


def test_first_compiles_in_threads_of_a_fresh_process():
    """Six threads compile and call their own functions at once, in a process that has not traced
    yet: no internal error (torch's imports, circular, were seen half done by another thread) and
    no crash (on torch 2.11's CUDA build without a GPU: ``process.prepare_process``)."""
    script = textwrap.dedent(
        """
        import threading, warnings, torch, bytegraph
        warnings.simplefilter("error")  # a fallback to Python warns
        # backend "eager": Triton's interpreter (TRITON_INTERPRET=1, set by the triton tests) runs
        # kernels with process-wide state, from one thread at a time only

        def work(k):
            f = bytegraph.compile(lambda x: x * k + 1, backend="eager")
            for n in range(1, 5):
                torch.testing.assert_close(f(torch.ones(n)), torch.ones(n) * k + 1)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        errors = []
        threading.excepthook = lambda hook: errors.append(hook.exc_value)
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        print("ok")
        """
    )
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_symbolic_shapes_half_imported_by_another_thread():
    """Static traces do not import torch's symbolic shapes, so a user's thread may be importing them
    (``torch.testing.assert_close`` does) while a trace asks whether a value holds a symbol: the
    trace waits for that import instead of reading the half-initialised module (an internal error
    seen under load). The other thread's import is held half done here on purpose."""
    script = textwrap.dedent(
        """
        import importlib.abc, sys, threading, time
        import torch
        from bytegraph.tracer.fakes import shapes

        NAME = "torch.fx.experimental.symbolic_shapes"
        started = threading.Event()

        class Slow(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name != NAME:
                    return None
                sys.meta_path.remove(self)
                spec = importlib.util.find_spec(name)
                real = spec.loader

                class Loader(importlib.abc.Loader):
                    def create_module(self, spec):
                        return real.create_module(spec)

                    def exec_module(self, module):  # in sys.modules already, not yet run
                        started.set()
                        time.sleep(1.0)
                        real.exec_module(module)

                spec.loader = Loader()
                return spec

        sys.meta_path.insert(0, Slow())
        other = threading.Thread(target=importlib.import_module, args=(NAME,))
        other.start()
        started.wait(30)
        assert NAME in sys.modules
        assert shapes.is_data_dependent_guard(ValueError()) is False
        assert shapes.unbacked_symbols(torch.ones(2)) == set()
        other.join(30)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


if __name__ == "__main__":
    start = time.time()
    print(run_threads(THREADS, FULL_CALLS, deadline_s=1800.0), f"{time.time() - start:.1f}s")
