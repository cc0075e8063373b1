"""The whole matrix: cells enumerated from ``operations()`` and the catalogue, run, and tabulated.

``python -m tests.python_semantics.matrix`` (from the repository root; ``benchmarks/
semantics_matrix.py`` is the same) runs every cell through CPython and bytegraph, asks
torch.compile about the cells where bytegraph breaks (its counts are read from
``dynamo_baseline.json`` where the installed torch has them, else computed), and prints one table
by type: cells clean / breaking / wrong / crashed, the cells where torch.compile is cleaner, and
the operations not exercised. ``--write-baseline`` stores torch.compile's counts for the installed
torch; ``--write-known`` rewrites the checked-in lists of known gaps and wrong cells for the
running Python; ``--list wrong`` (or ``gaps``, ``crashed``, ``breaking``) prints those cells with a
reproduction.

Placements rotate: a form's cells take the four placements (global, attribute, built in the
body, passed as an argument) in turn over the kinds, so every operation and every kind meets each
placement; ``--placements all`` runs every cell in all four. The cells of the first fifteen types
and the modules with the first catalogue's kinds rotate over the first three (their ids key
torch.compile's recorded counts).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import re
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterable
from typing import Any

import torch

import bytegraph

from .catalogue import CONTAINERS, FEW, KINDS, NATURAL
from .cells import (
    PLACEMENTS,
    VALUES,
    Cell,
    Outcome,
    container_source,
    dynamo_breaks,
    quiet_torch,
    run,
    source,
)
from .operations import MODULES, TYPES, Operation, operations

HERE = pathlib.Path(__file__).parent
BASELINE = HERE / "dynamo_baseline.json"
KNOWN = HERE / "known_cells.json"
VERDICTS = ("clean", "breaking", "wrong", "crashed", "recompiled", "order")
#: Verdicts checked in as known (``wrong`` in ``known_cells.json``) and gated on.
BAD = ("wrong", "crashed", "recompiled")
_FIRST_OWNERS = {t.__name__ for t in TYPES[:15]} | {m.__name__ for m in MODULES}
_FIRST_KINDS = {k.name for k in KINDS[: [k.name for k in KINDS].index("symint")]} | {"-"}
RESET_EVERY = 200


def python_tag() -> str:
    return f"py{sys.version_info.major}.{sys.version_info.minor}"


def torch_tag() -> str:
    return torch.__version__.split("+")[0]


def kinds_of(op: Operation, every: bool = False) -> list[str]:
    """The kinds an operation's forms are crossed with. The types added after the first fifteen
    (the ``collections`` containers, views, subclasses, iterators) take, unless ``every``, the
    few kinds and one of the later kinds in turn: their rules share the first types' element
    handling, which meets every kind there, and all of them would triple the matrix's time."""
    if op.kinds == "one":
        return ["-"]
    receiver = op.id.split(".")[0]
    if op.kinds == "all":
        names = [k.name for k in KINDS if not (k.fresh and _hashes(op))]
        if every or receiver in _FIRST_OWNERS:
            return names
        later = [k for k in names if k not in _FIRST_KINDS]
        return list(FEW) + [later[zlib.crc32(op.id.encode()) % len(later)]]
    natural = NATURAL.get(receiver)
    return list(FEW) + ([natural] if natural and natural not in FEW else [])


def _hashes(op: Operation) -> bool:
    """The operation hashes its receiver: a kind made anew for each run (a generator) hashes by
    an identity that differs between CPython's run and bytegraph's."""
    return op.id.endswith(".__hash__") or op.id == "builtins.hash"


def cells(
    ops: Iterable[Operation] | None = None,
    all_placements: bool = False,
    every_kind: bool = False,
    extended: bool = True,
) -> list[Cell]:
    """The cells of ``ops``; without ``extended``, only those of the first fifteen types and
    the modules with the first catalogue's kinds."""
    out = []
    for op in operations() if ops is None else ops:
        owner = op.id.split(".")[0]
        receiver = owner if owner in NATURAL else ""
        start = zlib.crc32(op.id.encode())
        for number, template in enumerate(op.forms):
            for index, kind in enumerate(kinds_of(op, every_kind)):
                first = owner in _FIRST_OWNERS and kind in _FIRST_KINDS
                if not (first or extended):
                    continue
                rotation = PLACEMENTS[:3] if first else PLACEMENTS
                if all_placements:
                    placements = rotation
                else:
                    placements = (rotation[(start + number + index) % len(rotation)],)
                for placement in placements:
                    out.append(Cell(op.id, number, template, kind, placement, receiver))
    return out


