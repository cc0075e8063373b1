"""Run many random differential programs (``tests/fuzz/programs.py``) with fresh seeds.

    python benchmarks/fuzz.py                          # 50,000 programs from a random start seed
    python benchmarks/fuzz.py -n 20000 -j 2            # 20,000 programs in 2 worker processes
    python benchmarks/fuzz.py -n 2000 --seed 7         # seeds 7..2006 (reproducible)
    python benchmarks/fuzz.py -n 20000 --family new    # the branch and keys families, by turns

``--family`` picks the programs (``programs.FAMILIES``): ``base``, ``branch`` (branches on tensor
data whose outcome changes between calls, run with speculation on), ``keys`` (dict keys, set
items and comparison operands of every kind), ``closures`` (helpers making closures over their
arguments at each call, breaking inside or not), ``python`` (objects made in the call, iterators,
try/with blocks, nonlocal/global writes, ``del``, augmented stores, comprehensions, star-unpacking,
recursion and formatting, each around breaks), ``new`` (branch for even seeds, keys for odd ones)
or ``all`` (``python`` for every fifth seed, ``seed % 5 == 4``; the other four by ``seed % 4``).

Prints the start seed first, progress every ``--every`` programs and at the end: programs run, wrong
results, crashes/internal errors, programs with fallbacks and with graph breaks. Each failure (a
difference from eager, bytegraph raising, an internal-error fallback, a timeout, or the harness
itself failing) is written to ``<out>/seed_<n>.py`` (the full program, message on top) and, with
``--minimize``, also minimised to ``<out>/seed_<n>.min.py``. Turn each into a regression test in
``tests/fuzz/test_regressions.py``. Exit status 1 when anything failed.

Each chunk of seeds runs in a process of its own, forked for it, which sends its summary back
through a pipe. A process that dies before sending it (a segfault or abort in torch, a stack
overflow, a kill) costs no other chunk: its seeds are run again one per process, and the seed
whose process dies again is a crash named by the signal or exit status (the other seeds count as
they run). Timeouts count CPU time, not wall time, so that a machine busy with other work cannot
turn a slow program into a failure.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import multiprocessing.connection
import pathlib
import random
import resource
import signal
import sys
import time
import traceback
import warnings

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "fuzz"))

import programs  # noqa: E402
import torch  # noqa: E402

import bytegraph  # noqa: E402

#: Seconds of CPU time one program may take (eager and compiled, all calls) before it counts as a
#: timeout.
TIMEOUT = 120


class ProgramTimeout(BaseException):
    """Raised by the alarm: not an ``Exception``, so that neither the program's own handlers nor
    bytegraph's (an internal error falls back to Python) take it for theirs."""


def _alarm(signum, frame):
    raise ProgramTimeout


def family_of(seed: int, family: str) -> str:
    if family == "new":
        return ("branch", "keys")[seed % 2]
    if family == "all":
        # Every fifth seed runs the python family; the others keep the family they had when the
        # four older families took turns (seed % 4), so that a seed reported then names the same
        # program now.
        if seed % 5 == 4:
            return "python"
        return programs.FAMILIES[seed % 4]
    return family


def run_chunk(job: tuple[list[int], str, bool, str]) -> programs.Summary:
    """Run the programs of ``seeds`` in this process; failures are written under ``out``."""
    seeds, out, minimize, family = job
    summary = programs.Summary()
    baseline = programs._global_state()
    signal.signal(signal.SIGPROF, _alarm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in seeds:
            program = programs.generate(seed, family_of(seed, family))
            bytegraph.reset()
            signal.setitimer(signal.ITIMER_PROF, TIMEOUT)
            try:
                outcome = programs.run_program(program)
            except ProgramTimeout:
                outcome = programs.Outcome(
                    False, message=f"timeout after {TIMEOUT}s of CPU time", crashed=True
                )
            except Exception:  # noqa: BLE001 (the harness or generator failed: reported as a crash)
                outcome = programs.Outcome(
                    False, message="harness error\n" + traceback.format_exc(), crashed=True
                )
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if (state := programs._global_state()) != baseline:
                outcome = programs.Outcome(
                    False, message=f"global state after the program {state} != {baseline}"
                )
                _restore_global_state()
            summary.add(seed, outcome)
            if outcome.kind != "ok":
                _save(program, outcome, pathlib.Path(out), minimize)
    return summary


def _child(writer: multiprocessing.connection.Connection, job) -> None:
    """Run ``job`` and send its summary. The kernel ends the process (SIGXCPU) once it has taken
    more CPU time than all its programs may: a program stuck in C code never sees its alarm."""
    limit = TIMEOUT * (len(job[0]) + 1)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 10))
    writer.send(run_chunk(job))


