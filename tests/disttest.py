"""Multi-process tests on CPU: run checks on every rank of a gloo world, bounded in time.

``run_ranks(fn, world_size, *args, timeout=...)`` runs ``fn(rank, world_size, *args)`` in
``world_size`` processes that joined one gloo process group and returns their results in rank
order. A rank that raises fails the test with its traceback. Ranks still running after ``timeout``
seconds are killed and the test fails naming them ("rank 1 did not finish ... hung?"): CI never
hangs. Collectives themselves time out sooner (``collective_timeout``), so a mismatched collective
shows as an error rather than as a hung rank.

``run_checks(module_file, names, world_size)`` shares one world between several checks (the
distributed folder has a tight time budget): each ``check_<name>(rank, world_size)`` of that file
runs in turn on every rank; it returns ``{name: [result of rank 0, result of rank 1, ...]}``, where
a result is what the check returned or a ``CheckError`` carrying the rank's traceback.

Processes are forked from a ``forkserver`` that imports torch and bytegraph once per test session,
so a world costs forks, not imports. Functions run in the child are loaded from their file by path
(test modules are not importable by name), so they must be module-level functions. Results must
pickle without tensors (return lists or floats).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import queue as queue_module
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

import bytegraph

_CTX = multiprocessing.get_context("forkserver")
#: Imported once in the fork server, so that ranks start warm (a first compile would otherwise
#: import AOTAutograd and dynamo's utilities in every rank: seconds each on a busy CI machine).
_PRELOAD = [
    "torch",
    "torch.distributed",
    "torch.distributed._functional_collectives",
    "torch.distributed.fsdp",
    "torch.nn.parallel",
    "torch._dynamo",
    "torch._functorch.aot_autograd",
    "bytegraph",
    "bytegraph.backends.eager",
    "bytegraph.backends.aot",
    "bytegraph.backends.auto",
    "bytegraph.backends.inductor",
    "difftest",
    "disttest",
]
_CTX.set_forkserver_preload(_PRELOAD)


@dataclass
class CheckError:
    """A check that raised on one rank: its traceback."""

    rank: int
    text: str

    def __str__(self) -> str:
        return f"rank {self.rank} raised:\n{self.text}"


def run_ranks(
    fn: Any, world_size: int, *args: Any, timeout: float = 60.0, collective_timeout: float = 20.0
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on each rank of a fresh gloo world (see module doc)."""
    path, name = fn.__code__.co_filename, fn.__name__
    return _spawn(_run_function, world_size, (path, name, args), timeout, collective_timeout)


def run_checks(
    module_file: str,
    names: list[str],
    world_size: int,
    timeout: float = 60.0,
    collective_timeout: float = 20.0,
) -> dict[str, list[Any]]:
    """Run ``check_<name>`` of ``module_file`` for each name on each rank of one world."""
    per_rank = _spawn(_run_checks, world_size, (module_file, names), timeout, collective_timeout)
    return {name: [results[name] for results in per_rank] for name in names}


def expect_ok(results: list[Any]) -> list[Any]:
    """The per-rank results of one check; fails the test with the tracebacks of failed ranks."""
    errors = [r for r in results if isinstance(r, CheckError)]
    if errors:
        raise AssertionError("\n".join(str(e) for e in errors))
    return results


def _spawn(
    target: Any, world_size: int, payload: tuple, timeout: float, collective_timeout: float
) -> list[Any]:
    with tempfile.TemporaryDirectory(prefix="bytegraph-dist-") as tmp:
        results: Any = _CTX.Queue()
        procs = [
            _CTX.Process(
                target=_child,
                args=(target, rank, world_size, tmp, collective_timeout, results, payload),
                daemon=True,
            )
            for rank in range(world_size)
        ]
        for p in procs:
            p.start()
        outcomes: dict[int, tuple[bool, Any]] = {}
        deadline = time.monotonic() + timeout
        try:
            while len(outcomes) < world_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    rank, ok, value = results.get(timeout=min(left, 1.0))
                except queue_module.Empty:
                    if all(not p.is_alive() for p in procs) and results.empty():
                        break  # every process exited without a result (killed, crashed)
                    continue
                outcomes[rank] = (ok, value)
        finally:
            for p in procs:
                p.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            for p in procs:
                if p.is_alive():
                    p.kill()
                    p.join()
        missing = [r for r in range(world_size) if r not in outcomes]
        if missing:
            codes = {r: procs[r].exitcode for r in missing}
            what = (
                f"did not finish within {timeout:.0f} s (hung? killed)"
                if time.monotonic() >= deadline
                else "exited without a result (crashed?)"
            )
            raise AssertionError(
                f"rank(s) {missing} of a {world_size}-rank world {what}; exit codes {codes}; "
                f"finished: {sorted(outcomes)}"
            )
        failures = [f"rank {r} raised:\n{v}" for r, (ok, v) in sorted(outcomes.items()) if not ok]
        if failures:
            raise AssertionError("\n".join(failures))
        return [outcomes[r][1] for r in range(world_size)]


def _child(
    target: Any,
    rank: int,
    world_size: int,
    tmp: str,
    collective_timeout: float,
    results: Any,
    payload: tuple,
) -> None:
    try:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        store = dist.FileStore(os.path.join(tmp, "store"), world_size)
        dist.init_process_group(
            "gloo",
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=collective_timeout),
        )
        dist.barrier()  # every rank's connections are up before any rank goes on
        bytegraph.config.default_backend = "eager"
        torch.manual_seed(0)
        results.put((rank, True, target(rank, world_size, payload)))
    except BaseException:
        results.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            _leave_together(rank, world_size)
            dist.destroy_process_group()
        sys.stdout.flush()


def _leave_together(rank: int, world_size: int) -> None:
    """Wait (briefly, through the store) for the other ranks to finish before tearing down the
    process group: a rank closing its connections early fails the others' pending operations."""
    store = dist.distributed_c10d._get_default_store()
    store.set(f"disttest/exit/{rank}", "1")
    try:
        store.wait([f"disttest/exit/{r}" for r in range(world_size)], timedelta(seconds=10))
    except Exception:  # noqa: BLE001 (a rank died or hung: the parent reports it)
        pass


def _run_function(rank: int, world_size: int, payload: tuple) -> Any:
    path, name, args = payload
    return getattr(_load(path), name)(rank, world_size, *args)


def _run_checks(rank: int, world_size: int, payload: tuple) -> dict[str, Any]:
    path, names = payload
    module = _load(path)
    out: dict[str, Any] = {}
    for name in names:
        bytegraph.reset()
        torch.manual_seed(0)
        try:
            out[name] = getattr(module, f"check_{name}")(rank, world_size)
        except BaseException:
            out[name] = CheckError(rank, traceback.format_exc())
    return out


def _load(path: str) -> Any:
    name = "_disttest_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