def run_all(selected: list[Cell], progress: bool = False) -> dict[str, Outcome]:
    results = {}
    with quiet_torch():
        for number, cell in enumerate(selected):
            if number % RESET_EVERY == 0:
                bytegraph.reset()  # drops the cells so far (it visits them all: not per cell)
            results[cell.id] = run(cell)
            if progress and number % 500 == 0:
                print(f"  {number}/{len(selected)} cells", file=sys.stderr, flush=True)
    return results


# -- torch.compile's counts ------------------------------------------------------------------------


def load_baseline() -> dict[str, int]:
    if not BASELINE.exists():
        return {}
    return json.loads(BASELINE.read_text()).get(torch_tag(), {})


def dynamo_counts(
    selected: list[Cell], results: dict[str, Outcome], every: bool = False
) -> dict[str, int]:
    """torch.compile's breaks for the cells where bytegraph breaks (all cells with ``every``):
    from the baseline where it has them, computed otherwise."""
    known = load_baseline()
    counts = {}
    for cell in selected:
        if not every and results[cell.id].breaks == 0:
            continue
        counts[cell.id] = known[cell.id] if cell.id in known else dynamo_breaks(cell)
    return counts


def gaps(results: dict[str, Outcome], dynamo: dict[str, int]) -> list[str]:
    """Cells where bytegraph breaks more than torch.compile (which ran them in a graph: a count of
    -1 or -2 means it ran the call in Python or failed, and any count is fewer)."""
    return sorted(
        cell_id
        for cell_id, outcome in results.items()
        if outcome.verdict == "breaking"
        and dynamo.get(cell_id, -1) >= 0
        and outcome.breaks > dynamo[cell_id]
    )


# -- known lists -----------------------------------------------------------------------------------


def load_known() -> dict[str, Any]:
    """The checked-in lists of the running Python: ``{"gaps": [...], "wrong": [...]}`` (wrong
    holds the crashed and recompiled cells too), and ``"extended"``: whether they were written
    for the extended cells (``cells(extended=True)``) too."""
    if not KNOWN.exists():
        return {"gaps": [], "wrong": []}
    return json.loads(KNOWN.read_text()).get(python_tag(), {"gaps": [], "wrong": []})


def recorded() -> bool:
    """Whether known lists were written on the running Python and torch.compile's baseline on the
    installed torch: the CI test compares with them."""
    return (
        KNOWN.exists() and python_tag() in json.loads(KNOWN.read_text()) and bool(load_baseline())
    )


def extended_recorded() -> bool:
    """The known lists of the running Python cover the extended cells: CI runs them."""
    return bool(load_known().get("extended"))


def write_known(gap_ids: list[str], wrong_ids: list[str], extended: bool) -> None:
    data = json.loads(KNOWN.read_text()) if KNOWN.exists() else {}
    data[python_tag()] = {"extended": extended, "gaps": sorted(gap_ids), "wrong": sorted(wrong_ids)}
    KNOWN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_baseline(counts: dict[str, int]) -> None:
    data = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    merged = {**data.get(torch_tag(), {}), **counts}
    data[torch_tag()] = dict(sorted(merged.items()))
    BASELINE.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")


# -- the table -------------------------------------------------------------------------------------


def owner(cell_id: str) -> str:
    return cell_id.split(".")[0]


def table(ops: list[Operation], results: dict[str, Outcome], dynamo: dict[str, int]) -> str:
    gap_ids = set(gaps(results, dynamo))
    rows: dict[str, Counter[str]] = {}
    for op in ops:
        row = rows.setdefault(owner(op.id), Counter())
        row["ops"] += 1
        row["not exercised"] += not op.forms
    for cell_id, outcome in results.items():
        row = rows.setdefault(owner(cell_id), Counter())
        row["cells"] += 1
        row[outcome.verdict] += 1
        row["tc cleaner"] += cell_id in gap_ids
    columns = ["ops", "not exercised", "cells", *VERDICTS, "tc cleaner"]
    width = max(map(len, rows)) + 2
    lines = [f"{'type':<{width}}" + "".join(f"{c:>15}" for c in columns)]
    total: Counter[str] = Counter()
    for name, row in rows.items():
        total.update(row)
        lines.append(f"{name:<{width}}" + "".join(f"{row[c]:>15}" for c in columns))
    lines.append(f"{'total':<{width}}" + "".join(f"{total[c]:>15}" for c in columns))
    return "\n".join(lines)


