"""The vision model suite side by side: every model of ``tests/models/vision_zoo.py``
(timm and torchvision architectures of every family from their default configs at small inputs,
diffusers' UNet and VAE from tiny configs; random weights, CPU), inference then one training step,
through bytegraph and through ``torch.compile`` (both with backend ``eager``), each compared with
eager.

    python benchmarks/vision_models.py [--small] [--models a,b] [--family F] [--no-tc]
                                       [--time N] [--limit S]

Per model: wrong or raising (outputs, dtype, shape, gradients, parameters and buffers after an SGD
step), graphs/breaks on the first inference and the first training call, graphs compiled again by a
second identical inference call, seconds of the first inference call and the steady-state speedup
over eager (one intra-op thread), for both; then totals with geometric means. torch.compile runs in
a worker process that never imports bytegraph (whose ``nn.Module`` patches it would trace), with
``torch._dynamo.reset()`` before each model. Rows where bytegraph breaks more are followed by
bytegraph's reasons, and compared with what the zoo records (``VisionArch.tc``/``why``). Each model
is bounded by ``--limit`` seconds per engine. Exit status 1 if bytegraph is wrong, raises or hits an
internal error anywhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT / "tests")  # benchmarks/models.py must not shadow tests/models

from models import suite, vision_zoo  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", default="", help="comma-separated model names, run in this order"
    )
    parser.add_argument("--small", action="store_true", help="the CI subset only")
    parser.add_argument("--family", default="", help="cnn, vit, hier, mlp, mobile, diffusion")
    parser.add_argument("--no-tc", action="store_true", help="bytegraph only")
    parser.add_argument("--time", type=int, default=10, help="calls timed for the speedup")
    parser.add_argument("--limit", type=int, default=300, help="seconds per model and engine")
    parser.add_argument("--tc-worker", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    _quiet()
    if opts.tc_worker:
        return _tc_worker(opts.time, opts.limit)
    import torch
    from models import modeltest  # imports bytegraph: never in the torch.compile worker

    names = set(opts.models.split(",")) - {""}
    unknown = names - set(vision_zoo.BY_NAME)
    if unknown:
        parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    chosen = [vision_zoo.BY_NAME[n] for n in opts.models.split(",") if n] or vision_zoo.ARCHS
    archs = [
        a
        for a in chosen  # in the order given
        if (not opts.small or a.small) and (not opts.family or a.family == opts.family)
    ]
    print(
        f"torch {torch.__version__}, {_versions()}, Python {sys.version.split()[0]}; "
        f"backend eager for both; {len(archs)} models\n"
    )
    print(_HEADER)
    print(_RULE)
    totals = Totals()
    start = time.perf_counter()
    worker = None if opts.no_tc else _Worker(opts.time, opts.limit)
    notes: list[str] = []
    for arch in archs:
        tc = None if worker is None else worker.ask(arch.name)
        bg = vision_zoo.run(arch, modeltest.BytegraphEngine(), opts.time, opts.limit)
        totals.add(arch, bg, tc)
        print(_row(arch, bg, tc), flush=True)
        notes += _notes(arch, bg, tc)
    if worker is not None:
        worker.close()
    print(f"\n{len(archs)} models in {time.perf_counter() - start:.0f} s\n")
    totals.report()
    if notes:
        print("\nNotes:\n" + "\n".join(notes))
    return 1 if totals.bg_bad else 0


def _versions() -> str:
    out = []
    for name in ("torchvision", "timm", "diffusers"):
        try:
            out.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            out.append(f"{name} missing")
    return ", ".join(out)


_HEADER = (
    "| model | family | bytegraph | inf | train | rec | first s | speed "
    "| torch.compile | inf | train | rec | first s | speed |"
)
_RULE = "|" + "---|" * 14


def _status(run: suite.ArchRun) -> str:
    if run.error:
        return "TIMEOUT" if run.error.startswith("timeout") else "RAISES"
    if run.wrong:
        return "WRONG"
    if any(p.internal for p in run.phases.values()):
        return "INTERNAL"
    return "ok"


def _cells(run: suite.ArchRun | None) -> str:
    if run is None:
        return " - | | | | | |"
    inf, train = run.phases.get("inf"), run.phases.get("train")

    def gb(p):
        return f"{p.graphs}/{p.breaks}" if p else "-"

    rec = str(inf.retraces) if inf else "-"
    first = f"{inf.first_s:.2f}" if inf else "-"
    speed = f"{run.speedup:.2f}x" if run.speedup else "-"
    return f" {_status(run)} | {gb(inf)} | {gb(train)} | {rec} | {first} | {speed} |"


def _row(arch, bg, tc) -> str:
    return f"| {arch.name} | {arch.family} |{_cells(bg)}{_cells(tc)}"


def _breaks(run: suite.ArchRun | None) -> tuple[int, int] | None:
    if run is None or set(run.phases) != {"inf", "train"}:
        return None
    return run.phases["inf"].breaks, run.phases["train"].breaks


def _more_breaks(bg, tc) -> bool:
    mine, theirs = _breaks(bg), _breaks(tc)
    return bool(mine and theirs and any(m > t for m, t in zip(mine, theirs, strict=True)))


def _notes(arch, bg, tc) -> list[str]:
    out = []
    if _more_breaks(bg, tc) or (tc is None and any(p.breaks for p in bg.phases.values())):
        reasons = [r for p in bg.phases.values() for r in p.reasons]
        counts: dict[str, int] = {}
        for r in reasons:
            counts[r[:140]] = counts.get(r[:140], 0) + 1
        label = "breaks" if tc is None else "more breaks than torch.compile"
        out.append(f"- {arch.name}: {label} {_breaks(bg)}" + (f" ({arch.why})" if arch.why else ""))
        out += [f"    {n}x {r}" for r, n in counts.items()]
    if bg.error:
        out.append(f"- {arch.name}: bytegraph: {bg.error[:400]}")
    if bg.wrong:
        out.append(f"- {arch.name}: bytegraph wrong: " + "; ".join(bg.wrong[:3])[:400])
    for p in bg.phases.values():
        out += [f"- {arch.name}: internal: {i[:300]}" for i in p.internal]
    if tc is not None and (tc.error or tc.wrong):
        out.append(f"- {arch.name}: torch.compile: " + (tc.error or "; ".join(tc.wrong[:2]))[:300])
    if tc is not None and _breaks(tc) is not None and _breaks(tc) != arch.tc:
        out.append(f"- {arch.name}: torch.compile breaks {_breaks(tc)}, the zoo records {arch.tc}")
    if _breaks(bg) is not None and arch.why and _breaks(bg) != arch.breaks:
        out.append(f"- {arch.name}: bytegraph breaks {_breaks(bg)}, the zoo records {arch.breaks}")
    return out


class Totals:
    def __init__(self) -> None:
        self.models = 0
        self.bg_bad = 0
        self.status: dict[str, dict[str, int]] = {"bytegraph": {}, "torch.compile": {}}
        self.breaks = {"bytegraph": 0, "torch.compile": 0}
        self.more: list[str] = []
        self.fewer: list[str] = []
        self.first: dict[str, list[float]] = {"bytegraph": [], "torch.compile": []}
        self.first_train: dict[str, list[float]] = {"bytegraph": [], "torch.compile": []}
        self.speed: dict[str, list[float]] = {"bytegraph": [], "torch.compile": []}

    def add(self, arch, bg, tc) -> None:
        self.models += 1
        self.bg_bad += _status(bg) != "ok"
        both = tc is not None and _status(bg) == _status(tc) == "ok"
        for name, run in (("bytegraph", bg), ("torch.compile", tc)):
            if run is None:
                continue
            s = self.status[name]
            s[_status(run)] = s.get(_status(run), 0) + 1
            self.breaks[name] += sum(p.breaks for p in run.phases.values())
            if both:  # geometric means over the models both ran correctly
                self.first[name].append(run.phases["inf"].first_s)
                self.first_train[name].append(run.phases["train"].first_s)
                if run.speedup and bg.speedup and tc.speedup:
                    self.speed[name].append(run.speedup)
        if _more_breaks(bg, tc):
            self.more.append(arch.name)
        elif (mine := _breaks(bg)) and (theirs := _breaks(tc)) and mine != theirs:
            self.fewer.append(arch.name)

    def report(self) -> None:
        def fmt(v, unit):
            return "-" if v is None else f"{v:.2f}{unit}"

        print("| | bytegraph | torch.compile |\n|---|---|---|")
        for key in ("ok", "WRONG", "RAISES", "TIMEOUT", "INTERNAL"):
            cells = [str(self.status[n].get(key, 0)) for n in self.status]
            print(f"| models {key} | {' | '.join(cells)} |")
        print(
            f"| breaks (inference + training, all models) | {self.breaks['bytegraph']} | "
            f"{self.breaks['torch.compile']} |"
        )
        for label, values, unit in (
            ("first inference call, geomean", self.first, " s"),
            ("first training step, geomean", self.first_train, " s"),
            ("steady-state speedup over eager, geomean", self.speed, "x"),
        ):
            cells = [fmt(vision_zoo.geomean(values[n]), unit) for n in values]
            print(f"| {label} | {' | '.join(cells)} |")
        print(
            f"\nmodels: {self.models}; bytegraph breaks more on {len(self.more)}: "
            f"{', '.join(self.more) or '-'}"
        )
        print(f"bytegraph breaks less on {len(self.fewer)}: {', '.join(self.fewer) or '-'}")
        print("(geomeans over the models both engines ran correctly)")


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = 64
    torch.set_num_threads(1)  # no thread barriers: stalls of a shared CPU stay out of the times


class _Worker:
    """torch.compile's side, in a process without bytegraph; restarted if it dies."""

    def __init__(self, calls: int, limit: int) -> None:
        self.command = [
            sys.executable,
            __file__,
            "--tc-worker",
            "--time",
            str(calls),
            "--limit",
            str(limit),
        ]
        self.proc = self._start()

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, OMP_NUM_THREADS="1")
        return subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, name: str) -> suite.ArchRun:
        try:
            self.proc.stdin.write(json.dumps(name) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:  # the worker died (out of memory, a crash in C)
            self.proc.kill()
            self.proc.wait()
            self.proc = self._start()
            return suite.ArchRun(error="the torch.compile worker died")
        run = json.loads(line)
        run["phases"] = {k: suite.Phase(**v) for k, v in run["phases"].items()}
        return suite.ArchRun(**run)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _tc_worker(calls: int, limit: int) -> int:
    """Answer model names with torch.compile's ``ArchRun`` as JSON (no bytegraph here)."""
    assert "bytegraph" not in sys.modules
    for line in sys.stdin:
        arch = vision_zoo.BY_NAME[json.loads(line)]
        run = vision_zoo.run(arch, suite.TorchCompileEngine("eager"), calls, limit)
        print(json.dumps(dataclasses.asdict(run)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