def run_jobs(jobs: list, processes: int):
    """Yield the summary of every job, each run in a fresh forked process, ``processes`` at a time.

    A job whose process dies is split into one job per seed, run the same way; a single seed whose
    process dies is a crash."""
    context = multiprocessing.get_context("fork")
    pending, running = collections.deque(jobs), {}
    while pending or running:
        while pending and len(running) < processes:
            job = pending.popleft()
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(writer, job), daemon=True)
            process.start()
            writer.close()
            running[reader] = (process, job)
        for reader in multiprocessing.connection.wait(list(running)):
            process, job = running.pop(reader)
            summary = _receive(reader)
            reader.close()
            process.join()
            if summary is not None:
                yield summary
            elif len(job[0]) > 1:
                print(
                    f"{_death(process)} in seeds {job[0][0]}..{job[0][-1]}: one per process",
                    flush=True,
                )
                pending.extendleft(([seed], *job[1:]) for seed in reversed(job[0]))
            else:
                yield _died(job, _death(process))


def _receive(reader: multiprocessing.connection.Connection) -> programs.Summary | None:
    """The summary the process sent, or None when it closed the pipe by dying first."""
    try:
        return reader.recv()
    except EOFError:
        return None


def _death(process: multiprocessing.Process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        return f"the process died of {signal.Signals(-code).name}"
    return f"the process died (exit status {code})"


def _died(job, message: str) -> programs.Summary:
    """The summary of a single seed whose process died: a crash, saved like any other failure (not
    minimised: that would run the program in this process)."""
    (seed,), out, _, family = job
    program = programs.generate(seed, family_of(seed, family))
    outcome = programs.Outcome(False, message=message, crashed=True)
    summary = programs.Summary()
    summary.add(seed, outcome)
    _save(program, outcome, pathlib.Path(out), small=False)
    return summary


def _restore_global_state() -> None:
    """Undo a leak a failing program left behind, so that later programs are not blamed for it."""
    torch.set_grad_enabled(True)
    torch.set_autocast_enabled("cpu", False)
    torch.set_default_dtype(torch.float32)
    torch.set_default_device(None)


def _save(program: programs.Program, outcome: programs.Outcome, out: pathlib.Path, small: bool):
    out.mkdir(parents=True, exist_ok=True)
    reproduce = (
        f'cd tests/fuzz && python -c "import programs; '
        f"print(programs.run_program(programs.generate({program.seed}, '{program.family}')))\""
    )
    text = f"{outcome.kind}: {outcome.message}\nreproduce: {reproduce}"
    header = "".join(f"# {line}\n" for line in text.splitlines())
    (out / f"seed_{program.seed}.py").write_text(header + program.source)
    if small:
        minimal = programs.minimize(program)
        (out / f"seed_{program.seed}.min.py").write_text(header + minimal.source)
    first = (outcome.message or "internal error fallback").splitlines()[0]
    print(f"seed {program.seed}: {outcome.kind}: {first}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=50_000, help="number of programs")
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--chunk", type=int, default=50, help="seeds per task given to a worker")
    parser.add_argument("--every", type=int, default=1000, help="progress line every N programs")
    parser.add_argument("--minimize", action="store_true", help="also write minimised programs")
    parser.add_argument("--out", default=str(HERE / "fuzz_failures"))
    parser.add_argument(
        "--family", default="base", choices=[*programs.FAMILIES, "new", "all"], help="programs"
    )
    args = parser.parse_args()
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6, 10**9)
    print(
        f"seeds {first}..{first + args.n - 1}, family {args.family} ({args.jobs} processes)",
        flush=True,
    )
    seeds = range(first, first + args.n)
    jobs = [
        (list(seeds[k : k + args.chunk]), args.out, args.minimize, args.family)
        for k in range(0, args.n, args.chunk)
    ]
    start, summary, shown = time.time(), programs.Summary(), 0
    torch.set_num_threads(1)
    for part in run_jobs(jobs, args.jobs):
        summary.merge(part)
        if summary.programs - shown >= args.every:
            shown = summary.programs
            print(f"{summary.line()}, {time.time() - start:.0f}s", flush=True)
    elapsed = time.time() - start
    print(
        f"seeds {first}..{first + args.n - 1}: {summary.line()}, {elapsed:.0f}s "
        f"({elapsed / max(1, summary.programs):.2f}s per program)"
    )
    for seed, message in sorted(summary.failures):
        print(f"  seed {seed}: {message.splitlines()[0]}")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