def reproduction(cell: Cell) -> str:
    """One line: the cell's body (after ``y = x + 1``), with what ``V`` and the containers
    hold."""
    body = source(cell, guarded=False).splitlines()[2:-1]
    text = "; ".join(line.strip() for line in body)
    given = []
    if cell.kind != "-" and re.search(r"\bV\b", text):
        given.append(f"V = {VALUES[cell.kind]!r}")
    wheres = {"global": "global", "attr": "attribute of global H", "arg": "argument"}
    for letter in (*CONTAINERS, "R"):
        if re.search(rf"\b(G_|H\.){letter}\b", text) or (
            cell.placement == "arg" and re.search(rf"\b{letter}\b", text)
        ):
            where = wheres.get(cell.placement, "")
            given.append(f"{letter} = {container_source(cell, letter, 'V')} ({where})")
    return f"{cell.id}: {text}" + (f"   [{'; '.join(given)}]" if given else "")


def describe(cell: Cell, outcome: Outcome, dynamo: int | None = None) -> str:
    lines = [reproduction(cell)]
    if dynamo is not None:
        lines.append(f"    bytegraph {outcome.breaks} breaks, torch.compile {dynamo}")
    lines += [f"    {r}" for r in outcome.reasons[:2]]
    if outcome.detail:
        lines += [f"    {d}" for d in outcome.detail.splitlines()]
    return "\n".join(lines)


def findings(
    ops: list[Operation],
    selected: list[Cell],
    results: dict[str, Outcome],
    dynamo: dict[str, int],
    listings: dict[str, list[str]],
) -> str:
    """Markdown: the table, every wrong and crashed cell with its reproduction and what differed,
    and the gaps grouped by operation form (one reproduction each, the kinds listed)."""
    by_id = {c.id: c for c in selected}
    out = [
        f"# Python-semantics matrix ({python_tag()}, torch {torch.__version__})",
        "",
        "Reproduce one cell: `python -m tests.python_semantics.matrix --filter 'CELL_ID' "
        "--list wrong crashed gaps --source` (cell id = op#form/kind@placement).",
        "",
        "```",
        table(ops, results, dynamo),
        "```",
    ]
    bad = listings["wrong"] + listings["crashed"] + listings["recompiled"]
    by_kind = Counter(by_id[i].kind for i in bad)
    by_placement = Counter(by_id[i].placement for i in bad)
    first_reason = Counter(
        results[i].reasons[0].split(":")[0] for i in listings["gaps"] if results[i].reasons
    )
    out += [
        "",
        "Wrong and crashed cells by kind: "
        + ", ".join(f"{k} {n}" for k, n in by_kind.most_common()),
        "",
        "... by placement: " + ", ".join(f"{k} {n}" for k, n in by_placement.most_common()),
        "",
        "Gaps by the kind of their first break: "
        + ", ".join(f"{k} {n}" for k, n in first_reason.most_common()),
    ]
    for name in ("wrong", "crashed", "recompiled", "order"):
        out += ["", f"## {name} ({len(listings[name])})", ""]
        for cell_id in listings[name]:
            outcome = results[cell_id]
            out.append(f"- `{reproduction(by_id[cell_id])}`")
            out += [f"  - {line.strip()}" for line in outcome.detail.splitlines()[:2]]
            out += [f"  - break: {r}" for r in outcome.reasons[:1]]
    groups: dict[str, list[str]] = {}
    for cell_id in listings["gaps"]:
        groups.setdefault(cell_id.split("/")[0], []).append(cell_id)
    out += ["", f"## breaks where torch.compile traces ({len(listings['gaps'])} cells)", ""]
    for ids in groups.values():
        first = by_id[ids[0]]
        kinds = ", ".join(f"{by_id[i].kind}@{by_id[i].placement}" for i in ids)
        out.append(f"- `{reproduction(first)}`")
        out.append(f"  - {len(ids)} cells: {kinds}")
        out += [f"  - {r}" for r in results[ids[0]].reasons[:2]]
    return "\n".join(out) + "\n"


