"""The transformers model suite side by side: every architecture of ``tests/models/zoo.py`` (tiny
configs, random weights, CPU), with and without ``labels``, inference then training steps, through
bytegraph and through ``torch.compile`` (both with backend ``eager``, or ``--backend inductor``),
each compared with eager.

    python benchmarks/models.py [-k NAMES] [--family F] [--no-tc] [--time N] [--latest]
                                [--backend eager|inductor] [--defaults]

Per architecture and variant: correct or not, graphs/breaks on the first inference and the first
training call, recompiles after those (same inputs: should be 0), first-call seconds and the
steady-state inference speedup over eager (one intra-op thread), for both. ``--defaults`` adds a
column: each engine's steady-state speedup with default arguments (``bytegraph.compile(model)``,
``torch.compile(model)``: Inductor), from a second run of the architecture. Every run that may
use Inductor starts with its caches empty (a fresh ``TORCHINDUCTOR_CACHE_DIR``), so first calls
are compared without either engine profiting from the other's kernels; it draws random numbers
as eager does (Inductor's ``fallback_random``, for both engines) and is compared with eager within
Inductor's rounding (``suite.INDUCTOR_TOLERANCE``). torch.compile's
breaks are counted as ``torch._dynamo.explain`` counts them (graphs of the call minus one); it
runs in a worker process that never imports bytegraph (whose ``nn.Module`` patches torch.compile
would trace). Rows where bytegraph breaks more are marked with bytegraph's reasons. Then totals
(with the rows where bytegraph is slower or its first call longer), and the counts recorded in the
zoo that are out of date. ``--latest`` runs the same in a throwaway venv with the newest
``transformers`` release (under ``$TMPDIR``, this venv's packages underneath; it downloads). Exit
status 1 if bytegraph is wrong, raises or hits an internal error anywhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT / "tests")  # this file is models.py: the folder must not shadow tests/models

from models import suite, zoo  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="comma-separated architecture names")
    parser.add_argument("--family", default="", help="only this family (decoder, moe, ...)")
    parser.add_argument("--no-tc", action="store_true", help="bytegraph only")
    parser.add_argument("--time", type=int, default=20, help="calls timed for the speedup")
    parser.add_argument("--labels", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--latest", action="store_true", help="newest transformers (downloads)")
    parser.add_argument("--backend", choices=("eager", "inductor"), default="eager")
    parser.add_argument(
        "--defaults", action="store_true", help="add both engines' speed with default arguments"
    )
    parser.add_argument("--tc-worker", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.latest:
        return _run_latest([a for a in sys.argv[1:] if a != "--latest"])
    _quiet()
    if opts.tc_worker:
        return _tc_worker(opts.time)
    import torch
    import transformers
    from models import modeltest  # imports bytegraph: never in the torch.compile worker

    names = set(opts.k.split(",")) - {""}
    archs = [
        a
        for a in zoo.ARCHS
        if (not names or a.name in names) and (not opts.family or a.family == opts.family)
    ]
    label_options = {"both": (False, True), "yes": (True,), "no": (False,)}[opts.labels]
    print(
        f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"Python {sys.version.split()[0]}; backend {opts.backend} for both; "
        f"{len(archs)} architectures"
    )
    print(_HEADER + (_DEFAULTS_HEADER if opts.defaults else ""))
    totals = Totals()
    start = time.perf_counter()
    worker = None if opts.no_tc else _start_tc_worker(opts.time)
    for arch in archs:
        for labels in label_options:
            tc = None if worker is None else _ask(worker, arch, labels, opts.backend)
            bg = suite.run_arch(arch, labels, modeltest.BytegraphEngine(opts.backend), opts.time)
            totals.add(arch, labels, bg, tc)
            line = _row(arch, labels, bg, tc)
            if opts.defaults:  # default arguments: a second run of each
                tcd = None if worker is None else _ask(worker, arch, labels, None)
                bgd = suite.run_arch(arch, labels, modeltest.BytegraphEngine(None), opts.time)
                totals.add_defaults(arch, labels, bgd, tcd)
                head, _, notes = line.partition("\n")
                line = head + _defaults_cells(bgd, tcd) + (_ + notes if notes else "")
            print(line, flush=True)
    if worker is not None:
        worker.stdin.close()
        worker.wait()
    print(f"\n{totals.rows} rows in {time.perf_counter() - start:.0f} s")
    totals.report()
    return 1 if totals.bg_wrong or totals.bg_internal or totals.bg_error else 0


_HEADER = (
    f"{'model':<16}{'family':<8}{'labels':<7}| {'bytegraph':<11}{'inf':>6}{'train':>6}{'rec':>4}"
    f"{'first':>7}{'speed':>7} | {'torch.compile':<11}{'inf':>6}{'train':>6}{'rec':>4}"
    f"{'first':>7}{'speed':>7}"
)


#: With ``--defaults``: each engine's speedup with default arguments (or what went wrong).
_DEFAULTS_HEADER = f" | {'defaults':<9}{'bg':>7}{'tc':>7}"


def _defaults_cells(bg: suite.ArchRun, tc: suite.ArchRun | None) -> str:
    def cell(run):
        if run is None:
            return "-"
        if _status(run) != "ok":
            return _status(run)
        return f"{run.speedup:.2f}x" if run.speedup else "-"

    return f" | {'':<9}{cell(bg):>7}{cell(tc):>7}"


def _status(run: suite.ArchRun) -> str:
    if run.error:
        return "RAISES"
    if run.wrong:
        return "WRONG"
    if any(p.internal for p in run.phases.values()):
        return "INTERNAL"
    return "ok"


def _cells(run: suite.ArchRun | None) -> str:
    if run is None:
        return f"{'-':<11}{'':>30}"
    inf, train = run.phases.get("inf"), run.phases.get("train")

    def gb(p):
        return f"{p.graphs}/{p.breaks}" if p else "-"

    retraces = sum(p.retraces for p in run.phases.values())
    first = f"{inf.first_s:.2f}" if inf else "-"
    speed = f"{run.speedup:.2f}x" if run.speedup else "-"
    return f"{_status(run):<11}{gb(inf):>6}{gb(train):>6}{retraces:>4}{first:>7}{speed:>7}"


def _row(arch, labels, bg, tc) -> str:
    line = (
        f"{arch.name:<16}{arch.family:<8}{'yes' if labels else 'no':<7}| {_cells(bg)} | "
        f"{_cells(tc)}"
    )
    notes = []
    breaks = any(p.breaks for p in bg.phases.values())
    if _more_breaks(bg, tc) or (tc is None and breaks):
        reasons = [r for p in bg.phases.values() for r in p.reasons]
        label = "breaks" if tc is None else "more breaks"
        notes.append(f"{label}: " + "; ".join(dict.fromkeys(r[:110] for r in reasons)))
    if bg.error:
        notes.append(bg.error[:300])
    if bg.wrong:
        notes.append("; ".join(bg.wrong[:3])[:300])
    for p in bg.phases.values():
        notes += [i[:200] for i in p.internal]
    if tc is not None and (tc.error or tc.wrong):
        notes.append("torch.compile: " + (tc.error or "; ".join(tc.wrong[:2]))[:200])
    return line + "".join(f"\n    {n}" for n in notes)


def _more_breaks(bg, tc) -> bool:
    return tc is not None and any(
        bg.phases[k].breaks > tc.phases[k].breaks
        for k in ("inf", "train")
        if k in bg.phases and k in tc.phases
    )


class Totals:
    def __init__(self) -> None:
        self.rows = 0
        self.bg_wrong = self.bg_error = self.bg_internal = 0
        self.tc_wrong = self.tc_error = 0
        self.bg_breaks = self.tc_breaks = 0
        self.more: list[str] = []
        self.fewer: list[str] = []
        self.measured: dict[str, dict[str, tuple]] = {}  #: name -> variant -> (bg, tc) phases
        self.first = {"bytegraph": 0.0, "torch.compile": 0.0}
        self.slower: list[str] = []  #: rows where bytegraph's steady state is slower
        self.first_longer: list[str] = []  #: rows where bytegraph's first inference call is longer
        self.defaults_rows = 0
        self.defaults_wrong: list[str] = []  #: bytegraph wrong/raising with default arguments
        self.defaults_slower: list[str] = []  #: ... or slower than torch.compile's defaults

    def add(self, arch, labels, bg, tc) -> None:
        self.rows += 1
        self.bg_wrong += bool(bg.wrong)
        self.bg_error += bg.error is not None
        self.bg_internal += any(p.internal for p in bg.phases.values())
        self.bg_breaks += sum(p.breaks for p in bg.phases.values())
        self.first["bytegraph"] += sum(p.first_s for p in bg.phases.values())
        name = f"{arch.name}{' +labels' if labels else ''}"
        measured = self.measured.setdefault(arch.name, {})
        for phase in ("inf", "train"):
            variant = phase + ("_labels" if labels else "")
            p = bg.phases.get(phase)
            q = tc.phases.get(phase) if tc else None
            measured[variant] = (p, q)
        if tc is None:
            return
        self.tc_wrong += bool(tc.wrong)
        self.tc_error += tc.error is not None
        self.tc_breaks += sum(p.breaks for p in tc.phases.values())
        self.first["torch.compile"] += sum(p.first_s for p in tc.phases.values())
        if bg.speedup and tc.speedup and bg.speedup < tc.speedup:
            self.slower.append(f"{name} ({bg.speedup:.2f}x vs {tc.speedup:.2f}x)")
        inf, tc_inf = bg.phases.get("inf"), tc.phases.get("inf")
        if inf and tc_inf and inf.first_s > tc_inf.first_s:
            self.first_longer.append(f"{name} ({inf.first_s:.2f} s vs {tc_inf.first_s:.2f} s)")
        if _more_breaks(bg, tc):
            self.more.append(name)
        elif any(
            bg.phases[k].breaks < tc.phases[k].breaks
            for k in ("inf", "train")
            if k in bg.phases and k in tc.phases
        ):
            self.fewer.append(name)

    def add_defaults(self, arch, labels, bg, tc) -> None:
        self.defaults_rows += 1
        name = f"{arch.name}{' +labels' if labels else ''}"
        if _status(bg) != "ok":
            self.defaults_wrong.append(f"{name} ({_status(bg)})")
        elif tc is not None and bg.speedup and tc.speedup and bg.speedup < tc.speedup:
            self.defaults_slower.append(f"{name} ({bg.speedup:.2f}x vs {tc.speedup:.2f}x)")

    def report(self) -> None:
        print(
            f"wrong: bytegraph {self.bg_wrong}, torch.compile {self.tc_wrong}; "
            f"raises: bytegraph {self.bg_error}, torch.compile {self.tc_error}; "
            f"bytegraph internal errors: {self.bg_internal}"
        )
        print(
            f"breaks (inference + training, all rows): bytegraph {self.bg_breaks}, "
            f"torch.compile {self.tc_breaks}"
        )
        print(f"bytegraph breaks more on {len(self.more)}: {', '.join(self.more) or '-'}")
        print(f"bytegraph breaks less on {len(self.fewer)}: {', '.join(self.fewer) or '-'}")
        print(
            "first calls (inference + training, all rows): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in self.first.items())
        )
        print(f"bytegraph slower on {len(self.slower)}: {', '.join(self.slower) or '-'}")
        print(
            f"bytegraph's first call longer on {len(self.first_longer)}: "
            f"{', '.join(self.first_longer) or '-'}"
        )
        if self.defaults_rows:
            print(
                f"default arguments, {self.defaults_rows} rows: bytegraph wrong or raising on "
                f"{len(self.defaults_wrong)}: {', '.join(self.defaults_wrong) or '-'}; slower "
                f"than torch.compile on {len(self.defaults_slower)}: "
                f"{', '.join(self.defaults_slower) or '-'}"
            )
        self.report_stale()

    def report_stale(self) -> None:
        """The ``zoo.Arch`` count strings measured, where they differ from those recorded."""
        lines = []
        for name, measured in self.measured.items():
            arch = zoo.BY_NAME[name]
            if set(measured) != set(zoo.VARIANTS):
                continue  # only some variants ran: nothing to compare whole strings with
            now = {
                "counts": _joined(measured, 0, lambda p: f"{p.graphs}/{p.breaks}"),
                "tc": _joined(measured, 1, lambda p: f"{p.graphs}/{p.breaks}"),
                "retraces": _joined(measured, 0, lambda p: str(p.retraces)),
            }
            changed = {k: v for k, v in now.items() if v and v != getattr(arch, k)}
            if changed:
                lines.append(f"{name}: " + ", ".join(f'{k}="{v}"' for k, v in changed.items()))
        if lines:
            print("counts recorded in tests/models/zoo.py that differ (measured now):")
            print("  " + "\n  ".join(lines))


def _joined(measured: dict[str, tuple], side: int, fmt) -> str:
    phases = [measured[v][side] for v in zoo.VARIANTS]
    return "" if any(p is None for p in phases) else " ".join(fmt(p) for p in phases)


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = 64  # both engines retrace a model a few times
    torch.set_num_threads(1)  # no thread barriers: stalls of a shared CPU stay out of the times


def _start_tc_worker(calls: int) -> subprocess.Popen:
    command = [sys.executable, __file__, "--tc-worker", "--time", str(calls)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _ask(
    worker: subprocess.Popen, arch: zoo.Arch, labels: bool, backend: str | None
) -> suite.ArchRun:
    worker.stdin.write(json.dumps([arch.name, labels, backend]) + "\n")
    worker.stdin.flush()
    run = json.loads(worker.stdout.readline())
    run["phases"] = {k: suite.Phase(**v) for k, v in run["phases"].items()}
    return suite.ArchRun(**run)


def _tc_worker(calls: int) -> int:
    """Answer ``[name, labels, backend]`` lines with torch.compile's ``ArchRun`` as JSON (no
    bytegraph); backend ``null`` is torch.compile's default."""
    assert "bytegraph" not in sys.modules
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    for line in sys.stdin:
        name, labels, backend = json.loads(line)
        engine = suite.TorchCompileEngine(backend)
        run = suite.run_arch(zoo.BY_NAME[name], labels, engine, calls)
        print(json.dumps(dataclasses.asdict(run)), flush=True)
    return 0


def _exit_with_parent(parent: int) -> None:
    """End the worker once the script that started it is gone (killed mid-run, it would otherwise
    go on compiling its model and skew whatever runs next on the machine)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _run_latest(args: list[str]) -> int:
    """Re-run this script in a throwaway venv whose newest ``transformers`` shadows this one's."""
    import site

    with tempfile.TemporaryDirectory(prefix="bytegraph-latest-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        # this venv's packages (torch, the editable bytegraph) come after the new venv's own
        below = [p for p in site.getsitepackages() if Path(p).is_dir()]
        lines = [f"import site; site.addsitedir({p!r})" for p in below]
        (Path(purelib) / "zz_parent_venv.pth").write_text("\n".join(lines) + "\n")
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--upgrade", "transformers"], check=True
        )
        return subprocess.run([python, __file__, *args]).returncode


if __name__ == "__main__":
    sys.exit(main())
