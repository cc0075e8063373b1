"""``benchmarks/fuzz.py``'s runner: a chunk whose process dies or hangs costs no other chunk, and
the seed that killed it is named as a crash."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import signal
import time

from fuzz import programs

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"
_spec = importlib.util.spec_from_file_location("fuzz_runner", SCRIPT)
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)


def _chunk_that_kills_on(deadly: int, how):
    """A stand-in for ``run_chunk``: every seed is ok but ``deadly``, on which ``how()`` runs."""

    def run_chunk(job):
        summary = programs.Summary()
        for seed in job[0]:
            if seed == deadly:
                how()
            summary.add(seed, programs.Outcome(True))
        return summary

    return run_chunk


def _run(monkeypatch, tmp_path, deadly, how):
    monkeypatch.setattr(runner, "run_chunk", _chunk_that_kills_on(deadly, how))
    jobs = [([1, 2, 3, 4], str(tmp_path), False, "base"), ([5, 6], str(tmp_path), False, "base")]
    total = programs.Summary()
    for part in runner.run_jobs(jobs, processes=2):
        total.merge(part)
    return total


def test_a_dying_process_names_its_seed_and_the_run_goes_on(monkeypatch, tmp_path):
    total = _run(monkeypatch, tmp_path, 3, lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert (total.programs, total.wrong, total.crashes) == (6, 0, 1)
    assert total.failures == [(3, "the process died of SIGKILL")]
    assert (tmp_path / "seed_3.py").read_text().startswith("# crash: the process died of SIGKILL")


def _spin():
    while True:
        pass


def test_a_process_computing_past_all_its_timeouts_is_ended(monkeypatch, tmp_path):
    """A program stuck in C code never sees its alarm: the kernel's CPU limit ends its process."""
    monkeypatch.setattr(runner, "TIMEOUT", 1)
    total = _run(monkeypatch, tmp_path, 5, _spin)
    assert (total.programs, total.crashes) == (6, 1)
    assert total.failures == [(5, "the process died of SIGXCPU")]


def test_a_program_past_its_cpu_time_is_a_timeout_and_its_process_lives_on(monkeypatch, tmp_path):
    """The alarm's signal would end the process by default: the runner catches it itself. It counts
    CPU time: a program that waits (here, sleeps) is no timeout, however busy the machine."""
    monkeypatch.setattr(runner, "TIMEOUT", 1)
    runs = iter([_spin, lambda: time.sleep(2) or programs.Outcome(True)])
    monkeypatch.setattr(runner.programs, "run_program", lambda program: next(runs)())
    total = programs.Summary()
    for part in runner.run_jobs([([1, 2], str(tmp_path), False, "base")], processes=1):
        total.merge(part)
    assert total.failures == [(1, "timeout after 1s of CPU time")]
    assert (total.programs, total.crashes) == (2, 1)