def save_outcomes(path: str, results: dict[str, Outcome], dynamo: dict[str, int]) -> None:
    data = {
        cell_id: [o.verdict, o.breaks, o.detail, list(o.reasons), dynamo.get(cell_id)]
        for cell_id, o in results.items()
    }
    pathlib.Path(path).write_text(json.dumps(data))


def load_outcomes(paths: list[str]) -> tuple[dict[str, Outcome], dict[str, int]]:
    results, dynamo = {}, {}
    for path in paths:
        for cell_id, (verdict, breaks, detail, reasons, tc) in json.loads(
            pathlib.Path(path).read_text()
        ).items():
            results[cell_id] = Outcome(verdict, breaks, detail, tuple(reasons))
            if tc is not None:
                dynamo[cell_id] = tc
    return results, dynamo


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--filter", default="", help="regex over cell ids")
    parser.add_argument("--placements", choices=("rotate", "all"), default="rotate")
    parser.add_argument(
        "--every-kind", action="store_true", help="the later types with every kind, not a few"
    )
    parser.add_argument(
        "--first-only", action="store_true", help="the first types and kinds only, not extended"
    )
    parser.add_argument(
        "--list",
        choices=("wrong", "crashed", "recompiled", "order", "gaps", "breaking"),
        nargs="*",
    )
    parser.add_argument("--source", action="store_true", help="print each listed cell's source")
    parser.add_argument("--dynamo-all", action="store_true", help="torch.compile on every cell")
    parser.add_argument("--write-baseline", action="store_true")
    parser.add_argument("--write-known", action="store_true")
    parser.add_argument("--findings", help="write the wrong, crashed and gap cells here (markdown)")
    parser.add_argument("--shard", help="K/N: run only the cells whose index is K modulo N")
    parser.add_argument("--save", help="write the outcomes and torch.compile's counts (JSON)")
    parser.add_argument("--load", nargs="*", help="outcomes saved by shards: read, do not run")
    parser.add_argument(
        "--shuffle",
        type=int,
        help="run the cells in an order drawn from this seed: a verdict "
        "that changes with the order shows state one cell leaves to the next",
    )
    args = parser.parse_args(argv)

    ops = operations()
    every = args.every_kind
    selected = [
        c
        for c in cells(ops, args.placements == "all", every, not args.first_only)
        if re.search(args.filter, c.id)
    ]
    if args.shard:
        k, n = map(int, args.shard.split("/"))
        selected = selected[k::n]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(selected)
    if args.load:
        results, dynamo = load_outcomes(args.load)
        selected = [c for c in selected if c.id in results]
        print(f"{len(selected)} cells loaded ({python_tag()}, torch {torch.__version__})")
    else:
        start, cpu = time.perf_counter(), time.process_time()
        results = run_all(selected, progress=True)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        dynamo = dynamo_counts(selected, results, every=args.dynamo_all)
        print(
            f"{len(selected)} cells, bytegraph and CPython in {took:.0f}s ({cpu:.0f}s CPU) "
            f"({python_tag()}, torch {torch.__version__})"
        )
    if args.save:
        save_outcomes(args.save, results, dynamo)
    print(table(ops, results, dynamo))
    by_id = {c.id: c for c in selected}
    listings = {
        "wrong": [i for i, o in results.items() if o.verdict == "wrong"],
        "crashed": [i for i, o in results.items() if o.verdict == "crashed"],
        "recompiled": [i for i, o in results.items() if o.verdict == "recompiled"],
        "order": [i for i, o in results.items() if o.verdict == "order"],
        "gaps": gaps(results, dynamo),
        "breaking": [i for i, o in results.items() if o.verdict == "breaking"],
    }
    for name in args.list or ():
        print(f"\n{name} ({len(listings[name])}):")
        for cell_id in listings[name]:
            print(describe(by_id[cell_id], results[cell_id], dynamo.get(cell_id)))
            if args.source:
                print(source(by_id[cell_id], guarded=False))
    not_exercised = [op for op in ops if not op.forms]
    print(f"\nnot exercised ({len(not_exercised)}):")
    for op in not_exercised:
        print(f"  {op.id}: {op.reason}")
    if args.findings:
        text = findings(ops, selected, results, dynamo, listings)
        pathlib.Path(args.findings).write_text(text)
    if args.write_baseline:
        write_baseline(dynamo)
    if args.write_known:
        extended = not args.first_only and not args.filter and not args.shard
        write_known(listings["gaps"], [i for v in BAD for i in listings[v]], extended)


if __name__ == "__main__":
    main()
